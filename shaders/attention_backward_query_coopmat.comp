#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
// Attention's query gradient (nn_attention_params) in fp16 on matrix cores,
// as attention_backward_query.comp computes it: delta = rowsum(dout * out)
// (fp32, written for the keys' kernel), then per tile of BKV keys the
// weights P = exp(S - lse) recomputed from S = q k^T, dP = dout v^T, the
// scores' gradients dS = P (dP - delta) scale, and dq += dS k. q, k, v,
// dout and dS are rounded to fp16, the products sum in fp32, P and dS are
// computed in fp32 (cpu_attention.c's contract). Workgroup (x, b): queries
// BQ x .. BQ x + BQ - 1 of batch entry b, 16 per subgroup; heads up to 128
// (attention_coopmat.glsl).
PUSH_CONSTANTS(PUSH_ATTENTION)
#include "attention_common.glsl"
layout(std430, binding = 0) readonly buffer Q4 { vec4 q4[]; };
layout(std430, binding = 1) readonly buffer K4 { vec4 k4[]; };
layout(std430, binding = 2) readonly buffer V4 { vec4 v4[]; };
layout(std430, binding = 4) readonly buffer Out { float o[]; };
layout(std430, binding = 5) readonly buffer Dout { float dout[]; };
layout(std430, binding = 5) readonly buffer Dout4 { vec4 dout4[]; };
layout(std430, binding = 6) readonly buffer Lse { float lse[]; };
layout(std430, binding = 7) writeonly buffer Delta { float delta_w[]; };
layout(std430, binding = 9) buffer Dq { float dq[]; }; // argument 8 (binding 8 is the status buffer)

#include "attention_coopmat.glsl"
const uint BQ = WARPS * MS;
const uint BKV = EXTRA_CHUNKS == 0u ? 64u : 32u;
const uint PS = BKV + 8u;
const uint KT = BKV / MS;
const uint SST = BKV + 8u;
const uint SREG = MS * SST;
const uint HALF = BKV / 2u;

shared f16vec4 Ks[BQ * DS / 4u]; // q's rows, dout's, then each tile's keys
shared f16vec4 Vs[BKV * DS / 4u];
shared vec4 Ss[WARPS * SREG / 4u]; // per subgroup: S, then dP, then output squares
shared f16vec4 Ps[WARPS * MS * PS / 4u]; // dS

