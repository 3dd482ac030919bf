#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// REDUCE_DIMS (kernels.h): output j combines the elements of x at its kept
// coordinates over the reduced dimensions. Each work item (an output, or
// with chunks > 1 one slice of an output's elements) belongs to p.lanes
// invocations of a workgroup: each keeps a compensated sum, or a best value
// and its position, over every lanes-th element, and the lanes combine in
// shared memory. lanes 1 reads neighbouring outputs' elements side by side
// (reductions over outer dimensions); more lanes read one output's
// neighbouring elements (over inner ones). Integer sums (p.integer) read
// and write the same buffers as int32 and add exactly, wrapping modulo 2^32.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_REDUCE_DIMS)
layout(std430, binding = 0) readonly buffer X { float xs[]; };
layout(std430, binding = 1) buffer O { float os[]; };
layout(std430, binding = 2) writeonly buffer W { int winners[]; };
layout(std430, binding = 0) readonly buffer XI { int xis[]; };
layout(std430, binding = 1) buffer OI { int ois[]; };

const int SUM = 0, MAX = 1;
const uint NONE = 0xffffffffu;

shared float part_value[256];
shared uint part_index[256]; // a winner's position, or an integer sum (as uint: its adds wrap as int32's)

int kept_offset(uint j) {
    int offset = 0;
    for (int d = p.kept - 1; d >= 0; d--) {
        uint size = uint(p.shape[d]);
        offset += int(j % size) * p.stride[d];
        j /= size;
    }
    return offset;
}

int reduced_offset(uint r) {
    if (p.reduced == 1) return int(r) * p.stride[p.kept];
    int offset = 0;
    for (int d = p.kept + p.reduced - 1; d >= p.kept; d--) {
        uint size = uint(p.shape[d]);
        offset += int(r % size) * p.stride[d];
        r /= size;
    }
    return offset;
}

// Whether (v, i) beats (best, bi): a NaN beats any number, then the larger
// (MAX) or smaller (MIN) value, then the earlier position; nothing (NONE)
// loses to everything.
bool beats(float v, uint i, float best, uint bi) {
    if (i == NONE) return false;
    if (bi == NONE) return true;
    if (isnan(best)) return isnan(v) && i < bi;
    if (isnan(v)) return true;
    if (v == best) return i < bi;
    return p.op == MAX ? v > best : v < best;
}

void main() {
    uint outputs = 1, count = 1;
    for (int d = 0; d < p.kept; d++) outputs *= uint(p.shape[d]);
    for (int d = p.kept; d < p.kept + p.reduced; d++) count *= uint(p.shape[d]);
    const uint lanes = uint(p.lanes), per_group = 256u / lanes, items = outputs * uint(p.chunks);
    const uint lane = gl_LocalInvocationID.x % lanes, slot = gl_LocalInvocationID.x / lanes;

    // the loop's trip count is the workgroup's, so its barriers are uniform
    for (uint base = gl_WorkGroupID.x * per_group; base < items; base += gl_NumWorkGroups.x * per_group) {
        const uint item = base + slot;
        const uint j = item % outputs, chunk = item / outputs;
        const uint first = chunk * uint(p.chunk), last = p.chunks > 1 ? min(first + uint(p.chunk), count) : count;
        precise float sum = 0.0, comp = 0.0;
        float best = 0.0;
        uint winner = NONE;
        int total = 0; // an integer sum
        if (item < items) {
            const uint at = p.off[0] + uint(kept_offset(j));
            if (p.integer != 0) {
                for (uint r = first + lane; r < last; r += lanes) total += xis[at + uint(reduced_offset(r))];
            } else {
                for (uint r = first + lane; r < last; r += lanes) {
                    float v = xs[at + uint(reduced_offset(r))];
                    if (p.op == SUM) {
                        precise float y = v - comp;
                        precise float t = sum + y;
                        comp = (t - sum) - y;
                        sum = t;
                    } else if (beats(v, r, best, winner)) {
                        best = v;
                        winner = r;
                    }
                }
            }
        }
        float value = p.op == SUM ? sum : best;
        if (lanes > 1) {
            part_value[gl_LocalInvocationID.x] = value;
            part_index[gl_LocalInvocationID.x] = p.integer != 0 ? uint(total) : winner;
            barrier();
            for (uint s = lanes / 2; s > 0; s >>= 1) {
                const uint me = gl_LocalInvocationID.x, other = me + s;
                if (lane < s) {
                    if (p.integer != 0) {
                        part_index[me] += part_index[other];
                    } else if (p.op == SUM) {
                        part_value[me] += part_value[other];
                    } else if (beats(part_value[other], part_index[other], part_value[me], part_index[me])) {
                        part_value[me] = part_value[other];
                        part_index[me] = part_index[other];
                    }
                }
                barrier();
            }
            value = part_value[slot * lanes];
            winner = part_index[slot * lanes];
            total = int(winner);
            barrier(); // the next item's writes wait for these reads
        }
        if (lane != 0 || item >= items) continue;
        if (p.integer != 0) {
            const uint k = p.off[1] + (p.chunks > 1 ? chunk * outputs + j : j); // a slice's sum, or the output
            ois[k] = p.chunks == 1 && p.accumulate != 0 ? ois[k] + total : total;
            continue;
        }
        if (p.chunks > 1) {
            os[p.off[1] + chunk * outputs + j] = value; // a slice's raw sum, added by the second pass
            continue;
        }
        const float v = p.alpha * value;
        const uint k = p.off[1] + j;
        os[k] = p.accumulate != 0 ? os[k] + v : v;
        if (p.op != SUM) winners[p.off[2] + j] = int(winner);
    }
}
