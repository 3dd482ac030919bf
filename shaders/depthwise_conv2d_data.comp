#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "depthwise_common.glsl"
// Depthwise convolution's data gradient (NN_KERNEL_DEPTHWISE_CONV2D_BACKWARD_DATA)
// as a gather: one invocation per input pixel (in dx's memory order, dense
// or channels-last) sums, in (m, ki, kj) order as cpu_depthwise.c does,
// the outputs of its channel's filters that read it.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) buffer DX { float dx[]; };

void main() {
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
