#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// REDUCE_DIMS_SCATTER (kernels.h): dx at output j's winner += dy[j]. Each
// output's elements are its own, so no two invocations write one element.
layout(local_size_x = 256) in;
PUSH_CONSTANTS(PUSH_REDUCE_DIMS)
layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) readonly buffer W { int winners[]; };
layout(std430, binding = 2) buffer DX { float dx[]; };

void main() {
    uint outputs = 1, count = 1;
    for (int d = 0; d < p.kept; d++) outputs *= uint(p.shape[d]);
    for (int d = p.kept; d < p.kept + p.reduced; d++) count *= uint(p.shape[d]);
    GRID_STRIDE_LOOP(j, outputs) {
        int offset = 0;
        uint rest = j;
        for (int d = p.kept - 1; d >= 0; d--) {
            uint size = uint(p.shape[d]);
            offset += int(rest % size) * p.stride[d];
            rest /= size;
        }
        rest = uint(winners[p.off[1] + j]);
        if (rest >= count) continue; // never from REDUCE_DIMS: the host checks nothing on the device
        for (int d = p.kept + p.reduced - 1; d >= p.kept; d--) {
            uint size = uint(p.shape[d]);
            offset += int(rest % size) * p.stride[d];
            rest /= size;
        }
        uint k = p.off[2] + uint(offset);
        dx[k] += dy[p.off[0] + j];
    }
}
