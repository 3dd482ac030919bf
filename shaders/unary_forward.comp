#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "unary_math.glsl"
#include "unary_ops.h"
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_UNARY_FORWARD)
layout(std430, binding = 0) readonly buffer X { float xs[]; };
layout(std430, binding = 1) writeonly buffer Y { float ys[]; };

// y = f(x) for the row p.op of unary_ops.h (rows numbered by position; the
// host refuses any other op).
float forward(float x) {
    float alpha = p.alpha, beta = p.beta; // the row's parameters
    float y = x;
    int row = 0;
#define FORWARD_ROW(ID, name, Onnx, forward_, backward_, export_, public_) \
    if (p.op == row) y = (forward_);                     \
    row++;
    NN_UNARY_OPS(FORWARD_ROW)
    return y;
}

void main() {
    GRID_STRIDE_LOOP(i, p.n) ys[p.off[1] + i] = forward(xs[p.off[0] + i]);
}
