#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "precision.glsl"
// C[b] = alpha * op(A[b]) op(B[b]) + beta * C[b]: a tiled fp32 GEMM.
//
// A workgroup computes a BM x BN tile of C; each invocation a TM x TN block
// of it, held in registers. Per step over k, the workgroup stages a BM x BK
// slice of op(A) and a BK x BN slice of op(B) in shared memory (loaded
// with consecutive invocations on consecutive addresses whatever the
// transpose flags), and the next slices are fetched into registers while
// the current ones are multiplied. An invocation's rows are TM/4 groups of
// four, spaced BM/TM*4 apart (likewise columns), so its shared-memory
// reads are vec4s that neighbouring invocations take from neighbouring
// addresses. Tile sizes are specialization constants: the host picks big
// tiles for big products and small ones for thin shapes (few rows or columns).
//
// summed != 0: the batch is summed into one C (conv's dW), by walking the
// products one after another in the same registers.
//
// splits > 1 (split-K, for few output tiles over a long k): workgroup z
// takes steps [z * split_steps, (z + 1) * split_steps) of the (product, k
// slice) walk and writes its raw partial product to C + z * stride_c (a
// scratch buffer, ldc = n, alpha 1, beta 0); gemm_splitk.comp then adds the
// partials in order into the real C.
//
// The epilogue of NN_KERNEL_GEMM_EPILOGUE (bias, ReLU, mask) is not applied
// here: compiled in, even behind a constant, it cost this kernel most of its
// speed (bench/README.md); the host runs gemm_epilogue_pass.comp (or the
// split-K sum) after it. p.epilogue must be 0.
layout(constant_id = 0) const uint BM = 64;
layout(constant_id = 1) const uint BN = 64;
layout(constant_id = 2) const uint BK = 16;
layout(constant_id = 3) const uint TM = 4;
layout(constant_id = 4) const uint TN = 4;
layout(local_size_x_id = 5) in; // (BM / TM) * (BN / TN)
// DB != 0: two shared-memory slices, so one barrier per k step instead of two.
layout(constant_id = 6) const uint DB = 0;
// VEC_A / VEC_B != 0: read that matrix as vec4s along its contiguous side
// (k or m for A, k or n for B). The host builds these variants only for
// operands whose offset, leading dimension, batch stride and that side are
// multiples of 4, so a vec4 is wholly inside or wholly outside the matrix.
// Constants rather than push constants: each pipeline carries only its path.
layout(constant_id = 7) const uint VEC_A = 0;
layout(constant_id = 8) const uint VEC_B = 0;

PUSH_CONSTANTS(PUSH_GEMM)
// A and B are also seen as vec4 arrays (the same bindings), for 16-byte loads.
layout(std430, binding = 0) readonly buffer MA { float A[]; };
layout(std430, binding = 0) readonly buffer MA4 { vec4 A4[]; };
layout(std430, binding = 1) readonly buffer MB { float B[]; };
layout(std430, binding = 1) readonly buffer MB4 { vec4 B4[]; };
layout(std430, binding = 2) buffer MC { float C[]; };

const uint THREADS = (BM / TM) * (BN / TN);
const uint LOAD_A = BM * BK / THREADS; // entries of the A slice per invocation
const uint LOAD_B = BN * BK / THREADS;

// Rows of the slices are padded by one vec4 so that stores of a k-major
// slice (A untransposed, B transposed) fall into distinct banks.
const uint AROW = BM / 4 + 1, BROW = BN / 4 + 1;
shared vec4 As[(1 + DB) * BK * AROW]; // As[kk * AROW + r/4][r%4] = op(A)[row0 + r][k0 + kk]
shared vec4 Bs[(1 + DB) * BK * BROW]; // Bs[kk * BROW + c/4][c%4] = op(B)[k0 + kk][col0 + c]

float ra[LOAD_A];
float rb[LOAD_B];
float acc[TM * TN]; // this invocation's block of C

