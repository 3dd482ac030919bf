#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "conv_geometry.glsl"
// One invocation per column entry: columns [batch, channels*kh*kw, out_h*out_w],
// row r = (c * kh + ki) * kw + kj, column q = oh * out_w + ow; padding reads 0;
// tap (ki, kj) lies ki * dilation_h rows and kj * dilation_w columns in.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Image { float image[]; };
layout(std430, binding = 1) writeonly buffer Cols { float cols[]; };

void main() {
    uint positions = uint(p.out_h * p.out_w);
    uint rows = uint(p.channels * p.kernel_h * p.kernel_w);
    uint total = uint(p.batch) * rows * positions;
    GRID_STRIDE_LOOP(idx, total) {
        uint q = idx % positions;
        uint r = (idx / positions) % rows;
        uint n = idx / (positions * rows);
        int kj = int(r) % p.kernel_w;
        int ki = (int(r) / p.kernel_w) % p.kernel_h;
        int c = int(r) / (p.kernel_w * p.kernel_h);
        int oh = int(q) / p.out_w, ow = int(q) % p.out_w;
        int ih = oh * p.stride_h - p.pad_h + ki * p.dilation_h, iw = ow * p.stride_w - p.pad_w + kj * p.dilation_w;
        float v = 0.0;
        if (ih >= 0 && ih < p.height && iw >= 0 && iw < p.width)
            v = image[p.off[0] + ((n * uint(p.channels) + uint(c)) * uint(p.height) + uint(ih)) * uint(p.width) + uint(iw)];
        cols[p.off[1] + idx] = v;
    }
}
