#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Attention's key and value gradients (nn_attention_params): workgroup
// (x, b) is keys OWN x to OWN x + OWN - 1 of batch entry b, walking the
// queries 32 at a time: dv_j = sum_i p_ij dout_i and dk_j = scale sum_i
// p_ij (dout_i . v_j - delta_i) q_i, p recomputed from the scores and lse.
PUSH_CONSTANTS(PUSH_ATTENTION)
#include "attention_tiles.glsl"
layout(std430, binding = 4) readonly buffer Dout { float dout[]; };
layout(std430, binding = 5) readonly buffer Lse { float lse[]; };
layout(std430, binding = 6) readonly buffer Delta { float delta[]; };
layout(std430, binding = 7) buffer Dk { float dk[]; };
layout(std430, binding = 9) buffer Dv { float dv[]; };

void main() {
    const uint tx = gl_LocalInvocationIndex % TX, ty = gl_LocalInvocationIndex / TX;
    const uint b = batch_entry(), j0 = gl_WorkGroupID.x * OWN;
    if (b >= uint(p.groups * p.heads)) return; // the last layer of z's workgroups runs past the batch
    const uint L = uint(p.queries), S = uint(p.keys), E = uint(p.head_dim), Ev = uint(p.value_dim);
    const uint qb = p.off[0] + entry(0u, b), kb = p.off[1] + entry(1u, b), vb = p.off[2] + entry(2u, b);
    const uint db = p.off[4] + out_entry(b), os = out_stride();
    float gk[ACC], gv[ACC];
    [[unroll]] for (uint x = 0u; x < ACC; x++) gk[x] = gv[x] = 0.0;
    // under causality no query before j0 sees these keys (j0 is a multiple of OTHER)
    for (uint i0 = p.causal != 0 ? j0 : 0u; i0 < L; i0 += OTHER) {
        float s[RM * CN], dp[RM * CN], ds[RM * CN];
        [[unroll]] for (uint x = 0u; x < RM * CN; x++) s[x] = dp[x] = 0.0;
        DOT_ROWS(s, k, kb, j0, S, qk_stride(), q, qb, i0, L, qk_stride(), E)
        DOT_ROWS(dp, v, vb, j0, S, v_stride(), dout, db, i0, L, os, Ev)
        [[unroll]] for (uint j = 0u; j < CN; j++) {
            uint query = i0 + tx + TX * j;
            float lse_q = query < L ? lse[p.off[5] + b * L + query] : POS_INF;
            float delta_q = query < L ? delta[p.off[6] + b * L + query] : 0.0;
            [[unroll]] for (uint i = 0u; i < RM; i++) {
                float sc = finish_score(s[i * CN + j], b, query, j0 + ty * RM + i);
                float w = sc == NEG_INF || lse_q == POS_INF ? 0.0 : exp(sc - lse_q);
                weights[ty * RM + i][tx + TX * j] = w;
                ds[i * CN + j] = w * (dp[i * CN + j] - delta_q);
            }
        }
        ADD_WEIGHTED(gv, dout, db, i0, L, os, Ev, 1.0)
        barrier(); // every invocation is done with p before it becomes ds
        [[unroll]] for (uint i = 0u; i < RM; i++)
            [[unroll]] for (uint j = 0u; j < CN; j++) weights[ty * RM + i][tx + TX * j] = ds[i * CN + j];
        ADD_WEIGHTED(gk, q, qb, i0, L, qk_stride(), E, p.scale)
    }
    float one[RM];
    [[unroll]] for (uint i = 0u; i < RM; i++) one[i] = 1.0;
    STORE_ROWS(dk, j0, S, p.off[7] + grad_entry(1u, b, S, E) + r_ * qk_stride(), E, gk, one, p.accumulate)
    STORE_ROWS(dv, j0, S, p.off[8] + grad_entry(2u, b, S, Ev) + r_ * v_stride(), Ev, gv, one, p.accumulate_v)
}
