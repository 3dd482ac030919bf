#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NN_KERNEL_LR_SCHEDULE: counter[0] += delta, then, for a counter in
// [start, until), lr[0] = the rate of step counter[0] - start
// (include/nn_schedule.h's formulas, in float). One invocation.
layout(local_size_x = 1) in;
PUSH_CONSTANTS(PUSH_LR_SCHEDULE)
layout(std430, binding = 0) buffer C { int counter[]; };
layout(std430, binding = 1) writeonly buffer L { float lr[]; };

const float PI = 3.14159265358979323846;

// gamma^n for a whole n >= 0 (0^0 = 1).
float power(float gamma, int n) { return n == 0 ? 1.0 : pow(gamma, float(n)); }

float anneal(float start, float end_, float pct) {
    if (p.anneal_linear != 0) return (end_ - start) * pct + start;
    return end_ + (start - end_) / 2.0 * (cos(PI * pct) + 1.0);
}

// torch's OneCycleLR: a to b over the first phase, then b to c (three
// phases: b to a, then a to c).
float one_cycle(int t, float a, float b, float c) {
    float step = float(min(t, p.total));
    float last = float(p.total) - 1.0;
    if (step <= p.phase_end1) return anneal(a, b, step / p.phase_end1);
    if (p.three_phase == 0) return anneal(b, c, (step - p.phase_end1) / (last - p.phase_end1));
    if (step <= p.phase_end2) return anneal(b, a, (step - p.phase_end1) / (p.phase_end2 - p.phase_end1));
    return anneal(a, c, (step - p.phase_end2) / (last - p.phase_end2));
}

// p.kind is nn_schedule_kind: constant, step, multistep, exponential, cosine, onecycle, linear.
float rate(int t) {
    switch (p.kind) {
    case 0: return p.base_lr;
    case 1: return p.base_lr * power(p.gamma, t / p.step_size);
    case 2: {
        int passed = 0;
        for (int i = 0; i < p.milestone_count; i++) passed += t >= p.milestones[i] ? 1 : 0;
        return p.base_lr * power(p.gamma, passed);
    }
    case 3: return p.base_lr * power(p.gamma, t);
    case 4: {
        if (t < p.warmup)
            return p.base_lr * (p.warmup_start + (1.0 - p.warmup_start) * float(t) / float(p.warmup));
        float c = cos(PI * float(t - p.warmup) / float(p.total - p.warmup));
        return p.eta_min + (p.base_lr - p.eta_min) * (1.0 + c) / 2.0;
    }
    case 5: return one_cycle(t, p.initial_lr, p.max_lr, p.min_lr);
    default:
        return p.base_lr * (p.warmup_start + (p.end_factor - p.warmup_start) * float(min(t, p.total)) / float(p.total));
    }
}

void main() {
    int t = counter[p.off[0]] + p.delta;
    counter[p.off[0]] = t;
    t = max(t, 0);
    if (t >= p.start && t < p.until) lr[p.off[1]] = rate(t - p.start);
}