// Fetch the next slices into registers (as vec4s with VEC_A / VEC_B).
void fetch(uint a_base, uint b_base, uint row0, uint col0, uint k0) {
    uint tid = gl_LocalInvocationID.x;
    if (VEC_A != 0) {
        for (uint q = 0; q < LOAD_A / 4; q++) {
            uint e = tid + q * THREADS;
            uint r, kk;
            if (p.trans_a != 0) { r = (e % (BM / 4)) * 4; kk = e / (BM / 4); } else { kk = (e % (BK / 4)) * 4; r = e / (BK / 4); }
            uint gr = row0 + r, gk = k0 + kk;
            vec4 v = vec4(0.0);
            if (gr < p.m && gk < p.k)
                v = A4[(a_base + (p.trans_a != 0 ? gk * p.lda + gr : gr * p.lda + gk)) / 4];
            ra[q * 4] = v.x, ra[q * 4 + 1] = v.y, ra[q * 4 + 2] = v.z, ra[q * 4 + 3] = v.w;
        }
    } else for (uint t = 0; t < LOAD_A; t++) {
        uint e = tid + t * THREADS;
        uint r, kk;
        if (p.trans_a != 0) { r = e % BM; kk = e / BM; } else { kk = e % BK; r = e / BK; }
        uint gr = row0 + r, gk = k0 + kk;
        float v = 0.0;
        if (gr < p.m && gk < p.k)
            v = A[a_base + (p.trans_a != 0 ? gk * p.lda + gr : gr * p.lda + gk)];
        ra[t] = v;
    }
    if (VEC_B != 0) {
        for (uint q = 0; q < LOAD_B / 4; q++) {
            uint e = tid + q * THREADS;
            uint c, kk;
            if (p.trans_b != 0) { kk = (e % (BK / 4)) * 4; c = e / (BK / 4); } else { c = (e % (BN / 4)) * 4; kk = e / (BN / 4); }
            uint gc = col0 + c, gk = k0 + kk;
            vec4 v = vec4(0.0);
            if (gc < p.n && gk < p.k)
                v = B4[(b_base + (p.trans_b != 0 ? gc * p.ldb + gk : gk * p.ldb + gc)) / 4];
            rb[q * 4] = v.x, rb[q * 4 + 1] = v.y, rb[q * 4 + 2] = v.z, rb[q * 4 + 3] = v.w;
        }
    } else for (uint t = 0; t < LOAD_B; t++) {
        uint e = tid + t * THREADS;
        uint c, kk;
        if (p.trans_b != 0) { kk = e % BK; c = e / BK; } else { c = e % BN; kk = e / BN; }
        uint gc = col0 + c, gk = k0 + kk;
        float v = 0.0;
        if (gc < p.n && gk < p.k)
            v = B[b_base + (p.trans_b != 0 ? gc * p.ldb + gk : gk * p.ldb + gc)];
        rb[t] = v;
    }
}

