#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// The convolution kernels (kernels.h, nn_conv_params) as implicit GEMMs:
// gemm.comp's tiles (BM x BN outputs per workgroup, TM x TN per invocation,
// k slices of BK staged in shared memory, two slices so one barrier per
// step) with the column matrix never in memory: each slice entry is read
// from the tensor where im2col (or col2im) would have put it. The whole
// batch is one product (the images are part of the column or k range), and
// workgroup z is the convolution's group (and, for the weight gradient, the
// split). K = cg * kernel_h * kernel_w per group (cg channels, fg filters),
// P = out_h * out_w, a window tap t = ki * kernel_w + kj.
//
//   MODE 0, forward: y[n, f, pos] = epilogue(sum_k W[f, k] x_col[n][k, pos]);
//                    rows f, columns (n, pos), k (c, ki, kj).
//   MODE 1, data:    dx[n, c, h, w] (+)= sum over (f, ki, kj) W[f, c, ki, kj]
//                    * dy[n, f, oh, ow] where oh * stride = h + pad - ki *
//                    dilation (0 where no output reads the pixel); rows c,
//                    columns (n, h, w), k (f, ki, kj).
//   MODE 2, weight:  dW[f, k] (+)= sum over (n, pos) dy[n, f, pos] x_col[n][k,
//                    pos]; rows f, columns k, the sum over (n, pos) split
//                    in `splits` ranges whose partials gemm_splitk.comp adds
//                    in order (deterministic, no atomics).
layout(constant_id = 0) const uint BM = 64;
layout(constant_id = 1) const uint BN = 64;
layout(constant_id = 2) const uint BK = 16;
layout(constant_id = 3) const uint TM = 4;
layout(constant_id = 4) const uint TN = 4;
layout(local_size_x_id = 5) in; // (BM / TM) * (BN / TN), a multiple of BN and of BK
layout(constant_id = 6) const uint DB = 1; // always two slices (the host's shared-memory check counts them)
// The mode is the pipeline variant: its two bits are constants 7 and 8.
layout(constant_id = 7) const uint MODE_BIT0 = 0;
layout(constant_id = 8) const uint MODE_BIT1 = 0;
const uint MODE = MODE_BIT0 + 2u * MODE_BIT1;
const uint FORWARD = 0u, DATA = 1u, WEIGHT = 2u;

PUSH_CONSTANTS(PUSH_CONV_IMPLICIT)
// Bindings: 0 x (forward) or dy (data, weight); 1 W (forward, data) or x
// (weight); 2 the output (the weight gradient's partials when split); 3 the bias.
layout(std430, binding = 0) readonly buffer In0 { float in0[]; };
layout(std430, binding = 1) readonly buffer In1 { float in1[]; };
layout(std430, binding = 2) buffer MC { float C[]; };
layout(std430, binding = 3) readonly buffer MX { float aux[]; };

#include "gemm_epilogue.glsl"

const uint THREADS = (BM / TM) * (BN / TN);
const uint LOAD_A = BM * BK / THREADS;
const uint LOAD_B = BN * BK / THREADS;
const uint AROW = BM / 4 + 1, BROW = BN / 4 + 1; // padded by a vec4 against bank conflicts
shared vec4 As[2 * BK * AROW]; // As[kk * AROW + r / 4][r % 4] = A[row0 + r][k0 + kk]
shared vec4 Bs[2 * BK * BROW]; // Bs[kk * BROW + c / 4][c % 4] = B[k0 + kk][col0 + c]

float ra[LOAD_A];
float rb[LOAD_B];
float acc[TM * TN];

uint taps() { return p.kernel_h * p.kernel_w; }

// Per tile, for FORWARD and DATA: this invocation's one B column (tid % BN),
// decomposed once: its image's first element in the read tensor and its
// window corner (forward) or padded pixel (data).
bool col_ok;
uint col_base;
int col_y, col_x;
// Per tile, for WEIGHT: this invocation's B columns (k entries c, ki, kj):
// the channel plane's offset in an image, and the tap's offset in pixels.
uint wcol_plane[LOAD_B];
int wcol_dy[LOAD_B], wcol_dx[LOAD_B];
bool wcol_ok[LOAD_B];

