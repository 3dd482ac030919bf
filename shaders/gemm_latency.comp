#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// C[b] = alpha * op(A[b]) op(B[b]) + beta * C[b] for small products (few
// outputs, a short k), where a training step's time is latency, not
// arithmetic: one output per invocation, so a workgroup's BM x BN tile
// needs no register blocking; each step over k stages a BM x BK slice of
// op(A) and a BK x BN slice of op(B) in shared memory with every load of
// the slice in flight at once, and the next step's loads are issued before
// this step's multiply-adds.
//
// The walk over the products and k slices, and the splits that add their
// own partials, are latency_walk.glsl's (shared with conv_latency.comp).
//
// The epilogue is gemm.comp's (bias, ReLU, mask; aux at binding 3); with
// splits > 1 the work area is binding 4, so a split product has it too.
layout(constant_id = 0) const uint BM = 16;
layout(constant_id = 1) const uint BN = 8;
layout(constant_id = 2) const uint BK = 64;
layout(local_size_x_id = 5) in; // BM * BN

PUSH_CONSTANTS(PUSH_GEMM_LATENCY)
layout(std430, binding = 0) readonly buffer MA { float A[]; };
layout(std430, binding = 1) readonly buffer MB { float B[]; };
layout(std430, binding = 2) buffer MC { float C[]; };
// The epilogue's aux; with splits > 1 the split work area: partials as
// floats, the counters as uints. Coherent: a tile's last workgroup reads
// partials other workgroups wrote.
layout(std430, binding = 3) readonly buffer MX { float aux[]; };
layout(std430, binding = 4) coherent buffer Work { float work[]; };
layout(std430, binding = 4) coherent buffer WorkU { uint work_counters[]; };

#include "gemm_epilogue.glsl"

#include "latency_tiles.glsl"

// op(A)[row0 .. +BM][k0 .. +BK] and op(B)[k0 .. +BK][col0 .. +BN] of
// product b into registers, neighbouring invocations on neighbouring
// addresses whichever way the matrices are stored.
void fetch(uint b, uint row0, uint col0, uint k0, uint buf) {
    uint a_base = p.off[0] + b * p.stride_a, b_base = p.off[1] + b * p.stride_b;
    for (uint t = 0; t < LOAD_A; t++) {
        uint e = slice_entry(t), r, kk;
        if (p.trans_a != 0u) { r = e % BM; kk = e / BM; } else { kk = e % BK; r = e / BK; }
        uint gr = row0 + r, gk = k0 + kk;
        ra[t] = (gr < p.m && gk < p.k) ? A[a_base + (p.trans_a != 0u ? gk * p.lda + gr : gr * p.lda + gk)] : 0.0;
    }
    for (uint t = 0; t < LOAD_B; t++) {
        uint e = slice_entry(t), c, kk;
        if (p.trans_b != 0u) { kk = e % BK; c = e / BK; } else { c = e % BN; kk = e / BN; }
        uint gc = col0 + c, gk = k0 + kk;
        rb[t] = (gc < p.n && gk < p.k) ? B[b_base + (p.trans_b != 0u ? gc * p.ldb + gk : gk * p.ldb + gc)] : 0.0;
    }
}

void stash() {
    stash_a(p.trans_a != 0u);
    stash_b(p.trans_b == 0u);
}

void tile_begin(uint row0, uint col0) {}

void slice_prepare(uint buf, uint b, uint k0) {}

uint c_index(uint z, uint row, uint col) { return p.off[2] + z * p.stride_c + row * p.ldc + col; }

#include "latency_walk.glsl"
