#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// The gradient of softmax_dim_forward from its output y, one invocation per
// row: softmax dx = y (dy - sum dy y), log_softmax dx = dy - exp(y) sum dy.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_SOFTMAX_DIM)
layout(std430, binding = 0) readonly buffer Y { float y[]; };
layout(std430, binding = 1) readonly buffer DY { float dy[]; };
layout(std430, binding = 2) buffer DX { float dx[]; };

void main() {
    uint inner = uint(p.inner), size = uint(p.size);
    GRID_STRIDE_LOOP(r, uint(p.outer) * inner) {
        uint base = (r / inner) * size * inner + r % inner;
        uint yi = p.off[0] + base, gi = p.off[1] + base, oi = p.off[2] + base;
        float total = 0.0;
        for (uint j = 0; j < size; j++) total += p.log != 0 ? dy[gi + j * inner] : dy[gi + j * inner] * y[yi + j * inner];
        for (uint j = 0; j < size; j++) {
            float yj = y[yi + j * inner], dyj = dy[gi + j * inner];
            float g = p.log != 0 ? dyj - exp(yj) * total : yj * (dyj - total);
            uint o = oi + j * inner;
            dx[o] = p.accumulate != 0 ? dx[o] + g : g;
        }
    }
}