void tile_begin(uint grp, uint col0) {
    uint tid = gl_LocalInvocationID.x;
    if (MODE != WEIGHT) {
        uint col = col0 + tid % BN;
        col_ok = col < p.n;
        uint across = MODE == FORWARD ? p.out_w : p.width;
        uint plane = MODE == FORWARD ? p.out_h * p.out_w : p.height * p.width;
        uint n = col / plane, rest = col - n * plane;
        uint y = rest / across, x = rest - y * across;
        if (MODE == FORWARD) {
            col_base = (n * p.channels + grp * p.cg) * p.height * p.width;
            col_y = int(y * p.stride_h) - int(p.pad_h);
            col_x = int(x * p.stride_w) - int(p.pad_w);
        } else {
            col_base = (n * p.filters + grp * p.fg) * p.out_h * p.out_w;
            col_y = int(y + p.pad_h);
            col_x = int(x + p.pad_w);
        }
    } else {
        for (uint t = 0; t < LOAD_B; t++) {
            uint col = col0 + tid / BK + t * (THREADS / BK);
            wcol_ok[t] = col < p.n;
            uint c = col / taps(), tap = col - c * taps();
            uint ki = tap / p.kernel_w, kj = tap - ki * p.kernel_w;
            wcol_plane[t] = (grp * p.cg + c) * p.height * p.width;
            wcol_dy[t] = int(ki * p.dilation_h);
            wcol_dx[t] = int(kj * p.dilation_w);
        }
    }
}

// Fetch slice k0's A and B entries into registers.
void fetch(uint grp, uint row0, uint col0, uint k0) {
    uint tid = gl_LocalInvocationID.x;
    // A, k fastest: this invocation's k is fixed for the slice.
    uint gk = k0 + tid % BK;
    bool k_ok = gk < p.k;
    uint a_base, a_row_stride;
    if (MODE == FORWARD) { // W[grp * fg + r][gk]
        a_base = grp * p.fg * p.k + gk;
        a_row_stride = p.k;
    } else if (MODE == DATA) { // W[grp * fg + f][r][tap], gk = (f, tap)
        uint f = gk / taps(), tap = gk - f * taps();
        a_base = (grp * p.fg + f) * p.cg * taps() + tap;
        a_row_stride = taps();
    } else { // dy[n][grp * fg + r][pos], gk = (n, pos)
        uint positions = p.out_h * p.out_w;
        uint n = gk / positions, pos = gk - n * positions;
        a_base = (n * p.filters + grp * p.fg) * positions + pos;
        a_row_stride = positions;
    }
    for (uint t = 0; t < LOAD_A; t++) {
        uint gr = row0 + tid / BK + t * (THREADS / BK);
        float v = 0.0;
        if (k_ok && gr < p.m) {
            if (MODE == WEIGHT) v = in0[p.off[0] + a_base + gr * a_row_stride];
            else v = in1[p.off[1] + a_base + gr * a_row_stride];
        }
        ra[t] = v;
    }
    if (MODE == FORWARD) { // B[(c, ki, kj)][col] = x[n][grp * cg + c][corner + tap * dilation]
        for (uint t = 0; t < LOAD_B; t++) {
            uint kk = k0 + tid / BN + t * (THREADS / BN);
            uint c = kk / taps(), tap = kk - c * taps();
            uint ki = tap / p.kernel_w, kj = tap - ki * p.kernel_w;
            int ih = col_y + int(ki * p.dilation_h), iw = col_x + int(kj * p.dilation_w);
            bool ok = col_ok && kk < p.k && ih >= 0 && iw >= 0 && ih < int(p.height) && iw < int(p.width);
            rb[t] = ok ? in0[p.off[0] + col_base + (c * p.height + uint(ih)) * p.width + uint(iw)] : 0.0;
        }
    } else if (MODE == DATA) { // B[(f, ki, kj)][col] = dy[n][grp * fg + f][oh][ow] or 0
        for (uint t = 0; t < LOAD_B; t++) {
            uint kk = k0 + tid / BN + t * (THREADS / BN);
            uint f = kk / taps(), tap = kk - f * taps();
            uint ki = tap / p.kernel_w, kj = tap - ki * p.kernel_w;
            int th = col_y - int(ki * p.dilation_h), tw = col_x - int(kj * p.dilation_w);
            float v = 0.0;
            if (col_ok && kk < p.k && th >= 0 && tw >= 0 && uint(th) % p.stride_h == 0u &&
                uint(tw) % p.stride_w == 0u) {
                uint oh = uint(th) / p.stride_h, ow = uint(tw) / p.stride_w;
                if (oh < p.out_h && ow < p.out_w) v = in0[p.off[0] + col_base + (f * p.out_h + oh) * p.out_w + ow];
            }
            rb[t] = v;
        }
    } else { // B[(n, pos)][(c, ki, kj)] = x[n][grp * cg + c][corner of pos + tap * dilation]
        uint positions = p.out_h * p.out_w;
        uint n = gk / positions, pos = gk - n * positions;
        uint oh = pos / p.out_w, ow = pos - oh * p.out_w;
        int ih0 = int(oh * p.stride_h) - int(p.pad_h), iw0 = int(ow * p.stride_w) - int(p.pad_w);
        uint image = p.off[1] + n * p.channels * p.height * p.width;
        for (uint t = 0; t < LOAD_B; t++) {
            int ih = ih0 + wcol_dy[t], iw = iw0 + wcol_dx[t];
            bool ok = k_ok && wcol_ok[t] && ih >= 0 && iw >= 0 && ih < int(p.height) && iw < int(p.width);
            rb[t] = ok ? in1[image + wcol_plane[t] + uint(ih) * p.width + uint(iw)] : 0.0;
        }
    }
}

