#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NORM_STATS: one workgroup per group (striding over groups past the
// dispatch): the mean in a first pass, the biased variance as the mean
// squared deviation in a second, so no cancellation of large squares.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_NORM)
#include "norm_common.glsl"
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer M { float mean_out[]; };
layout(std430, binding = 2) buffer V { float var_out[]; };

void main() {
    uint tid = gl_LocalInvocationID.x;
    uint n = p.outer * p.inner;
    for (uint g = gl_WorkGroupID.x; g < p.groups; g += gl_NumWorkGroups.x) {
        Kahan s = Kahan(0.0, 0.0);
        for (uint k = tid; k < n; k += NORM_THREADS) kahan_add(s, x[p.off[0] + group_element(g, k)]);
        workgroup_sum2(s.sum, 0.0);
        float mean = n > 0u ? norm_part[0] / float(n) : 0.0;
        barrier();
        Kahan d = Kahan(0.0, 0.0);
        for (uint k = tid; k < n; k += NORM_THREADS) {
            float dev = x[p.off[0] + group_element(g, k)] - mean;
            kahan_add(d, dev * dev);
        }
        workgroup_sum2(d.sum, 0.0);
        if (tid == 0u) {
            mean_out[p.off[1] + g] = mean;
            var_out[p.off[2] + g] = n > 0u ? norm_part[0] / float(n) : 0.0;
        }
        barrier();
    }
}
