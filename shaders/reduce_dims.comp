#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// REDUCE_DIMS (kernels.h): output j combines the elements of x at its kept
// coordinates, over the reduced dimensions. per_thread: one invocation walks
// each output's elements (few per output); otherwise one workgroup shares
// them (each invocation keeps a compensated sum, or a best value and its
// position) and combines its invocations' results in shared memory.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_REDUCE_DIMS)
layout(std430, binding = 0) readonly buffer X { float xs[]; };
layout(std430, binding = 1) buffer O { float os[]; };
layout(std430, binding = 2) writeonly buffer W { int winners[]; };

const int SUM = 0, MAX = 1;

shared float part_value[256];
shared float part_comp[256];
shared uint part_index[256];

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
    int offset = 0;
    for (int d = p.kept + p.reduced - 1; d >= p.kept; d--) {
        uint size = uint(p.shape[d]);
        offset += int(r % size) * p.stride[d];
        r /= size;
    }
    return offset;
}

// Whether (v, i) beats (best, bi): a NaN beats any number, then the larger
// (MAX) or smaller (MIN) value, then the earlier position.
bool beats(float v, uint i, float best, uint bi) {
    if (isnan(best)) return isnan(v) && i < bi;
    if (isnan(v)) return true;
    if (v == best) return i < bi;
    return p.op == MAX ? v > best : v < best;
}

void store(uint j, float value, uint winner) {
    float v = p.alpha * value;
    uint k = p.off[1] + j;
    os[k] = p.accumulate != 0 ? os[k] + v : v;
    if (p.op != SUM) winners[p.off[2] + j] = int(winner);
}

void main() {
    uint outputs = 1, count = 1;
    for (int d = 0; d < p.kept; d++) outputs *= uint(p.shape[d]);
    for (int d = p.kept; d < p.kept + p.reduced; d++) count *= uint(p.shape[d]);

    if (p.per_thread != 0) {
        GRID_STRIDE_LOOP(j, outputs) {
            uint base = p.off[0] + uint(kept_offset(j));
            precise float sum = 0.0, comp = 0.0;
            float best = xs[base];
            uint winner = 0;
            for (uint r = 0; r < count; r++) {
                float v = xs[base + uint(reduced_offset(r))];
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
            store(j, p.op == SUM ? sum : best, winner);
        }
        return;
    }

    uint tid = gl_LocalInvocationID.x;
    for (uint j = gl_WorkGroupID.x; j < outputs; j += gl_NumWorkGroups.x) {
        uint base = p.off[0] + uint(kept_offset(j));
        precise float sum = 0.0, comp = 0.0;
        float best = 0.0;
        uint winner = 0xffffffffu;
        for (uint r = tid; r < count; r += 256) {
            float v = xs[base + uint(reduced_offset(r))];
            if (p.op == SUM) {
                precise float y = v - comp;
                precise float t = sum + y;
                comp = (t - sum) - y;
                sum = t;
            } else if (winner == 0xffffffffu || beats(v, r, best, winner)) {
                best = v;
                winner = r;
            }
        }
        part_value[tid] = p.op == SUM ? sum : best;
        part_index[tid] = winner;
        barrier();
        for (uint s = 128; s > 0; s >>= 1) {
            if (tid < s) {
                if (p.op == SUM) {
                    part_value[tid] += part_value[tid + s];
                } else if (part_index[tid + s] != 0xffffffffu &&
                           (part_index[tid] == 0xffffffffu ||
                            beats(part_value[tid + s], part_index[tid + s], part_value[tid], part_index[tid]))) {
                    part_value[tid] = part_value[tid + s];
                    part_index[tid] = part_index[tid + s];
                }
            }
            barrier();
        }
        if (tid == 0) store(j, part_value[0], part_index[0]);
        barrier();
    }
}
