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

void main() {
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
