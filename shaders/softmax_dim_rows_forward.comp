#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// softmax_dim_forward.comp's results over contiguous rows, a workgroup per
// row (softmax_dim_rows.glsl); log_softmax is x - max - log(sum).
#include "softmax_dim_rows.glsl"
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Y { float y[]; };

void main() {
    uint tid = gl_LocalInvocationID.x, size = uint(p.size);
    for (uint r = first_row(); r < uint(p.outer); r += row_step()) {
        uint xi = p.off[0] + r * size, yi = p.off[1] + r * size;
        float m = uintBitsToFloat(0xff800000u); // -inf: invocations past the row's end
        for (uint j = tid; j < size; j += THREADS) m = max(m, x[xi + j]);
        tree(m, true);
        m = part[0];
        float sum = 0.0;
        for (uint j = tid; j < size; j += THREADS) sum += exp(x[xi + j] - m);
        tree(sum, false);
        sum = part[0];
        if (p.log != 0) {
            float shift = m + log(sum);
            for (uint j = tid; j < size; j += THREADS) y[yi + j] = x[xi + j] - shift;
        } else {
            float inv = 1.0 / sum;
            for (uint j = tid; j < size; j += THREADS) y[yi + j] = exp(x[xi + j] - m) * inv;
        }
    }
}
