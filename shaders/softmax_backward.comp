#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "softmax_params.glsl"
// dx = y * (dy - sum_j dy_j y_j), one invocation per row.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Y { float y[]; };
layout(std430, binding = 1) readonly buffer DY { float dy[]; };
layout(std430, binding = 2) buffer DX { float dx[]; };

void main() {
    GRID_STRIDE_LOOP(r, uint(p.rows)) {
        uint base = r * uint(p.cols);
        float dot = 0.0;
        for (int j = 0; j < p.cols; j++) dot += dy[p.off[1] + base + j] * y[p.off[0] + base + j];
        for (int j = 0; j < p.cols; j++) {
            float g = y[p.off[0] + base + j] * (dy[p.off[1] + base + j] - dot);
            uint o = p.off[2] + base + j;
            dx[o] = p.accumulate != 0 ? dx[o] + g : g;
        }
    }
}
