#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
// op: 0 add, 1 mul, 2 scale (nn_elementwise_op)
PUSH_CONSTANTS(PUSH_ELEMENTWISE)
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) buffer O { float o[]; };
layout(std430, binding = 0) readonly buffer A4 { vec4 a4[]; };
layout(std430, binding = 1) readonly buffer B4 { vec4 b4[]; };
layout(std430, binding = 2) buffer O4 { vec4 o4[]; };

void element(uint i) {
    float av = a[p.off[0] + i];
    float v = p.op == 0 ? av + b[p.off[1] + i] : p.op == 1 ? av * b[p.off[1] + i] : p.alpha * av;
    uint k = p.off[2] + i;
    o[k] = p.accumulate != 0 ? o[k] + v : v;
}

void main() {
    if (QUADS_ALIGNED(p.off[0] | p.off[1] | p.off[2])) {
        GRID_STRIDE_LOOP(q, p.n >> 2) {
            const vec4 av = a4[(p.off[0] >> 2) + q];
            vec4 v;
            if (p.op == 2) {
                v = p.alpha * av;
            } else {
                const vec4 bv = b4[(p.off[1] >> 2) + q];
                v = p.op == 0 ? av + bv : av * bv;
            }
            const uint k = (p.off[2] >> 2) + q;
            if (p.accumulate != 0) v += o4[k];
            o4[k] = v;
        }
        TAIL_LOOP(i, p.n) element(i);
        return;
    }
    GRID_STRIDE_LOOP(i, p.n) element(i);
}
