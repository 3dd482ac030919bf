#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NORM_BACKWARD_DATA's reductions for groups larger than a PIECE:
// sums[2 g], sums[2 g + 1] = the sums of w dy and w dy xhat over group g
// (of dy and dy xhat with sums_unweighted), dy through grad_mask's mask
// (its bias at binding 7).
// Workgroup (j, g) sums chunk j of the group (coalesced, eight loads in
// flight per invocation, each invocation's run compensated), then by a
// fixed tree; with several chunks each writes its sums to the split work
// area (binding 6) and the group's last workgroup to arrive adds them in
// chunk order (vk_split_work.c). norm_backward_pointwise.comp reads sums.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_NORM)
#include "norm_common.glsl"
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer M { float mean[]; };
layout(std430, binding = 2) readonly buffer V { float var[]; };
layout(std430, binding = 3) readonly buffer W { float weight[]; };
layout(std430, binding = 4) readonly buffer DY { float dy[]; };
layout(std430, binding = 5) writeonly buffer S { float sums[]; };
layout(std430, binding = 6) coherent buffer Work { float partial[]; };
layout(std430, binding = 6) coherent buffer WorkCounters { uint work_counters[]; };
layout(std430, binding = 7) readonly buffer B { float bias[]; };
shared bool last_arrival;
#include "last_arrival.glsl"

void main() {
    uint tid = gl_LocalInvocationID.x, j = gl_WorkGroupID.x;
    uint n = p.outer * p.inner;
    for (uint g = gl_WorkGroupID.y; g < p.groups; g += gl_NumWorkGroups.y) {
        float mu = mean[p.off[1] + g], rstd = inversesqrt(var[p.off[2] + g] + p.eps);
        // grad_mask (one channel per group, g's): y = (x - mu) mask_scale + mask_shift
        float mask_scale = rstd * (p.has_weight != 0 && p.grad_mask != 0 ? weight[p.off[3] + g] : 1.0);
        float mask_shift = p.has_bias != 0 && p.grad_mask != 0 ? bias[p.off[7] + g] : 0.0;
        bool weighted = p.has_weight != 0 && p.sums_unweighted == 0;
        Kahan a = Kahan(0.0, 0.0), b = Kahan(0.0, 0.0);
        uint end = chunk_end(j, n);
        for (uint piece = j * p.chunk; piece < end; piece += PIECE) {
            float xs[NORM_LOADS], wdy[NORM_LOADS];
            for (uint i = 0u; i < NORM_LOADS; i++) {
                uint k = piece + i * NORM_THREADS + tid;
                xs[i] = 0.0;
                wdy[i] = 0.0;
                if (k < end) {
                    uint e = group_element(g, k);
                    xs[i] = x[p.off[0] + e];
                    float d = dy[p.off[4] + e];
                    if (p.grad_mask != 0) d = masked_dy(d, (xs[i] - mu) * mask_scale + mask_shift);
                    wdy[i] = d * (weighted ? weight[p.off[3] + channel_of(e)] : 1.0);
                }
            }
            for (uint i = 0u; i < NORM_LOADS; i++) {
                kahan_add(a, wdy[i]);
                kahan_add(b, wdy[i] * (xs[i] - mu) * rstd);
            }
        }
        workgroup_sum2(a.sum, b.sum);
        if (p.chunks > 1u) {
            uint slot = p.off[6] + (g * p.chunks + j) * 2u;
            if (tid == 0u) {
                partial[slot] = norm_part[0];
                partial[slot + 1u] = norm_part2[0];
            }
            if (!arrives_last(g, p.chunks)) continue; // the same for the whole workgroup
            float sa = 0.0, sb = 0.0;
            for (uint c = tid; c < p.chunks; c += NORM_THREADS) {
                sa += partial[p.off[6] + (g * p.chunks + c) * 2u];
                sb += partial[p.off[6] + (g * p.chunks + c) * 2u + 1u];
            }
            workgroup_sum2(sa, sb);
        }
        if (tid == 0u) {
            sums[p.off[5] + 2u * g] = norm_part[0];
            sums[p.off[5] + 2u * g + 1u] = norm_part2[0];
        }
        barrier();
    }
}
