#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_RELU_FORWARD)
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };

void main() {
    GRID_STRIDE_LOOP(i, p.n) {
        float v = x[p.off[0] + i];
        // A NaN passes through (as in PyTorch and the CPU kernel).
        y[p.off[1] + i] = (v > 0.0 || isnan(v)) ? v : 0.0;
    }
}
