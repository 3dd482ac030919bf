#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
// C[b] = alpha * op(A[b]) op(B[b]) + beta * C[b] on the device's matrix
// cores (VK_KHR_cooperative_matrix): A and B are fp32 in memory and rounded
// to fp16 as they are staged in shared memory; the products accumulate in
// fp32. The same product, walk, split-K and push constants as gemm.comp
// (read its comment), so the host swaps one pipeline for the other.
//
// A workgroup computes a BM x BN tile of C with BM / WM * BN / WN subgroups,
// each a WM x WN block of 16 x 16 x 16 cooperative matrices. Per k slice of
// BK the workgroup stages op(A) and op(B) in fp16 in the layout they have in
// memory (k-major for a transposed A or an untransposed B), so the staging
// stores are consecutive, and the matrix loads read them row- or
// column-major; rows are padded by 8 halves so those loads spread over the
// banks. With DB two slices alternate: the next is staged while the current
// one is multiplied, one barrier per slice. The transposes are therefore
// specialization constants (TRANSPOSES), not the push constants' flags. The
// accumulators go out through a per-subgroup 16 x 16 staging square, so
// edges, alpha and beta need no special tiles.
layout(constant_id = 0) const uint BM = 128;
layout(constant_id = 1) const uint BN = 128;
layout(constant_id = 2) const uint BK = 32;
layout(constant_id = 3) const uint WM = 64; // a subgroup's rows
layout(constant_id = 4) const uint WN = 32; // a subgroup's columns
layout(local_size_x_id = 5) in;             // (BM / WM) * (BN / WN) subgroups of 32
layout(constant_id = 6) const uint DB = 1;
layout(constant_id = 7) const uint VEC_A = 0;
layout(constant_id = 8) const uint VEC_B = 0;
layout(constant_id = 9) const uint TRANSPOSES = 0; // bit 0: A is k x m in memory; bit 1: B is n x k

const bool TRANS_A = (TRANSPOSES & 1) != 0, TRANS_B = (TRANSPOSES & 2) != 0;
const uint MS = 16; // the cooperative matrix's rows, columns and depth
const uint SUBGROUP = 32;
const uint THREADS = (BM / WM) * (BN / WN) * SUBGROUP;
const uint LOAD_A = BM * BK / THREADS;
const uint LOAD_B = BN * BK / THREADS;
const uint TILES_M = WM / MS, TILES_N = WN / MS;
// Row strides (halves) and slice sizes of the staged slices: op(A) as
// [r][k] or, transposed, [k][r]; op(B) as [k][c] or, transposed, [c][k].
const uint AS = TRANS_A ? BM + 8 : BK + 8, BS = TRANS_B ? BK + 8 : BN + 8;
const uint A_SLICE = TRANS_A ? BK * AS : BM * AS, B_SLICE = TRANS_B ? BN * BS : BK * BS;

PUSH_CONSTANTS(PUSH_GEMM)
layout(std430, binding = 0) readonly buffer MA { float A[]; };
layout(std430, binding = 0) readonly buffer MA4 { vec4 A4[]; };
layout(std430, binding = 1) readonly buffer MB { float B[]; };
layout(std430, binding = 1) readonly buffer MB4 { vec4 B4[]; };
layout(std430, binding = 2) buffer MC { float C[]; };

// As vectors of four halves: the staging stores four at a time (row strides
// and slices are multiples of four halves), and the matrix loads take
// offsets and strides in these units.
shared f16vec4 As[(1 + DB) * A_SLICE / 4];
shared f16vec4 Bs[(1 + DB) * B_SLICE / 4];
shared float Cs[(THREADS / SUBGROUP) * MS * MS];

float ra[LOAD_A];
float rb[LOAD_B];
coopmat<float, gl_ScopeSubgroup, MS, MS, gl_MatrixUseAccumulator> acc[TILES_M * TILES_N];

