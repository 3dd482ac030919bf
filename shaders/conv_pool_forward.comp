#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
// NN_KERNEL_CONV2D_POOL_FORWARD (kernels.h): Conv2d -> ReLU -> MaxPool2d
// with whole windows, writing only the pooled output and the winners.
//
// An invocation computes one pooled position (py, px) for FB filters: the
// POOL x POOL convolution outputs of its window for each, then bias, ReLU
// and the max. A workgroup takes THREADS such items of one image (128, or
// with the Linear up to 256: vk_conv_pool.c), positions fastest, so a warp
// shares its filters (the weight reads are broadcasts).
// It first stages the image (zero-padded) and its filters' weights in
// shared memory, every load in flight at once: these kernels are bound by
// latency, and chains of dependent global loads are what would cost.
//
// Shared-memory reads are the other bound, so each is used as often as
// registers allow: the window, stride, pooling and FB are specialization
// constants (vk_pipeline_special: a pipeline per layer shape), the loops
// unroll, and each input row segment a kernel row reads is loaded once
// for the window's POOL outputs of all FB filters.
//
// NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD is the same kernel with LINEAR > 0:
// a Linear of LINEAR outputs then takes the image's pooled output,
// flattened (filter, position), from the workgroups that computed it, so
// it needs no barrier and no kernel of its own (linear_tail below).
layout(local_size_x_id = 8) in;
layout(constant_id = 0) const int KH = 5;
layout(constant_id = 1) const int KW = 5;
layout(constant_id = 2) const int SH = 1;
layout(constant_id = 3) const int SW = 1;
layout(constant_id = 4) const int POOL = 2;
layout(constant_id = 5) const int FB = 2;         // filters per invocation
layout(constant_id = 6) const bool PADDED = false; // any padding: staged with zeros around
layout(constant_id = 7) const uint LINEAR = 0u;    // the Linear's outputs (0: no Linear)
const uint THREADS = gl_WorkGroupSize.x;
const int RUN = (POOL - 1) * SW + KW; // input columns one kernel row of the window reads
const int WINDOW = POOL * POOL;
// The shared floats for a padded image and a workgroup's weights: what the
// layer needs (vk_conv_pool.c, forward_shared), so small layers leave room
// for more workgroups per multiprocessor.
layout(constant_id = 9) const uint IMAGE_FLOATS = 4096u;
layout(constant_id = 10) const uint WEIGHT_FLOATS = 3072u;

