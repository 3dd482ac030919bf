#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "gather_params.glsl"
// Rows of 32-bit words (labels, a learning-rate table) gathered by a
// device-side step counter.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer T { int table[]; };
layout(std430, binding = 1) readonly buffer O { int order[]; };
layout(std430, binding = 2) readonly buffer C { int counter[]; };
layout(std430, binding = 3) writeonly buffer Y { int y[]; };

void main() {
    int counter_value = p.has_counter != 0 ? counter[p.off2] : 0;
    uint total = uint(p.rows) * uint(p.row_elems);
    GRID_STRIDE_LOOP(idx, total) {
        int i = int(idx / uint(p.row_elems));
        int j = int(idx % uint(p.row_elems));
        int position = p.first + counter_value * p.stride + i;
        int order_value = (p.has_order != 0 && position >= 0 && position < p.positions) ? order[p.off1 + position] : 0;
        int row = source_row(i, counter_value, order_value);
        y[p.off3 + idx] = row >= 0 ? table[p.off0 + uint(row) * uint(p.row_elems) + uint(j)] : 0;
    }
}
