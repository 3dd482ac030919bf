#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NN_KERNEL_ADAM_UPDATE: Adam (decoupled = 0) or AdamW over n elements, as
// the CPU's cpu_optimizers.c: the rate from lr[0], the bias corrections
// from the step count step[0] (advanced by COUNTER_ADD before the update).
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_ADAM_UPDATE)
layout(std430, binding = 0) buffer Param { float param[]; };
layout(std430, binding = 1) readonly buffer Grad { float grad[]; };
layout(std430, binding = 2) buffer ExpAvg { float exp_avg[]; };
layout(std430, binding = 3) buffer ExpAvgSq { float exp_avg_sq[]; };
layout(std430, binding = 4) buffer MaxExpAvgSq { float max_exp_avg_sq[]; };
layout(std430, binding = 5) readonly buffer Lr { float lr[]; };
layout(std430, binding = 6) readonly buffer Step { int step[]; };
#define SKIP_BINDING 7
#include "update_skip.glsl"

void main() {
    if (update_skipped()) return;
    float rate = lr[p.off[5]];
    float t = float(step[p.off[6]]);
    float step_size = rate / (1.0 - pow(p.beta1, t));
    float bias_correction2_sqrt = sqrt(1.0 - pow(p.beta2, t));
    GRID_STRIDE_LOOP(i, p.n) {
        float g = grad[p.off[1] + i];
        if (p.maximize != 0) g = -g;
        float w = param[p.off[0] + i];
        if (p.decoupled != 0) w *= 1.0 - rate * p.weight_decay;
        else g += p.weight_decay * w;
        float m = exp_avg[p.off[2] + i] * p.beta1 + g * (1.0 - p.beta1);
        float v = exp_avg_sq[p.off[3] + i] * p.beta2 + g * g * (1.0 - p.beta2);
        exp_avg[p.off[2] + i] = m;
        exp_avg_sq[p.off[3] + i] = v;
        if (p.amsgrad != 0) {
            v = max(max_exp_avg_sq[p.off[4] + i], v);
            max_exp_avg_sq[p.off[4] + i] = v;
        }
        float denom = sqrt(v) / bias_correction2_sqrt + p.eps;
        param[p.off[0] + i] = w - step_size * (m / denom);
    }
}