PUSH_CONSTANTS(PUSH_CONV_POOL_FORWARD)
// Bindings: 0 x, 1 weight, 2 bias, 3 y, 4 winners; the Linear's 5 weight,
// 6 bias, 7 output h; 9 the work area (partials at off8, counters at
// p.counters).
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Wt { float w[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(std430, binding = 4) writeonly buffer Winners { int winners[]; };
layout(std430, binding = 5) readonly buffer LinW { float lin_w[]; };
layout(std430, binding = 5) readonly buffer LinW4 { vec4 lin_w4[]; };
layout(std430, binding = 6) readonly buffer LinB { float lin_b[]; };
layout(std430, binding = 7) writeonly buffer H { float h[]; };
layout(std430, binding = 9) coherent buffer Work { float partials[]; };
layout(std430, binding = 9) coherent buffer WorkCounters { uint work_counters[]; };

shared float xs[IMAGE_FLOATS];
shared float ws[WEIGHT_FLOATS];
shared float feats[LINEAR > 0u ? THREADS * uint(FB) : 1u]; // the Linear's inputs
shared bool last_arrival;

#include "conv_pool_stage.glsl"
#include "conv_pool_linear.glsl"

// As the CPU's max pooling: the first maximum wins, a NaN takes over.
bool takes_over(float v, float best) { return v > best || (isnan(v) && !isnan(best)); }

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint pooled = p.pooled_h * p.pooled_w;
    const uint blocks = (p.filters + uint(FB) - 1u) / uint(FB), per_image = blocks * pooled;
    const uint item = gl_WorkGroupID.x * THREADS + tid;
    // The filters this workgroup's items cover, whose weights it stages.
    const uint first_filter = gl_WorkGroupID.x * THREADS / pooled * uint(FB);
    const uint end_filter = min(p.filters, ((gl_WorkGroupID.x * THREADS + THREADS - 1u) / pooled + 1u) * uint(FB));
    const uint kk = uint(KH * KW), filter_floats = p.channels * kk;
    const uint plane = p.padded_h * p.padded_w, image_floats = p.channels * plane;
    const uint weight_floats = (end_filter - first_filter) * filter_floats;
    // With the Linear the workgroup's items are whole blocks (vk_conv_pool.c),
    // so its features are one run of the flattened output, from this one.
    const uint first_feature = gl_WorkGroupID.x * THREADS * uint(FB);
    for (uint n = gl_WorkGroupID.z; n < p.batch; n += gl_NumWorkGroups.z) {
        barrier(); // the previous image's reads are done
        stage_images(p.off[0] + n * p.channels * p.height * p.width, image_floats);
        if (n == gl_WorkGroupID.z) {
            for (uint i0 = tid; i0 < weight_floats; i0 += LOADS * THREADS) {
                float v[LOADS];
                for (uint k = 0u; k < LOADS; k++)
                    v[k] = w[p.off[1] + first_filter * filter_floats + min(i0 + k * THREADS, weight_floats - 1u)];
                for (uint k = 0u; k < LOADS; k++)
                    if (i0 + k * THREADS < weight_floats) ws[i0 + k * THREADS] = v[k];
            }
        }
        barrier();
        float pooled_out[FB]; // the Linear's inputs (0 past the image's last filter)
        for (int fb = 0; fb < FB; fb++) pooled_out[fb] = 0.0;
        if (item < per_image) {
            uint block = item / pooled, pos = item - block * pooled;
            uint f0 = block * uint(FB);
            uint py = pos / p.pooled_w, px = pos - py * p.pooled_w;
            uint row0 = py * uint(POOL * SH), col0 = px * uint(POOL * SW); // in the padded image
            float acc[FB * WINDOW];
            for (int q = 0; q < FB * WINDOW; q++) acc[q] = 0.0;
            // Filters past the last read the block's first one's weights (discarded).
            uint wbase[FB];
            for (int fb = 0; fb < FB; fb++)
                wbase[fb] = (min(f0 + uint(fb), p.filters - 1u) - first_filter) * filter_floats;
            for (uint c = 0u; c < p.channels; c++) {
                for (int ki = 0; ki < KH; ki++) {
                    uint wk = c * kk + uint(ki * KW);
                    float wr[FB * KW];
                    for (int fb = 0; fb < FB; fb++)
                        for (int kj = 0; kj < KW; kj++) wr[fb * KW + kj] = ws[wbase[fb] + wk + uint(kj)];
                    for (int a = 0; a < POOL; a++) {
                        uint at = c * plane + (row0 + uint(a * SH + ki)) * p.padded_w + col0;
                        float xr[RUN];
                        for (int t = 0; t < RUN; t++) xr[t] = xs[at + uint(t)];
                        for (int fb = 0; fb < FB; fb++)
                            for (int b = 0; b < POOL; b++)
                                for (int kj = 0; kj < KW; kj++)
                                    acc[fb * WINDOW + a * POOL + b] += wr[fb * KW + kj] * xr[b * SW + kj];
                    }
                }
            }
            // Bias and ReLU (a NaN passes, as relu_forward), then the window's
            // maximum in row-major order.
            for (int fb = 0; fb < FB; fb++) { // unrolled: acc stays in registers
                uint f = f0 + uint(fb);
                if (f >= p.filters) continue;
                float b = (p.flags & 1u) != 0u ? bias[p.off[2] + f] : 0.0;
                float best = 0.0;
                int win = 0;
                for (int q = 0; q < WINDOW; q++) {
                    float v = acc[fb * WINDOW + q] + b;
                    v = v < 0.0 ? 0.0 : v;
                    int index = (int(py) * POOL + q / POOL) * int(p.out_w) + int(px) * POOL + q % POOL;
                    if (q == 0 || takes_over(v, best)) {
                        best = v;
                        win = index;
                    }
                }
                uint at = (n * p.filters + f) * pooled + pos;
                y[p.off[3] + at] = best;
                winners[p.off[4] + at] = best > 0.0 ? win : -1; // the ReLU passes no gradient where it is 0
                pooled_out[fb] = best;
            }
        }
        if (LINEAR > 0u) linear_tail(n, first_feature, pooled_out);
    }
}
