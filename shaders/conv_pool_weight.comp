#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NN_KERNEL_CONV2D_POOL_BACKWARD_WEIGHT (kernels.h): dweight and dbias of
// Conv2d -> ReLU -> MaxPool2d, from the pooled gradient and the winners.
// Only a window's winner has a gradient, so the sums run over the pooled
// outputs: dW[f, c, ki, kj] = sum over n and pooled (py, px) of dy * x at
// the winner's window position (ki, kj); dbias[f] = sum of dy there.
//
// Workgroup (group, block): the images of one group, for a block of
// filters, taken `round_images` at a time: it stages them (zero-padded)
// once for the block and, per pooled output of each filter, its gradient
// and where its winner's window starts, every load in flight at once
// (these kernels are bound by latency), then adds their terms. Each
// invocation has one work item (filter, unit, lane): a unit is a (channel,
// kernel row) whose KW weights it sums in registers (one more unit sums
// the bias), and the lanes split the pooled outputs between them; lanes
// are then added in order. With several groups each workgroup writes its
// sums as a partial, and the last workgroup of the block to finish adds
// the partials in a fixed order (vk_split_work.c), so the result does not
// depend on which workgroup ran first. That last sum is the one part no
// other workgroup overlaps, so all its invocations share it: each adds a
// run of groups (its loads in flight together), then the runs are added.
layout(local_size_x = 256) in;
layout(constant_id = 0) const int KH = 5;
layout(constant_id = 1) const int KW = 5;
layout(constant_id = 2) const int SH = 1;
layout(constant_id = 3) const int SW = 1;
layout(constant_id = 6) const bool PADDED = false; // any padding: staged with zeros around
// Floats left free after each staged channel plane (vk_conv_pool.c,
// weight_plane_gap): the sums' invocations read the same window position in
// the planes of several channels at once, and planes an even number of
// floats apart put those reads in fewer banks (12x12 planes, 144 floats:
// 5.7 reads per bank on average by a model of the addresses, 2.2 with 145).
layout(constant_id = 7) const uint PLANE_GAP = 0u;
const uint THREADS = 256u;
// vk_conv_pool.c keeps a round's padded images (and later the lanes' sums,
// THREADS * KW, and the block's outputs) and its pooled outputs within these.
const uint IMAGE_FLOATS = 4096u, TERMS = 1024u;

PUSH_CONSTANTS(PUSH_CONV_POOL_WEIGHT)
// Bindings: 0 dy, 1 winners, 2 x, 3 dweight, 4 dbias, 5 columns (unused),
// 6 the split work area (partials at off6; counters at p.counters).
layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) readonly buffer Winners { int winners[]; };
layout(std430, binding = 2) readonly buffer X { float x[]; };
layout(std430, binding = 3) buffer DW { float dw[]; };
layout(std430, binding = 4) buffer DB { float db[]; };
layout(std430, binding = 6) coherent buffer Work { float partials[]; };
layout(std430, binding = 6) coherent buffer WorkCounters { uint work_counters[]; };

shared float xs[IMAGE_FLOATS]; // the images; after the sums, the lanes' sums
shared float term_g[TERMS];    // a pooled output's gradient (0 where the ReLU stops it)
shared uint term_at[TERMS];    // where its winner's window starts in xs
shared bool last_of_block;

#define STAGED_AT(i) ((i) + (i) / (p.padded_h * p.padded_w) * PLANE_GAP)
#include "conv_pool_stage.glsl"

#define DW_AT p.off[3]
#define DB_AT p.off[4]
#include "conv_pool_store.glsl"

// The terms of images [first, first + images) for filters [f0, f0 + count):
// term (filter, image, position) at ((filter - f0) * images + image) *
// pooled_plane + position.
void stage_terms(uint first, uint images, uint f0, uint count, uint image_floats) {
    const uint tid = gl_LocalInvocationID.x, positions = images * p.pooled_plane, terms = count * positions;
    for (uint q0 = tid; q0 < terms; q0 += LOADS * THREADS) {
        int win[LOADS];
        float g[LOADS];
        for (uint k = 0u; k < LOADS; k++) {
            uint q = min(q0 + k * THREADS, terms - 1u);
            uint fl = q / positions, rest = q - fl * positions;
            uint image = rest / p.pooled_plane, pos = rest - image * p.pooled_plane;
            uint j = ((first + image) * p.filters + f0 + fl) * p.pooled_plane + pos;
            win[k] = winners[p.off[1] + j];
            g[k] = dy[p.off[0] + j];
        }
        for (uint k = 0u; k < LOADS; k++) {
            uint q = q0 + k * THREADS;
            if (q >= terms) continue; // not break: the loop unrolls, win and g stay in registers
            uint image = (q - q / positions * positions) / p.pooled_plane;
            uint oh = uint(max(win[k], 0)) / p.out_w, ow = uint(max(win[k], 0)) - oh * p.out_w;
            term_g[q] = win[k] >= 0 ? g[k] : 0.0;
            term_at[q] = image * image_floats + oh * uint(SH) * p.padded_w + ow * uint(SW);
        }
    }
}

