#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NORM_BACKWARD_DATA: one workgroup per group. With batch statistics, the
// group's means of w dy and w dy xhat first (a workgroup sum), then dx =
// rstd (w dy - mean(w dy) - xhat mean(w dy xhat)); with constant
// statistics (evaluation BatchNorm) dx = rstd w dy.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_NORM)
#include "norm_common.glsl"
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer M { float mean[]; };
layout(std430, binding = 2) readonly buffer V { float var[]; };
layout(std430, binding = 3) readonly buffer W { float weight[]; };
layout(std430, binding = 4) readonly buffer DY { float dy[]; };
layout(std430, binding = 5) buffer DX { float dx[]; };

float w_of(uint e) { return p.has_weight != 0 ? weight[p.off[3] + channel_of(e)] : 1.0; }

void main() {
    uint tid = gl_LocalInvocationID.x;
    uint n = p.outer * p.inner;
    for (uint g = gl_WorkGroupID.x; g < p.groups; g += gl_NumWorkGroups.x) {
        float mu = mean[p.off[1] + g], rstd = inversesqrt(var[p.off[2] + g] + p.eps);
        float mean_wdy = 0.0, mean_wdy_xhat = 0.0;
        if (p.batch_stats != 0 && n > 0u) {
            Kahan a = Kahan(0.0, 0.0), b = Kahan(0.0, 0.0);
            for (uint k = tid; k < n; k += NORM_THREADS) {
                uint e = group_element(g, k);
                float wdy = dy[p.off[4] + e] * w_of(e);
                kahan_add(a, wdy);
                kahan_add(b, wdy * (x[p.off[0] + e] - mu) * rstd);
            }
            workgroup_sum2(a.sum, b.sum);
            mean_wdy = norm_part[0] / float(n);
            mean_wdy_xhat = norm_part2[0] / float(n);
            barrier();
        }
        for (uint k = tid; k < n; k += NORM_THREADS) {
            uint e = group_element(g, k);
            float xhat = (x[p.off[0] + e] - mu) * rstd;
            float v = rstd * (dy[p.off[4] + e] * w_of(e) - mean_wdy - xhat * mean_wdy_xhat);
            dx[p.off[5] + e] = p.accumulate != 0 ? dx[p.off[5] + e] + v : v;
        }
    }
}