// Fetch the next slices into registers, consecutive invocations on
// consecutive addresses whatever the transposes (as gemm.comp).
void fetch(uint a_base, uint b_base, uint row0, uint col0, uint k0) {
    uint tid = gl_LocalInvocationID.x;
    if (VEC_A != 0) {
        [[unroll]] for (uint q = 0; q < LOAD_A / 4; q++) {
            uint e = tid + q * THREADS;
            uint r, kk;
            if (TRANS_A) { r = (e % (BM / 4)) * 4; kk = e / (BM / 4); } else { kk = (e % (BK / 4)) * 4; r = e / (BK / 4); }
            uint gr = row0 + r, gk = k0 + kk;
            vec4 v = vec4(0.0);
            if (gr < p.m && gk < p.k)
                v = A4[(a_base + (TRANS_A ? gk * p.lda + gr : gr * p.lda + gk)) / 4];
            ra[q * 4] = v.x, ra[q * 4 + 1] = v.y, ra[q * 4 + 2] = v.z, ra[q * 4 + 3] = v.w;
        }
    } else [[unroll]] for (uint t = 0; t < LOAD_A; t++) {
        uint e = tid + t * THREADS;
        uint r, kk;
        if (TRANS_A) { r = e % BM; kk = e / BM; } else { kk = e % BK; r = e / BK; }
        uint gr = row0 + r, gk = k0 + kk;
        ra[t] = gr < p.m && gk < p.k ? A[a_base + (TRANS_A ? gk * p.lda + gr : gr * p.lda + gk)] : 0.0;
    }
    if (VEC_B != 0) {
        [[unroll]] for (uint q = 0; q < LOAD_B / 4; q++) {
            uint e = tid + q * THREADS;
            uint c, kk;
            if (TRANS_B) { kk = (e % (BK / 4)) * 4; c = e / (BK / 4); } else { c = (e % (BN / 4)) * 4; kk = e / (BN / 4); }
            uint gc = col0 + c, gk = k0 + kk;
            vec4 v = vec4(0.0);
            if (gc < p.n && gk < p.k)
                v = B4[(b_base + (TRANS_B ? gc * p.ldb + gk : gk * p.ldb + gc)) / 4];
            rb[q * 4] = v.x, rb[q * 4 + 1] = v.y, rb[q * 4 + 2] = v.z, rb[q * 4 + 3] = v.w;
        }
    } else [[unroll]] for (uint t = 0; t < LOAD_B; t++) {
        uint e = tid + t * THREADS;
        uint c, kk;
        if (TRANS_B) { kk = e % BK; c = e / BK; } else { c = e % BN; kk = e / BN; }
        uint gc = col0 + c, gk = k0 + kk;
        rb[t] = gc < p.n && gk < p.k ? B[b_base + (TRANS_B ? gc * p.ldb + gk : gk * p.ldb + gc)] : 0.0;
    }
}

// The fetched slices, rounded to fp16, into shared buffer `buf`: four
// consecutive halves in one store where they were loaded as a vec4.
void stash(uint buf) {
    uint tid = gl_LocalInvocationID.x;
    if (VEC_A != 0) {
        [[unroll]] for (uint q = 0; q < LOAD_A / 4; q++) {
            uint e = tid + q * THREADS;
            uint at = TRANS_A ? (e / (BM / 4)) * AS + (e % (BM / 4)) * 4 : (e / (BK / 4)) * AS + (e % (BK / 4)) * 4;
            As[(buf * A_SLICE + at) / 4] = f16vec4(ra[q * 4], ra[q * 4 + 1], ra[q * 4 + 2], ra[q * 4 + 3]);
        }
    } else [[unroll]] for (uint t = 0; t < LOAD_A; t++) {
        uint e = tid + t * THREADS;
        uint at = buf * A_SLICE + (TRANS_A ? (e / BM) * AS + e % BM : (e / BK) * AS + e % BK);
        As[at / 4][at % 4] = float16_t(ra[t]);
    }
    if (VEC_B != 0) {
        [[unroll]] for (uint q = 0; q < LOAD_B / 4; q++) {
            uint e = tid + q * THREADS;
            uint at = TRANS_B ? (e / (BK / 4)) * BS + (e % (BK / 4)) * 4 : (e / (BN / 4)) * BS + (e % (BN / 4)) * 4;
            Bs[(buf * B_SLICE + at) / 4] = f16vec4(rb[q * 4], rb[q * 4 + 1], rb[q * 4 + 2], rb[q * 4 + 3]);
        }
    } else [[unroll]] for (uint t = 0; t < LOAD_B; t++) {
        uint e = tid + t * THREADS;
        uint at = buf * B_SLICE + (TRANS_B ? (e / BK) * BS + e % BK : (e / BN) * BS + e % BN);
        Bs[at / 4][at % 4] = float16_t(rb[t]);
    }
}

