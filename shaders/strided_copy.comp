#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "strided.glsl"
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_STRIDED_COPY)
// 32-bit words, moved as they are (int32 tensors too); accumulate adds floats.
layout(std430, binding = 0) readonly buffer S { uint src[]; };
layout(std430, binding = 1) buffer D { uint dst[]; };

void main() {
    uint n = 1;
    for (int d = 0; d < p.ndim; d++) n *= uint(p.shape[d]);
    GRID_STRIDE_LOOP(i, n) {
        int is, id, unused;
        STRIDED_OFFSETS(i, p.ndim, p.shape, p.src_stride, p.dst_stride, p.dst_stride, is, id, unused);
        uint v = src[p.off[0] + is];
        uint k = p.off[1] + uint(id);
        dst[k] = p.accumulate != 0 ? floatBitsToUint(uintBitsToFloat(dst[k]) + uintBitsToFloat(v)) : v;
    }
}
