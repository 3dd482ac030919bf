#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NN_KERNEL_CONV2D_POOL_FORWARD (kernels.h): Conv2d -> ReLU -> MaxPool2d
// with whole windows, writing only the pooled output and the winners.
//
// A workgroup takes 128 pooled outputs (f, py, px) of one image, px
// fastest, so a warp shares its filter. It first stages the image, zero-
// padded, and its filters' weights in shared memory, every load in flight
// at once: these kernels are bound by latency, and a chain of dependent
// global loads is what costs. Each invocation then computes the POOL x
// POOL convolution outputs of its window from shared memory, then bias,
// ReLU and the max. The window, stride and pooling are specialization
// constants (vk_pipeline_special: a pipeline per layer shape), so the loops
// unroll: a kernel row's weights and each input row the window reads are
// loaded once into registers and used by all the window's outputs.
layout(local_size_x = 128) in;
layout(constant_id = 0) const int KH = 5;
layout(constant_id = 1) const int KW = 5;
layout(constant_id = 2) const int SH = 1;
layout(constant_id = 3) const int SW = 1;
layout(constant_id = 4) const int POOL = 2;
const uint THREADS = 128u;
const int RUN = (POOL - 1) * SW + KW; // input columns one kernel row of the window reads
// vk_conv_pool.c keeps a padded image and a workgroup's weights within these.
const uint IMAGE_FLOATS = 4096u, WEIGHT_FLOATS = 3072u;

layout(push_constant) uniform Params {
    PC_OFFSETS8
    uint batch, channels, height, width;
    int pad_h, pad_w;
    uint out_w;
    uint filters, pooled_h, pooled_w;
    uint padded_h, padded_w;
    uint has_bias;
} p;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Wt { float w[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(std430, binding = 4) writeonly buffer Winners { int winners[]; };

shared float xs[IMAGE_FLOATS];
shared float ws[WEIGHT_FLOATS];

#include "conv_pool_stage.glsl"

// As the CPU's max pooling: the first maximum wins, a NaN takes over.
bool takes_over(float v, float best) { return v > best || (isnan(v) && !isnan(best)); }

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint pooled = p.pooled_h * p.pooled_w, per_image = p.filters * pooled;
    const uint item = gl_WorkGroupID.x * THREADS + tid;
    const uint first_filter = gl_WorkGroupID.x * THREADS / pooled;
    const uint last_filter = min(p.filters - 1u, (gl_WorkGroupID.x * THREADS + THREADS - 1u) / pooled);
    const uint kk = uint(KH * KW), filter_floats = p.channels * kk;
    const uint plane = p.padded_h * p.padded_w, image_floats = p.channels * plane;
    for (uint n = gl_WorkGroupID.z; n < p.batch; n += gl_NumWorkGroups.z) {
        barrier(); // the previous image's reads are done
        const uint image = p.off0 + n * p.channels * p.height * p.width;
        for (uint i0 = tid; i0 < image_floats; i0 += LOADS * THREADS) {
            float v[LOADS];
            for (uint k = 0u; k < LOADS; k++) v[k] = padded_x(image, i0 + k * THREADS, image_floats);
            for (uint k = 0u; k < LOADS; k++)
                if (i0 + k * THREADS < image_floats) xs[i0 + k * THREADS] = v[k];
        }
        const uint weight_floats = (last_filter - first_filter + 1u) * filter_floats;
        if (n == gl_WorkGroupID.z) {
            for (uint i0 = tid; i0 < weight_floats; i0 += LOADS * THREADS) {
                float v[LOADS];
                for (uint k = 0u; k < LOADS; k++) {
                    uint i = i0 + k * THREADS;
                    v[k] = w[p.off1 + first_filter * filter_floats + (i < weight_floats ? i : 0u)];
                }
                for (uint k = 0u; k < LOADS; k++)
                    if (i0 + k * THREADS < weight_floats) ws[i0 + k * THREADS] = v[k];
            }
        }
        barrier();
        if (item >= per_image) continue;
        uint f = item / pooled, pos = item - f * pooled;
        uint py = pos / p.pooled_w, px = pos - py * p.pooled_w;
        uint row0 = py * uint(POOL * SH), col0 = px * uint(POOL * SW); // in the padded image
        float acc[POOL * POOL];
        for (int q = 0; q < POOL * POOL; q++) acc[q] = 0.0;
        uint wi = (f - first_filter) * filter_floats;
        for (uint c = 0u; c < p.channels; c++) {
            for (int ki = 0; ki < KH; ki++, wi += uint(KW)) {
                float wr[KW];
                for (int kj = 0; kj < KW; kj++) wr[kj] = ws[wi + uint(kj)];
                for (int a = 0; a < POOL; a++) {
                    uint at = c * plane + (row0 + uint(a * SH + ki)) * p.padded_w + col0;
                    float xr[RUN];
                    for (int t = 0; t < RUN; t++) xr[t] = xs[at + uint(t)];
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
        uint at = n * per_image + item;
        y[p.off3 + at] = best;
        winners[p.off4 + at] = best > 0.0 ? win : -1; // the ReLU passes no gradient where it is 0
    }
}
