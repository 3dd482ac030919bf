#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NORM_BACKWARD_AFFINE: one workgroup per channel (striding past the
// dispatch) sums dy xhat (dweight) and dy (dbias) over the channel's runs
// of channel_inner elements.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_NORM)
#include "norm_common.glsl"
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer M { float mean[]; };
layout(std430, binding = 2) readonly buffer V { float var[]; };
layout(std430, binding = 3) readonly buffer DY { float dy[]; };
layout(std430, binding = 4) buffer DW { float dweight[]; };
layout(std430, binding = 5) buffer DB { float dbias[]; };

void main() {
    uint tid = gl_LocalInvocationID.x;
    uint per_channel = p.outer * p.groups * p.inner / p.channels;
    for (uint c = gl_WorkGroupID.x; c < p.channels; c += gl_NumWorkGroups.x) {
        Kahan w = Kahan(0.0, 0.0), b = Kahan(0.0, 0.0);
        for (uint k = tid; k < per_channel; k += NORM_THREADS) {
            uint o = k / p.channel_inner;
            uint e = (o * p.channels + c) * p.channel_inner + (k - o * p.channel_inner);
            uint g = group_of(e);
            float d = dy[p.off[3] + e];
            kahan_add(w, d * (x[p.off[0] + e] - mean[p.off[1] + g]) * inversesqrt(var[p.off[2] + g] + p.eps));
            kahan_add(b, d);
        }
        workgroup_sum2(w.sum, b.sum);
        if (tid == 0u) {
            if (p.has_weight != 0)
                dweight[p.off[4] + c] = (p.accumulate != 0 ? dweight[p.off[4] + c] : 0.0) + norm_part[0];
            if (p.has_bias != 0) dbias[p.off[5] + c] = (p.accumulate != 0 ? dbias[p.off[5] + c] : 0.0) + norm_part2[0];
        }
        barrier();
    }
}
