#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "strided.glsl"
// COMPARE (kernels.h): out[i] = 1 where a op b holds at index i's elements,
// else 0. The operands are int32 (p.integer) or float32, read as the words
// they are; a comparison with a NaN holds only for NE, as IEEE's unordered.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_COMPARE)
layout(std430, binding = 0) readonly buffer A { uint as[]; };
layout(std430, binding = 1) readonly buffer B { uint bs[]; };
layout(std430, binding = 2) writeonly buffer O { int os[]; };

const int EQ = 0, NE = 1, LT = 2, LE = 3, GT = 4, GE = 5; // nn_compare_op (nn_ops.h); the host refuses others

// Whether p.op holds for operands ordered as `order` says (-1: a < b, 0: equal, 1: a > b).
bool order_holds(int order) {
    if (p.op == EQ) return order == 0;
    if (p.op == NE) return order != 0;
    if (p.op == LT) return order < 0;
    if (p.op == LE) return order <= 0;
    if (p.op == GT) return order > 0;
    return order >= 0; // GE
}

bool holds(uint a_word, uint b_word) {
    if (p.integer != 0) {
        const int a = int(a_word), b = int(b_word);
        return order_holds(int(a > b) - int(a < b));
    }
    const float a = uintBitsToFloat(a_word), b = uintBitsToFloat(b_word);
    if (isnan(a) || isnan(b)) return p.op == NE;
    return order_holds(int(a > b) - int(a < b));
}

void main() {
    uint n = 1;
    for (int d = 0; d < p.ndim; d++) n *= uint(p.shape[d]);
    GRID_STRIDE_LOOP(i, n) {
        int ia, ib, unused;
        STRIDED_OFFSETS(i, p.ndim, p.shape, p.stride_a, p.stride_b, p.stride_b, ia, ib, unused);
        os[p.off[2] + i] = holds(as[p.off[0] + ia], bs[p.off[1] + ib]) ? 1 : 0;
    }
}
