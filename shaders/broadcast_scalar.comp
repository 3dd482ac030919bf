#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_BROADCAST_SCALAR)
layout(std430, binding = 0) readonly buffer S { float s[]; };
layout(std430, binding = 1) buffer O { float o[]; };

void main() {
    float value = p.alpha * s[p.off[0]];
    GRID_STRIDE_LOOP(i, p.n) {
        uint k = p.off[1] + i;
        o[k] = p.accumulate != 0 ? o[k] + value : value;
    }
}
