#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "softmax_params.glsl"
// One invocation per row; the row is shifted by its maximum before exp.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Y { float y[]; };

void main() {
    GRID_STRIDE_LOOP(r, uint(p.rows)) {
        uint xi = p.off[0] + r * uint(p.cols), yi = p.off[1] + r * uint(p.cols);
        float m = x[xi];
        for (int j = 1; j < p.cols; j++) m = max(m, x[xi + j]);
        float sum = 0.0;
        for (int j = 0; j < p.cols; j++) {
            float e = exp(x[xi + j] - m);
            y[yi + j] = e;
            sum += e;
        }
        float inv = 1.0 / sum;
        for (int j = 0; j < p.cols; j++) y[yi + j] *= inv;
    }
}
