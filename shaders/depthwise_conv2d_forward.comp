#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "depthwise_common.glsl"
// Depthwise convolution (NN_KERNEL_DEPTHWISE_CONV2D_FORWARD), one invocation
// per output (in y's memory order, dense or channels-last), or per four
// neighbouring outputs with p.quads, its taps in (ki, kj) order as
// cpu_depthwise.c takes them, then the epilogue (bias[f], ReLU).
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 1) readonly buffer W4 { vec4 w4[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
layout(std430, binding = 2) writeonly buffer Y4 { vec4 y4[]; };
layout(std430, binding = 3) readonly buffer B { float bias[]; };
layout(std430, binding = 3) readonly buffer B4 { vec4 bias4[]; };

// Four channels f..f+3 of one output pixel, each filter reading its own channel.
void forward_quads() {
    uint total = uint(p.batch * p.out_h * p.out_w) * uint(p.filters / 4);
    GRID_STRIDE_LOOP(idx, total) {
        uint n;
        int f, oh, ow;
        quad_position(idx, uint(p.filters), uint(p.out_h), uint(p.out_w), n, f, oh, ow);
        vec4 sum = vec4(0.0);
        for (int ki = 0; ki < p.kernel_h; ki++) {
            int ih = oh * p.stride_h - p.pad_h + ki * p.dilation_h;
            if (ih < 0 || ih >= p.height) continue;
            uint row = (n * uint(p.height) + uint(ih)) * uint(p.width);
            for (int kj = 0; kj < p.kernel_w; kj++) {
                int iw = ow * p.stride_w - p.pad_w + kj * p.dilation_w;
                if (iw < 0 || iw >= p.width) continue;
                uint at = (row + uint(iw)) * uint(p.channels) + uint(f);
                sum += w4[(p.off[1] + weight_at(f, ki * p.kernel_w + kj)) / 4u] * x4[(p.off[0] + at) / 4u];
            }
        }
        if ((p.epilogue & 2) != 0) sum += bias4[(p.off[3] + uint(f)) / 4u]; // NN_EPI_BIAS_ROWS
        if ((p.epilogue & 4) != 0) // NN_EPI_RELU: a NaN passes, as relu_forward
            for (int i = 0; i < 4; i++) sum[i] = sum[i] <= 0.0 ? 0.0 : sum[i];
        y4[(p.off[2] + idx * 4u) / 4u] = sum;
    }
}

void main() {
    if (p.quads != 0) {
        forward_quads();
        return;
    }
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
