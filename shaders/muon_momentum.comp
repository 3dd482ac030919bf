#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NN_KERNEL_MUON_MOMENTUM: Muon's momentum and the update it orthogonalises
// (Nesterov: the gradient moved toward the momentum), with torch.lerp's
// formula as the CPU's cpu_optimizers.c.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_MUON)
layout(std430, binding = 0) readonly buffer Grad { float grad[]; };
layout(std430, binding = 1) buffer MomentumBuffer { float momentum_buffer[]; };
layout(std430, binding = 2) writeonly buffer Update { float update[]; };
#define SKIP_BINDING 3
#include "update_skip.glsl"

float lerp_torch(float a, float b, float w) { return w < 0.5 ? a + w * (b - a) : b - (b - a) * (1.0 - w); }

void main() {
    if (update_skipped()) return;
    GRID_STRIDE_LOOP(i, p.n) {
        float g = grad[p.off[0] + i];
        float m = lerp_torch(momentum_buffer[p.off[1] + i], g, 1.0 - p.momentum);
        momentum_buffer[p.off[1] + i] = m;
        update[p.off[2] + i] = p.nesterov != 0 ? lerp_torch(g, m, p.momentum) : m;
    }
}