void multiply(uint buf, uint wrow, uint wcol) {
    [[unroll]] for (uint k = 0; k < BK; k += MS) {
        coopmat<float16_t, gl_ScopeSubgroup, MS, MS, gl_MatrixUseA> a[TILES_M];
        [[unroll]] for (uint i = 0; i < TILES_M; i++) {
            uint r = wrow + i * MS;
            if (TRANS_A) coopMatLoad(a[i], As, (buf * A_SLICE + k * AS + r) / 4, AS / 4, gl_CooperativeMatrixLayoutColumnMajor);
            else coopMatLoad(a[i], As, (buf * A_SLICE + r * AS + k) / 4, AS / 4, gl_CooperativeMatrixLayoutRowMajor);
        }
        [[unroll]] for (uint j = 0; j < TILES_N; j++) {
            coopmat<float16_t, gl_ScopeSubgroup, MS, MS, gl_MatrixUseB> b;
            uint c = wcol + j * MS;
            if (TRANS_B) coopMatLoad(b, Bs, (buf * B_SLICE + c * BS + k) / 4, BS / 4, gl_CooperativeMatrixLayoutColumnMajor);
            else coopMatLoad(b, Bs, (buf * B_SLICE + k * BS + c) / 4, BS / 4, gl_CooperativeMatrixLayoutRowMajor);
            [[unroll]] for (uint i = 0; i < TILES_M; i++) acc[i * TILES_N + j] = coopMatMulAdd(a[i], b, acc[i * TILES_N + j]);
        }
    }
}

void main() {
    uint warp = gl_LocalInvocationID.x / SUBGROUP, lane = gl_LocalInvocationID.x % SUBGROUP;
    uint wrow = (warp / (BN / WN)) * WM, wcol = (warp % (BN / WN)) * WN;
    uint row0 = gl_WorkGroupID.y * BM, col0 = gl_WorkGroupID.x * BN;
    uint ktiles = (p.k + BK - 1) / BK;
    bool split = p.splits > 1;
    uint outputs = split ? p.splits : p.summed != 0 ? 1 : p.batch;
    for (uint out_b = gl_WorkGroupID.z; out_b < outputs; out_b += gl_NumWorkGroups.z) {
        [[unroll]] for (uint i = 0; i < TILES_M * TILES_N; i++)
            acc[i] = coopmat<float, gl_ScopeSubgroup, MS, MS, gl_MatrixUseAccumulator>(0.0);
        // The (product, k slice) steps of this output, as gemm.comp walks them.
        uint first = (split || p.summed != 0) ? 0 : out_b;
        uint products = (split || p.summed != 0) ? p.batch : 1;
        uint begin = split ? out_b * p.split_steps : 0;
        uint end = split ? min(begin + p.split_steps, products * ktiles) : products * ktiles;
        if (begin < end) {
            uint b = first + begin / ktiles;
            fetch(p.off[0] + b * p.stride_a, p.off[1] + b * p.stride_b, row0, col0, (begin % ktiles) * BK);
        }
        if (DB != 0) {
            if (begin < end) stash(0);
            barrier();
            for (uint s = begin; s < end; s++) {
                uint cur = (s - begin) & 1;
                if (s + 1 < end) {
                    uint b = first + (s + 1) / ktiles;
                    fetch(p.off[0] + b * p.stride_a, p.off[1] + b * p.stride_b, row0, col0, ((s + 1) % ktiles) * BK);
                }
                multiply(cur, wrow, wcol);
                if (s + 1 < end) stash(cur ^ 1);
                barrier();
            }
        } else {
            for (uint s = begin; s < end; s++) {
                barrier();
                stash(0);
                barrier();
                if (s + 1 < end) {
                    uint b = first + (s + 1) / ktiles;
                    fetch(p.off[0] + b * p.stride_a, p.off[1] + b * p.stride_b, row0, col0, ((s + 1) % ktiles) * BK);
                }
                multiply(0, wrow, wcol);
            }
        }
        uint c_base = p.off[2] + ((split || p.summed == 0) ? out_b * p.stride_c : 0);
        uint square = warp * MS * MS;
        [[unroll]] for (uint i = 0; i < TILES_M; i++) {
            [[unroll]] for (uint j = 0; j < TILES_N; j++) {
                coopMatStore(acc[i * TILES_N + j], Cs, square, MS, gl_CooperativeMatrixLayoutRowMajor);
                subgroupMemoryBarrierShared();
                subgroupBarrier();
                [[unroll]] for (uint t = 0; t < MS * MS / SUBGROUP; t++) {
                    uint e = lane + t * SUBGROUP;
                    uint row = row0 + wrow + i * MS + e / MS, col = col0 + wcol + j * MS + e % MS;
                    if (row < p.m && col < p.n) {
                        uint idx = c_base + row * p.ldc + col;
                        float v = p.alpha * Cs[square + e];
                        C[idx] = p.beta == 0.0 ? v : p.beta * C[idx] + v;
                    }
                }
                subgroupBarrier();
            }
        }
    }
}
