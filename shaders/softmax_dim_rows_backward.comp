#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// softmax_dim_backward.comp's gradient over contiguous rows, a workgroup
// per row (softmax_dim_rows.glsl): softmax dx = y (dy - sum dy y),
// log_softmax dx = dy - exp(y) sum dy.
#include "softmax_dim_rows.glsl"
layout(std430, binding = 0) readonly buffer Y { float y[]; };
layout(std430, binding = 1) readonly buffer DY { float dy[]; };
layout(std430, binding = 2) buffer DX { float dx[]; };

void main() {
    uint tid = gl_LocalInvocationID.x, size = uint(p.size);
    for (uint r = first_row(); r < uint(p.outer); r += row_step()) {
        uint yi = p.off[0] + r * size, gi = p.off[1] + r * size, oi = p.off[2] + r * size;
        float total = 0.0;
        for (uint j = tid; j < size; j += THREADS) total += p.log != 0 ? dy[gi + j] : dy[gi + j] * y[yi + j];
        tree(total, false);
        total = part[0];
        for (uint j = tid; j < size; j += THREADS) {
            float yj = y[yi + j], dyj = dy[gi + j];
            float g = p.log != 0 ? dyj - exp(yj) * total : yj * (dyj - total);
            dx[oi + j] = p.accumulate != 0 ? dx[oi + j] + g : g;
        }
    }
}
