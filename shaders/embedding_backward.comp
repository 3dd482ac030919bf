#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Embedding gradient (NN_KERNEL_EMBEDDING_BACKWARD), one invocation per
// (weight row, feature): it walks every index in order and adds the
// gradient of the positions that picked its row, so the sums are the
// CPU's, bit for bit, with no atomics. Row padding_idx gets nothing.
PUSH_CONSTANTS(PUSH_EMBEDDING)
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer I { int indices[]; };
layout(std430, binding = 1) readonly buffer D { float dy[]; };
layout(std430, binding = 2) buffer G { float dweight[]; };

void main() {
    uint dim = uint(p.dim);
    GRID_STRIDE_LOOP(idx, uint(p.num) * dim) {
        int row = int(idx / dim);
        uint f = idx % dim;
        float v = p.accumulate != 0 ? dweight[p.off[2] + idx] : 0.0;
        if (row != p.padding_idx)
            for (uint i = 0u; i < p.count; i++)
                if (indices[p.off[0] + i] == row) v += dy[p.off[1] + i * dim + f];
        dweight[p.off[2] + idx] = v;
    }
}
