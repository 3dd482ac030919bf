#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT (kernels.h): the weight and bias
// gradients of a Conv2d -> ReLU -> MaxPool2d layer (the first) whose output
// is the input of a second such layer, from the second's pooled gradient:
// the second's data gradient (conv_pool_data.glsl) computed where the
// first's weight gradient uses it, so it never goes to memory and the two
// need no barrier between them.
//
// A workgroup takes one image and a block of the first layer's filters
// (the second's input channels). Its invocations first load the image and
// the first layer's winners at their pixels, which wait behind the data
// gradient; each then holds the data gradient of R pixels of one channel
// of the first layer's output, that is the first layer's pooled gradient,
// and turns it into the terms of its weight gradient (conv_pool_weight.comp
// sums the same terms): the gradient, 0 where the first layer's ReLU passed
// none, and where its winner's window starts in the staged image. Items
// (lane, filter, unit) then add the terms, a unit being a (channel, kernel
// row) whose KW1 weights it sums in registers (one more unit sums the
// bias), and the lanes are added in order: the image's sums, written as a
// partial. The images' partials are added in a fixed order, so the result
// does not depend on which workgroup ran first: for each filter block, the
// last workgroup of each block of images to finish adds its block's, and
// the last block the blocks' (two short sums instead of one long one by a
// single workgroup). Only the block's channels of the second layer's
// weights are staged.
layout(local_size_x = 256) in;
layout(constant_id = 0) const int KH = 5; // the second layer's window and strides
layout(constant_id = 1) const int KW = 5;
layout(constant_id = 2) const int SH = 1;
layout(constant_id = 3) const int SW = 1;
layout(constant_id = 4) const int R = 4;   // pixels per unit of the data gradient
layout(constant_id = 5) const int KW1 = 5; // the first layer's window width
const uint THREADS = 256u;
// vk_conv_pool.c keeps the staged planes, the second layer's weights and
// the first layer's padded image within this.
const uint SMEM_FLOATS = 8184u; // with last_arrival, within 32 KiB

PUSH_CONSTANTS(PUSH_CONV_POOL_CHAIN_WEIGHT)
// Bindings: 0-2 the second layer's pooled gradient, winners and weight;
// 3-4 the first layer's winners and input; 5-6 its dweight and dbias;
// 7 the work area (the images' partials, then the blocks', at off7;
// counters at p.counters).
layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) readonly buffer Winners { int winners[]; };
layout(std430, binding = 2) readonly buffer Wt { float w[]; };
layout(std430, binding = 3) readonly buffer FirstWinners { int first_winners[]; };
layout(std430, binding = 4) readonly buffer X { float x[]; };
layout(std430, binding = 5) buffer DW { float dw[]; };
layout(std430, binding = 6) buffer DB { float db[]; };
layout(std430, binding = 7) coherent buffer Work { float partials[]; };
layout(std430, binding = 7) coherent buffer WorkCounters { uint work_counters[]; };

shared float smem[SMEM_FLOATS];
shared bool last_arrival;

#include "conv_pool_data.glsl"
#include "last_arrival.glsl"

#define DW_AT p.off[5]
#define DB_AT p.off[6]
#include "conv_pool_store.glsl"

// The sum over `count` partials from partials[at] on, `stride` apart, in
// order, sixteen loads in flight.
float sum_partials(uint at, uint count, uint stride) {
    float s = 0.0;
    for (uint i0 = 0u; i0 < count; i0 += 16u) {
        float v[16];
        for (uint k = 0u; k < 16u; k++) v[k] = partials[at + min(i0 + k, count - 1u) * stride];
        for (uint k = 0u; k < 16u; k++) s += i0 + k < count ? v[k] : 0.0;
    }
    return s;
}

