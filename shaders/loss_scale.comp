#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NN_KERNEL_LOSS_SCALE (kernels.h): state = {scale, found, good, skipped}.
// UNSCALE: x *= 1 / scale, found = 1 where a result is not finite (every
// invocation that finds one writes the same 1: no atomics needed).
// UPDATE: one invocation.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_LOSS_SCALE)
layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) buffer State { float state[]; };

void main() {
    uint s0 = p.off[1];
    if (p.mode == 1) {
        if (gl_GlobalInvocationID.x != 0u) return;
        if (state[s0 + 1] != 0.0) {
            state[s0] *= p.backoff_factor;
            state[s0 + 2] = 0.0;
            state[s0 + 3] += 1.0;
            state[s0 + 1] = 0.0;
        } else {
            state[s0 + 2] += 1.0;
            if (state[s0 + 2] >= float(p.growth_interval)) {
                state[s0] *= p.growth_factor;
                state[s0 + 2] = 0.0;
            }
        }
        return;
    }
    precise float inverse = 1.0 / state[s0];
    bool found = false;
    GRID_STRIDE_LOOP(i, p.n) {
        precise float v = x[p.off[0] + i] * inverse;
        x[p.off[0] + i] = v;
        if (isnan(v) || isinf(v)) found = true;
    }
    if (found) state[s0 + 1] = 1.0;
}
