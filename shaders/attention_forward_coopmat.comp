#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
// Attention's forward (nn_attention_params) in fp16 on the device's matrix
// cores (VK_KHR_cooperative_matrix), FlashAttention-2's walk: workgroup
// (x, b) is queries BQ x to BQ x + BQ - 1 of batch entry b, 4 subgroups of
// 16 queries each; per tile of BKV keys, S = q k^T (q, k rounded to fp16,
// sums in fp32) goes through shared memory, where each query's row gets its
// running maximum and sum (online softmax, in fp32), and its weights
// P = exp(S - max) come back rounded to fp16 for O += P v (v rounded to fp16,
// sums in fp32). The accumulators are rescaled by the new maxima through a
// 16 x 16 matrix of per-row factors of the accumulators' own type, so the
// opaque order of a cooperative matrix's elements never matters. lse keeps
// each query's log-sum-exp for the backward, as attention_forward.comp's.
// The same contract as the CPU's (cpu_attention.c): q, k, v and the
// unnormalised P rounded to fp16, everything else fp32. The next tile's k
// and v rows are loaded into registers while this one is multiplied
// (attention_coopmat.glsl's FETCH and STASH): without that, each tile
// waited on its loads (0.645 ms against 0.281 ms at GPT-2 small's shape).
//
// Heads of up to 64 columns (EXTRA_CHUNKS 0: tiles of 64 keys) or 128
// (EXTRA_CHUNKS 1: tiles of 32 keys), so that everything fits in 48 KiB of
// shared memory; the host runs wider heads on the fp32 kernel. Subgroups of
// 32 invocations (as gemm_coopmat.comp).
PUSH_CONSTANTS(PUSH_ATTENTION)
#include "attention_common.glsl"
layout(std430, binding = 0) readonly buffer Q4 { vec4 q4[]; };
layout(std430, binding = 1) readonly buffer K4 { vec4 k4[]; };
layout(std430, binding = 2) readonly buffer V4 { vec4 v4[]; };
layout(std430, binding = 4) buffer Out { float o[]; };
layout(std430, binding = 5) writeonly buffer Lse { float lse[]; };

#include "attention_coopmat.glsl"
const uint BQ = WARPS * MS;
const uint BKV = EXTRA_CHUNKS == 0u ? 64u : 32u;
const uint PS = BKV + 8u; // halves between rows of P
const uint KT = BKV / MS;
const uint SST = BKV + 8u; // floats between rows of a subgroup's scores
const uint SREG = MS * SST; // a subgroup's floats of Ss
const uint HALF = BKV / 2u; // columns of a score row per invocation

shared f16vec4 Ks[BQ * DS / 4u]; // q's rows first, then each tile's keys
shared f16vec4 Vs[BKV * DS / 4u];
shared vec4 Ss[WARPS * SREG / 4u]; // per subgroup: its scores, factors, output squares
shared f16vec4 Ps[WARPS * MS * PS / 4u];

