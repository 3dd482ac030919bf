#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Embedding gradient (NN_KERNEL_EMBEDDING_BACKWARD) through the positions
// sorted by row, in four phases (p.phase, vk_embedding.c), so the work is
// the indices and the rows once each, not their product:
//   COUNT    counts[r] = the positions that picked row r (integer atomics:
//            exact, any order);
//   SCAN     starts[r] = the sum of the counts before r (one workgroup),
//            counts zeroed again to serve as cursors;
//   SCATTER  each position into its row's segment of order[] (the order
//            within a segment is the atomics');
//   SUM      a workgroup per row sorts its segment (a bitonic network whose
//            comparisons all put the smaller first, so the unsorted tail
//            past the segment is never touched) and adds dy's rows in
//            order of position: the CPU's sums, bit for bit, no float
//            atomics. Row padding_idx and bad indices get nothing.
PUSH_CONSTANTS(PUSH_EMBEDDING)
layout(local_size_x = 256) in;
const uint THREADS = 256u;
const int COUNT = 0, SCAN = 1, SCATTER = 2, SUM = 3;
layout(std430, binding = 0) readonly buffer I { int indices[]; };
layout(std430, binding = 1) readonly buffer D { float dy[]; };
layout(std430, binding = 2) buffer G { float dweight[]; };
layout(std430, binding = 3) buffer C { uint counts[]; };
layout(std430, binding = 4) buffer S { uint starts[]; };
layout(std430, binding = 5) coherent buffer O { uint order[]; };

shared uint part[THREADS];

bool counted(int row) { return row >= 0 && row < p.num && row != p.padding_idx; }

void count_rows() {
    GRID_STRIDE_LOOP(i, p.count) {
        int row = indices[p.off[0] + i];
        if (counted(row)) atomicAdd(counts[p.off[3] + uint(row)], 1u);
    }
}

// Exclusive sums by chunks of rows: each invocation's chunk total, their
// exclusive scan over the workgroup, then each chunk walked again.
void scan_rows() {
    uint tid = gl_LocalInvocationID.x, num = uint(p.num);
    uint chunk = (num + THREADS - 1u) / THREADS, first = min(tid * chunk, num), last = min(first + chunk, num);
    uint total = 0u;
    for (uint r = first; r < last; r++) total += counts[p.off[3] + r];
    part[tid] = total;
    barrier();
    for (uint s = 1u; s < THREADS; s <<= 1) {
        uint add = tid >= s ? part[tid - s] : 0u;
        barrier();
        part[tid] += add;
        barrier();
    }
    uint running = part[tid] - total;
    for (uint r = first; r < last; r++) {
        uint c = counts[p.off[3] + r];
        starts[p.off[4] + r] = running;
        running += c;
        counts[p.off[3] + r] = 0u;
    }
    if (tid == THREADS - 1u) starts[p.off[4] + num] = part[tid];
}

void scatter_positions() {
    GRID_STRIDE_LOOP(i, p.count) {
        int row = indices[p.off[0] + i];
        if (counted(row))
            order[p.off[5] + starts[p.off[4] + uint(row)] + atomicAdd(counts[p.off[3] + uint(row)], 1u)] = i;
    }
}

void exchange(uint base, uint a, uint b, uint len) {
    if (b >= len) return; // past the segment: a virtual largest, never moved
    uint x = order[base + a], y = order[base + b];
    if (x > y) {
        order[base + a] = y;
        order[base + b] = x;
    }
}

void sort_segment(uint base, uint len) {
    uint padded = 1u;
    while (padded < len) padded <<= 1;
    for (uint k = 2u; k <= padded; k <<= 1) {
        for (uint i = gl_LocalInvocationID.x; i < padded / 2u; i += THREADS) {
            uint half_k = k / 2u, block = i / half_k, pos = i % half_k;
            exchange(base, block * k + pos, block * k + k - 1u - pos, len);
        }
        memoryBarrierBuffer();
        barrier();
        for (uint j = k / 4u; j > 0u; j >>= 1) {
            for (uint i = gl_LocalInvocationID.x; i < padded / 2u; i += THREADS) {
                uint a = (i / j) * 2u * j + i % j;
                exchange(base, a, a + j, len);
            }
            memoryBarrierBuffer();
            barrier();
        }
    }
}

void sum_rows() {
    uint dim = uint(p.dim);
    for (uint r = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; r < uint(p.num);
         r += gl_NumWorkGroups.x * gl_NumWorkGroups.y) {
        uint first = starts[p.off[4] + r], len = starts[p.off[4] + r + 1u] - first, base = p.off[5] + first;
        if (len > 1u) sort_segment(base, len);
        for (uint f = gl_LocalInvocationID.x; f < dim; f += THREADS) {
            uint at = p.off[2] + r * dim + f;
            float v = p.accumulate != 0 ? dweight[at] : 0.0;
            for (uint k = 0u; k < len; k++) v += dy[p.off[1] + order[base + k] * dim + f];
            dweight[at] = v;
        }
        barrier(); // the next row's sort reuses no memory, but keeps the workgroup in step
    }
}

void main() {
    if (p.phase == COUNT) count_rows();
    else if (p.phase == SCAN) scan_rows();
    else if (p.phase == SCATTER) scatter_positions();
    else sum_rows();
}
