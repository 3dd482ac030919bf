// nn_gather_params (kernels.h) after the four argument offsets: row i of the
// output is table row order[first + counter * stride + i] (no order: the
// position itself; no counter: 0); a position or row out of range gives zeros.
// Bindings 1 and 2 (order, counter) are declared here; 0 and 3 by the shader.
PUSH_CONSTANTS(PUSH_GATHER)

layout(std430, binding = 1) readonly buffer O { int order[]; };
layout(std430, binding = 2) readonly buffer C { int counter[]; };

// The order position output row i takes.
int position_of(int i) { return p.first + (p.has_counter != 0 ? counter[p.off[2]] : 0) * p.stride + i; }

// The table row that output row i takes, or -1 for a row of zeros.
int source_row(int i) {
    int position = position_of(i);
    if (position < 0 || position >= p.positions) return -1;
    int index = p.has_order != 0 ? order[p.off[1] + position] : position;
    return (index >= 0 && index < p.table_rows) ? index : -1;
}
