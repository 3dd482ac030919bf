#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Softmax or log_softmax along a dimension (nn_softmax_dim_params): one
// invocation per row (o, i), its elements inner apart, so neighbouring
// invocations read neighbouring words. The row is shifted by its maximum;
// log_softmax is x - max - log(sum), never log of the softmax.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_SOFTMAX_DIM)
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Y { float y[]; };

void main() {
    uint inner = uint(p.inner), size = uint(p.size);
    GRID_STRIDE_LOOP(r, uint(p.outer) * inner) {
        uint base = (r / inner) * size * inner + r % inner;
        uint xi = p.off[0] + base, yi = p.off[1] + base;
        float m = x[xi];
        for (uint j = 1; j < size; j++) m = max(m, x[xi + j * inner]);
        float sum = 0.0;
        for (uint j = 0; j < size; j++) sum += exp(x[xi + j * inner] - m);
        if (p.log != 0) {
            float shift = m + log(sum);
            for (uint j = 0; j < size; j++) y[yi + j * inner] = x[xi + j * inner] - shift;
        } else {
            float inv = 1.0 / sum;
            for (uint j = 0; j < size; j++) y[yi + j * inner] = exp(x[xi + j * inner] - m) * inv;
        }
    }
}
