#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// The convolution kernels (kernels.h, nn_conv_params) for small layers, as
// the latency-bound GEMM tiles of gemm_latency.comp with the column matrix
// cols_n = im2col(x_n) [K, P] never in memory: each slice entry is read
// from where im2col would have taken it. K = channels * kernel_h *
// kernel_w, P = out_h * out_w, kk = (c * kernel_h + ki) * kernel_w + kj.
//
//   MODE 0, forward:   y_n [filters, P] = W [filters, K] cols_n, then the
//                      epilogue (bias per filter, ReLU); one product per
//                      image.
//   MODE 1, data:      dx_n [channels, H*W] (+)= the adjoint of im2col of
//                      W^T dy_n, computed as a product whose k runs over
//                      (filter, ki, kj) and whose B entry is the dy entry
//                      that pixel (h, w) fed through (ki, kj), or 0.
//   MODE 2, weight:    dW [filters, K] (+)= sum over n of dy_n cols_n^T;
//                      the products (images) are summed, and split.
//
// The index arithmetic is where small convolutions spend their time, so
// divisions are kept out of the per-entry loads: a column's decomposition
// is made once per tile, and a slice's k entries once per slice, into a
// table in shared memory that every invocation reads.
layout(constant_id = 0) const uint BM = 16;
layout(constant_id = 1) const uint BN = 8;
layout(constant_id = 2) const uint BK = 64;
layout(local_size_x_id = 5) in; // BM * BN
// The mode is the pipeline variant: its two bits are constants 7 and 8.
layout(constant_id = 7) const uint MODE_BIT0 = 0;
layout(constant_id = 8) const uint MODE_BIT1 = 0;
const uint MODE = MODE_BIT0 + 2u * MODE_BIT1;
const uint FORWARD = 0u, DATA = 1u, WEIGHT = 2u;

PUSH_CONSTANTS(PUSH_CONV_LATENCY)
// Bindings: 0 is x (forward) or dy (data, weight); 1 is W (forward, data)
// or x (weight); 2 the output; 3 the bias (forward); 4 the split work area.
layout(std430, binding = 0) readonly buffer In0 { float in0[]; };
layout(std430, binding = 1) readonly buffer In1 { float in1[]; };
layout(std430, binding = 2) buffer MC { float C[]; };
layout(std430, binding = 3) readonly buffer MX { float aux[]; };
layout(std430, binding = 4) coherent buffer Work { float work[]; };
layout(std430, binding = 4) coherent buffer WorkU { uint work_counters[]; };

#include "gemm_epilogue.glsl"
#include "latency_tiles.glsl"

// A position in the window walk: channel (or filter), ki, kj.
struct window { uint outer, ki, kj; };

window window_of(uint kk) {
    uint area = p.kernel_h * p.kernel_w;
    window w;
    w.outer = kk / area;
    uint rest = kk - w.outer * area;
    w.ki = rest / p.kernel_w;
    w.kj = rest - w.ki * p.kernel_w;
    return w;
}

// Per tile: this invocation's columns, decomposed once.
int col_ih0, col_iw0;   // FORWARD: the input corner of its output position
int col_h, col_w;       // DATA: its pixel
bool col_ok;
uint wcol_base[LOAD_B]; // WEIGHT: its K columns as x offsets (channel planes)
uint wcol_ki[LOAD_B], wcol_kj[LOAD_B];
bool wcol_ok[LOAD_B];

void tile_begin(uint row0, uint col0) {
    uint tid = gl_LocalInvocationID.x;
    if (MODE == FORWARD || MODE == DATA) { // B's columns vary fastest: one column per invocation
        uint col = col0 + tid % BN;
        col_ok = col < p.n;
        uint across = MODE == FORWARD ? p.out_w : p.width;
        uint y = col / across, x = col - y * across;
        if (MODE == FORWARD) {
            col_ih0 = int(y * p.stride_h) - int(p.pad_h);
            col_iw0 = int(x * p.stride_w) - int(p.pad_w);
        } else {
            col_h = int(y);
            col_w = int(x);
        }
    } else { // WEIGHT: B's k varies fastest; this invocation's columns are fixed per tile
        for (uint t = 0; t < LOAD_B; t++) {
            uint col = col0 + slice_entry(t) / BK;
            wcol_ok[t] = col < p.n;
            window w = window_of(col);
            wcol_base[t] = w.outer * p.height * p.width;
            wcol_ki[t] = w.ki;
            wcol_kj[t] = w.kj;
        }
    }
}

// x[image plane at base][ih][iw], 0 outside the image.
float image_at(uint base, int ih, int iw) {
    if (ih < 0 || iw < 0 || ih >= int(p.height) || iw >= int(p.width)) return 0.0;
    return in1[base + uint(ih) * p.width + uint(iw)];
}

// A slice's k entries, decomposed once per slice by the workgroup (the
// loads then read them from shared memory instead of dividing): for
// FORWARD and DATA, .x is the entry's offset (in x: c * H * W + ki * W +
// kj; in dy at stride 1: f * out_h * out_w - ki * out_w - kj), .y ki, .z
// kj, .w the channel or filter. Past k, ki is out of every range.
shared ivec4 ktab[2][BK];
const int OUTSIDE = 1 << 20;

