#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// y[o, c, i] += bias[c], one invocation per element of y.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_BIAS_ADD)
layout(std430, binding = 0) buffer Y { float y[]; };
layout(std430, binding = 1) readonly buffer Bias { float bias[]; };

void main() {
    uint total = p.outer * p.channels * p.inner;
    GRID_STRIDE_LOOP(i, total) {
        uint c = (i / p.inner) % p.channels;
        y[p.off[0] + i] += bias[p.off[1] + c];
    }
}
