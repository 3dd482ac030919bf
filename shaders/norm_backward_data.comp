#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NORM_BACKWARD_DATA for groups of at most a PIECE (LayerNorm rows):
// row_threads(n) invocations a group, several groups a workgroup (striding
// past the dispatch), read each group's x and dy once into registers, take
// the means of w dy and w dy xhat (a fixed tree) and write dx = rstd (w dy
// - mean(w dy) - xhat mean(w dy xhat)) from the registers: one pass over
// memory. Larger groups and constant
// statistics take norm_backward_sums.comp and norm_backward_pointwise.comp.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_NORM)
#include "norm_common.glsl"
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer M { float mean[]; };
layout(std430, binding = 2) readonly buffer V { float var[]; };
layout(std430, binding = 3) readonly buffer W { float weight[]; };
layout(std430, binding = 4) readonly buffer DY { float dy[]; };
layout(std430, binding = 5) buffer DX { float dx[]; };

void main() {
    uint tid = gl_LocalInvocationID.x;
    uint n = p.outer * p.inner;
    uint width = row_threads(n), lane = tid & (width - 1u), rows = NORM_THREADS / width, first = tid - lane;
    for (uint base = gl_WorkGroupID.x * rows; base < p.groups; base += gl_NumWorkGroups.x * rows) {
        uint g = base + tid / width;
        bool mine = g < p.groups; // the last workgroup's runs past the groups only join the trees
        float mu = mine ? mean[p.off[1] + g] : 0.0, rstd = mine ? inversesqrt(var[p.off[2] + g] + p.eps) : 0.0;
        float xhat[NORM_LOADS], wdy[NORM_LOADS];
        float sum_wdy = 0.0, sum_wdy_xhat = 0.0;
        for (uint i = 0u; i < NORM_LOADS; i++) {
            uint k = i * width + lane;
            xhat[i] = 0.0;
            wdy[i] = 0.0;
            if (mine && k < n) {
                uint e = group_element(g, k);
                xhat[i] = (x[p.off[0] + e] - mu) * rstd;
                wdy[i] = dy[p.off[4] + e] * (p.has_weight != 0 ? weight[p.off[3] + channel_of(e)] : 1.0);
            }
            sum_wdy += wdy[i];
            sum_wdy_xhat += wdy[i] * xhat[i];
        }
        segment_sum2(sum_wdy, sum_wdy_xhat, width);
        float mean_wdy = norm_part[first] / float(n), mean_wdy_xhat = norm_part2[first] / float(n);
        for (uint i = 0u; i < NORM_LOADS; i++) {
            uint k = i * width + lane;
            if (!mine || k >= n) break;
            uint e = p.off[5] + group_element(g, k);
            float v = rstd * (wdy[i] - mean_wdy - xhat[i] * mean_wdy_xhat);
            dx[e] = p.accumulate != 0 ? dx[e] + v : v;
        }
        barrier(); // norm_part read before the next group's tree
    }
}
