#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "pool2d_common.glsl"
// Average pooling (NN_KERNEL_POOL2D_AVG_FORWARD), one invocation per
// output: its window's sum in row-major order over avg_divisor.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };

void main() {
    uint out_plane = uint(p.out_h * p.out_w);
    uint total = uint(p.batch * p.channels) * out_plane;
    GRID_STRIDE_LOOP(idx, total) {
        uint nc = idx / out_plane;
        int q = int(idx % out_plane);
        int oh = q / p.out_w, ow = q % p.out_w;
        WindowTaps r = row_window(oh), c = column_window(ow);
        uint base = p.off[0] + nc * uint(p.height * p.width);
        float sum = 0.0;
        for (int i = r.first; i < r.end; i++)
            for (int j = c.first; j < c.end; j++) sum += x[base + uint((r.start + i * r.step) * p.width + c.start + j * c.step)];
        y[p.off[1] + idx] = sum / avg_divisor(oh, ow);
    }
}
