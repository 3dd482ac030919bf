#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "unary_math.glsl"
#include "unary_ops.h"
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_UNARY_FORWARD)
layout(std430, binding = 0) readonly buffer X { float xs[]; };
layout(std430, binding = 1) writeonly buffer Y { float ys[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 xs4[]; };
layout(std430, binding = 1) writeonly buffer Y4 { vec4 ys4[]; };

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
    if (QUADS_ALIGNED(p.off[0] | p.off[1])) {
        const uint x4 = p.off[0] >> 2, y4 = p.off[1] >> 2;
        GRID_STRIDE_LOOP(q, p.n >> 2) {
            const vec4 x = xs4[x4 + q];
            ys4[y4 + q] = vec4(forward(x.x), forward(x.y), forward(x.z), forward(x.w));
        }
        TAIL_LOOP(i, p.n) ys[p.off[1] + i] = forward(xs[p.off[0] + i]);
        return;
    }
    GRID_STRIDE_LOOP(i, p.n) ys[p.off[1] + i] = forward(xs[p.off[0] + i]);
}
