#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "conv_geometry.glsl"
// The adjoint of im2col as a gather: one invocation per image pixel sums the
// column entries that came from it, in (ki, kj) order starting from the old
// value (accumulate) or zero -- the CPU's order, so the sums agree bit for bit
// and no two invocations write the same pixel.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Cols { float cols[]; };
layout(std430, binding = 1) buffer Image { float image[]; };

void main() {
    uint positions = uint(p.out_h * p.out_w);
    uint rows = uint(p.channels * p.kernel_h * p.kernel_w);
    uint plane = uint(p.height * p.width);
    uint total = uint(p.batch * p.channels) * plane;
    GRID_STRIDE_LOOP(idx, total) {
        int w = int(idx % uint(p.width));
        int h = int((idx / uint(p.width)) % uint(p.height));
        uint nc = idx / plane;
        uint n = nc / uint(p.channels), c = nc % uint(p.channels);
        uint o = p.off[1] + idx;
        float sum = p.accumulate != 0 ? image[o] : 0.0;
        for (int ki = 0; ki < p.kernel_h; ki++) {
            int th = h + p.pad_h - ki * p.dilation_h;
            if (th < 0 || th % p.stride_h != 0) continue;
            int oh = th / p.stride_h;
            if (oh >= p.out_h) continue;
            for (int kj = 0; kj < p.kernel_w; kj++) {
                int tw = w + p.pad_w - kj * p.dilation_w;
                if (tw < 0 || tw % p.stride_w != 0) continue;
                int ow = tw / p.stride_w;
                if (ow >= p.out_w) continue;
                uint r = (c * uint(p.kernel_h) + uint(ki)) * uint(p.kernel_w) + uint(kj);
                sum += cols[p.off[0] + (n * rows + r) * positions + uint(oh * p.out_w + ow)];
            }
        }
        image[o] = sum;
    }
}
