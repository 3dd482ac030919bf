#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
// The implicit-GEMM convolution (conv_gemm.comp's three products, the
// same geometry, loads, push constants and bindings) on the device's
// matrix cores (VK_KHR_cooperative_matrix), for operations recorded in
// fp16: the operands are fp32 in memory, rounded to fp16 as they are
// staged in shared memory; the products accumulate in fp32.
//
// A workgroup computes a BM x BN tile with (BM / WM) * (BN / WN)
// subgroups, each a WM x WN block of 16 x 16 x 16 cooperative matrices
// (as gemm_coopmat.comp). The staged slices keep the layout the loads read
// them in, so each invocation stores its four halves in one write: A
// pixel-major ([row][k], FORWARD and DATA, read along the channels) or
// k-major ([k][row], WEIGHT, dy read along its filters); B k-major
// ([k][column]). Rows are padded by 8 halves so the matrix loads spread
// over the banks. The sums go out through a per-subgroup 16 x 16 square
// in shared memory, where the epilogue and the output's strides apply.
layout(constant_id = 0) const uint BM = 128;
layout(constant_id = 1) const uint BN = 128;
layout(constant_id = 2) const uint BK = 32;
layout(constant_id = 3) const uint WM = 64; // a subgroup's rows
layout(constant_id = 4) const uint WN = 64; // a subgroup's columns
layout(local_size_x_id = 5) in;             // (BM / WM) * (BN / WN) subgroups of 32
layout(constant_id = 6) const uint DB = 0;
layout(constant_id = 7) const uint VEC_A = 0;
layout(constant_id = 8) const uint VEC_B = 0;
layout(constant_id = 9) const uint MODE = 0;
layout(constant_id = 10) const uint PRELOAD = 0; // DATA adding onto its output: clear_tile()'s preloaded squares
const uint SUBGROUP = 32;
const uint THREADS = (BM / WM) * (BN / WN) * SUBGROUP;
#include "conv_gemm_common.glsl"

const uint MS = 16; // the cooperative matrix's rows, columns and depth
const uint TILES_M = WM / MS, TILES_N = WN / MS;
const bool A_K_MAJOR = MODE == WEIGHT;
// Row strides (halves) and slice sizes of the staged slices.
const uint AS = A_K_MAJOR ? BM + 8 : BK + 8, BS = BN + 8;
const uint A_SLICE = A_K_MAJOR ? BK * AS : BM * AS, B_SLICE = BK * BS;

// As vectors of four halves: row strides and slices are multiples of four
// halves, and the matrix loads take offsets and strides in these units.
shared f16vec4 As[(1 + DB) * A_SLICE / 4];
shared f16vec4 Bs[(1 + DB) * B_SLICE / 4];
shared float Cs[(THREADS / SUBGROUP) * MS * MS];

// WEIGHT: conv_gemm_common.glsl's slice pixels in the first subgroup's
// output square, which only store() uses, after the k loop (the 128x128
// tile's shared memory is at 48 KiB already). Its 2 * BK entries of four
// words fill the square at BK = 32 (every tile's: vk_pipeline_list.h), and
// their writers, invocations 0 .. BK - 1, are that subgroup, whose own
// stores into the square come in program order.
void set_slice_pixels(uint entry, ivec4 v) {
    Cs[4 * entry] = intBitsToFloat(v.x), Cs[4 * entry + 1] = intBitsToFloat(v.y);
    Cs[4 * entry + 2] = intBitsToFloat(v.z), Cs[4 * entry + 3] = intBitsToFloat(v.w);
}
ivec4 slice_pixels(uint entry) {
    return ivec4(floatBitsToInt(Cs[4 * entry]), floatBitsToInt(Cs[4 * entry + 1]), floatBitsToInt(Cs[4 * entry + 2]),
                 floatBitsToInt(Cs[4 * entry + 3]));
}

coopmat<float, gl_ScopeSubgroup, MS, MS, gl_MatrixUseAccumulator> acc[TILES_M * TILES_N];

// PRELOAD, DATA adding onto the output (p.beta != 0: a residual block's
// first convolution adds its data gradient onto the shortcut's), in a
// pipeline of its own (its registers cost the others): a square whose
// 16 rows are consecutive pixels at one stride of a channels-last output
// starts as beta times the output there, loaded before the k loop, where
// the reads wait under the products rather than in the store; store()
// then writes it without reading (bit `square` of preloaded).
uint preloaded;

void clear_tile(uint row0, uint col0) {
    preloaded = 0u;
    bool linear = PRELOAD != 0 && MODE == DATA && p.beta != 0.0 && out_mul_h == 1u && out_mul_w == 1u && p.out_sc == 1u &&
                  p.out_sw % 4u == 0u && p.out_sh == rows_w * p.out_sw && p.out_sn == rows_h * p.out_sh;
    uint warp = gl_LocalInvocationID.x / SUBGROUP;
    uint wrow = (warp / (BN / WN)) * WM, wcol = (warp % (BN / WN)) * WN;
    [[unroll]] for (uint i = 0; i < TILES_M; i++) {
        uint first = row0 + wrow + i * MS;
        uint base = linear && first + MS <= m_rows ? output_row_base(pixel_at(first)) : 0u;
        [[unroll]] for (uint j = 0; j < TILES_N; j++) {
            uint square = i * TILES_N + j, col = col0 + wcol + j * MS, at = base + grp * p.n + col;
            if (linear && first + MS <= m_rows && col + MS <= p.n && at % 4u == 0u) {
                coopMatLoad(acc[square], outv, at, p.out_sw, gl_CooperativeMatrixLayoutRowMajor);
                if (p.beta != 1.0) acc[square] = acc[square] * p.beta;
                preloaded |= 1u << square;
            } else {
                acc[square] = coopmat<float, gl_ScopeSubgroup, MS, MS, gl_MatrixUseAccumulator>(0.0);
            }
        }
    }
}

