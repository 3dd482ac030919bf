#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "interpolate_map.h"
// Resampling (NN_KERNEL_INTERPOLATE_FORWARD), one invocation per output:
// interpolate_map.h's taps, added as cpu_interpolate.c adds them.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
PUSH_CONSTANTS(PUSH_INTERPOLATE)

void main() {
    uint out_plane = uint(p.out_h * p.out_w);
    uint total = uint(p.planes) * out_plane;
    GRID_STRIDE_LOOP(idx, total) {
        int oh = int(idx % out_plane) / p.out_w, ow = int(idx % out_plane) % p.out_w;
        uint base = p.off[0] + (idx / out_plane) * uint(p.in_h * p.in_w);
        float sh = interp_source(oh, p.scale_h, p.mode, p.align_corners);
        int h0 = interp_first(sh, p.in_h), h1 = h0 + interp_step(h0, p.in_h, p.mode);
        float lh = interp_lambda(sh, h0, p.mode);
        float sw = interp_source(ow, p.scale_w, p.mode, p.align_corners);
        int w0 = interp_first(sw, p.in_w), w1 = w0 + interp_step(w0, p.in_w, p.mode);
        float lw = interp_lambda(sw, w0, p.mode);
        uint r0 = base + uint(h0 * p.in_w), r1 = base + uint(h1 * p.in_w);
        float v;
        if (p.mode == NN_INTERP_NEAREST) {
            v = x[r0 + uint(w0)];
        } else {
            precise float top = (1.0 - lw) * x[r0 + uint(w0)] + lw * x[r0 + uint(w1)];
            precise float bottom = (1.0 - lw) * x[r1 + uint(w0)] + lw * x[r1 + uint(w1)];
            precise float mixed = (1.0 - lh) * top + lh * bottom;
            v = mixed;
        }
        y[p.off[1] + idx] = v;
    }
}
