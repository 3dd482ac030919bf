#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
// op: 0 add, 1 mul, 2 scale (nn_elementwise_op)
PUSH_CONSTANTS(PUSH_ELEMENTWISE)
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) buffer O { float o[]; };

void main() {
    GRID_STRIDE_LOOP(i, p.n) {
        float av = a[p.off[0] + i];
        float v = p.op == 0 ? av + b[p.off[1] + i] : p.op == 1 ? av * b[p.off[1] + i] : p.alpha * av;
        uint k = p.off[2] + i;
        o[k] = p.accumulate != 0 ? o[k] + v : v;
    }
}