void main() {
    const uint tid = gl_LocalInvocationID.x, group = gl_WorkGroupID.x;
    const uint f0 = gl_WorkGroupID.y * p.block, count = min(p.block, p.filters - f0);
    const uint units = p.channels * uint(KH) + 1u; // per filter; the last unit is the bias
    const uint weights = p.channels * uint(KH * KW), outputs = weights + 1u;
    const uint plane = p.padded_h * p.padded_w + PLANE_GAP, image_floats = p.channels * plane; // as staged
    const uint image_entries = p.channels * p.padded_h * p.padded_w; // padded, without the gaps
    const uint group_first = group * p.group_images, group_end = min(group_first + p.group_images, p.batch);
    // This invocation's item: (lane, filter, unit), unit fastest.
    const uint items = count * units * p.lanes;
    const uint lane = tid / (count * units), fu = tid - lane * (count * units);
    const uint fl = fu / units, unit = fu - fl * units;
    const uint c = unit / uint(KH), ki = unit - c * uint(KH);
    const bool is_bias = unit == units - 1u;

    float acc[KW];
    for (int kj = 0; kj < KW; kj++) acc[kj] = 0.0;
    for (uint first = group_first; first < group_end; first += p.round_images) {
        const uint images = min(p.round_images, group_end - first), positions = images * p.pooled_plane;
        barrier(); // the previous round's reads are done
        stage_images(p.off[2] + first * p.channels * p.height * p.width, images * image_entries);
        stage_terms(first, images, f0, count, image_floats);
        barrier();
        if (tid >= items) continue;
        const uint terms = fl * positions;
        if (is_bias) {
            for (uint q = lane; q < positions; q += p.lanes) acc[0] += term_g[terms + q];
            continue;
        }
        const uint offset = c * plane + ki * p.padded_w;
        for (uint q = lane; q < positions; q += p.lanes) {
            float g = term_g[terms + q];
            uint at = term_at[terms + q] + offset;
            for (int kj = 0; kj < KW; kj++) acc[kj] += g * xs[at + uint(kj)];
        }
    }
    barrier(); // xs is free: it takes the lanes' sums
    if (tid < items)
        for (int kj = 0; kj < KW; kj++) xs[tid * uint(KW) + uint(kj)] = acc[kj];
    barrier();

    // This workgroup's sums, output (filter, o) with o = (c, ki, kj) or the
    // bias: lanes in order.
    const bool split = p.groups > 1u;
    const uint block_outputs = count * outputs, stride = p.filters * outputs;
    for (uint bo = tid; bo < block_outputs; bo += THREADS) {
        uint bf = bo / outputs, o = bo - bf * outputs;
        uint u = o == weights ? units - 1u : o / uint(KW), kj = o == weights ? 0u : o - u * uint(KW);
        float s = 0.0;
        for (uint l = 0u; l < p.lanes; l++) s += xs[((l * count + bf) * units + u) * uint(KW) + kj];
        if (split) partials[p.off[6] + group * stride + (f0 + bf) * outputs + o] = s;
        else store(f0 + bf, o, weights, s);
    }
    if (!split) return;
    memoryBarrierBuffer();
    barrier();
    if (tid == 0u) last_of_block = atomicAdd(work_counters[p.counters + gl_WorkGroupID.y], 1u) == p.groups - 1u;
    barrier();
    if (!last_of_block) return; // the same for the whole workgroup
    memoryBarrierBuffer();
    const uint parts = max(1u, THREADS / block_outputs), per_part = (p.groups + parts - 1u) / parts;
    for (uint slot = tid; slot < block_outputs * parts; slot += THREADS) {
        uint part = slot / block_outputs, bo = slot - part * block_outputs;
        uint g0 = part * per_part, g1 = min(g0 + per_part, p.groups);
        uint at = p.off[6] + f0 * outputs + bo;
        float s = 0.0;
        for (uint g = g0; g < g1; g += 32u) { // thirty-two loads in flight, added in group order
            float v[32];
            for (uint k = 0u; k < 32u; k++) v[k] = partials[at + min(g + k, g1 - 1u) * stride];
            for (uint k = 0u; k < 32u; k++) s += g + k < g1 ? v[k] : 0.0;
        }
        xs[slot] = s;
    }
    barrier();
    for (uint bo = tid; bo < block_outputs; bo += THREADS) {
        float s = 0.0;
        for (uint part = 0u; part < parts; part++) s += xs[part * block_outputs + bo];
        uint bf = bo / outputs;
        store(f0 + bf, bo - bf * outputs, weights, s);
    }
    if (tid == 0u) work_counters[p.counters + gl_WorkGroupID.y] = 0u;
}
