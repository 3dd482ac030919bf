#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "interpolate_map.h"
// Resampling's gradient (NN_KERNEL_INTERPOLATE_BACKWARD) as a gather: one
// invocation per input element sums, in (oh, ow) order as cpu_interpolate.c
// does, the outputs that read it times their weights. No atomics.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) buffer DX { float dx[]; };
PUSH_CONSTANTS(PUSH_INTERPOLATE)

void main() {
    uint in_plane = uint(p.in_h * p.in_w);
    uint total = uint(p.planes) * in_plane;
    GRID_STRIDE_LOOP(idx, total) {
        int ih = int(idx % in_plane) / p.in_w, iw = int(idx % in_plane) % p.in_w;
        uint base = p.off[0] + (idx / in_plane) * uint(p.out_h * p.out_w);
        uint o = p.off[1] + idx;
        int ow_first = interp_first_reader(iw, p.scale_w), ow_end = interp_end_reader(iw, p.scale_w, p.out_w);
        int oh_end = interp_end_reader(ih, p.scale_h, p.out_h);
        float sum = p.accumulate != 0 ? dx[o] : 0.0;
        for (int oh = interp_first_reader(ih, p.scale_h); oh < oh_end; oh++) {
            float wh = interp_weight(oh, ih, p.scale_h, p.in_h, p.mode, p.align_corners);
            if (wh == 0.0) continue;
            for (int ow = ow_first; ow < ow_end; ow++) {
                float ww = interp_weight(ow, iw, p.scale_w, p.in_w, p.mode, p.align_corners);
                if (ww != 0.0) {
                    precise float term = wh * ww * dy[base + uint(oh * p.out_w + ow)];
                    sum += term;
                }
            }
        }
        dx[o] = sum;
    }
}
