// Shared by the attention shaders (nn_attention_params). A workgroup of 128
// invocations owns OWN rows (queries; keys for the keys' gradients) and
// walks the other side OTHER = 32 rows at a time. Invocation (ty, tx), 16
// by 8, holds RM own rows (ty * RM + i) against CN = 4 other rows
// (tx + 8 j): its scores are RM x CN registers, so nothing of size L x S
// is ever stored, and each value it reads from shared memory serves RM or
// CN products. Rows pass through shared memory CK = 32 columns at a time;
// the pipeline's EXTRA_CHUNKS bounds E and Ev to 64 * (EXTRA_CHUNKS + 1),
// and past 64 an invocation holds 2 own rows, not 4, to keep its
// accumulators in registers. Included after PUSH_CONSTANTS(PUSH_ATTENTION).
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x = 128) in;
layout(constant_id = 9) const uint EXTRA_CHUNKS = 0;
const uint CK = 32u;
const uint CHUNKS = 2u * (EXTRA_CHUNKS + 1u);
const uint TX = 8u, TY = 16u;
const uint RM = 2u * ((EXTRA_CHUNKS + 2u) / (EXTRA_CHUNKS + 1u)); // 4, then 2
const uint CN = 4u;
const uint OWN = TY * RM, OTHER = TX * CN;
const uint COLS = CK / TX; // columns of a chunk per invocation
const uint ACC = RM * CHUNKS * COLS;
#include "attention_common.glsl"

shared float own_s[64][CK + 1];
shared float other_s[32][CK + 1];
shared float weights[64][32 + 1]; // [own row][other row]
shared float row_part[64][TX];

// v[i] becomes the maximum (OP_MAX) or sum (OP_ADD) of own row ty * RM + i
// over the row's 8 invocations.
#define OP_MAX(a, b) max(a, b)
#define OP_ADD(a, b) ((a) + (b))
#define ROW_REDUCE(v, OP)                                                                                  \
    barrier();                                                                                             \
    [[unroll]] for (uint i = 0u; i < RM; i++) row_part[ty * RM + i][tx] = v[i];                           \
    barrier();                                                                                             \
    [[unroll]] for (uint i = 0u; i < RM; i++) {                                                           \
        float t_ = row_part[ty * RM + i][0];                                                               \
        [[unroll]] for (uint x = 1u; x < TX; x++) t_ = OP(t_, row_part[ty * RM + i][x]);                  \
        v[i] = t_;                                                                                         \
    }

// dst[r][c] = column ch * CK + c of row first + r (r < rows) of a matrix
// of `count` rows of `cols` columns, `stride` apart, at base; 0 past its edges.
#define LOAD_CHUNK(dst, rows, buf, base, first, count, stride, cols, ch)                                  \
    for (uint u_ = gl_LocalInvocationIndex; u_ < (rows) * CK; u_ += gl_WorkGroupSize.x) {                \
        uint r_ = u_ / CK, c_ = u_ % CK, e_ = (ch) * CK + c_;                                             \
        dst[r_][c_] = (first) + r_ < (count) && e_ < (cols) ? buf[(base) + ((first) + r_) * (stride) + e_] : 0.0; \
    }

// s[i * CN + j] += own row ty * RM + i . other row tx + TX j, over n columns.
#define DOT_ROWS(s, own, own_base, own_first, own_count, own_stride, other, other_base, other_first, other_count, \
                 other_stride, n)                                                                         \
    for (uint ch = 0u; ch * CK < (n); ch++) {                                                             \
        barrier();                                                                                        \
        LOAD_CHUNK(own_s, OWN, own, own_base, own_first, own_count, own_stride, n, ch)                    \
        LOAD_CHUNK(other_s, OTHER, other, other_base, other_first, other_count, other_stride, n, ch)      \
        barrier();                                                                                        \
        for (uint e = 0u; e < CK; e++) {                                                                  \
            float a_[RM], b_[CN];                                                                         \
            [[unroll]] for (uint i = 0u; i < RM; i++) a_[i] = own_s[ty * RM + i][e];                      \
            [[unroll]] for (uint j = 0u; j < CN; j++) b_[j] = other_s[tx + TX * j][e];                    \
            [[unroll]] for (uint i = 0u; i < RM; i++)                                                     \
                [[unroll]] for (uint j = 0u; j < CN; j++) s[i * CN + j] += a_[i] * b_[j];                 \
        }                                                                                                 \
    }

