#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// sums[0] += loss * rows; sums[1] += rows whose largest logit (the first of
// equals) is at the label. One workgroup: a batch's rows are few.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_METRICS_ACCUMULATE)
layout(std430, binding = 0) readonly buffer L { float logits[]; };
layout(std430, binding = 1) readonly buffer Y { int labels[]; };
layout(std430, binding = 2) readonly buffer S { float loss[]; };
layout(std430, binding = 3) buffer A { float sums[]; };

shared uint correct[256];

void main() {
    uint t = gl_LocalInvocationID.x;
    uint count = 0u;
    for (int r = int(t); r < p.rows; r += 256) {
        uint base = p.off[0] + uint(r) * uint(p.cols);
        int best = 0;
        float best_value = logits[base];
        for (int c = 1; c < p.cols; c++) {
            float v = logits[base + uint(c)];
            if (v > best_value) { best = c; best_value = v; }
        }
        if (best == labels[p.off[1] + uint(r)]) count++;
    }
    correct[t] = count;
    barrier();
    for (uint s = 128u; s > 0u; s >>= 1) {
        if (t < s) correct[t] += correct[t + s];
        barrier();
    }
    if (t == 0u) {
        sums[p.off[3]] += loss[p.off[2]] * float(p.rows);
        sums[p.off[3] + 1u] += float(correct[0]);
    }
}
