#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NORM_BACKWARD_AFFINE where channel_inner is 1 (LayerNorm: x is rows of
// `channels` columns): dweight[c] (+)= the sum of dy xhat and dbias[c] (+)=
// the sum of dy down column c. Workgroup (j, t) sums rows chunk j of the
// 256 columns of tile t, an invocation per column (consecutive invocations
// at consecutive addresses), four rows in flight, each invocation's run
// compensated; with several chunks each writes its column sums to the
// split work area (binding 6) and the tile's last workgroup to arrive adds
// every column's chunks in order (vk_split_work.c).
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

const uint ROWS_IN_FLIGHT = 4u;

void main() {
    uint tid = gl_LocalInvocationID.x, j = gl_WorkGroupID.x;
    uint rows = p.outer * p.groups * p.inner / p.channels;
    uint tiles = (p.channels + NORM_THREADS - 1u) / NORM_THREADS;
    for (uint t = gl_WorkGroupID.y; t < tiles; t += gl_NumWorkGroups.y) {
        uint c = t * NORM_THREADS + tid;
        Kahan w = Kahan(0.0, 0.0), b = Kahan(0.0, 0.0);
        uint end = chunk_end(j, rows);
        for (uint r0 = j * p.chunk; c < p.channels && r0 < end; r0 += ROWS_IN_FLIGHT) {
            float d[ROWS_IN_FLIGHT], xhat[ROWS_IN_FLIGHT];
            for (uint i = 0u; i < ROWS_IN_FLIGHT; i++) {
                uint e = (r0 + i) * p.channels + c;
                uint g = group_of(e);
                d[i] = 0.0;
                xhat[i] = 0.0;
                if (r0 + i < end) {
                    d[i] = dy[p.off[3] + e];
                    xhat[i] = (x[p.off[0] + e] - mean[p.off[1] + g]) * inversesqrt(var[p.off[2] + g] + p.eps);
                }
            }
            for (uint i = 0u; i < ROWS_IN_FLIGHT; i++) {
                kahan_add(w, d[i] * xhat[i]);
                kahan_add(b, d[i]);
            }
        }
        float sw = w.sum, sb = b.sum;
        if (p.chunks > 1u) {
            if (c < p.channels) {
                partial[p.off[6] + (c * p.chunks + j) * 2u] = sw;
                partial[p.off[6] + (c * p.chunks + j) * 2u + 1u] = sb;
            }
            if (!arrives_last(t, p.chunks)) continue; // the same for the whole workgroup
            sw = 0.0;
            sb = 0.0;
            for (uint k = 0u; c < p.channels && k < p.chunks; k++) {
                sw += partial[p.off[6] + (c * p.chunks + k) * 2u];
                sb += partial[p.off[6] + (c * p.chunks + k) * 2u + 1u];
            }
        }
        if (c < p.channels) {
            if (p.has_weight != 0) dweight[p.off[4] + c] = (p.accumulate != 0 ? dweight[p.off[4] + c] : 0.0) + sw;
            if (p.has_bias != 0) dbias[p.off[5] + c] = (p.accumulate != 0 ? dbias[p.off[5] + c] : 0.0) + sb;
        }
    }
}