// acc[(i * CHUNKS + ch) * COLS + c] += factor * sum over the other rows o of
// weights[ty * RM + i][o] times column ch * CK + tx + TX c of other row
// first + o (rows `stride` apart), over n columns. Written out chunk by chunk, so that acc's
// indices are constants: a loop around barriers is not unrolled, and
// accumulators indexed by its counter would live in memory.
#define ADD_WEIGHTED_CHUNK(acc, other, other_base, other_first, other_count, stride, n, factor, ch)       \
    if ((ch) < CHUNKS && (ch) * CK < (n)) {                                                               \
        barrier();                                                                                        \
        LOAD_CHUNK(other_s, OTHER, other, other_base, other_first, other_count, stride, n, ch)            \
        barrier();                                                                                        \
        for (uint o = 0u; o < OTHER; o++) {                                                               \
            float w_[RM], b_[COLS];                                                                       \
            [[unroll]] for (uint i = 0u; i < RM; i++) w_[i] = weights[ty * RM + i][o] * (factor);         \
            [[unroll]] for (uint c = 0u; c < COLS; c++) b_[c] = other_s[o][tx + TX * c];                  \
            [[unroll]] for (uint i = 0u; i < RM; i++)                                                     \
                [[unroll]] for (uint c = 0u; c < COLS; c++)                                               \
                    acc[(i * CHUNKS + (ch)) * COLS + c] += w_[i] * b_[c];                                 \
        }                                                                                                 \
    }
#define ADD_WEIGHTED(acc, other, other_base, other_first, other_count, stride, n, factor)                 \
    ADD_WEIGHTED_CHUNK(acc, other, other_base, other_first, other_count, stride, n, factor, 0u)            \
    ADD_WEIGHTED_CHUNK(acc, other, other_base, other_first, other_count, stride, n, factor, 1u)            \
    ADD_WEIGHTED_CHUNK(acc, other, other_base, other_first, other_count, stride, n, factor, 2u)            \
    ADD_WEIGHTED_CHUNK(acc, other, other_base, other_first, other_count, stride, n, factor, 3u)            \
    ADD_WEIGHTED_CHUNK(acc, other, other_base, other_first, other_count, stride, n, factor, 4u)            \
    ADD_WEIGHTED_CHUNK(acc, other, other_base, other_first, other_count, stride, n, factor, 5u)            \
    ADD_WEIGHTED_CHUNK(acc, other, other_base, other_first, other_count, stride, n, factor, 6u)            \
    ADD_WEIGHTED_CHUNK(acc, other, other_base, other_first, other_count, stride, n, factor, 7u)            

// Own rows first + ty * RM + i below count, their columns held here, times
// factor[i], written at row_base (an expression of the row r_) + column
// (+= when accumulate).
#define STORE_ROWS(dst, first, count, row_base, n, acc, factor, accumulate)                               \
    [[unroll]] for (uint i = 0u; i < RM; i++) {                                                           \
        uint r_ = (first) + ty * RM + i;                                                                  \
        [[unroll]] for (uint ch = 0u; ch < CHUNKS; ch++)                                                  \
            [[unroll]] for (uint c = 0u; c < COLS; c++) {                                                 \
                uint col_ = ch * CK + tx + TX * c, at_ = (row_base) + col_;                               \
                float x_ = acc[(i * CHUNKS + ch) * COLS + c] * factor[i];                                 \
                if (r_ < (count) && col_ < (n)) dst[at_] = (accumulate) != 0 ? dst[at_] + x_ : x_;        \
            }                                                                                             \
    }
