#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "strided.glsl"
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_STRIDED_COPY)
layout(std430, binding = 0) readonly buffer S { float src[]; };
layout(std430, binding = 1) buffer D { float dst[]; };

void main() {
    uint n = 1;
    for (int d = 0; d < p.ndim; d++) n *= uint(p.shape[d]);
    GRID_STRIDE_LOOP(i, n) {
        int is, id, unused;
        STRIDED_OFFSETS(i, p.ndim, p.shape, p.src_stride, p.dst_stride, p.dst_stride, is, id, unused);
        float v = src[p.off[0] + is];
        uint k = p.off[1] + uint(id);
        dst[k] = p.accumulate != 0 ? dst[k] + v : v;
    }
}