void slice_prepare(uint buf, uint b, uint k0) {
    uint tid = gl_LocalInvocationID.x;
    if (MODE == WEIGHT || tid >= BK) return;
    uint kk = k0 + tid;
    window w = window_of(kk);
    ivec4 entry = ivec4(0, OUTSIDE, 0, 0);
    if (kk < p.k) {
        if (MODE == FORWARD) entry.x = int((w.outer * p.height + w.ki) * p.width + w.kj);
        else entry.x = int(w.outer * p.out_h * p.out_w) - int(w.ki * p.out_w) - int(w.kj);
        entry.yzw = ivec3(w.ki, w.kj, w.outer);
    }
    ktab[buf][tid] = entry;
}

void fetch(uint b, uint row0, uint col0, uint k0, uint buf) {
    uint tid = gl_LocalInvocationID.x;
    uint area = p.kernel_h * p.kernel_w;
    if (MODE == FORWARD) {
        // A = W [filters, K], k fastest.
        for (uint t = 0; t < LOAD_A; t++) {
            uint e = slice_entry(t), gr = row0 + e / BK, gk = k0 + e % BK;
            ra[t] = (gr < p.m && gk < p.k) ? in1[p.off[1] + gr * p.k + gk] : 0.0;
        }
        // B = cols_b, columns fastest: this invocation's column at k entries
        // tid / BN + t * THREADS / BN of the slice.
        int base = int(p.off[0] + b * p.channels * p.height * p.width) + col_ih0 * int(p.width) + col_iw0;
        for (uint t = 0; t < LOAD_B; t++) {
            ivec4 e = ktab[buf][slice_entry(t) / BN];
            int ih = col_ih0 + e.y, iw = col_iw0 + e.z;
            bool ok = col_ok && ih >= 0 && iw >= 0 && ih < int(p.height) && iw < int(p.width);
            rb[t] = ok ? in0[uint(base + e.x)] : 0.0;
        }
    } else if (MODE == DATA) {
        // A[c][kk = (f, ki, kj)] = W[f][c][ki][kj], k fastest: this invocation's k is fixed.
        ivec4 a = ktab[buf][tid % BK];
        bool a_ok = a.y < OUTSIDE;
        uint a_index = p.off[1] + (uint(a.w) * p.channels) * area + uint(a.y) * p.kernel_w + uint(a.z);
        for (uint t = 0; t < LOAD_A; t++) {
            uint gr = row0 + slice_entry(t) / BK;
            ra[t] = (gr < p.m && a_ok) ? in1[a_index + gr * area] : 0.0;
        }
        // B[(f, ki, kj)][pixel] = dy_b[f][oh][ow] where pixel = (oh * stride - pad + ki, ...).
        uint grad = p.off[0] + b * p.filters * p.out_h * p.out_w;
        bool unit = p.stride_h == 1u && p.stride_w == 1u;
        int base = int(grad) + (col_h + int(p.pad_h)) * int(p.out_w) + col_w + int(p.pad_w);
        for (uint t = 0; t < LOAD_B; t++) {
            ivec4 e = ktab[buf][slice_entry(t) / BN];
            int th = col_h + int(p.pad_h) - e.y, tw = col_w + int(p.pad_w) - e.z;
            float v = 0.0;
            if (col_ok && th >= 0 && tw >= 0) {
                if (unit) {
                    if (th < int(p.out_h) && tw < int(p.out_w)) v = in0[uint(base + e.x)];
                } else if (uint(th) % p.stride_h == 0u && uint(tw) % p.stride_w == 0u) {
                    uint oh = uint(th) / p.stride_h, ow = uint(tw) / p.stride_w;
                    if (oh < p.out_h && ow < p.out_w) v = in0[grad + (uint(e.w) * p.out_h + oh) * p.out_w + ow];
                }
            }
            rb[t] = v;
        }
    } else {
        // A = dy_b [filters, P], k fastest: this invocation's position is fixed.
        uint gk = k0 + tid % BK;
        uint grad = p.off[0] + b * p.filters * p.k;
        for (uint t = 0; t < LOAD_A; t++) {
            uint gr = row0 + slice_entry(t) / BK;
            ra[t] = (gr < p.m && gk < p.k) ? in0[grad + gr * p.k + gk] : 0.0;
        }
        // B[position][(c, ki, kj)] = x_b[c][oh * stride - pad + ki][ow * stride - pad + kj].
        uint oh = gk / p.out_w, ow = gk - oh * p.out_w;
        int ih0 = int(oh * p.stride_h) - int(p.pad_h), iw0 = int(ow * p.stride_w) - int(p.pad_w);
        uint image = p.off[1] + b * p.channels * p.height * p.width;
        for (uint t = 0; t < LOAD_B; t++) {
            bool ok = wcol_ok[t] && gk < p.k;
            rb[t] = ok ? image_at(image + wcol_base[t], ih0 + int(wcol_ki[t]), iw0 + int(wcol_kj[t])) : 0.0;
        }
    }
}

void stash() {
    stash_a(false); // k fastest in every mode
    stash_b(MODE != WEIGHT);
}

uint c_index(uint z, uint row, uint col) {
    if (MODE == WEIGHT) return p.off[2] + row * p.n + col;
    return p.off[2] + (z * p.m + row) * p.n + col; // y_n [filters, P] or dx_n [channels, H*W]
}

#include "latency_walk.glsl"
