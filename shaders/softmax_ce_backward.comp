#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "softmax_params.glsl"
// dlogits = (probs - onehot(label)) * dloss / rows, one invocation per entry.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer P { float probs[]; };
layout(std430, binding = 1) readonly buffer L { int labels[]; };
layout(std430, binding = 2) readonly buffer D { float dloss[]; };
layout(std430, binding = 3) buffer DX { float dx[]; };

void main() {
    float scale = dloss[p.off[2]] / float(p.rows);
    uint total = uint(p.rows * p.cols);
    GRID_STRIDE_LOOP(i, total) {
        int r = int(i / uint(p.cols)), j = int(i % uint(p.cols));
        float g = (probs[p.off[0] + i] - (j == labels[p.off[1] + uint(r)] ? 1.0 : 0.0)) * scale;
        uint o = p.off[3] + i;
        dx[o] = p.accumulate != 0 ? dx[o] + g : g;
    }
}
