#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "pool2d_common.glsl"
// Max pooling (NN_KERNEL_POOL2D_MAX_FORWARD), one invocation per output:
// the first maximum of its window in row-major order (a NaN takes over),
// argmax the winner's index within its plane (-1 for a window without taps).
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(std430, binding = 2) writeonly buffer A { int argmax[]; };

void main() {
    uint out_plane = uint(p.out_h * p.out_w);
    uint total = uint(p.batch * p.channels) * out_plane;
    GRID_STRIDE_LOOP(idx, total) {
        uint nc = idx / out_plane;
        int q = int(idx % out_plane);
        WindowTaps r = row_window(q / p.out_w), c = column_window(q % p.out_w);
        uint base = p.off[0] + nc * uint(p.height * p.width);
        // A dilated window can lie wholly in the padding: -inf and no winner (argmax -1), as PyTorch.
        bool empty = r.first >= r.end || c.first >= c.end;
        int best_index = empty ? -1 : (r.start + r.first * r.step) * p.width + c.start + c.first * c.step;
        float best = empty ? uintBitsToFloat(0xff800000u) : x[base + uint(best_index)];
        for (int i = r.first; i < r.end; i++) {
            for (int j = c.first; j < c.end; j++) {
                int index = (r.start + i * r.step) * p.width + c.start + j * c.step;
                float v = x[base + uint(index)];
                if (v > best || (isnan(v) && !isnan(best))) {
                    best = v;
                    best_index = index;
                }
            }
        }
        y[p.off[1] + idx] = best;
        argmax[p.off[2] + idx] = best_index;
    }
}
