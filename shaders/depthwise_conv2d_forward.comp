#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "depthwise_common.glsl"
// Depthwise convolution (NN_KERNEL_DEPTHWISE_CONV2D_FORWARD), one invocation
// per output (in y's memory order, dense or channels-last), its taps in
// (ki, kj) order as cpu_depthwise.c takes them, then the epilogue (bias[f], ReLU).
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
layout(std430, binding = 3) readonly buffer B { float bias[]; };

void main() {
    uint total = uint(p.batch * p.filters * p.out_h * p.out_w);
    GRID_STRIDE_LOOP(idx, total) {
        uint n;
        int f, oh, ow;
        position(p.output_last != 0, idx, uint(p.filters), uint(p.out_h), uint(p.out_w), n, f, oh, ow);
        uint c = uint(f / multiplier());
        float sum = 0.0;
        for (int ki = 0; ki < p.kernel_h; ki++) {
            int ih = oh * p.stride_h - p.pad_h + ki * p.dilation_h;
            if (ih < 0 || ih >= p.height) continue;
            for (int kj = 0; kj < p.kernel_w; kj++) {
                int iw = ow * p.stride_w - p.pad_w + kj * p.dilation_w;
                if (iw < 0 || iw >= p.width) continue;
                uint at = element(p.image_last != 0, n, c, uint(ih), uint(iw), uint(p.channels), uint(p.height),
                                  uint(p.width));
                sum += w[p.off[1] + weight_at(f, ki * p.kernel_w + kj)] * x[p.off[0] + at];
            }
        }
        if ((p.epilogue & 2) != 0) sum += bias[p.off[3] + uint(f)]; // NN_EPI_BIAS_ROWS
        if ((p.epilogue & 4) != 0 && sum <= 0.0) sum = 0.0; // NN_EPI_RELU: a NaN passes, as relu_forward
        y[p.off[2] + idx] = sum;
    }
}
