#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "depthwise_common.glsl"
// Depthwise convolution's data gradient (NN_KERNEL_DEPTHWISE_CONV2D_BACKWARD_DATA)
// as a gather: one invocation per input pixel (in dx's memory order, dense
// or channels-last) sums, in (m, ki, kj) order as cpu_depthwise.c does,
// the outputs of its channel's filters that read it; with p.quads (one
// filter per channel) an invocation takes four neighbouring channels.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 0) readonly buffer DY4 { vec4 dy4[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 1) readonly buffer W4 { vec4 w4[]; };
layout(std430, binding = 2) buffer DX { float dx[]; };
layout(std430, binding = 2) buffer DX4 { vec4 dx4[]; };

void data_quads() {
    uint total = uint(p.batch * p.height * p.width) * uint(p.channels / 4);
    GRID_STRIDE_LOOP(idx, total) {
        uint n;
        int c, ih, iw;
        quad_position(idx, uint(p.channels), uint(p.height), uint(p.width), n, c, ih, iw);
        uint o = (p.off[2] + idx * 4u) / 4u;
        vec4 sum = p.accumulate != 0 ? dx4[o] : vec4(0.0);
        for (int ki = 0; ki < p.kernel_h; ki++) {
            int oh = reader(ih, ki, p.pad_h, p.dilation_h, p.stride_h, p.out_h);
            if (oh < 0) continue;
            uint row = (n * uint(p.out_h) + uint(oh)) * uint(p.out_w);
            for (int kj = 0; kj < p.kernel_w; kj++) {
                int ow = reader(iw, kj, p.pad_w, p.dilation_w, p.stride_w, p.out_w);
                if (ow < 0) continue;
                uint at = (row + uint(ow)) * uint(p.filters) + uint(c);
                sum += w4[(p.off[1] + weight_at(c, ki * p.kernel_w + kj)) / 4u] * dy4[(p.off[0] + at) / 4u];
            }
        }
        dx4[o] = sum;
    }
}

void main() {
    if (p.quads != 0) {
        data_quads();
        return;
    }
    uint total = uint(p.batch * p.channels * p.height * p.width);
    int mult = multiplier();
    GRID_STRIDE_LOOP(idx, total) {
        uint n;
        int c, ih, iw;
        position(p.image_last != 0, idx, uint(p.channels), uint(p.height), uint(p.width), n, c, ih, iw);
        uint o = p.off[2] + idx;
        float sum = p.accumulate != 0 ? dx[o] : 0.0;
        for (int m = 0; m < mult; m++) {
            int f = c * mult + m;
            for (int ki = 0; ki < p.kernel_h; ki++) {
                int oh = reader(ih, ki, p.pad_h, p.dilation_h, p.stride_h, p.out_h);
                if (oh < 0) continue;
                for (int kj = 0; kj < p.kernel_w; kj++) {
                    int ow = reader(iw, kj, p.pad_w, p.dilation_w, p.stride_w, p.out_w);
                    if (ow < 0) continue;
                    uint at = element(p.output_last != 0, n, uint(f), uint(oh), uint(ow), uint(p.filters),
                                      uint(p.out_h), uint(p.out_w));
                    sum += w[p.off[1] + weight_at(f, ki * p.kernel_w + kj)] * dy[p.off[0] + at];
                }
            }
        }
        dx[o] = sum;
    }
}
