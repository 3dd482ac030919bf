#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "broadcast_ops.h"
#include "strided.glsl"
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_BROADCAST)
layout(std430, binding = 0) readonly buffer A { float as[]; };
layout(std430, binding = 1) readonly buffer B { float bs[]; };
layout(std430, binding = 2) readonly buffer C { float cs[]; };
layout(std430, binding = 3) buffer O { float os[]; };

// f for the row p.op of broadcast_ops.h (rows numbered by position; the host
// refuses any other op and binds a stand-in for an operand the row ignores).
float value(float a, float b, float c) {
    float v = a;
    int row = 0;
#define VALUE_ROW(ID, operands, f) \
    if (p.op == row) v = (f);      \
    row++;
    NN_BROADCAST_OPS(VALUE_ROW)
    return v;
}

void main() {
    uint n = 1;
    for (int d = 0; d < p.ndim; d++) n *= uint(p.shape[d]);
    GRID_STRIDE_LOOP(i, n) {
        int ia, ib, ic;
        STRIDED_OFFSETS(i, p.ndim, p.shape, p.stride_a, p.stride_b, p.stride_c, ia, ib, ic);
        float v = p.alpha * value(as[p.off[0] + ia], bs[p.off[1] + ib], cs[p.off[2] + ic]);
        uint k = p.off[3] + i;
        os[k] = p.accumulate != 0 ? os[k] + v : v;
    }
}