void main() {
    const uint tid = gl_LocalInvocationID.x, n = gl_WorkGroupID.x;
    const uint c0 = gl_WorkGroupID.y * p.filter_block, count = min(p.filter_block, p.channels - c0);
    const uint runs = (p.width + uint(R) - 1u) / uint(R);
    const bool in_range = tid < count * p.height * runs;
    uint c = c0, h = 0u, w0 = 0u;
    if (in_range) {
        uint ch = tid / runs;
        w0 = (tid - ch * runs) * uint(R);
        c = c0 + ch / p.height;
        h = ch - (c - c0) * p.height;
    }
    const uint plane1 = p.height * p.width; // the first layer's pooled plane
    const uint pad_h1 = p.x_pad & 0xffffu, pad_w1 = p.x_pad >> 16u;
    const uint padded_w = p.x_width + 2u * pad_w1, padded_plane = (p.x_height + 2u * pad_h1) * padded_w;
    const uint image_floats = p.x_channels * padded_plane;
    const uint xs = data_weights_at() + p.chunk * p.filter_block * uint(KH * KW); // the staged image

    // The first layer's winners at this unit's pixels, and its image
    // (zero-padded), loaded before the data gradient hides their latency.
    int win1[R];
    for (int r = 0; r < R; r++)
        win1[r] = first_winners[p.off[3] + (n * p.channels + c) * plane1 + h * p.width + min(w0 + uint(r), p.width - 1u)];
    for (uint i0 = tid; i0 < image_floats; i0 += LOADS * THREADS) {
        float v[LOADS];
        bool inside[LOADS];
        for (uint k = 0u; k < LOADS; k++) {
            uint i = min(i0 + k * THREADS, image_floats - 1u);
            uint ic = i / padded_plane, rest = i - ic * padded_plane, ph = rest / padded_w;
            int hh = int(ph) - int(pad_h1), ww = int(rest - ph * padded_w) - int(pad_w1);
            inside[k] = hh >= 0 && hh < int(p.x_height) && ww >= 0 && ww < int(p.x_width);
            v[k] = x[p.off[4] + (inside[k] ? (n * p.x_channels + ic) * p.x_height * p.x_width +
                                               uint(hh) * p.x_width + uint(ww)
                                         : 0u)];
        }
        for (uint k = 0u; k < LOADS; k++)
            if (i0 + k * THREADS < image_floats) smem[xs + i0 + k * THREADS] = inside[k] ? v[k] : 0.0;
    }

    float acc[R];
    image_gradient(n, c, h, w0, in_range, c0, count, acc);

    // The terms: term q = (filter in the block, pooled position) of the
    // first layer at smem[q], where its window starts in the image at
    // smem[terms + q].
    const uint terms = p.filter_block * plane1;
    barrier(); // the data gradient's reads of smem are done
    if (in_range) {
        const uint sh1 = p.first_stride & 0xffffu, sw1 = p.first_stride >> 16u;
        for (int r = 0; r < R; r++) {
            uint wc = w0 + uint(r);
            if (wc >= p.width) continue;
            uint q = (c - c0) * plane1 + h * p.width + wc, at = uint(max(win1[r], 0));
            uint oh = at / p.first_out_w, ow = at - oh * p.first_out_w;
            smem[q] = win1[r] >= 0 ? acc[r] : 0.0;
            smem[terms + q] = float(oh * sh1 * padded_w + ow * sw1); // exact: below SMEM_FLOATS
        }
    }
    barrier();

    // Items (lane, filter in the block, unit), unit fastest.
    const uint filters1 = count, units1 = p.x_channels * p.first_kh + 1u;
    const uint weights1 = units1 * uint(KW1) - uint(KW1), outputs1 = weights1 + 1u;
    const uint lanes = max(1u, THREADS / (filters1 * units1)), items = filters1 * units1 * lanes;
    const uint lane = tid / (filters1 * units1), fu = tid - lane * (filters1 * units1);
    const uint fl = fu / units1, unit1 = fu - fl * units1;
    const uint c1 = unit1 / p.first_kh, ki = unit1 - c1 * p.first_kh;
    float wacc[KW1];
    for (int kj = 0; kj < KW1; kj++) wacc[kj] = 0.0;
    if (tid < items) {
        const uint first_term = fl * plane1;
        if (unit1 == units1 - 1u) {
            for (uint q = lane; q < plane1; q += lanes) wacc[0] += smem[first_term + q];
        } else {
            const uint offset = xs + c1 * padded_plane + ki * padded_w;
            for (uint q = lane; q < plane1; q += lanes) {
                float g = smem[first_term + q];
                uint at = uint(smem[terms + first_term + q]) + offset;
                for (int kj = 0; kj < KW1; kj++) wacc[kj] += g * smem[at + uint(kj)];
            }
        }
    }
    barrier(); // the terms are read: smem takes the lanes' sums
    if (tid < items)
        for (int kj = 0; kj < KW1; kj++) smem[tid * uint(KW1) + uint(kj)] = wacc[kj];
    barrier();

    // The image's sums for the block's filters, output (filter, o) with o
    // = (channel, ki, kj) or the bias, lanes in order; a partial is a row
    // of all the filters' outputs, stride floats.
    const uint stride = p.channels * outputs1, mine = filters1 * outputs1, first_output = c0 * outputs1;
    for (uint bo = tid; bo < mine; bo += THREADS) {
        uint bf = bo / outputs1, o = bo - bf * outputs1;
        uint u = o == weights1 ? units1 - 1u : o / uint(KW1), kj = o == weights1 ? 0u : o - u * uint(KW1);
        float s = 0.0;
        for (uint l = 0u; l < lanes; l++) s += smem[((l * filters1 + bf) * units1 + u) * uint(KW1) + kj];
        partials[p.off[7] + n * stride + first_output + bo] = s;
    }

    // The block's images in order, then the blocks in order (counters per
    // filter block: block * filter blocks + which, then one per filter block
    // after them).
    const uint block = n / p.block_images, blocks = (p.batch + p.block_images - 1u) / p.block_images;
    const uint first_image = block * p.block_images, images = min(p.block_images, p.batch - first_image);
    const uint which = gl_WorkGroupID.y, filter_blocks = gl_NumWorkGroups.y;
    if (!arrives_last(block * filter_blocks + which, images)) return; // the same for the whole workgroup
    const uint block_partials = p.off[7] + p.batch * stride + first_output;
    for (uint bo = tid; bo < mine; bo += THREADS) {
        float s = sum_partials(p.off[7] + first_image * stride + first_output + bo, images, stride);
        if (blocks == 1u) store(c0 + bo / outputs1, bo - bo / outputs1 * outputs1, weights1, s);
        else partials[block_partials + block * stride + bo] = s;
    }
    if (blocks == 1u || !arrives_last(blocks * filter_blocks + which, blocks)) return;
    for (uint bo = tid; bo < mine; bo += THREADS)
        store(c0 + bo / outputs1, bo - bo / outputs1 * outputs1, weights1,
              sum_partials(block_partials + bo, blocks, stride));
}