// Store the fetched slices into shared buffer `buf`.
void stash(uint buf) {
    uint tid = gl_LocalInvocationID.x;
    uint abase = buf * BK * AROW, bbase = buf * BK * BROW;
    if (VEC_A != 0) {
        for (uint q = 0; q < LOAD_A / 4; q++) {
            uint e = tid + q * THREADS;
            if (p.trans_a != 0) { // four rows of one k: one vec4 store
                uint rq = e % (BM / 4), kk = e / (BM / 4);
                As[abase + kk * AROW + rq] = vec4(round_operand(ra[q * 4]), round_operand(ra[q * 4 + 1]), round_operand(ra[q * 4 + 2]), round_operand(ra[q * 4 + 3]));
            } else { // four k of one row
                uint kk = (e % (BK / 4)) * 4, r = e / (BK / 4);
                for (uint j = 0; j < 4; j++) As[abase + (kk + j) * AROW + r / 4][r % 4] = round_operand(ra[q * 4 + j]);
            }
        }
    } else for (uint t = 0; t < LOAD_A; t++) {
        uint e = tid + t * THREADS;
        uint r, kk;
        if (p.trans_a != 0) { r = e % BM; kk = e / BM; } else { kk = e % BK; r = e / BK; }
        As[abase + kk * AROW + r / 4][r % 4] = round_operand(ra[t]);
    }
    if (VEC_B != 0) {
        for (uint q = 0; q < LOAD_B / 4; q++) {
            uint e = tid + q * THREADS;
            if (p.trans_b == 0) { // four columns of one k: one vec4 store
                uint cq = e % (BN / 4), kk = e / (BN / 4);
                Bs[bbase + kk * BROW + cq] = vec4(round_operand(rb[q * 4]), round_operand(rb[q * 4 + 1]), round_operand(rb[q * 4 + 2]), round_operand(rb[q * 4 + 3]));
            } else { // four k of one column
                uint kk = (e % (BK / 4)) * 4, c = e / (BK / 4);
                for (uint j = 0; j < 4; j++) Bs[bbase + (kk + j) * BROW + c / 4][c % 4] = round_operand(rb[q * 4 + j]);
            }
        }
    } else for (uint t = 0; t < LOAD_B; t++) {
        uint e = tid + t * THREADS;
        uint c, kk;
        if (p.trans_b != 0) { kk = e % BK; c = e / BK; } else { c = e % BN; kk = e / BN; }
        Bs[bbase + kk * BROW + c / 4][c % 4] = round_operand(rb[t]);
    }
}

// acc += the product of the slices in shared buffer `buf`.
void multiply(uint buf, uint trow, uint tcol) {
    uint abase = buf * BK * AROW, bbase = buf * BK * BROW;
    for (uint kk = 0; kk < BK; kk++) {
        vec4 a[TM / 4], bv[TN / 4];
        for (uint i = 0; i < TM / 4; i++) a[i] = As[abase + kk * AROW + trow + i * (BM / TM)];
        for (uint j = 0; j < TN / 4; j++) bv[j] = Bs[bbase + kk * BROW + tcol + j * (BN / TN)];
        for (uint i = 0; i < TM / 4; i++)
            for (uint ii = 0; ii < 4; ii++)
                for (uint j = 0; j < TN / 4; j++)
                    for (uint jj = 0; jj < 4; jj++)
                        acc[(i * 4 + ii) * TN + j * 4 + jj] += a[i][ii] * bv[j][jj];
    }
}

void main() {
    uint tid = gl_LocalInvocationID.x;
    uint tcol = tid % (BN / TN), trow = tid / (BN / TN);
    uint row0 = gl_WorkGroupID.y * BM, col0 = gl_WorkGroupID.x * BN;
    uint ktiles = (p.k + BK - 1) / BK;
    bool split = p.splits > 1;
    uint outputs = split ? p.splits : p.summed != 0 ? 1 : p.batch;
    for (uint out_b = gl_WorkGroupID.z; out_b < outputs; out_b += gl_NumWorkGroups.z) {
        for (uint i = 0; i < TM * TN; i++) acc[i] = 0.0;
        // The (product, k slice) steps this output takes, in order:
        // step s multiplies product first + s / ktiles at k0 = (s % ktiles) * BK.
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
                multiply(cur, trow, tcol);
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
                multiply(0, trow, tcol);
            }
        }
        uint c_base = p.off[2] + ((split || p.summed == 0) ? out_b * p.stride_c : 0);
        for (uint i = 0; i < TM / 4; i++) {
            for (uint ii = 0; ii < 4; ii++) {
                uint row = row0 + (trow + i * (BM / TM)) * 4 + ii;
                if (row >= p.m) continue;
                for (uint j = 0; j < TN / 4; j++) {
                    for (uint jj = 0; jj < 4; jj++) {
                        uint col = col0 + (tcol + j * (BN / TN)) * 4 + jj;
                        if (col >= p.n) continue;
                        uint idx = c_base + row * p.ldc + col;
                        float v = p.alpha * acc[(i * 4 + ii) * TN + j * 4 + jj];
                        C[idx] = p.beta == 0.0 ? v : p.beta * C[idx] + v;
                    }
                }
            }
        }
        barrier();
    }
}
