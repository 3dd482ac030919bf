#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NN_KERNEL_MUON_APPLY: the decoupled decay and the step along Muon's
// orthogonalised update, scaled by max(1, rows / cols)^0.5.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_MUON)
layout(std430, binding = 0) buffer Param { float param[]; };
layout(std430, binding = 1) readonly buffer Update { float update[]; };
layout(std430, binding = 2) readonly buffer Lr { float lr[]; };
#define SKIP_BINDING 3
#include "update_skip.glsl"

void main() {
    if (update_skipped()) return;
    float rate = lr[p.off[2]];
    float factor = 1.0 - rate * p.weight_decay;
    GRID_STRIDE_LOOP(i, p.n) param[p.off[0] + i] = param[p.off[0] + i] * factor - rate * (update[p.off[1] + i] * p.scale);
}