void main() {
    const uint warp = gl_LocalInvocationIndex / SUB, lane = gl_LocalInvocationIndex % SUB;
    const uint b = batch_entry(), i0 = gl_WorkGroupID.x * BQ;
    if (b >= uint(p.groups * p.heads)) return;
    const uint L = uint(p.queries), S = uint(p.keys), E = uint(p.head_dim), Ev = uint(p.value_dim);
    const uint qb = p.off[0] + entry(0u, b), kb = p.off[1] + entry(1u, b), vb = p.off[2] + entry(2u, b);
    const uint ob = out_entry(b), os = out_stride();
    const uint sreg = warp * SREG;
    const uint row = lane >> 1u, half_ = lane & 1u, gi = i0 + warp * MS + row;

    // delta and lse of row gi (both invocations of the row hold them)
    float delta = 0.0;
    if (gi < L)
        for (uint e = half_; e < Ev; e += 2u) delta += dout[p.off[5] + ob + gi * os + e] * o[p.off[4] + ob + gi * os + e];
    delta += subgroupShuffleXor(delta, 1u);
    if (half_ == 0u && gi < L) delta_w[p.off[7] + b * L + gi] = delta;
    const float row_lse = gi < L ? lse[p.off[6] + b * L + gi] : POS_INF;

    STAGE(Ks, q, q4, qb, i0, BQ, L, qk_stride(), E)
    barrier();
    coopmat<float16_t, gl_ScopeSubgroup, MS, MS, gl_MatrixUseA> qa[DT];
    coopmat<float16_t, gl_ScopeSubgroup, MS, MS, gl_MatrixUseA> da[DT];
    [[unroll]] for (uint d = 0u; d < DT; d++)
        coopMatLoad(qa[d], Ks, (warp * MS * DS + d * MS) / 4u, DS / 4u, gl_CooperativeMatrixLayoutRowMajor);
    barrier();
    STAGE(Ks, dout, dout4, p.off[5] + ob, i0, BQ, L, os, Ev)
    barrier();
    [[unroll]] for (uint d = 0u; d < DT; d++)
        coopMatLoad(da[d], Ks, (warp * MS * DS + d * MS) / 4u, DS / 4u, gl_CooperativeMatrixLayoutRowMajor);
    coopmat<float, gl_ScopeSubgroup, MS, MS, gl_MatrixUseAccumulator> acc[DT];
    [[unroll]] for (uint d = 0u; d < DT; d++)
        acc[d] = coopmat<float, gl_ScopeSubgroup, MS, MS, gl_MatrixUseAccumulator>(0.0);

    const uint keys = p.causal != 0 ? min(S, i0 + BQ) : S;
    vec4 kr[FETCHES(BKV)], vr[FETCHES(BKV)];
    FETCH(kr, BKV, k, k4, kb, 0u, S, qk_stride(), E)
    FETCH(vr, BKV, v, v4, vb, 0u, S, v_stride(), Ev)
    for (uint j0 = 0u; j0 < keys; j0 += BKV) {
        barrier();
        STASH(Ks, kr, BKV)
        STASH(Vs, vr, BKV)
        barrier();
        if (j0 + BKV < keys) { // the next tile's loads, in flight while this one is multiplied
            FETCH(kr, BKV, k, k4, kb, j0 + BKV, S, qk_stride(), E)
            FETCH(vr, BKV, v, v4, vb, j0 + BKV, S, v_stride(), Ev)
        }
        [[unroll]] for (uint t = 0u; t < KT; t++) {
            coopmat<float, gl_ScopeSubgroup, MS, MS, gl_MatrixUseAccumulator> s =
                coopmat<float, gl_ScopeSubgroup, MS, MS, gl_MatrixUseAccumulator>(0.0);
            [[unroll]] for (uint d = 0u; d < DT; d++) {
                coopmat<float16_t, gl_ScopeSubgroup, MS, MS, gl_MatrixUseB> kt;
                coopMatLoad(kt, Ks, (t * MS * DS + d * MS) / 4u, DS / 4u, gl_CooperativeMatrixLayoutColumnMajor);
                s = coopMatMulAdd(qa[d], kt, s);
            }
            coopMatStore(s, Ss, (sreg + t * MS) / 4u, SST / 4u, gl_CooperativeMatrixLayoutRowMajor);
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        float pw[HALF];
        [[unroll]] for (uint c4 = 0u; c4 < HALF / 4u; c4++) {
            const vec4 s4 = Ss[(sreg + row * SST + 8u * c4 + 4u * half_) / 4u];
            [[unroll]] for (uint e = 0u; e < 4u; e++) {
                const uint j = j0 + 8u * c4 + 4u * half_ + e;
                float sv = s4[e] * p.scale;
                if (gi >= L || j >= S || (p.causal != 0 && j > gi)) sv = NEG_INF;
                else if (p.masked != 0) sv += mask[p.off[3] + entry(3u, b) + gi * uint(p.mask_row) + j * uint(p.mask_col)];
                pw[4u * c4 + e] = sv == NEG_INF || row_lse == POS_INF ? 0.0 : exp(sv - row_lse);
            }
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier(); // S is read: dP goes over it
        [[unroll]] for (uint t = 0u; t < KT; t++) {
            coopmat<float, gl_ScopeSubgroup, MS, MS, gl_MatrixUseAccumulator> s =
                coopmat<float, gl_ScopeSubgroup, MS, MS, gl_MatrixUseAccumulator>(0.0);
            [[unroll]] for (uint d = 0u; d < DT; d++) {
                coopmat<float16_t, gl_ScopeSubgroup, MS, MS, gl_MatrixUseB> vt;
                coopMatLoad(vt, Vs, (t * MS * DS + d * MS) / 4u, DS / 4u, gl_CooperativeMatrixLayoutColumnMajor);
                s = coopMatMulAdd(da[d], vt, s);
            }
            coopMatStore(s, Ss, (sreg + t * MS) / 4u, SST / 4u, gl_CooperativeMatrixLayoutRowMajor);
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        [[unroll]] for (uint c4 = 0u; c4 < HALF / 4u; c4++) {
            const vec4 dp4 = Ss[(sreg + row * SST + 8u * c4 + 4u * half_) / 4u];
            vec4 ds;
            [[unroll]] for (uint e = 0u; e < 4u; e++) ds[e] = pw[4u * c4 + e] * (dp4[e] - delta) * p.scale;
            Ps[(warp * MS * PS + row * PS + 8u * c4 + 4u * half_) / 4u] = f16vec4(ds);
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        coopmat<float16_t, gl_ScopeSubgroup, MS, MS, gl_MatrixUseA> sa[KT];
        [[unroll]] for (uint t = 0u; t < KT; t++)
            coopMatLoad(sa[t], Ps, (warp * MS * PS + t * MS) / 4u, PS / 4u, gl_CooperativeMatrixLayoutRowMajor);
        [[unroll]] for (uint d = 0u; d < DT; d++)
            [[unroll]] for (uint t = 0u; t < KT; t++) {
                coopmat<float16_t, gl_ScopeSubgroup, MS, MS, gl_MatrixUseB> kt;
                coopMatLoad(kt, Ks, (t * MS * DS + d * MS) / 4u, DS / 4u, gl_CooperativeMatrixLayoutRowMajor);
                acc[d] = coopMatMulAdd(sa[t], kt, acc[d]);
            }
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    const uint dq_base = p.off[8] + grad_entry(0u, b, L, E), qs = qk_stride();
    [[unroll]] for (uint d = 0u; d < DT; d++) {
        coopMatStore(acc[d], Ss, sreg / 4u, MS / 4u, gl_CooperativeMatrixLayoutRowMajor);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        [[unroll]] for (uint t = 0u; t < MS * MS / SUB; t++) {
            const uint e = lane + t * SUB, r = i0 + warp * MS + e / MS, col = d * MS + e % MS;
            if (r < L && col < E) {
                const uint at = dq_base + r * qs + col;
                const float x = Ss[(sreg + e) / 4u][e % 4u];
                dq[at] = p.accumulate != 0 ? dq[at] + x : x;
            }
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();
    }
}
