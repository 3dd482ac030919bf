#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NN_KERNEL_LION_UPDATE: Lion over n elements, as the CPU's
// cpu_optimizers.c: decoupled decay, a step of lr along the sign of the
// interpolated momentum, then the momentum's update.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_LION_UPDATE)
layout(std430, binding = 0) buffer Param { float param[]; };
layout(std430, binding = 1) readonly buffer Grad { float grad[]; };
layout(std430, binding = 2) buffer ExpAvg { float exp_avg[]; };
layout(std430, binding = 3) readonly buffer Lr { float lr[]; };
#define SKIP_BINDING 4
#include "update_skip.glsl"

void main() {
    if (update_skipped()) return;
    float rate = lr[p.off[3]];
    GRID_STRIDE_LOOP(i, p.n) {
        float g = grad[p.off[1] + i];
        if (p.maximize != 0) g = -g;
        float w = param[p.off[0] + i] * (1.0 - rate * p.weight_decay);
        float m = exp_avg[p.off[2] + i];
        param[p.off[0] + i] = w - rate * sign(m * p.beta1 + g * (1.0 - p.beta1));
        exp_avg[p.off[2] + i] = m * p.beta2 + g * (1.0 - p.beta2);
    }
}
