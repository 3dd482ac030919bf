#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_RELU_BACKWARD)
layout(std430, binding = 0) readonly buffer Y { float y[]; };
layout(std430, binding = 1) readonly buffer DY { float dy[]; };
layout(std430, binding = 2) buffer DX { float dx[]; };

void main() {
    GRID_STRIDE_LOOP(i, p.n) {
        float g = y[p.off[0] + i] > 0.0 ? dy[p.off[1] + i] : 0.0;
        uint o = p.off[2] + i;
        dx[o] = p.accumulate != 0 ? dx[o] + g : g;
    }
}
