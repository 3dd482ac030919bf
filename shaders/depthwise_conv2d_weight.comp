#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "depthwise_common.glsl"
// Depthwise convolution's weight gradient (NN_KERNEL_DEPTHWISE_CONV2D_BACKWARD_WEIGHT):
// one workgroup per weight tap. Its invocations stride over the (image,
// output) pairs, then a tree in shared memory adds their partial sums in a
// fixed order: no atomics, the same result every run.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 2) buffer DW { float dw[]; };

shared float partial[256];

void main() {
    uint taps = uint(p.kernel_h * p.kernel_w);
    uint weights = uint(p.filters) * taps;
    uint out_plane = uint(p.out_h * p.out_w);
    uint pairs = uint(p.batch) * out_plane;
    uint lane = gl_LocalInvocationID.x;
    int mult = multiplier();
    for (uint item = gl_WorkGroupID.x; item < weights; item += gl_NumWorkGroups.x) {
        int f = int(item / taps);
        int ki = int(item % taps) / p.kernel_w, kj = int(item % taps) % p.kernel_w;
        float sum = 0.0;
        for (uint j = lane; j < pairs; j += 256u) {
            uint n = j / out_plane;
            int q = int(j % out_plane);
            int oh = q / p.out_w, ow = q % p.out_w;
            int ih = oh * p.stride_h - p.pad_h + ki * p.dilation_h;
            int iw = ow * p.stride_w - p.pad_w + kj * p.dilation_w;
            if (ih < 0 || ih >= p.height || iw < 0 || iw >= p.width) continue;
            sum += dy[p.off[0] + (n * uint(p.filters) + uint(f)) * out_plane + uint(q)] *
                   x[p.off[1] + (n * uint(p.channels) + uint(f / mult)) * uint(p.height * p.width) +
                     uint(ih * p.width + iw)];
        }
        partial[lane] = sum;
        barrier();
        for (uint half_ = 128u; half_ > 0u; half_ >>= 1) {
            if (lane < half_) partial[lane] += partial[lane + half_];
            barrier();
        }
        if (lane == 0u) {
            uint o = p.off[2] + item;
            dw[o] = p.accumulate != 0 ? dw[o] + partial[0] : partial[0];
        }
        barrier();
    }
}