// One half at (element offset `at`) of a staged slice.
void put_a(uint at, float v) { As[at / 4][at % 4] = float16_t(v); }
void put_b(uint at, float v) { Bs[at / 4][at % 4] = float16_t(v); }

void stash(uint buf) {
    uint abase = buf * A_SLICE, bbase = buf * B_SLICE;
    if (MODE != WEIGHT) { // A [row][k]: each load is four (or one) k of one row
        uint kk = a_kk();
        [[unroll]] for (uint t = 0; t < A_LOADS; t++) {
            uint at = abase + a_row_of(t) * AS + kk;
            if (VEC_A != 0) As[at / 4] = f16vec4(ra[t]);
            else put_a(at, ra[t].x);
        }
    } else { // A [k][row]: each load is four (or one) filters of one pixel
        uint r = wa_row();
        [[unroll]] for (uint t = 0; t < A_LOADS; t++) {
            uint at = abase + wa_kk(t) * AS + r;
            if (VEC_A != 0) As[at / 4] = f16vec4(ra[t]);
            else put_a(at, ra[t].x);
        }
    }
    uint c = b_col();
    [[unroll]] for (uint t = 0; t < B_LOADS; t++) {
        uint at = bbase + b_kk(t) * BS + c;
        if (VEC_B != 0) Bs[at / 4] = f16vec4(rb[t]);
        else put_b(at, rb[t].x);
    }
}

void multiply(uint buf) {
    uint warp = gl_LocalInvocationID.x / SUBGROUP;
    uint wrow = (warp / (BN / WN)) * WM, wcol = (warp % (BN / WN)) * WN;
    [[unroll]] for (uint k = 0; k < BK; k += MS) {
        coopmat<float16_t, gl_ScopeSubgroup, MS, MS, gl_MatrixUseA> a[TILES_M];
        [[unroll]] for (uint i = 0; i < TILES_M; i++) {
            uint r = wrow + i * MS;
            if (A_K_MAJOR) coopMatLoad(a[i], As, (buf * A_SLICE + k * AS + r) / 4, AS / 4, gl_CooperativeMatrixLayoutColumnMajor);
            else coopMatLoad(a[i], As, (buf * A_SLICE + r * AS + k) / 4, AS / 4, gl_CooperativeMatrixLayoutRowMajor);
        }
        [[unroll]] for (uint j = 0; j < TILES_N; j++) {
            coopmat<float16_t, gl_ScopeSubgroup, MS, MS, gl_MatrixUseB> b;
            coopMatLoad(b, Bs, (buf * B_SLICE + k * BS + wcol + j * MS) / 4, BS / 4, gl_CooperativeMatrixLayoutRowMajor);
            [[unroll]] for (uint i = 0; i < TILES_M; i++) acc[i * TILES_N + j] = coopMatMulAdd(a[i], b, acc[i * TILES_N + j]);
        }
    }
}

// Each lane writes column lane % 16 of rows lane / 16 + 2t (t < 8) of
// every square: sixteen lanes on sixteen consecutive channels when the
// output is channels-last.
void store(uint row0, uint col0, uint split) {
    uint warp = gl_LocalInvocationID.x / SUBGROUP, lane = gl_LocalInvocationID.x % SUBGROUP;
    uint wrow = (warp / (BN / WN)) * WM, wcol = (warp % (BN / WN)) * WN;
    uint square = warp * MS * MS;
    const uint ROWS_PER_LANE = MS * MS / SUBGROUP, ROW_STEP = SUBGROUP / MS;
    [[unroll]] for (uint i = 0; i < TILES_M; i++) {
        uint first = row0 + wrow + i * MS + lane / MS;
        // FORWARD, DATA: the output pixels of this lane's rows, found once per square row.
        uint bases[ROWS_PER_LANE];
        if (MODE != WEIGHT) {
            pixel q = pixel_at(first < m_rows ? first : 0u);
            [[unroll]] for (uint t = 0; t < ROWS_PER_LANE; t++) {
                bases[t] = output_row_base(q);
                pixel_advance(q, ROW_STEP);
            }
        }
        [[unroll]] for (uint j = 0; j < TILES_N; j++) {
            coopMatStore(acc[i * TILES_N + j], Cs, square, MS, gl_CooperativeMatrixLayoutRowMajor);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            uint col = col0 + wcol + j * MS + lane % MS;
            if (col < p.n) {
                if (MODE == WEIGHT) {
                    kpos q = kpos_at(col);
                    [[unroll]] for (uint t = 0; t < ROWS_PER_LANE; t++) {
                        uint row = first + t * ROW_STEP;
                        if (row < p.m) put(weight_index(row, q, split), Cs[square + (lane / MS + t * ROW_STEP) * MS + lane % MS]);
                    }
                } else {
                    uint channel = grp * p.n + col; // FORWARD: p.n = fg; DATA: p.n = cg
                    bool added = PRELOAD != 0 && (preloaded & (1u << (i * TILES_N + j))) != 0u; // dx is in the sums
                    [[unroll]] for (uint t = 0; t < ROWS_PER_LANE; t++) {
                        uint row = first + t * ROW_STEP;
                        float v = Cs[square + (lane / MS + t * ROW_STEP) * MS + lane % MS];
                        if (row >= m_rows) continue;
                        uint at = bases[t] + channel * p.out_sc;
                        if (added) outv[at] = v;
                        else put(at, MODE == FORWARD ? forward_epilogue(v, channel) : v);
                    }
                }
            }
            subgroupBarrier();
        }
    }
}
