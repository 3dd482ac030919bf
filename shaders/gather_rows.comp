#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "gather_params.glsl"
// Rows of 32-bit words (labels, a learning-rate table) gathered by a
// device-side step counter.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer T { int table[]; };
layout(std430, binding = 3) writeonly buffer Y { int y[]; };

void main() {
    uint total = uint(p.rows) * uint(p.row_elems);
    GRID_STRIDE_LOOP(idx, total) {
        int i = int(idx / uint(p.row_elems));
        int j = int(idx % uint(p.row_elems));
        int row = source_row(i);
        y[p.off[3] + idx] = row >= 0 ? table[p.off[0] + uint(row) * uint(p.row_elems) + uint(j)] : 0;
    }
}
