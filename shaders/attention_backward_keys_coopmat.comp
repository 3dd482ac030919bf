#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
// Attention's key and value gradients (nn_attention_params) in fp16 on
// matrix cores, as attention_backward_keys.comp computes them: workgroup
// (x, b) holds keys BK x .. BK x + BK - 1 of batch entry b (16 per
// subgroup, their k and v rows in registers) and walks the queries BQT at
// a time: P^T = exp(k q^T scale - lse) (fp32), dv += P^T dout, dP^T = v
// dout^T, dS^T = P^T (dP^T - delta) scale (fp32), dk += dS^T q. q, k, v,
// dout, P and dS are rounded to fp16, the products sum in fp32
// (cpu_attention.c's contract). Heads up to 128 (attention_coopmat.glsl).
PUSH_CONSTANTS(PUSH_ATTENTION)
#include "attention_common.glsl"
layout(std430, binding = 0) readonly buffer Q4 { vec4 q4[]; };
layout(std430, binding = 1) readonly buffer K4 { vec4 k4[]; };
layout(std430, binding = 2) readonly buffer V4 { vec4 v4[]; };
layout(std430, binding = 4) readonly buffer Dout { float dout[]; };
layout(std430, binding = 4) readonly buffer Dout4 { vec4 dout4[]; };
layout(std430, binding = 5) readonly buffer Lse { float lse[]; };
layout(std430, binding = 6) readonly buffer Delta { float delta[]; };
layout(std430, binding = 7) buffer Dk { float dk[]; };
layout(std430, binding = 9) buffer Dv { float dv[]; }; // argument 8 (binding 8 is the status buffer)

#include "attention_coopmat.glsl"
const uint BK = WARPS * MS;
const uint BQT = EXTRA_CHUNKS == 0u ? 64u : 32u;
const uint PS = BQT + 8u;
const uint QT = BQT / MS;
const uint SST = BQT + 8u;
const uint SREG = MS * SST;
const uint HALF = BQT / 2u;

shared f16vec4 Qs[BK * DS / 4u]; // k's rows, v's, then each tile's queries
shared f16vec4 Ds[BQT * DS / 4u]; // the tile's rows of dout
shared vec4 Ss[WARPS * SREG / 4u]; // per subgroup: S^T, then dP^T, then output squares
shared f16vec4 Ps[WARPS * MS * PS / 4u]; // P^T, then dS^T
shared float lse_s[BQT], delta_s[BQT];

// The subgroup's 16 x D accumulators out to rows first + warp * MS + r
// (below count) of dst at base, `stride` apart, their first `cols` columns
// (+= when accumulate).
#define STORE_ACC(acc, dst, base, first, count, stride, cols, accumulate)                                  \
    [[unroll]] for (uint d = 0u; d < DT; d++) {                                                            \
        coopMatStore(acc[d], Ss, sreg / 4u, MS / 4u, gl_CooperativeMatrixLayoutRowMajor);                  \
        subgroupMemoryBarrierShared();                                                                     \
        subgroupBarrier();                                                                                 \
        [[unroll]] for (uint t = 0u; t < MS * MS / SUB; t++) {                                             \
            const uint e = lane + t * SUB, r = (first) + warp * MS + e / MS, col = d * MS + e % MS;        \
            if (r < (count) && col < (cols)) {                                                             \
                const uint at = (base) + r * (stride) + col;                                               \
                const float x = Ss[(sreg + e) / 4u][e % 4u];                                               \
                dst[at] = (accumulate) != 0 ? dst[at] + x : x;                                             \
            }                                                                                              \
        }                                                                                                  \
        subgroupMemoryBarrierShared();                                                                     \
        subgroupBarrier();                                                                                 \
    }

