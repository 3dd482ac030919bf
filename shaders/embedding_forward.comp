#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Embedding lookup (NN_KERNEL_EMBEDDING_FORWARD), one invocation per output
// element: out[i, f] = weight[indices[i], f]. An index outside [0, num)
// gives NaN and is reported through the status buffer (binding 8) as
// softmax_ce_forward.comp reports a bad label: the first bad position since
// the host last looked, its index, num, and reporter 1 (embedding).
PUSH_CONSTANTS(PUSH_EMBEDDING)
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer I { int indices[]; };
layout(std430, binding = 1) readonly buffer W { float weight[]; };
layout(std430, binding = 2) writeonly buffer O { float out_[]; };
layout(std430, binding = 8) buffer Status { int status[]; }; // bad position, its index, num, reporter

void main() {
    uint dim = uint(p.dim);
    GRID_STRIDE_LOOP(idx, p.count * dim) {
        uint i = idx / dim, f = idx % dim;
        int row = indices[p.off[0] + i];
        if (row < 0 || row >= p.num) {
            out_[p.off[2] + idx] = uintBitsToFloat(0x7fc00000u);
            if (f == 0u && atomicCompSwap(status[0], 0x7fffffff, int(i)) == 0x7fffffff) {
                status[1] = row;
                status[2] = p.num;
                status[3] = 2; // STATUS_EMBEDDING (vk_stream.c)
            }
        } else {
            out_[p.off[2] + idx] = weight[p.off[1] + uint(row) * dim + f];
        }
    }
}