void main() {
    const uint warp = gl_LocalInvocationIndex / SUB, lane = gl_LocalInvocationIndex % SUB;
    const uint b = batch_entry(), i0 = gl_WorkGroupID.x * BQ;
    if (b >= uint(p.groups * p.heads)) return; // the last layer of z's workgroups runs past the batch
    const uint L = uint(p.queries), S = uint(p.keys), E = uint(p.head_dim), Ev = uint(p.value_dim);
    const uint qb = p.off[0] + entry(0u, b), kb = p.off[1] + entry(1u, b), vb = p.off[2] + entry(2u, b);
    const uint sreg = warp * SREG;
    // Invocations 2 r and 2 r + 1 of a subgroup hold its row r's statistics.
    const uint row = lane >> 1u, half_ = lane & 1u, gi = i0 + warp * MS + row;

    STAGE(Ks, q, q4, qb, i0, BQ, L, qk_stride(), E)
    barrier();
    coopmat<float16_t, gl_ScopeSubgroup, MS, MS, gl_MatrixUseA> qa[DT];
    [[unroll]] for (uint d = 0u; d < DT; d++)
        coopMatLoad(qa[d], Ks, (warp * MS * DS + d * MS) / 4u, DS / 4u, gl_CooperativeMatrixLayoutRowMajor);
    coopmat<float, gl_ScopeSubgroup, MS, MS, gl_MatrixUseAccumulator> acc[DT];
    [[unroll]] for (uint d = 0u; d < DT; d++)
        acc[d] = coopmat<float, gl_ScopeSubgroup, MS, MS, gl_MatrixUseAccumulator>(0.0);
    float m = NEG_INF, l = 0.0;

    const uint keys = p.causal != 0 ? min(S, i0 + BQ) : S;
    vec4 kr[FETCHES(BKV)], vr[FETCHES(BKV)];
    FETCH(kr, BKV, k, k4, kb, 0u, S, qk_stride(), E)
    FETCH(vr, BKV, v, v4, vb, 0u, S, v_stride(), Ev)
    for (uint j0 = 0u; j0 < keys; j0 += BKV) {
        barrier(); // q's or the last tile's rows are read
        STASH(Ks, kr, BKV)
        STASH(Vs, vr, BKV)
        barrier();
        if (j0 + BKV < keys) { // the next tile's loads, in flight while this one is multiplied
            FETCH(kr, BKV, k, k4, kb, j0 + BKV, S, qk_stride(), E)
            FETCH(vr, BKV, v, v4, vb, j0 + BKV, S, v_stride(), Ev)
        }
        // The subgroup's scores: 16 queries by BKV keys.
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
        // Online softmax: this invocation's half of row `row`.
        float x[HALF];
        float top = NEG_INF;
        [[unroll]] for (uint c4 = 0u; c4 < HALF / 4u; c4++) {
            const vec4 s4 = Ss[(sreg + row * SST + 8u * c4 + 4u * half_) / 4u];
            [[unroll]] for (uint e = 0u; e < 4u; e++) {
                const uint j = j0 + 8u * c4 + 4u * half_ + e;
                float sv = s4[e] * p.scale;
                if (gi >= L || j >= S || (p.causal != 0 && j > gi)) sv = NEG_INF;
                else if (p.masked != 0) sv += mask[p.off[3] + entry(3u, b) + gi * uint(p.mask_row) + j * uint(p.mask_col)];
                x[4u * c4 + e] = sv;
                top = max(top, sv);
            }
        }
        top = max(top, subgroupShuffleXor(top, 1u));
        const float m_new = max(m, top);
        const float alpha = m == NEG_INF ? 0.0 : exp(m - m_new);
        float sum = 0.0;
        [[unroll]] for (uint c4 = 0u; c4 < HALF / 4u; c4++) {
            vec4 w;
            [[unroll]] for (uint e = 0u; e < 4u; e++)
                w[e] = x[4u * c4 + e] == NEG_INF ? 0.0 : exp(x[4u * c4 + e] - m_new);
            sum += (w.x + w.y) + (w.z + w.w);
            Ps[(warp * MS * PS + row * PS + 8u * c4 + 4u * half_) / 4u] = f16vec4(w);
        }
        sum += subgroupShuffleXor(sum, 1u);
        l = l * alpha + sum;
        m = m_new;
        subgroupMemoryBarrierShared();
        subgroupBarrier(); // the scores are read: the factors go over them
        SET_ROW_FACTOR(Ss, sreg, row, half_, alpha)
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        SCALE_ROWS(acc, DT, Ss, sreg)
        // O += P v
        coopmat<float16_t, gl_ScopeSubgroup, MS, MS, gl_MatrixUseA> pa[KT];
        [[unroll]] for (uint t = 0u; t < KT; t++)
            coopMatLoad(pa[t], Ps, (warp * MS * PS + t * MS) / 4u, PS / 4u, gl_CooperativeMatrixLayoutRowMajor);
        [[unroll]] for (uint d = 0u; d < DT; d++)
            [[unroll]] for (uint t = 0u; t < KT; t++) {
                coopmat<float16_t, gl_ScopeSubgroup, MS, MS, gl_MatrixUseB> vt;
                coopMatLoad(vt, Vs, (t * MS * DS + d * MS) / 4u, DS / 4u, gl_CooperativeMatrixLayoutRowMajor);
                acc[d] = coopMatMulAdd(pa[t], vt, acc[d]);
            }
    }
    // out = O / l, through a 16 x 16 square of the subgroup's Ss.
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    const float inv = l > 0.0 ? 1.0 / l : 0.0;
    SET_ROW_FACTOR(Ss, sreg, row, half_, inv)
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    SCALE_ROWS(acc, DT, Ss, sreg)
    subgroupBarrier();
    const uint out_base = p.off[4] + out_entry(b), os = out_stride();
    [[unroll]] for (uint d = 0u; d < DT; d++) {
        coopMatStore(acc[d], Ss, sreg / 4u, MS / 4u, gl_CooperativeMatrixLayoutRowMajor);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        [[unroll]] for (uint t = 0u; t < MS * MS / SUB; t++) {
            const uint e = lane + t * SUB, r = i0 + warp * MS + e / MS, col = d * MS + e % MS;
            if (r < L && col < Ev) o[out_base + r * os + col] = Ss[(sreg + e) / 4u][e % 4u];
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();
    }
    if (half_ == 0u && gi < L) lse[p.off[5] + b * L + gi] = l > 0.0 ? m + log(l) : POS_INF;
}
