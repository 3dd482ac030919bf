#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NN_KERNEL_CONV2D_POOL_BACKWARD_DATA (kernels.h): dx of Conv2d -> ReLU ->
// MaxPool2d, from the pooled gradient and the winners.
//
// A workgroup takes 128 units of one image: a unit is R neighbouring
// pixels of one row of one channel, summed in registers. For each chunk of
// filters it first stages, every load in flight at once (these kernels are
// bound by latency), the chunk's weights and the image's convolution-output
// gradient dz: zero, with each window's pooled gradient at its winner (one
// writer per entry), placed at the stride's spacing and with a margin of
// KH - 1 rows and KW - 1 columns in front, so every read below is inside
// the array and the transposed convolution needs no bounds tests:
//   dx[c, h, w] += dz[f, r - (KH - 1), col - (KW - 1)] * W[f, c, ki, kj]
// where r = h + pad_h - ki + KH - 1 and col = w + pad_w - kj + KW - 1 are
// the staged coordinates (entries off the stride's grid are zero).
layout(local_size_x = 128) in;
layout(constant_id = 0) const int KH = 5;
layout(constant_id = 1) const int KW = 5;
layout(constant_id = 2) const int SH = 1;
layout(constant_id = 3) const int SW = 1;
layout(constant_id = 4) const int R = 4; // pixels per unit
const uint THREADS = 128u;
// vk_conv_pool.c keeps a chunk's staged planes and weights within these.
const uint DZ_FLOATS = 5120u, WEIGHT_FLOATS = 2560u;
const int SEG = R + KW - 1;       // staged columns one kernel row of a unit reads

layout(push_constant) uniform Params {
    PC_OFFSETS
    uint batch, channels, height, width;
    int pad_h, pad_w;
    uint out_w;
    uint filters, pooled_plane;
    uint rows, cols; // the staged plane: height + pad_h + KH - 1 by width + pad_w + KW - 1 + R - 1
    uint chunk;      // filters staged at a time
    uint accumulate;
} p;
layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) readonly buffer Winners { int winners[]; };
layout(std430, binding = 2) readonly buffer Wt { float w[]; };
layout(std430, binding = 3) buffer DX { float dx[]; };

shared float dz[DZ_FLOATS];
shared float ws[WEIGHT_FLOATS];

const uint LOADS = 8u; // loads in flight per invocation while staging (conv_pool_stage.glsl)

// LOADS pooled gradients and winners of image n from filter f0 on, entries
// i0 + k * THREADS (clamped to the last entry: gather keeps them in range).
void gather(uint i0, uint n, uint f0, uint entries, out int win[LOADS], out float g[LOADS]) {
    for (uint k = 0u; k < LOADS; k++) {
        uint j = (n * p.filters + f0) * p.pooled_plane + min(i0 + k * THREADS, entries - 1u);
        win[k] = winners[p.off1 + j];
        g[k] = dy[p.off0 + j];
    }
}

// Their gradients to the winners' places in the staged planes.
void scatter(uint i0, int win[LOADS], float g[LOADS], uint count, uint plane) {
    for (uint k = 0u; k < LOADS; k++) {
        uint i = i0 + k * THREADS;
        if (i >= count * p.pooled_plane || win[k] < 0) continue;
        uint oh = uint(win[k]) / p.out_w, ow = uint(win[k]) - oh * p.out_w;
        uint r = oh * uint(SH) + uint(KH - 1), col = ow * uint(SW) + uint(KW - 1);
        // Past the last pixel's reach (padding wider than the kernel): no pixel reads it.
        if (r < p.rows && col < p.cols) dz[(i / p.pooled_plane) * plane + r * p.cols + col] = g[k];
    }
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint runs = (p.width + uint(R) - 1u) / uint(R);
    const uint units = p.channels * p.height * runs;
    const uint unit = gl_WorkGroupID.x * THREADS + tid;
    const bool in_range = unit < units;
    uint c = 0u, h = 0u, w0 = 0u;
    if (in_range) {
        uint ch = unit / runs;
        w0 = (unit - ch * runs) * uint(R);
        c = ch / p.height;
        h = ch - c * p.height;
    }
    const uint plane = p.rows * p.cols;
    for (uint n = gl_WorkGroupID.z; n < p.batch; n += gl_NumWorkGroups.z) {
        float acc[R];
        for (int r = 0; r < R; r++) acc[r] = 0.0;
        for (uint f0 = 0u; f0 < p.filters; f0 += p.chunk) {
            uint count = min(p.chunk, p.filters - f0);
            const uint filter_floats = p.channels * uint(KH * KW);
            barrier(); // the previous chunk's reads are done
            const uint entries = count * p.pooled_plane, batch = tid;
            int first_win[LOADS];
            float first_g[LOADS];
            gather(batch, n, f0, entries, first_win, first_g);
            for (uint i = tid; i < count * plane; i += THREADS) dz[i] = 0.0;
            const uint weight_floats = count * filter_floats;
            for (uint i0 = tid; i0 < weight_floats; i0 += LOADS * THREADS) {
                float v[LOADS];
                for (uint k = 0u; k < LOADS; k++)
                    v[k] = w[p.off2 + f0 * filter_floats + min(i0 + k * THREADS, weight_floats - 1u)];
                for (uint k = 0u; k < LOADS; k++)
                    if (i0 + k * THREADS < weight_floats) ws[i0 + k * THREADS] = v[k];
            }
            // The first gradients' loads went out before the zeros; only
            // their stores wait for the barrier.
            barrier();
            scatter(batch, first_win, first_g, count, plane);
            for (uint i0 = batch + LOADS * THREADS; i0 < entries; i0 += LOADS * THREADS) {
                int win[LOADS];
                float g[LOADS];
                gather(i0, n, f0, entries, win, g);
                scatter(i0, win, g, count, plane);
            }
            barrier();
            if (!in_range) continue;
            for (uint fl = 0u; fl < count; fl++) {
                uint weights = (fl * p.channels + c) * uint(KH * KW);
                for (int ki = 0; ki < KH; ki++) {
                    uint row = fl * plane + (h + uint(p.pad_h) + uint(KH - 1 - ki)) * p.cols + w0 + uint(p.pad_w);
                    float seg[SEG];
                    for (int t = 0; t < SEG; t++) seg[t] = dz[row + uint(t)];
                    for (int kj = 0; kj < KW; kj++) {
                        float wv = ws[weights + uint(ki * KW + kj)];
                        for (int r = 0; r < R; r++) acc[r] += seg[r + KW - 1 - kj] * wv;
                    }
                }
            }
        }
        if (in_range) {
            uint base = p.off3 + ((n * p.channels + c) * p.height + h) * p.width;
            for (int r = 0; r < R; r++) {
                uint wcol = w0 + uint(r);
                if (wcol < p.width) dx[base + wcol] = p.accumulate != 0u ? dx[base + wcol] + acc[r] : acc[r];
            }
        }
    }
}
