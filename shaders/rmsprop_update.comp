#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NN_KERNEL_RMSPROP_UPDATE: RMSprop over n elements, as the CPU's
// cpu_optimizers.c; momentum_buffer is read with momentum > 0, grad_avg
// when centered.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_RMSPROP_UPDATE)
layout(std430, binding = 0) buffer Param { float param[]; };
layout(std430, binding = 1) readonly buffer Grad { float grad[]; };
layout(std430, binding = 2) buffer SquareAvg { float square_avg[]; };
layout(std430, binding = 3) buffer MomentumBuffer { float momentum_buffer[]; };
layout(std430, binding = 4) buffer GradAvg { float grad_avg[]; };
layout(std430, binding = 5) readonly buffer Lr { float lr[]; };
#define SKIP_BINDING 6
#include "update_skip.glsl"

void main() {
    if (update_skipped()) return;
    float rate = lr[p.off[5]];
    GRID_STRIDE_LOOP(i, p.n) {
        float g = grad[p.off[1] + i];
        if (p.maximize != 0) g = -g;
        float w = param[p.off[0] + i];
        g += p.weight_decay * w;
        float sq = square_avg[p.off[2] + i] * p.alpha + g * g * (1.0 - p.alpha);
        square_avg[p.off[2] + i] = sq;
        float avg;
        if (p.centered != 0) {
            float ga = grad_avg[p.off[4] + i] * p.alpha + g * (1.0 - p.alpha);
            grad_avg[p.off[4] + i] = ga;
            avg = sqrt(sq - ga * ga) + p.eps;
        } else {
            avg = sqrt(sq) + p.eps;
        }
        if (p.momentum > 0.0) {
            float buf = momentum_buffer[p.off[3] + i] * p.momentum + g / avg;
            momentum_buffer[p.off[3] + i] = buf;
            param[p.off[0] + i] = w - rate * buf;
        } else {
            param[p.off[0] + i] = w - rate * (g / avg);
        }
    }
}
