#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "pool_params.glsl"
// One invocation per output, in y's memory order (dense or channels-last),
// or per four channels of an output pixel (p.quads).
// The window is clipped to the image (padding never wins); the first
// maximum in row-major order wins ties; a NaN takes over (as on the CPU).
// argmax is the winner's index within its plane.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(std430, binding = 1) writeonly buffer Y4 { vec4 y4[]; };
layout(std430, binding = 2) writeonly buffer A { int argmax[]; };
layout(std430, binding = 2) writeonly buffer A4 { ivec4 argmax4[]; };

void forward_quads() {
    uint total = uint(p.batch * p.out_h * p.out_w) * uint(p.channels / 4);
    GRID_STRIDE_LOOP(idx, total) {
        uint n, c;
        int oh, ow;
        pool_quad_position(idx, uint(p.out_h), uint(p.out_w), n, c, oh, ow);
        int h0 = oh * p.stride - p.pad, w0 = ow * p.stride - p.pad;
        int h1 = min(h0 + p.kernel, p.height), w1 = min(w0 + p.kernel, p.width);
        h0 = max(h0, 0);
        w0 = max(w0, 0);
        uint image = n * uint(p.height * p.width);
        ivec4 best_index = ivec4(h0 * p.width + w0);
        vec4 best = x4[(p.off[0] + (image + uint(best_index.x)) * uint(p.channels) + c) / 4u];
        for (int h = h0; h < h1; h++) {
            for (int w = w0; w < w1; w++) {
                vec4 v = x4[(p.off[0] + (image + uint(h * p.width + w)) * uint(p.channels) + c) / 4u];
                for (int i = 0; i < 4; i++) {
                    if (v[i] > best[i] || (isnan(v[i]) && !isnan(best[i]))) {
                        best[i] = v[i];
                        best_index[i] = h * p.width + w;
                    }
                }
            }
        }
        y4[(p.off[1] + idx * 4u) / 4u] = best;
        argmax4[(p.off[2] + idx * 4u) / 4u] = best_index;
    }
}

void main() {
    if (p.quads != 0) {
        forward_quads();
        return;
    }
    uint out_plane = uint(p.out_h * p.out_w);
    uint total = uint(p.batch * p.channels) * out_plane;
    uint in_plane = uint(p.height * p.width);
    GRID_STRIDE_LOOP(idx, total) {
        uint n, c, pixel;
        pool_position(idx, out_plane, n, c, pixel);
        int q = int(pixel);
        int oh = q / p.out_w, ow = q % p.out_w;
        int h0 = oh * p.stride - p.pad, w0 = ow * p.stride - p.pad;
        int h1 = min(h0 + p.kernel, p.height), w1 = min(w0 + p.kernel, p.width);
        h0 = max(h0, 0);
        w0 = max(w0, 0);
        int best_index = h0 * p.width + w0;
        float best = x[p.off[0] + pool_element(n, c, uint(best_index), in_plane)];
        for (int h = h0; h < h1; h++) {
            for (int w = w0; w < w1; w++) {
                float v = x[p.off[0] + pool_element(n, c, uint(h * p.width + w), in_plane)];
                if (v > best || (isnan(v) && !isnan(best))) {
                    best = v;
                    best_index = h * p.width + w;
                }
            }
        }
        y[p.off[1] + idx] = best;
        argmax[p.off[2] + idx] = best_index;
    }
}
