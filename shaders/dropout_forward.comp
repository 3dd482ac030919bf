#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "dropout_philox.glsl"
// Dropout forward (kernels.h): the draw number comes from a device buffer,
// not the push constants, so a replayed command buffer draws a new mask.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_DROPOUT_FORWARD)
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(std430, binding = 2) writeonly buffer M { float mask[]; };
layout(std430, binding = 3) readonly buffer C { uint counter[]; };

void main() {
    uint draw = counter[p.off[3]];
    GRID_STRIDE_LOOP(i, p.n) {
        float m = philox_word(i, draw, p.seed_lo, p.seed_hi) >= p.threshold ? p.scale : 0.0;
        mask[p.off[2] + i] = m;
        y[p.off[1] + i] = x[p.off[0] + i] * m;
    }
}
