#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "gather_params.glsl"
// A batch of uint8 samples (packed four to a word) gathered by a device-side
// step counter and normalised to float: value * scale[c] + shift[c].
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer S { uint samples[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };

void main() {
    uint total = uint(p.rows) * uint(p.row_elems);
    GRID_STRIDE_LOOP(idx, total) {
        int i = int(idx / uint(p.row_elems));
        int j = int(idx % uint(p.row_elems));
        int row = source_row(i);
        float v = 0.0;
        if (row >= 0) {
            uint byte_index = p.off[0] * 4u + uint(row) * uint(p.row_elems) + uint(j);
            uint b = (samples[byte_index >> 2] >> ((byte_index & 3u) * 8u)) & 255u;
            int c = j / p.plane;
            float scale = c == 0 ? p.scale[0] : c == 1 ? p.scale[1] : c == 2 ? p.scale[2] : p.scale[3];
            float shift = c == 0 ? p.shift[0] : c == 1 ? p.shift[1] : c == 2 ? p.shift[2] : p.shift[3];
            v = float(b) * scale + shift;
        }
        y[p.off[3] + idx] = v;
    }
}
