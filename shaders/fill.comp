#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NN_KERNEL_FILL (kernels.h): out[0, n) = bits, as 32-bit words: the
// backend's fill (vk_backend.c says why it is a kernel).
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_FILL)
layout(std430, binding = 0) writeonly buffer O { uint o[]; };

void main() {
    GRID_STRIDE_LOOP(i, p.n) o[p.off[0] + i] = p.bits;
}
