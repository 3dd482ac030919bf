#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// C[b] = alpha * op(A[b]) op(B[b]) + beta * C[b] for small products: one
// invocation per entry of C, walking k straight from memory (caches serve
// the reuse). No shared memory and no barriers: a tiled kernel's k loop
// waits on memory and a barrier per slice, which for LeNet-sized products
// costs more than the arithmetic (gemm.comp is for large ones).
//
// Workgroup z: product z (batch > 1, not summed), or, when the batch is
// summed (conv's dW), the products [z * split_steps, (z + 1) * split_steps):
// with splits > 1 each z writes its raw partial sum to C + z * stride_c (a
// scratch buffer; gemm_splitk.comp adds them in order), with splits == 1
// the one z walks every product.
//
// The push constants are gemm.comp's; epilogue as there (aux, binding 3).
layout(local_size_x = 64) in;
layout(push_constant) uniform Params {
    PC_OFFSETS
    uint m, n, k;
    uint trans_a, trans_b;
    uint lda, ldb, ldc;
    uint batch;
    uint summed;
    uint stride_a, stride_b, stride_c;
    float alpha, beta;
    uint splits, split_steps;
    uint epilogue;
} p;
layout(std430, binding = 0) readonly buffer MA { float A[]; };
layout(std430, binding = 1) readonly buffer MB { float B[]; };
layout(std430, binding = 2) buffer MC { float C[]; };
layout(std430, binding = 3) readonly buffer MX { float aux[]; };

#include "gemm_epilogue.glsl"

// op(A)[row][kk] and op(B)[kk][col] steps through memory.
float dot_product(uint a_base, uint b_base, uint row, uint col) {
    uint a0 = a_base + (p.trans_a != 0u ? row : row * p.lda);
    uint a_step = p.trans_a != 0u ? p.lda : 1u;
    uint b0 = b_base + (p.trans_b != 0u ? col * p.ldb : col);
    uint b_step = p.trans_b != 0u ? 1u : p.ldb;
    float acc = 0.0;
    uint kk = 0u;
    // Four independent partial sums keep four loads in flight.
    float s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    for (; kk + 4u <= p.k; kk += 4u) {
        s0 += A[a0 + kk * a_step] * B[b0 + kk * b_step];
        s1 += A[a0 + (kk + 1u) * a_step] * B[b0 + (kk + 1u) * b_step];
        s2 += A[a0 + (kk + 2u) * a_step] * B[b0 + (kk + 2u) * b_step];
        s3 += A[a0 + (kk + 3u) * a_step] * B[b0 + (kk + 3u) * b_step];
    }
    for (; kk < p.k; kk++) acc += A[a0 + kk * a_step] * B[b0 + kk * b_step];
    return ((s0 + s1) + (s2 + s3)) + acc;
}

void main() {
    uint entry = gl_GlobalInvocationID.x;
    if (entry >= p.m * p.n) return;
    uint row = entry / p.n, col = entry % p.n;
    uint z = gl_WorkGroupID.z;
    if (p.summed != 0u) {
        uint first = z * p.split_steps;
        uint last = min(p.batch, first + p.split_steps);
        float sum = 0.0;
        for (uint b = first; b < last; b++)
            sum += dot_product(p.off0 + b * p.stride_a, p.off1 + b * p.stride_b, row, col);
        if (p.splits > 1u) {
            C[p.off2 + z * p.stride_c + row * p.ldc + col] = sum; // a raw partial
            return;
        }
        uint idx = p.off2 + row * p.ldc + col;
        float v = p.alpha * sum;
        if (p.epilogue != 0u) v = gemm_epilogue(p.epilogue, v, row, col, p.off3, p.off3 + (idx - p.off2));
        C[idx] = p.beta == 0.0 ? v : p.beta * C[idx] + v;
        return;
    }
    for (uint b = z; b < p.batch; b += gl_NumWorkGroups.z) {
        uint idx = p.off2 + b * p.stride_c + row * p.ldc + col;
        float v = p.alpha * dot_product(p.off0 + b * p.stride_a, p.off1 + b * p.stride_b, row, col);
        if (p.epilogue != 0u) v = gemm_epilogue(p.epilogue, v, row, col, p.off3, p.off3 + (idx - p.off2));
        C[idx] = p.beta == 0.0 ? v : p.beta * C[idx] + v;
    }
}
