#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NORM_STATS: workgroup (j, g) reads chunk j of group g's outer * inner
// elements once, a PIECE at a time (consecutive invocations at consecutive
// elements of a run of inner, eight loads in flight each), each invocation
// merging every piece's values into its moments (count, mean, M2) by
// Chan's formula, then the workgroup's by a fixed tree. One chunk is the
// answer; with more (few, large groups: BatchNorm), each workgroup writes
// its chunk's mean and M2 to the split work area (binding 3,
// vk_split_work.c) and the group's last to arrive merges them, again by a
// fixed tree, so the result does not depend on the order workgroups ran.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_NORM)
#include "norm_common.glsl"
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer M { float mean_out[]; };
layout(std430, binding = 2) buffer V { float var_out[]; };
layout(std430, binding = 3) coherent buffer Work { float partial[]; };
layout(std430, binding = 3) coherent buffer WorkCounters { uint work_counters[]; };
shared bool last_arrival;
#include "last_arrival.glsl"

// This invocation's moments of chunk j of group g.
Moments chunk_moments(uint g, uint j, uint n) {
    uint tid = gl_LocalInvocationID.x, end = chunk_end(j, n);
    Moments m = Moments(0.0, 0.0, 0.0);
    for (uint piece = j * p.chunk; piece < end; piece += PIECE) {
        float v[NORM_LOADS];
        float count = 0.0, sum = 0.0;
        for (uint i = 0u; i < NORM_LOADS; i++) {
            uint k = piece + i * NORM_THREADS + tid;
            v[i] = k < end ? x[p.off[0] + group_element(g, k)] : 0.0;
            if (k < end) count += 1.0;
            sum += v[i];
        }
        if (count == 0.0) break; // the chunk's last piece ended before this invocation
        float mu = sum / count, m2 = 0.0;
        for (uint i = 0u; i < NORM_LOADS; i++)
            if (piece + i * NORM_THREADS + tid < end) m2 += (v[i] - mu) * (v[i] - mu);
        m = moments_merge(m, Moments(count, mu, m2));
    }
    return m;
}

// Groups of at most a PIECE (LayerNorm's rows): row_threads(n) invocations
// a group, NORM_THREADS / row_threads(n) groups a workgroup (vk_norm.c
// dispatches that many fewer), each invocation's values in registers.
void row_groups(uint n) {
    uint tid = gl_LocalInvocationID.x, width = row_threads(n), lane = tid & (width - 1u);
    uint rows = NORM_THREADS / width, first = tid - lane;
    for (uint base = gl_WorkGroupID.y * rows; base < p.groups; base += gl_NumWorkGroups.y * rows) {
        uint g = base + tid / width;
        float v[NORM_LOADS];
        float count = 0.0, sum = 0.0;
        for (uint i = 0u; i < NORM_LOADS; i++) {
            uint k = i * width + lane;
            bool here = g < p.groups && k < n;
            v[i] = here ? x[p.off[0] + group_element(g, k)] : 0.0;
            if (here) count += 1.0;
            sum += v[i];
        }
        float mu = count > 0.0 ? sum / count : 0.0, m2 = 0.0;
        for (uint i = 0u; i < NORM_LOADS; i++)
            if (g < p.groups && i * width + lane < n) m2 += (v[i] - mu) * (v[i] - mu);
        segment_moments(Moments(count, mu, m2), width);
        if (lane == 0u && g < p.groups) {
            mean_out[p.off[1] + g] = norm_part2[first];
            var_out[p.off[2] + g] = n > 0u ? norm_part3[first] / float(n) : 0.0;
        }
        barrier(); // the tree's results read before the next groups' tree
    }
}

void main() {
    uint tid = gl_LocalInvocationID.x, j = gl_WorkGroupID.x;
    uint n = p.outer * p.inner;
    if (n <= PIECE) {
        row_groups(n);
        return;
    }
    for (uint g = gl_WorkGroupID.y; g < p.groups; g += gl_NumWorkGroups.y) {
        workgroup_moments(chunk_moments(g, j, n));
        if (p.chunks > 1u) {
            uint slot = p.off[3] + (g * p.chunks + j) * 2u;
            if (tid == 0u) {
                partial[slot] = norm_part2[0];
                partial[slot + 1u] = norm_part3[0];
            }
            if (!arrives_last(g, p.chunks)) continue; // the same for the whole workgroup
            Moments m = Moments(0.0, 0.0, 0.0);
            for (uint c = tid; c < p.chunks; c += NORM_THREADS) {
                uint at = p.off[3] + (g * p.chunks + c) * 2u;
                m = moments_merge(m, Moments(float(chunk_end(c, n) - c * p.chunk), partial[at], partial[at + 1u]));
            }
            workgroup_moments(m);
        }
        if (tid == 0u) {
            mean_out[p.off[1] + g] = norm_part2[0];
            var_out[p.off[2] + g] = n > 0u ? norm_part3[0] / float(n) : 0.0;
        }
        barrier();
    }
}
