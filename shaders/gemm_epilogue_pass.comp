#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// A large GEMM's epilogue as its own pass: C[b] = epilogue(T[b]) + beta * C[b]
// (T the product, alpha applied; T may be C itself when beta is 0). Inside
// the tiled kernel the epilogue's code cost it most of its speed (registers),
// while a pass over C costs one read and one write of it.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_GEMM_EPILOGUE_PASS)
layout(std430, binding = 0) readonly buffer MT { float T[]; };
layout(std430, binding = 1) buffer MC { float C[]; };
layout(std430, binding = 2) readonly buffer MX { float aux[]; };

#include "gemm_epilogue.glsl"

void main() {
    uint plane = p.m * p.n;
    GRID_STRIDE_LOOP(e, plane * p.batch) {
        uint b = e / plane, rest = e % plane;
        uint row = rest / p.n, col = rest % p.n;
        uint idx = p.off[1] + b * p.stride_c + row * p.ldc + col;
        float v = T[p.off[0] + b * p.stride_t + row * p.ld_t + col];
        v = gemm_epilogue(p.epilogue, v, row, col, p.off[2], p.off[2] + (idx - p.off[1]));
        C[idx] = p.beta == 0.0 ? v : p.beta * C[idx] + v;
    }
}
