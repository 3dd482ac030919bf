#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NN_KERNEL_MUON_NORMALIZE: x / (||x||_F + eps), the norm squared read from
// norm_sq[0] (SUM_SQUARES), before the Newton-Schulz iterations.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_MUON)
layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer NormSq { float norm_sq[]; };

void main() {
    float denom = sqrt(norm_sq[p.off[1]]) + p.eps;
    GRID_STRIDE_LOOP(i, p.n) x[p.off[0] + i] = x[p.off[0] + i] / denom;
}
