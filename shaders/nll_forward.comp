#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// The class-target negative log-likelihood (nn_nll_params). Reduction none:
// one invocation per position, any number of workgroups. Sum and mean: one
// workgroup, whose invocations take positions in turn and add their losses
// and weights in a tree, so the mean is one division. A target outside
// [0, classes) that is not ignore_index gives its position a NaN loss and
// is reported through the status buffer (binding 8) as softmax_ce's labels
// are, with status[3] = 1 naming this kernel.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_NLL)
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer T { int target[]; };
layout(std430, binding = 2) readonly buffer W { float w[]; };
layout(std430, binding = 3) buffer Loss { float loss[]; };
layout(std430, binding = 4) buffer Total { float total[]; };
layout(std430, binding = 8) buffer Status { int status[]; }; // position, target, classes, kind, ignore_index

shared float part_loss[256], part_weight[256];
shared int bad_pos;

float weight_of(int c) { return p.has_weight != 0 ? w[p.off[2] + uint(c)] : 1.0; }

void main() {
    uint tid = gl_LocalInvocationID.x, inner = uint(p.inner), classes = uint(p.classes);
    uint positions = uint(p.outer) * inner;
    bool reduce = p.reduction != 0;
    if (tid == 0) bad_pos = 0x7fffffff;
    barrier();
    float sum = 0.0, weights = 0.0;
    uint first = reduce ? tid : gl_GlobalInvocationID.x;
    uint step = reduce ? 256u : gl_NumWorkGroups.x * 256u;
    for (uint pos = first; pos < positions; pos += step) {
        int t = target[p.off[1] + pos];
        uint base = p.off[0] + (pos / inner) * classes * inner + pos % inner;
        float l = 0.0;
        if (t == p.ignore_index) {
            l = 0.0;
        } else if (t < 0 || t >= p.classes) {
            atomicMin(bad_pos, int(pos));
            l = uintBitsToFloat(0x7fc00000u); // NaN, as the CPU's
        } else {
            float wt = weight_of(t);
            l = -(1.0 - p.smoothing) * wt * x[base + uint(t) * inner];
            if (p.smoothing != 0.0) {
                float all = 0.0;
                for (int c = 0; c < p.classes; c++) all += weight_of(c) * x[base + uint(c) * inner];
                l -= p.smoothing / float(p.classes) * all;
            }
            weights += wt;
        }
        if (reduce) sum += l;
        else loss[p.off[3] + pos] = l;
    }
    part_loss[tid] = sum;
    part_weight[tid] = weights;
    barrier();
    for (uint s = 128; s > 0; s >>= 1) {
        if (tid < s) {
            part_loss[tid] += part_loss[tid + s];
            part_weight[tid] += part_weight[tid + s];
        }
        barrier();
    }
    if (tid == 0) {
        if (reduce) loss[p.off[3]] = p.reduction == 1 ? part_loss[0] / part_weight[0] : part_loss[0];
        if (p.has_total != 0) total[p.off[4]] = part_weight[0];
        if (bad_pos != 0x7fffffff && atomicCompSwap(status[0], 0x7fffffff, bad_pos) == 0x7fffffff) {
            status[1] = target[p.off[1] + uint(bad_pos)];
            status[2] = p.classes;
            status[3] = 1;
            status[4] = p.ignore_index;
        }
    }
}
