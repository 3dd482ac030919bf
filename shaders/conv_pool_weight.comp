#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NN_KERNEL_CONV2D_POOL_BACKWARD_WEIGHT (kernels.h): dweight and dbias of
// Conv2d -> ReLU -> MaxPool2d, from the pooled gradient and the winners.
// Only a window's winner has a gradient, so the sums run over the pooled
// outputs: dW[f, c, ki, kj] = sum over n and pooled (py, px) of dy * x at
// the winner's window position (ki, kj); dbias[f] = sum of dy there.
//
// Workgroup (group, f): the images of one group, for filter f. Its work
// items are (unit, lane): a unit is a (channel, kernel row) whose KW
// weights an invocation sums in registers (one more unit sums the bias),
// and the lanes split the group's pooled outputs between them; lanes are
// then added in order in shared memory. With several groups each writes
// its sums as a partial, and the last workgroup of filter f to finish adds
// the partials in group order (vk_split_work.c), so the result does not
// depend on which workgroup ran first.
layout(local_size_x = 128) in;
layout(constant_id = 0) const int KH = 5;
layout(constant_id = 1) const int KW = 5;
layout(constant_id = 2) const int SH = 1;
layout(constant_id = 3) const int SW = 1;
const uint THREADS = 128u;
const uint SHARED_FLOATS = 6144u; // the host keeps max(THREADS, units) * KW within it

layout(push_constant) uniform Params {
    PC_OFFSETS8
    uint batch, channels, height, width;
    int pad_h, pad_w;
    uint out_w;
    uint filters, pooled_plane;
    uint group_images, groups;
    uint lanes;          // lanes per unit
    uint has_weight, has_bias;
    uint accumulate, bias_accumulate;
    uint counters;       // the work area's first counter (element index in binding 6's block)
} p;
// Bindings: 0 dy, 1 winners, 2 x, 3 dweight, 4 dbias, 5 columns (unused),
// 6 the split work area (partials at off6; counters at p.counters).
layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) readonly buffer Winners { int winners[]; };
layout(std430, binding = 2) readonly buffer X { float x[]; };
layout(std430, binding = 3) buffer DW { float dw[]; };
layout(std430, binding = 4) buffer DB { float db[]; };
layout(std430, binding = 6) coherent buffer Work { float partials[]; };
layout(std430, binding = 6) coherent buffer WorkCounters { uint work_counters[]; };

shared float sums[SHARED_FLOATS];
shared bool last_of_filter;

// Output o of filter f: weight o, or the bias when o == weights.
void store(uint f, uint o, uint weights, float s) {
    if (o < weights && p.has_weight != 0u) {
        uint i = p.off3 + f * weights + o;
        dw[i] = p.accumulate != 0u ? dw[i] + s : s;
    } else if (o == weights && p.has_bias != 0u) {
        uint i = p.off4 + f;
        db[i] = p.bias_accumulate != 0u ? db[i] + s : s;
    }
}

void main() {
    const uint tid = gl_LocalInvocationID.x, group = gl_WorkGroupID.x, f = gl_WorkGroupID.y;
    const uint units = p.channels * uint(KH) + 1u; // the last unit is the bias
    const uint items = units * p.lanes;
    const uint weights = p.channels * uint(KH * KW), outputs = weights + 1u;
    const uint first_image = group * p.group_images;
    const uint images = min(p.group_images, p.batch - first_image);
    const uint positions = images * p.pooled_plane;

    for (uint item = tid; item < items; item += THREADS) {
        uint lane = item / units, unit = item - lane * units;
        uint c = unit / uint(KH), ki = unit - c * uint(KH);
        bool is_bias = unit == units - 1u;
        float acc[KW];
        for (int kj = 0; kj < KW; kj++) acc[kj] = 0.0;
        for (uint q = lane; q < positions; q += p.lanes) {
            uint image = q / p.pooled_plane, pos = q - image * p.pooled_plane;
            uint n = first_image + image;
            uint j = (n * p.filters + f) * p.pooled_plane + pos;
            int win = winners[p.off1 + j];
            if (win < 0) continue; // no gradient through this window
            float g = dy[p.off0 + j];
            if (is_bias) {
                acc[0] += g;
                continue;
            }
            int oh = win / int(p.out_w), ow = win - oh * int(p.out_w);
            int ih = oh * SH - p.pad_h + int(ki), iw0 = ow * SW - p.pad_w;
            if (ih < 0 || ih >= int(p.height)) continue;
            uint row = p.off2 + ((n * p.channels + c) * p.height + uint(ih)) * p.width;
            for (int kj = 0; kj < KW; kj++) {
                int iw = iw0 + kj;
                bool ok = iw >= 0 && iw < int(p.width);
                float v = x[ok ? row + uint(iw) : row];
                acc[kj] += g * (ok ? v : 0.0);
            }
        }
        for (int kj = 0; kj < KW; kj++) sums[item * uint(KW) + uint(kj)] = acc[kj];
    }
    barrier();

    // This workgroup's sums, output o = (c, ki, kj) or the bias: lanes in order.
    const bool split = p.groups > 1u;
    for (uint o = tid; o < outputs; o += THREADS) {
        uint unit = o == weights ? units - 1u : o / uint(KW), kj = o == weights ? 0u : o - unit * uint(KW);
        float s = 0.0;
        for (uint lane = 0u; lane < p.lanes; lane++) s += sums[(lane * units + unit) * uint(KW) + kj];
        if (split) partials[p.off6 + (group * p.filters + f) * outputs + o] = s;
        else store(f, o, weights, s);
    }
    if (!split) return;
    memoryBarrierBuffer();
    barrier();
    if (tid == 0u) last_of_filter = atomicAdd(work_counters[p.counters + f], 1u) == p.groups - 1u;
    barrier();
    if (!last_of_filter) return; // the same for the whole workgroup
    memoryBarrierBuffer();
    for (uint o = tid; o < outputs; o += THREADS) {
        float s = 0.0;
        for (uint g = 0u; g < p.groups; g++) s += partials[p.off6 + (g * p.filters + f) * outputs + o];
        store(f, o, weights, s);
    }
    if (tid == 0u) work_counters[p.counters + f] = 0u;
}
