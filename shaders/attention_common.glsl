// The attention shaders' buffers and geometry (nn_attention_params):
// where a batch entry's rows of each operand start, their row strides, and
// the score of a query and a key. Included after PUSH_CONSTANTS(PUSH_ATTENTION)
// by attention_tiles.glsl (the fp32 kernels) and attention_forward_coopmat.comp.
#define NEG_INF uintBitsToFloat(0xff800000u)
#define POS_INF uintBitsToFloat(0x7f800000u)

layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer K { float k[]; };
layout(std430, binding = 2) readonly buffer V { float v[]; };
layout(std430, binding = 3) readonly buffer Mask { float mask[]; };

// The workgroup's batch entry: y, and z for batches past the 65535 workgroups of a dimension.
uint batch_entry() { return gl_WorkGroupID.y + gl_WorkGroupID.z * gl_NumWorkGroups.y; }

// Where batch entry b's matrix of operand `which` (0 q, 1 k, 2 v, 3 mask) starts.
uint entry(uint which, uint b) {
    uint heads = uint(p.heads);
    return (b / heads) * p.group_stride[which] + (b % heads) * p.head_stride[which];
}

// Rows of q and k (and dq, dk), of v (and dv), of out (and dout): qkv_row
// and out_row apart where set (heads in place in packed projections, heads
// merged), else as wide as a row.
uint qk_stride() { return p.qkv_row != 0 ? uint(p.qkv_row) : uint(p.head_dim); }
uint v_stride() { return p.qkv_row != 0 ? uint(p.qkv_row) : uint(p.value_dim); }
uint out_stride() { return p.out_row != 0 ? uint(p.out_row) : uint(p.value_dim); }
// Where batch entry b's rows of out and dout start: [groups, L, heads, Ev]
// with out_row, else dense [batch, L, Ev].
uint out_entry(uint b) {
    uint L = uint(p.queries), Ev = uint(p.value_dim), heads = uint(p.heads);
    return p.out_row != 0 ? (b / heads) * L * uint(p.out_row) + (b % heads) * Ev : b * L * Ev;
}
// Where batch entry b's rows of dq (0), dk (1) or dv (2), `rows` of `cols`,
// start: q's, k's or v's layout with qkv_row, else dense.
uint grad_entry(uint which, uint b, uint rows, uint cols) {
    return p.qkv_row != 0 ? entry(which, b) : b * rows * cols;
}

// The score of query i and key j from their product; -inf where hidden.
float finish_score(float product, uint b, uint i, uint j) {
    if (i >= uint(p.queries) || j >= uint(p.keys) || (p.causal != 0 && j > i)) return NEG_INF;
    float s = product * p.scale;
    if (p.masked != 0) s += mask[p.off[3] + entry(3u, b) + i * uint(p.mask_row) + j * uint(p.mask_col)];
    return s;
}
