#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// The second half of a split-K GEMM: C = alpha * (sum of the partial
// products, in split order) + beta * C, one invocation per entry of C.
layout(local_size_x = 256) in;
// epilogue: as gemm.comp's (bias, ReLU, mask), with aux at binding 2.
PUSH_CONSTANTS(PUSH_GEMM_SPLITK)
layout(std430, binding = 0) readonly buffer Partials { float part[]; };
layout(std430, binding = 1) buffer MC { float C[]; };
layout(std430, binding = 2) readonly buffer MX { float aux[]; };

#include "gemm_epilogue.glsl"

void main() {
    uint total = p.m * p.n, stride = p.m * p.n;
    GRID_STRIDE_LOOP(i, total) {
        float sum = 0.0;
        for (uint s = 0; s < p.splits; s++) sum += part[p.off[0] + s * stride + i];
        uint row = i / p.n, col = i % p.n;
        uint idx = p.off[1] + row * p.ldc + col;
        float v = p.alpha * sum;
        if (p.epilogue != 0) v = gemm_epilogue(p.epilogue, v, row, col, p.off[2], p.off[2] + (idx - p.off[1]));
        C[idx] = p.beta == 0.0 ? v : p.beta * C[idx] + v;
    }
}