void stash(uint buf) {
    uint tid = gl_LocalInvocationID.x;
    uint abase = buf * BK * AROW, bbase = buf * BK * BROW;
    for (uint t = 0; t < LOAD_A; t++) {
        uint r = tid / BK + t * (THREADS / BK), kk = tid % BK;
        As[abase + kk * AROW + r / 4][r % 4] = ra[t];
    }
    for (uint t = 0; t < LOAD_B; t++) {
        uint c, kk;
        if (MODE == WEIGHT) { kk = tid % BK; c = tid / BK + t * (THREADS / BK); }
        else { c = tid % BN; kk = tid / BN + t * (THREADS / BN); }
        Bs[bbase + kk * BROW + c / 4][c % 4] = rb[t];
    }
}

// acc += the product of the slices in shared buffer `buf` (as gemm.comp).
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

// Where output (row, col) of group grp (split `split`) goes.
uint c_index(uint grp, uint split, uint row, uint col) {
    if (MODE == FORWARD) {
        uint positions = p.out_h * p.out_w, n = col / positions;
        return p.off[2] + (n * p.filters + grp * p.fg + row) * positions + (col - n * positions);
    }
    if (MODE == DATA) {
        uint pixels = p.height * p.width, n = col / pixels;
        return p.off[2] + (n * p.channels + grp * p.cg + row) * pixels + (col - n * pixels);
    }
    return p.off[2] + ((split * p.groups + grp) * p.fg + row) * p.n + col; // dW [filters, K], or a partial of it
}

void main() {
    uint tid = gl_LocalInvocationID.x;
    uint tcol = tid % (BN / TN), trow = tid / (BN / TN);
    uint grp = gl_WorkGroupID.z % p.groups, split = gl_WorkGroupID.z / p.groups;
    uint row0 = gl_WorkGroupID.y * BM;
    uint ktiles = (p.k + BK - 1) / BK;
    uint begin = split * p.split_steps, end = min(begin + p.split_steps, ktiles);
    uint col_tiles = (p.n + BN - 1) / BN;
    for (uint tile = gl_WorkGroupID.x; tile < col_tiles; tile += gl_NumWorkGroups.x) {
        uint col0 = tile * BN;
        for (uint i = 0; i < TM * TN; i++) acc[i] = 0.0;
        tile_begin(grp, col0);
        if (begin < end) {
            fetch(grp, row0, col0, begin * BK);
            stash(0);
        }
        barrier();
        for (uint s = begin; s < end; s++) {
            uint cur = (s - begin) & 1u;
            if (s + 1 < end) fetch(grp, row0, col0, (s + 1) * BK);
            multiply(cur, trow, tcol);
            if (s + 1 < end) stash(cur ^ 1u);
            barrier();
        }
        for (uint i = 0; i < TM / 4; i++) {
            for (uint ii = 0; ii < 4; ii++) {
                uint row = row0 + (trow + i * (BM / TM)) * 4 + ii;
                if (row >= p.m) continue;
                for (uint j = 0; j < TN / 4; j++) {
                    for (uint jj = 0; jj < 4; jj++) {
                        uint col = col0 + (tcol + j * (BN / TN)) * 4 + jj;
                        if (col >= p.n) continue;
                        uint idx = c_index(grp, split, row, col);
                        float v = acc[(i * 4 + ii) * TN + j * 4 + jj];
                        if (MODE == FORWARD && p.epilogue != 0u)
                            v = gemm_epilogue(p.epilogue, v, grp * p.fg + row, 0u, p.off[3], 0u);
                        C[idx] = p.beta == 0.0 ? v : p.beta * C[idx] + v;
                    }
                }
            }
        }
    }
}