void main() {
    const uint warp = gl_LocalInvocationIndex / SUB, lane = gl_LocalInvocationIndex % SUB;
    const uint b = batch_entry(), j0 = gl_WorkGroupID.x * BK;
    if (b >= uint(p.groups * p.heads)) return;
    const uint L = uint(p.queries), S = uint(p.keys), E = uint(p.head_dim), Ev = uint(p.value_dim);
    const uint qb = p.off[0] + entry(0u, b), kb = p.off[1] + entry(1u, b), vb = p.off[2] + entry(2u, b);
    const uint ob = p.off[4] + out_entry(b), os = out_stride();
    const uint sreg = warp * SREG;
    // Invocations 2 r and 2 r + 1 of a subgroup hold its key r's half rows.
    const uint row = lane >> 1u, half_ = lane & 1u, gj = j0 + warp * MS + row;

    STAGE(Qs, k, k4, kb, j0, BK, S, qk_stride(), E)
    barrier();
    coopmat<float16_t, gl_ScopeSubgroup, MS, MS, gl_MatrixUseA> ka[DT];
    coopmat<float16_t, gl_ScopeSubgroup, MS, MS, gl_MatrixUseA> va[DT];
    [[unroll]] for (uint d = 0u; d < DT; d++)
        coopMatLoad(ka[d], Qs, (warp * MS * DS + d * MS) / 4u, DS / 4u, gl_CooperativeMatrixLayoutRowMajor);
    barrier();
    STAGE(Qs, v, v4, vb, j0, BK, S, v_stride(), Ev)
    barrier();
    [[unroll]] for (uint d = 0u; d < DT; d++)
        coopMatLoad(va[d], Qs, (warp * MS * DS + d * MS) / 4u, DS / 4u, gl_CooperativeMatrixLayoutRowMajor);
    coopmat<float, gl_ScopeSubgroup, MS, MS, gl_MatrixUseAccumulator> gk[DT];
    coopmat<float, gl_ScopeSubgroup, MS, MS, gl_MatrixUseAccumulator> gv[DT];
    [[unroll]] for (uint d = 0u; d < DT; d++) {
        gk[d] = coopmat<float, gl_ScopeSubgroup, MS, MS, gl_MatrixUseAccumulator>(0.0);
        gv[d] = coopmat<float, gl_ScopeSubgroup, MS, MS, gl_MatrixUseAccumulator>(0.0);
    }

    // Under causality query i sees keys up to i: the block's keys from query j0 on.
    const uint first = p.causal != 0 ? (j0 / BQT) * BQT : 0u;
    vec4 qr[FETCHES(BQT)], dr[FETCHES(BQT)];
    float lr = POS_INF, dl = 0.0; // query gl_LocalInvocationIndex's lse and delta (below BQT)
#define FETCH_TILE(i0)                                                                                     \
    FETCH(qr, BQT, q, q4, qb, i0, L, qk_stride(), E)                                                       \
    FETCH(dr, BQT, dout, dout4, ob, i0, L, os, Ev)                                                         \
    if (gl_LocalInvocationIndex < BQT && (i0) + gl_LocalInvocationIndex < L) {                             \
        lr = lse[p.off[5] + b * L + (i0) + gl_LocalInvocationIndex];                                       \
        dl = delta[p.off[6] + b * L + (i0) + gl_LocalInvocationIndex];                                     \
    }
    FETCH_TILE(first)
    for (uint i0 = first; i0 < L; i0 += BQT) {
        barrier();
        STASH(Qs, qr, BQT)
        STASH(Ds, dr, BQT)
        if (gl_LocalInvocationIndex < BQT) {
            lse_s[gl_LocalInvocationIndex] = i0 + gl_LocalInvocationIndex < L ? lr : POS_INF;
            delta_s[gl_LocalInvocationIndex] = i0 + gl_LocalInvocationIndex < L ? dl : 0.0;
        }
        barrier();
        if (i0 + BQT < L) { // the next tile's loads, in flight while this one is multiplied
            FETCH_TILE(i0 + BQT)
        }
        // S^T: the subgroup's 16 keys by BQT queries
        [[unroll]] for (uint t = 0u; t < QT; t++) {
            coopmat<float, gl_ScopeSubgroup, MS, MS, gl_MatrixUseAccumulator> s =
                coopmat<float, gl_ScopeSubgroup, MS, MS, gl_MatrixUseAccumulator>(0.0);
            [[unroll]] for (uint d = 0u; d < DT; d++) {
                coopmat<float16_t, gl_ScopeSubgroup, MS, MS, gl_MatrixUseB> qt;
                coopMatLoad(qt, Qs, (t * MS * DS + d * MS) / 4u, DS / 4u, gl_CooperativeMatrixLayoutColumnMajor);
                s = coopMatMulAdd(ka[d], qt, s);
            }
            coopMatStore(s, Ss, (sreg + t * MS) / 4u, SST / 4u, gl_CooperativeMatrixLayoutRowMajor);
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        float pw[HALF];
        [[unroll]] for (uint c4 = 0u; c4 < HALF / 4u; c4++) {
            const uint col0 = 8u * c4 + 4u * half_;
            const vec4 s4 = Ss[(sreg + row * SST + col0) / 4u];
            vec4 w;
            [[unroll]] for (uint e = 0u; e < 4u; e++) {
                const uint i = i0 + col0 + e;
                float sv = s4[e] * p.scale;
                if (i >= L || gj >= S || (p.causal != 0 && gj > i)) sv = NEG_INF;
                else if (p.masked != 0)
                    sv += mask[p.off[3] + entry(3u, b) + i * uint(p.mask_row) + gj * uint(p.mask_col)];
                pw[4u * c4 + e] = w[e] = sv == NEG_INF || lse_s[col0 + e] == POS_INF ? 0.0 : exp(sv - lse_s[col0 + e]);
            }
            Ps[(warp * MS * PS + row * PS + col0) / 4u] = f16vec4(w);
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        // dv += P^T dout
        coopmat<float16_t, gl_ScopeSubgroup, MS, MS, gl_MatrixUseA> pa[QT];
        [[unroll]] for (uint t = 0u; t < QT; t++)
            coopMatLoad(pa[t], Ps, (warp * MS * PS + t * MS) / 4u, PS / 4u, gl_CooperativeMatrixLayoutRowMajor);
        [[unroll]] for (uint d = 0u; d < DT; d++)
            [[unroll]] for (uint t = 0u; t < QT; t++) {
                coopmat<float16_t, gl_ScopeSubgroup, MS, MS, gl_MatrixUseB> dt;
                coopMatLoad(dt, Ds, (t * MS * DS + d * MS) / 4u, DS / 4u, gl_CooperativeMatrixLayoutRowMajor);
                gv[d] = coopMatMulAdd(pa[t], dt, gv[d]);
            }
        // dP^T = v dout^T, over S^T
        [[unroll]] for (uint t = 0u; t < QT; t++) {
            coopmat<float, gl_ScopeSubgroup, MS, MS, gl_MatrixUseAccumulator> s =
                coopmat<float, gl_ScopeSubgroup, MS, MS, gl_MatrixUseAccumulator>(0.0);
            [[unroll]] for (uint d = 0u; d < DT; d++) {
                coopmat<float16_t, gl_ScopeSubgroup, MS, MS, gl_MatrixUseB> dt;
                coopMatLoad(dt, Ds, (t * MS * DS + d * MS) / 4u, DS / 4u, gl_CooperativeMatrixLayoutColumnMajor);
                s = coopMatMulAdd(va[d], dt, s);
            }
            coopMatStore(s, Ss, (sreg + t * MS) / 4u, SST / 4u, gl_CooperativeMatrixLayoutRowMajor);
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier(); // and P^T's loads are done: dS^T goes over it
        [[unroll]] for (uint c4 = 0u; c4 < HALF / 4u; c4++) {
            const uint col0 = 8u * c4 + 4u * half_;
            const vec4 dp4 = Ss[(sreg + row * SST + col0) / 4u];
            vec4 ds;
            [[unroll]] for (uint e = 0u; e < 4u; e++) ds[e] = pw[4u * c4 + e] * (dp4[e] - delta_s[col0 + e]) * p.scale;
            Ps[(warp * MS * PS + row * PS + col0) / 4u] = f16vec4(ds);
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        // dk += dS^T q
        [[unroll]] for (uint t = 0u; t < QT; t++)
            coopMatLoad(pa[t], Ps, (warp * MS * PS + t * MS) / 4u, PS / 4u, gl_CooperativeMatrixLayoutRowMajor);
        [[unroll]] for (uint d = 0u; d < DT; d++)
            [[unroll]] for (uint t = 0u; t < QT; t++) {
                coopmat<float16_t, gl_ScopeSubgroup, MS, MS, gl_MatrixUseB> qt;
                coopMatLoad(qt, Qs, (t * MS * DS + d * MS) / 4u, DS / 4u, gl_CooperativeMatrixLayoutRowMajor);
                gk[d] = coopMatMulAdd(pa[t], qt, gk[d]);
            }
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    STORE_ACC(gk, dk, p.off[7] + grad_entry(1u, b, S, E), j0, S, qk_stride(), E, p.accumulate)
    STORE_ACC(gv, dv, p.off[8] + grad_entry(2u, b, S, Ev), j0, S, v_stride(), Ev, p.accumulate_v)
}
