#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// dbias[c] (+)= sum over o, i of dy[o, c, i]. A channel's outer * inner
// entries are cut into chunks (of one PIECE where the work area allows,
// else one chunk of all); workgroup (x, y) sums chunk x of channel y, a
// PIECE at a time (each invocation's eight loads in flight at once), then
// by a tree in shared memory. With one chunk that is the answer. With
// more, each workgroup writes its chunk's sum to the split work area
// (binding 2, vk_split_work.c) and the channel's last workgroup to finish
// adds the chunk sums (again by a fixed tree, so the result does not
// depend on the order the workgroups ran in) and resets the channel's
// counter. One dispatch with enough workgroups to fill the GPU, where one
// workgroup per channel left a layer of few, large channels (6 x 50,176
// entries) to a handful of workgroups, each walking its channel alone (and
// summing with Kahan's compensation, which the trees make unneeded).
// With p.columns (inner == 1: dy a [rows, channels] matrix, channels-last
// activations and Linear's outputs) workgroup (x, y) sums rows chunk x of
// a block of 64 neighbouring channels instead, its lanes reading along
// rows, so that each load is one contiguous run of a row; a channel alone
// strides its rows and reads every sector of the matrix once per channel.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_BIAS_GRAD)
layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) buffer DB { float db[]; };
layout(std430, binding = 2) coherent buffer Work { float partial[]; };
layout(std430, binding = 2) coherent buffer WorkCounters { uint work_counters[]; };

const uint PER_INVOCATION = 8u;
const uint PIECE = 256u * PER_INVOCATION;

shared float part[256];
shared bool last_of_channel;

// part[0] = the sum of every invocation's value, by a fixed tree.
void workgroup_sum(float value) {
    uint tid = gl_LocalInvocationID.x;
    part[tid] = value;
    barrier();
    for (uint s = 128u; s > 0u; s >>= 1) {
        if (tid < s) part[tid] += part[tid + s];
        barrier();
    }
}

const uint BLOCK = 64u;                 // channels a workgroup sums in column mode
const uint ROW_LANES = 256u / BLOCK;    // rows it reads at once

// Column mode: a block of 64 channels over one chunk of rows; with several
// chunks, the block's last workgroup to finish adds their sums in order.
void sum_columns() {
    uint tid = gl_LocalInvocationID.x, lane = tid / BLOCK, chunk = gl_WorkGroupID.x;
    uint c = gl_WorkGroupID.y * BLOCK + tid % BLOCK;
    bool inside = c < p.channels;
    uint end = min(p.outer, (chunk + 1u) * p.chunk);
    float sum = 0.0;
    for (uint r = chunk * p.chunk + lane; r < end; r += ROW_LANES * PER_INVOCATION) {
        float v[PER_INVOCATION];
        for (uint j = 0u; j < PER_INVOCATION; j++) {
            uint row = r + j * ROW_LANES;
            v[j] = inside && row < end ? dy[p.off[0] + row * p.channels + c] : 0.0;
        }
        for (uint j = 0u; j < PER_INVOCATION; j++) sum += v[j];
    }
    part[tid] = sum;
    barrier();
    // lane 0 adds the lanes' sums of its channel in lane order
    if (lane == 0u) {
        sum = part[tid];
        for (uint l = 1u; l < ROW_LANES; l++) sum += part[tid + l * BLOCK];
    }
    if (p.chunks > 1u) {
        if (lane == 0u && inside) partial[p.off[2] + c * p.chunks + chunk] = sum;
        memoryBarrierBuffer();
        barrier();
        if (tid == 0u)
            last_of_channel = atomicAdd(work_counters[p.counters + gl_WorkGroupID.y], 1u) == p.chunks - 1u;
        barrier();
        if (!last_of_channel) return; // the same for the whole workgroup
        memoryBarrierBuffer();
        sum = 0.0;
        if (inside)
            for (uint j = lane; j < p.chunks; j += ROW_LANES) sum += partial[p.off[2] + c * p.chunks + j];
        part[tid] = sum;
        barrier();
        if (lane == 0u) {
            sum = part[tid];
            for (uint l = 1u; l < ROW_LANES; l++) sum += part[tid + l * BLOCK];
        }
        if (tid == 0u) work_counters[p.counters + gl_WorkGroupID.y] = 0u;
    }
    if (lane == 0u && inside) db[p.off[1] + c] = (p.accumulate != 0 ? db[p.off[1] + c] : 0.0) + sum;
}

void main() {
    if (p.columns != 0u) {
        sum_columns();
        return;
    }
    uint tid = gl_LocalInvocationID.x;
    uint count = p.outer * p.inner;
    uint chunk = gl_WorkGroupID.x;
    for (uint c = gl_WorkGroupID.y; c < p.channels; c += gl_NumWorkGroups.y) {
        float sum = 0.0;
        uint end = min(count, (chunk + 1u) * p.chunk);
        for (uint piece = chunk * p.chunk; piece < end; piece += PIECE) {
            float v[PER_INVOCATION];
            for (uint j = 0u; j < PER_INVOCATION; j++) {
                uint e = piece + j * 256u + tid;
                v[j] = 0.0;
                if (e < end) {
                    uint o = e / p.inner, i = e - o * p.inner;
                    v[j] = dy[p.off[0] + (o * p.channels + c) * p.inner + i];
                }
            }
            for (uint j = 0u; j < PER_INVOCATION; j++) sum += v[j];
        }
        workgroup_sum(sum);
        if (p.chunks > 1u) {
            if (tid == 0u) {
                partial[p.off[2] + c * p.chunks + chunk] = part[0];
                memoryBarrierBuffer();
                last_of_channel = atomicAdd(work_counters[p.counters + c], 1u) == p.chunks - 1u;
            }
            barrier();
            if (!last_of_channel) continue; // the same for the whole workgroup
            memoryBarrierBuffer();
            float chunks_sum = 0.0;
            for (uint j = tid; j < p.chunks; j += 256u) chunks_sum += partial[p.off[2] + c * p.chunks + j];
            workgroup_sum(chunks_sum);
            if (tid == 0u) work_counters[p.counters + c] = 0u;
        }
        if (tid == 0u) db[p.off[1] + c] = (p.accumulate != 0 ? db[p.off[1] + c] : 0.0) + part[0];
        barrier();
    }
}
