// The attention kernels on matrix cores (attention_*_coopmat.comp): 4
// subgroups of 32 invocations, each 16 rows of the workgroup's block, heads
// padded to D columns (EXTRA_CHUNKS 0: 64, 1: 128), operands staged in
// shared memory as fp16 rows DS halves apart. Included after
// attention_common.glsl, with the cooperative-matrix and fp16 extensions.
layout(local_size_x = 128) in;
layout(constant_id = 9) const uint EXTRA_CHUNKS = 0;
const uint MS = 16u, SUB = 32u, WARPS = 4u;
const uint D = 64u * (EXTRA_CHUNKS + 1u); // the head's columns, padded
const uint DS = D + 8u; // halves between staged rows (spread over the banks)
const uint DT = D / MS;
// The factors of a subgroup's 16 rows (row r's in each column of row r of
// the 16 x 16 square at float `at` of the vec4 array `buf`, rows MS apart)
// onto accumulators acc[0 .. n-1]: elementwise through a matrix of their
// own type, so the order of a cooperative matrix's elements never matters.
#define SCALE_ROWS(acc, n, buf, at)                                                                        \
    {                                                                                                      \
        coopmat<float, gl_ScopeSubgroup, MS, MS, gl_MatrixUseAccumulator> f_;                             \
        coopMatLoad(f_, buf, (at) / 4u, MS / 4u, gl_CooperativeMatrixLayoutRowMajor);                                  \
        [[unroll]] for (uint d_ = 0u; d_ < (n); d_++)                                                      \
            [[unroll]] for (int e_ = 0; e_ < acc[d_].length(); e_++) acc[d_][e_] *= f_[e_];                \
    }

// x_ = row g_'s columns c_ .. c_ + 3 of buf (rows `stride` apart from
// base), zeros past `count` rows and `cols` columns; one vec4 read where
// vec_ (base, stride and cols multiples of four) allows. Declares x_.
#define READ4(buf, buf4, base, g_, c_, count, stride, cols, vec_)                                            \
    vec4 x_ = vec4(0.0);                                                                                   \
    if (g_ < (count) && c_ < (cols)) {                                                                     \
        uint at_ = (base) + g_ * (stride) + c_;                                                            \
        if (vec_) x_ = buf4[at_ / 4u];                                                                     \
        else {                                                                                             \
            x_.x = buf[at_];                                                                               \
            if (c_ + 1u < (cols)) x_.y = buf[at_ + 1u];                                                    \
            if (c_ + 2u < (cols)) x_.z = buf[at_ + 2u];                                                    \
            if (c_ + 3u < (cols)) x_.w = buf[at_ + 3u];                                                    \
        }                                                                                                  \
    }

// Rows first .. first + rows - 1 (below count) of a matrix with `stride`
// between rows, its first `cols` columns, at base, into dst rounded to fp16
// (D columns, DS apart; zeros past the edges). Four columns at a time, read
// as a vec4 where base, stride and cols allow.
#define STAGE(dst, buf, buf4, base, first, rows, count, stride, cols)                                       \
    {                                                                                                      \
        const bool vec_ = (((base) | (stride) | (cols)) & 3u) == 0u;                                       \
        for (uint u_ = gl_LocalInvocationIndex; u_ < (rows) * (D / 4u); u_ += 128u) {                      \
            uint r_ = u_ / (D / 4u), c_ = (u_ % (D / 4u)) * 4u, g_ = (first) + r_;                          \
            READ4(buf, buf4, base, g_, c_, count, stride, cols, vec_)                                      \
            dst[(r_ * DS + c_) / 4u] = f16vec4(x_);                                                        \
        }                                                                                                  \
    }

// Row r of a subgroup's 16 x 16 square at float `at` of the vec4 array buf
// set to x by its two invocations (half h: columns 8 h .. 8 h + 7).
#define SET_ROW_FACTOR(buf, at, r, h, x)                                                                   \
    buf[((at) + (r) * MS + (h) * 8u) / 4u] = vec4(x);                                                      \
    buf[((at) + (r) * MS + (h) * 8u) / 4u + 1u] = vec4(x);

// A subgroup's row r of scores is read by invocations 2 r (h = 0) and
// 2 r + 1 (h = 1), four columns at a time: columns 8 c4 + 4 h + 0..3.
// Rows SST = columns + 8 floats apart keep those 16-byte reads (and the
// 8-byte writes of P, rows PS = columns + 8 halves apart) free of bank
// conflicts.

// A tile of TILE rows in two steps, so that its loads are in flight while
// the previous tile is multiplied: FETCH issues this invocation's FETCHES
// vec4 loads into registers (rows first .. first + TILE - 1 below count,
// `stride` apart, their first `cols` columns, at base; zeros past the
// edges), STASH writes them to dst rounded to fp16 (rows DS halves apart).
#define FETCHES(rows) ((rows) * (D / 4u) / 128u)
#define FETCH(regs, tile, buf, buf4, base, first, count, stride, cols)                                      \
    {                                                                                                      \
        const bool vec_ = (((base) | (stride) | (cols)) & 3u) == 0u;                                       \
        [[unroll]] for (uint i_ = 0u; i_ < FETCHES(tile); i_++) {                                          \
            uint u_ = gl_LocalInvocationIndex + i_ * 128u;                                                 \
            uint r_ = u_ / (D / 4u), c_ = (u_ % (D / 4u)) * 4u, g_ = (first) + r_;                          \
            READ4(buf, buf4, base, g_, c_, count, stride, cols, vec_)                                      \
            regs[i_] = x_;                                                                                 \
        }                                                                                                  \
    }
#define STASH(dst, regs, tile)                                                                             \
    [[unroll]] for (uint i_ = 0u; i_ < FETCHES(tile); i_++) {                                              \
        uint u_ = gl_LocalInvocationIndex + i_ * 128u;                                                     \
        dst[((u_ / (D / 4u)) * DS + (u_ % (D / 4u)) * 4u) / 4u] = f16vec4(regs[i_]);                       \
    }
