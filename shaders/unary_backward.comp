#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "unary_math.glsl"
#include "unary_ops.h"
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_UNARY_BACKWARD)
layout(std430, binding = 0) readonly buffer X { float xs[]; };
layout(std430, binding = 1) readonly buffer Y { float ys[]; };
layout(std430, binding = 2) readonly buffer DY { float dys[]; };
layout(std430, binding = 3) buffer DX { float dxs[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 xs4[]; };
layout(std430, binding = 1) readonly buffer Y4 { vec4 ys4[]; };
layout(std430, binding = 2) readonly buffer DY4 { vec4 dys4[]; };
layout(std430, binding = 3) buffer DX4 { vec4 dxs4[]; };

// f'(x) dy for the row p.op of unary_ops.h, from x, y = f(x) and dy.
float backward(float x, float y, float dy) {
    float alpha = p.alpha, beta = p.beta; // the row's parameters
    float dx = 0.0;
    int row = 0;
#define BACKWARD_ROW(ID, name, Onnx, forward_, backward_, export_, public_) \
    if (p.op == row) dx = (backward_);                    \
    row++;
    NN_UNARY_OPS(BACKWARD_ROW)
    return dx;
}

void element(uint i) {
    float g = backward(xs[p.off[0] + i], ys[p.off[1] + i], dys[p.off[2] + i]);
    uint o = p.off[3] + i;
    dxs[o] = p.accumulate != 0 ? dxs[o] + g : g;
}

void main() {
    if (QUADS_ALIGNED(p.off[0] | p.off[1] | p.off[2] | p.off[3])) {
        GRID_STRIDE_LOOP(q, p.n >> 2) {
            const vec4 x = xs4[(p.off[0] >> 2) + q], y = ys4[(p.off[1] >> 2) + q], dy = dys4[(p.off[2] >> 2) + q];
            vec4 g = vec4(backward(x.x, y.x, dy.x), backward(x.y, y.y, dy.y), backward(x.z, y.z, dy.z),
                          backward(x.w, y.w, dy.w));
            const uint o = (p.off[3] >> 2) + q;
            if (p.accumulate != 0) g += dxs4[o];
            dxs4[o] = g;
        }
        TAIL_LOOP(i, p.n) element(i);
        return;
    }
    GRID_STRIDE_LOOP(i, p.n) element(i);
}
