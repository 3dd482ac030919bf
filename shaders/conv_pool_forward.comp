#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NN_KERNEL_CONV2D_POOL_FORWARD (kernels.h): Conv2d -> ReLU -> MaxPool2d
// with whole windows, writing only the pooled output and the winners.
//
// One invocation per pooled output (n, f, py, px), px fastest, so a warp
// shares its filter (the weight loads are broadcasts) and reads
// neighbouring input. It computes the POOL x POOL convolution outputs of
// its window, then bias, ReLU and the max. The window, stride and pooling
// are specialization constants (vk_pipeline_special: a pipeline per
// layer shape), so every loop below unrolls: a kernel row's weights and
// each input row the window reads are loaded once into registers and used
// by all the window's outputs.
layout(local_size_x = 128) in;
layout(constant_id = 0) const int KH = 5;
layout(constant_id = 1) const int KW = 5;
layout(constant_id = 2) const int SH = 1;
layout(constant_id = 3) const int SW = 1;
layout(constant_id = 4) const int POOL = 2;
const int RUN = (POOL - 1) * SW + KW; // input columns one kernel row of the window reads

layout(push_constant) uniform Params {
    PC_OFFSETS8
    uint batch, channels, height, width;
    int pad_h, pad_w;
    uint out_w;
    uint filters, pooled_h, pooled_w;
    uint has_bias;
} p;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Wt { float w[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(std430, binding = 4) writeonly buffer Winners { int winners[]; };

// As the CPU's max pooling: the first maximum wins, a NaN takes over.
bool takes_over(float v, float best) { return v > best || (isnan(v) && !isnan(best)); }

void main() {
    const uint plane = p.pooled_h * p.pooled_w;
    const uint total = p.batch * p.filters * plane;
    for (uint item = gl_GlobalInvocationID.x; item < total; item += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
        uint nf = item / plane, pos = item - nf * plane;
        uint n = nf / p.filters, f = nf - n * p.filters;
        uint py = pos / p.pooled_w, px = pos - py * p.pooled_w;
        int ih0 = int(py) * POOL * SH - p.pad_h, iw0 = int(px) * POOL * SW - p.pad_w;
        float acc[POOL * POOL];
        for (int q = 0; q < POOL * POOL; q++) acc[q] = 0.0;
        uint x_plane = p.off0 + n * p.channels * p.height * p.width;
        uint w_plane = p.off1 + f * p.channels * uint(KH * KW);
        for (uint c = 0u; c < p.channels; c++, x_plane += p.height * p.width, w_plane += uint(KH * KW)) {
            for (int ki = 0; ki < KH; ki++) {
                float wr[KW];
                for (int kj = 0; kj < KW; kj++) wr[kj] = w[w_plane + uint(ki * KW + kj)];
                for (int a = 0; a < POOL; a++) {
                    int ih = ih0 + a * SH + ki;
                    bool row_ok = ih >= 0 && ih < int(p.height);
                    float xr[RUN];
                    for (int t = 0; t < RUN; t++) {
                        int iw = iw0 + t;
                        bool ok = row_ok && iw >= 0 && iw < int(p.width);
                        // Padding reads a valid address and discards it.
                        float v = x[ok ? x_plane + uint(ih) * p.width + uint(iw) : x_plane];
                        xr[t] = ok ? v : 0.0;
                    }
                    for (int b = 0; b < POOL; b++)
                        for (int kj = 0; kj < KW; kj++) acc[a * POOL + b] += wr[kj] * xr[b * SW + kj];
                }
            }
        }
        // Bias and ReLU (a NaN passes, as relu_forward), then the window's
        // maximum in row-major order.
        float b = p.has_bias != 0u ? bias[p.off2 + f] : 0.0;
        float best = 0.0;
        int win = 0;
        for (int q = 0; q < POOL * POOL; q++) {
            float v = acc[q] + b;
            v = v < 0.0 ? 0.0 : v;
            int index = (int(py) * POOL + q / POOL) * int(p.out_w) + int(px) * POOL + q % POOL;
            if (q == 0 || takes_over(v, best)) {
                best = v;
                win = index;
            }
        }
        y[p.off3 + item] = best;
        winners[p.off4 + item] = best > 0.0 ? win : -1; // the ReLU passes no gradient where it is 0
    }
}
