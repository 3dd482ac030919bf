#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NORM_APPLY: y = (x - mean[g]) * rsqrt(var[g] + eps) * weight[c] + bias[c],
// one element per invocation.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_NORM)
#include "norm_common.glsl"
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer M { float mean[]; };
layout(std430, binding = 2) readonly buffer V { float var[]; };
layout(std430, binding = 3) readonly buffer W { float weight[]; };
layout(std430, binding = 4) readonly buffer B { float bias[]; };
layout(std430, binding = 5) buffer Y { float y[]; };

void main() {
    uint total = p.outer * p.groups * p.inner;
    GRID_STRIDE_LOOP(e, total) {
        uint g = group_of(e), c = channel_of(e);
        float v = (x[p.off[0] + e] - mean[p.off[1] + g]) * inversesqrt(var[p.off[2] + g] + p.eps);
        if (p.has_weight != 0) v *= weight[p.off[3] + c];
        if (p.has_bias != 0) v += bias[p.off[4] + c];
        y[p.off[5] + e] = v;
    }
}
