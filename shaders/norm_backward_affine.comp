#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NORM_BACKWARD_AFFINE over runs of channel_inner > 1 elements (BatchNorm,
// GroupNorm): dweight[c] (+)= the sum of dy xhat and dbias[c] (+)= the sum
// of dy over channel c's outer runs of channel_inner elements. Workgroup
// (j, c) sums chunk j of the channel's entries (consecutive invocations at
// consecutive elements of a run, eight loads in flight each, each
// invocation's run compensated), then by a fixed tree; with several chunks
// each writes its sums to the split work area (binding 6) and the
// channel's last workgroup to arrive adds them in chunk order
// (vk_split_work.c).
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_NORM)
#include "norm_common.glsl"
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer M { float mean[]; };
layout(std430, binding = 2) readonly buffer V { float var[]; };
layout(std430, binding = 3) readonly buffer DY { float dy[]; };
layout(std430, binding = 4) buffer DW { float dweight[]; };
layout(std430, binding = 5) buffer DB { float dbias[]; };
layout(std430, binding = 6) coherent buffer Work { float partial[]; };
layout(std430, binding = 6) coherent buffer WorkCounters { uint work_counters[]; };
shared bool last_arrival;
#include "last_arrival.glsl"

void main() {
    uint tid = gl_LocalInvocationID.x, j = gl_WorkGroupID.x;
    uint per_channel = p.outer * p.groups * p.inner / p.channels;
    for (uint c = gl_WorkGroupID.y; c < p.channels; c += gl_NumWorkGroups.y) {
        Kahan w = Kahan(0.0, 0.0), b = Kahan(0.0, 0.0);
        uint end = chunk_end(j, per_channel);
        for (uint piece = j * p.chunk; piece < end; piece += PIECE) {
            float d[NORM_LOADS], xhat[NORM_LOADS];
            for (uint i = 0u; i < NORM_LOADS; i++) {
                uint k = piece + i * NORM_THREADS + tid;
                d[i] = 0.0;
                xhat[i] = 0.0;
                if (k < end) {
                    uint o = k / p.channel_inner;
                    uint e = (o * p.channels + c) * p.channel_inner + (k - o * p.channel_inner);
                    uint g = group_of(e);
                    d[i] = dy[p.off[3] + e];
                    xhat[i] = (x[p.off[0] + e] - mean[p.off[1] + g]) * inversesqrt(var[p.off[2] + g] + p.eps);
                }
            }
            for (uint i = 0u; i < NORM_LOADS; i++) {
                kahan_add(w, d[i] * xhat[i]);
                kahan_add(b, d[i]);
            }
        }
        workgroup_sum2(w.sum, b.sum);
        if (p.chunks > 1u) {
            uint slot = p.off[6] + (c * p.chunks + j) * 2u;
            if (tid == 0u) {
                partial[slot] = norm_part[0];
                partial[slot + 1u] = norm_part2[0];
            }
            if (!arrives_last(c, p.chunks)) continue; // the same for the whole workgroup
            float sw = 0.0, sb = 0.0;
            for (uint k = tid; k < p.chunks; k += NORM_THREADS) {
                sw += partial[p.off[6] + (c * p.chunks + k) * 2u];
                sb += partial[p.off[6] + (c * p.chunks + k) * 2u + 1u];
            }
            workgroup_sum2(sw, sb);
        }
        if (tid == 0u) {
            if (p.has_weight != 0)
                dweight[p.off[4] + c] = (p.accumulate != 0 ? dweight[p.off[4] + c] : 0.0) + norm_part[0];
            if (p.has_bias != 0) dbias[p.off[5] + c] = (p.accumulate != 0 ? dbias[p.off[5] + c] : 0.0) + norm_part2[0];
        }
        barrier();
    }
}
