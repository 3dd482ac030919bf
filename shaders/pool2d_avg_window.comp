#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "pool2d_common.glsl"
// Average pooling (NN_KERNEL_POOL2D_AVG_FORWARD) over large windows (global
// pooling above all): one workgroup per output, striding past the
// dispatch. Its invocations read the window together, consecutive ones at
// consecutive positions of a row (coalesced), four loads in flight each,
// then a fixed tree in shared memory adds their sums: the order depends on
// the window alone, never on scheduling.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };

const uint THREADS = 256u;
const uint LOADS = 4u;
shared float part[THREADS];

void main() {
    uint tid = gl_LocalInvocationID.x;
    uint out_plane = uint(p.out_h * p.out_w);
    uint total = uint(p.batch * p.channels) * out_plane;
    for (uint idx = gl_WorkGroupID.x; idx < total; idx += gl_NumWorkGroups.x) {
        uint nc = idx / out_plane;
        int q = int(idx % out_plane);
        int oh = q / p.out_w, ow = q % p.out_w;
        WindowTaps r = row_window(oh), c = column_window(ow);
        uint cols = uint(c.end - c.first), taps = uint(r.end - r.first) * cols;
        uint base = p.off[0] + nc * uint(p.height * p.width);
        float sum = 0.0;
        for (uint t0 = 0u; t0 < taps; t0 += THREADS * LOADS) {
            float v[LOADS];
            for (uint j = 0u; j < LOADS; j++) {
                uint t = t0 + j * THREADS + tid;
                v[j] = 0.0;
                if (t < taps) {
                    int i = r.first + int(t / cols), k = c.first + int(t % cols);
                    v[j] = x[base + uint((r.start + i * r.step) * p.width + c.start + k * c.step)];
                }
            }
            for (uint j = 0u; j < LOADS; j++) sum += v[j];
        }
        part[tid] = sum;
        barrier();
        for (uint s = THREADS / 2u; s > 0u; s >>= 1) {
            if (tid < s) part[tid] += part[tid + s];
            barrier();
        }
        if (tid == 0u) y[p.off[1] + idx] = part[0] / avg_divisor(oh, ow);
        barrier(); // part[0] read before the next output overwrites it
    }
}
