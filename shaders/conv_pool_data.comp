#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// NN_KERNEL_CONV2D_POOL_BACKWARD_DATA (kernels.h): dx of Conv2d -> ReLU ->
// MaxPool2d, from the pooled gradient and the winners.
//
// A workgroup takes 128 units of one image: a unit is R neighbouring
// pixels of one row of one channel, summed in registers
// (conv_pool_data.glsl).
layout(local_size_x = 128) in;
layout(constant_id = 0) const int KH = 5;
layout(constant_id = 1) const int KW = 5;
layout(constant_id = 2) const int SH = 1;
layout(constant_id = 3) const int SW = 1;
layout(constant_id = 4) const int R = 4; // pixels per unit
const uint THREADS = 128u;
// vk_conv_pool.c keeps a chunk's staged planes and weights within these.
const uint SMEM_FLOATS = 7680u;
PUSH_CONSTANTS(PUSH_CONV_POOL_DATA)
layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) readonly buffer Winners { int winners[]; };
layout(std430, binding = 2) readonly buffer Wt { float w[]; };
layout(std430, binding = 3) buffer DX { float dx[]; };

shared float smem[SMEM_FLOATS]; // the staged planes, then the chunk's weights

#include "conv_pool_data.glsl"

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint runs = (p.width + uint(R) - 1u) / uint(R);
    const uint units = p.channels * p.height * runs;
    const uint unit = gl_WorkGroupID.x * THREADS + tid;
    const bool in_range = unit < units;
    uint c = 0u, h = 0u, w0 = 0u;
    if (in_range) {
        uint ch = unit / runs;
        w0 = (unit - ch * runs) * uint(R);
        c = ch / p.height;
        h = ch - c * p.height;
    }
    for (uint n = gl_WorkGroupID.z; n < p.batch; n += gl_NumWorkGroups.z) {
        float acc[R];
        image_gradient(n, c, h, w0, in_range, 0u, p.channels, acc);
        if (in_range) {
            uint base = p.off[3] + ((n * p.channels + c) * p.height + h) * p.width;
            for (int r = 0; r < R; r++) {
                uint wcol = w0 + uint(r);
                if (wcol < p.width) dx[base + wcol] = p.accumulate != 0u ? dx[base + wcol] + acc[r] : acc[r];
            }
        }
    }
}
