// nn_gather_params (kernels.h) after the four argument offsets: row i of the
// output is table row order[first + counter * stride + i] (no order: the
// position itself; no counter: 0); a position or row out of range gives zeros.
layout(push_constant) uniform Params {
    PC_OFFSETS
    int rows, row_elems, first, stride, positions, table_rows, plane;
    float scale0, scale1, scale2, scale3;
    float shift0, shift1, shift2, shift3;
    int has_order, has_counter;
} p;

int source_row(int i, int counter_value, int order_value) {
    int position = p.first + counter_value * p.stride + i;
    if (position < 0 || position >= p.positions) return -1;
    int index = p.has_order != 0 ? order_value : position;
    return (index >= 0 && index < p.table_rows) ? index : -1;
}
