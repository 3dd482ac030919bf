#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
// The convolution kernels (kernels.h, nn_conv_params) as implicit GEMMs
// over activations of any strides: channels-last ones (N, H, W, C in
// memory) are read four channels at a time; dense (NCHW) ones are read
// element by element. Rows of the product are pixels of the whole batch,
// so the batch, height and width are one index and the column matrix is
// never in memory. gemm.comp's tiles: BM x BN outputs per workgroup, TM x
// TN per invocation, k slices of BK staged in shared memory (two slices
// with DB, so one barrier per step).
//
//   FORWARD  y[pixel (n, oh, ow)][f] = epilogue(sum over k = (r, s, c) of
//            x[n, oh * sh - ph + r * dh, ow * sw - pw + s * dw, c] *
//            Wf[k][f]); Wf the weight packed by conv_gemm_pack.comp as
//            [group][r][s][c][f].
//   DATA     dx[pixel (n, h, w)][c] (+)= sum over the taps that reach the
//            pixel and f of dy[n, oh, ow, f] * Wd[tap, f][c]. The pixels are
//            taken in stride_h x stride_w phases (h % sh, w % sw), workgroup
//            z's: a phase's pixels are reached by one arithmetic progression
//            of taps each way, so no product of zeros is computed for a
//            strided convolution; Wd is packed per phase as [phase][group]
//            [its taps][f][c].
//   WEIGHT   dW[f][k = (r, s, c)] (+)= sum over output pixels m of dy[m][f]
//            * x_col[m][k], written as dW[f][c][r][s]; the sum split in
//            `splits` ranges whose partials gemm_splitk.comp adds in order
//            (deterministic, no atomics).
// Workgroup z is the group (and the phase, or the split): z = group +
// groups * (phase or split).
layout(constant_id = 0) const uint BM = 128;
layout(constant_id = 1) const uint BN = 128;
layout(constant_id = 2) const uint BK = 8;
layout(constant_id = 3) const uint TM = 8;
layout(constant_id = 4) const uint TN = 8;
layout(local_size_x_id = 5) in; // (BM / TM) * (BN / TN)
layout(constant_id = 6) const uint DB = 0; // two slices in shared memory
// VEC_A, VEC_B: the matrix read four elements at a time along its
// contiguous side (the host sets them where the sizes, strides and
// offsets are multiples of 4). MODE: 0 forward, 1 data, 2 weight.
layout(constant_id = 7) const uint VEC_A = 0;
layout(constant_id = 8) const uint VEC_B = 0;
layout(constant_id = 9) const uint MODE = 0;
const uint THREADS = (BM / TM) * (BN / TN);
#include "conv_gemm_common.glsl"

const uint AROW = BM / 4 + 1, BROW = BN / 4 + 1; // padded by a vec4 against bank conflicts
shared vec4 As[(1 + DB) * BK * AROW]; // As[kk * AROW + r / 4][r % 4] = A[row0 + r][k0 + kk]
shared vec4 Bs[(1 + DB) * BK * BROW]; // Bs[kk * BROW + c / 4][c % 4] = B[k0 + kk][col0 + c]
shared ivec4 pixel_table[2 * BK];      // WEIGHT: conv_gemm_common.glsl's slice pixels

void set_slice_pixels(uint entry, ivec4 v) { pixel_table[entry] = v; }
ivec4 slice_pixels(uint entry) { return pixel_table[entry]; }
float acc[TM * TN];

void clear_tile(uint row0, uint col0) {
    for (uint i = 0; i < TM * TN; i++) acc[i] = 0.0;
}

void stash(uint buf) {
    uint abase = buf * BK * AROW, bbase = buf * BK * BROW;
    if (MODE != WEIGHT) {
        uint kk = a_kk();
        for (uint t = 0; t < A_LOADS; t++) {
            uint r = a_row_of(t);
            if (VEC_A != 0)
                for (uint j = 0; j < 4; j++) As[abase + (kk + j) * AROW + r / 4][r % 4] = ra[t][j];
            else
                As[abase + kk * AROW + r / 4][r % 4] = ra[t].x;
        }
        uint c = b_col();
        for (uint t = 0; t < B_LOADS; t++) {
            uint k = b_kk(t);
            if (VEC_B != 0) Bs[bbase + k * BROW + c / 4] = rb[t];
            else Bs[bbase + k * BROW + c / 4][c % 4] = rb[t].x;
        }
    } else {
        uint r = wa_row();
        for (uint t = 0; t < A_LOADS; t++) {
            uint k = wa_kk(t);
            if (VEC_A != 0) As[abase + k * AROW + r / 4] = ra[t];
            else As[abase + k * AROW + r / 4][r % 4] = ra[t].x;
        }
        uint c = b_col();
        for (uint t = 0; t < B_LOADS; t++) {
            uint k = b_kk(t);
            if (VEC_B != 0) Bs[bbase + k * BROW + c / 4] = rb[t];
            else Bs[bbase + k * BROW + c / 4][c % 4] = rb[t].x;
        }
    }
}

// acc += the product of the slices in shared buffer `buf` (as gemm.comp).
void multiply(uint buf) {
    uint trow = gl_LocalInvocationID.x / (BN / TN), tcol = gl_LocalInvocationID.x % (BN / TN);
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

void store(uint row0, uint col0, uint split) {
    uint trow = gl_LocalInvocationID.x / (BN / TN), tcol = gl_LocalInvocationID.x % (BN / TN);
    for (uint i = 0; i < TM / 4; i++) {
        for (uint ii = 0; ii < 4; ii++) {
            uint row = row0 + (trow + i * (BM / TM)) * 4 + ii;
            if (row >= (MODE == WEIGHT ? p.m : m_rows)) continue;
            uint base = MODE != WEIGHT ? output_row_base(pixel_at(row)) : 0u;
            for (uint j = 0; j < TN / 4; j++) {
                for (uint jj = 0; jj < 4; jj++) {
                    uint col = col0 + (tcol + j * (BN / TN)) * 4 + jj;
                    if (col >= p.n) continue;
                    float v = acc[(i * 4 + ii) * TN + j * 4 + jj];
                    if (MODE == WEIGHT) {
                        put(weight_index(row, kpos_at(col), split), v);
                    } else {
                        uint channel = grp * p.n + col; // FORWARD: p.n = fg; DATA: p.n = cg
                        put(base + channel * p.out_sc, MODE == FORWARD ? forward_epilogue(v, channel) : v);
                    }
                }
            }
        }
    }
}
