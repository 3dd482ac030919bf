// Shared by the attention shaders (nn_attention_params). A workgroup of 128
// invocations owns a tile of 32 rows (queries; keys for the keys'
// gradients); invocation t serves row t / 4 and, of each 64-column chunk
// of a row, the columns t % 4 + 4 j. Its scores against 32 rows of the
// other side at a time stay in registers (8 per invocation), so nothing of
// size L x S is ever stored. Rows pass through shared memory a chunk at a
// time; the pipeline's CHUNKS bounds E and Ev to 64 * CHUNKS.
// Included after PUSH_CONSTANTS(PUSH_ATTENTION).
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x = 128) in;
layout(constant_id = 9) const uint EXTRA_CHUNKS = 0;
const uint CHUNKS = EXTRA_CHUNKS + 1u;
const uint TILE = 32u, CHUNK = 64u, PER_ROW = 4u;
const uint SCORES = TILE / PER_ROW; // scores per invocation and tile
const uint SPAN = CHUNK / PER_ROW;  // columns of a chunk per invocation
#define NEG_INF uintBitsToFloat(0xff800000u)
#define POS_INF uintBitsToFloat(0x7f800000u)

layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer K { float k[]; };
layout(std430, binding = 2) readonly buffer V { float v[]; };
layout(std430, binding = 3) readonly buffer Mask { float mask[]; };

shared float own_rows[TILE][CHUNK + 1];
shared float other_rows[TILE][CHUNK + 1];
shared float weights[TILE][TILE + 1]; // [own row][other row]
shared float weights2[TILE][TILE + 1];
shared float row_part[TILE][PER_ROW];

// Where batch entry b's matrix of operand `which` (0 q, 1 k, 2 v, 3 mask) starts.
uint entry(uint which, uint b) {
    uint heads = uint(p.heads);
    return (b / heads) * p.group_stride[which] + (b % heads) * p.head_stride[which];
}

// The score of query i and key j from their product; -inf where hidden.
float finish_score(float product, uint b, uint i, uint j) {
    if (i >= uint(p.queries) || j >= uint(p.keys) || (p.causal != 0 && j > i)) return NEG_INF;
    float s = product * p.scale;
    if (p.masked != 0) s += mask[p.off[3] + entry(3u, b) + i * uint(p.mask_row) + j * uint(p.mask_col)];
    return s;
}

// The sum of each row's four parts (every invocation of the row gets it).
float row_total(uint row, uint lane, float part) {
    barrier();
    row_part[row][lane] = part;
    barrier();
    return row_part[row][0] + row_part[row][1] + row_part[row][2] + row_part[row][3];
}

float row_maximum(uint row, uint lane, float part) {
    barrier();
    row_part[row][lane] = part;
    barrier();
    return max(max(row_part[row][0], row_part[row][1]), max(row_part[row][2], row_part[row][3]));
}

// dst[r][e] = column ch * CHUNK + e of row first + r of a dense matrix of
// `rows` rows of `cols` columns at base; 0 past its edges.
#define LOAD_CHUNK(dst, buf, base, first, rows, cols, ch)                                                    \
    for (uint u_ = gl_LocalInvocationIndex; u_ < TILE * CHUNK; u_ += gl_WorkGroupSize.x) {                 \
        uint r_ = u_ / CHUNK, e_ = (ch) * CHUNK + u_ % CHUNK;                                               \
        dst[r_][u_ % CHUNK] = (first) + r_ < (rows) && e_ < (cols) ? buf[(base) + ((first) + r_) * (cols) + e_] \
                                                                   : 0.0;                                   \
    }

// acc[j] += own row `row` . other row lane + 4 j, over n columns.
#define DOT_ROWS(acc, own, own_base, own_first, own_count, other, other_base, other_first, other_count, n)   \
    [[unroll]] for (uint ch = 0u; ch < CHUNKS; ch++) {                                                      \
        if (ch * CHUNK >= (n)) break;                                                                       \
        barrier();                                                                                          \
        LOAD_CHUNK(own_rows, own, own_base, own_first, own_count, n, ch)                                    \
        LOAD_CHUNK(other_rows, other, other_base, other_first, other_count, n, ch)                          \
        barrier();                                                                                          \
        for (uint e = 0u; e < CHUNK; e++) {                                                                 \
            float a_ = own_rows[row][e];                                                                    \
            [[unroll]] for (uint j = 0u; j < SCORES; j++) acc[j] += a_ * other_rows[lane + PER_ROW * j][e]; \
        }                                                                                                   \
    }

// acc[ch * SPAN + c] += factor * sum over the other rows r of w[row][r] times
// column ch * CHUNK + lane + 4 c of other row first + r, over n columns.
#define ADD_WEIGHTED(acc, w, other, other_base, other_first, other_count, n, factor)                       \
    [[unroll]] for (uint ch = 0u; ch < CHUNKS; ch++) {                                                      \
        if (ch * CHUNK >= (n)) break;                                                                       \
        barrier();                                                                                          \
        LOAD_CHUNK(other_rows, other, other_base, other_first, other_count, n, ch)                          \
        barrier();                                                                                          \
        for (uint r = 0u; r < TILE; r++) {                                                                  \
            float x_ = w[row][r] * (factor);                                                                \
            [[unroll]] for (uint c = 0u; c < SPAN; c++)                                                     \
                acc[ch * SPAN + c] += x_ * other_rows[r][lane + PER_ROW * c];                               \
        }                                                                                                   \
    }

// Row `row`'s columns held by this invocation, written to dst (+= when accumulate).
#define STORE_ROW(dst, base, n, acc, scale_by, accumulate)                                                  \
    [[unroll]] for (uint ch = 0u; ch < CHUNKS; ch++)                                                        \
        [[unroll]] for (uint c = 0u; c < SPAN; c++) {                                                       \
            uint col_ = ch * CHUNK + lane + PER_ROW * c;                                                    \
            if (col_ < (n)) {                                                                               \
                float x_ = acc[ch * SPAN + c] * (scale_by);                                                 \
                dst[(base) + col_] = (accumulate) != 0 ? dst[(base) + col_] + x_ : x_;                      \
            }                                                                                               \
        }
