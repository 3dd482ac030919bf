#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// The second half of a split-K GEMM: C = alpha * (sum of the partial
// products, in split order) + beta * C, one invocation per entry of C.
layout(local_size_x = 256) in;
layout(push_constant) uniform Params { PC_OFFSETS uint m, n, ldc, splits; float alpha, beta; } p;
layout(std430, binding = 0) readonly buffer Partials { float part[]; };
layout(std430, binding = 1) buffer MC { float C[]; };

void main() {
    uint total = p.m * p.n, stride = p.m * p.n;
    GRID_STRIDE_LOOP(i, total) {
        float sum = 0.0;
        for (uint s = 0; s < p.splits; s++) sum += part[p.off0 + s * stride + i];
        uint idx = p.off1 + (i / p.n) * p.ldc + i % p.n;
        float v = p.alpha * sum;
        C[idx] = p.beta == 0.0 ? v : p.beta * C[idx] + v;
    }
}
