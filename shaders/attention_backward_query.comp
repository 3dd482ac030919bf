#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Attention's query gradient (nn_attention_params): workgroup (x, b) is
// queries OWN x to OWN x + OWN - 1 of batch entry b. With p = exp(s - lse)
// again from the scores, dq = scale sum_j p_j (dout . v_j - delta) k_j,
// where delta = dout . out, which this kernel writes for the keys'
// gradients.
PUSH_CONSTANTS(PUSH_ATTENTION)
#include "attention_tiles.glsl"
layout(std430, binding = 4) readonly buffer Out { float o[]; };
layout(std430, binding = 5) readonly buffer Dout { float dout[]; };
layout(std430, binding = 6) readonly buffer Lse { float lse[]; };
layout(std430, binding = 7) buffer Delta { float delta[]; };
layout(std430, binding = 9) buffer Dq { float dq[]; };

void main() {
    const uint tx = gl_LocalInvocationIndex % TX, ty = gl_LocalInvocationIndex / TX;
    const uint b = batch_entry(), i0 = gl_WorkGroupID.x * OWN;
    if (b >= uint(p.groups * p.heads)) return; // the last layer of z's workgroups runs past the batch
    const uint L = uint(p.queries), S = uint(p.keys), E = uint(p.head_dim), Ev = uint(p.value_dim);
    const uint qb = p.off[0] + entry(0u, b), kb = p.off[1] + entry(1u, b), vb = p.off[2] + entry(2u, b);
    const uint db = p.off[5] + out_entry(b), ob = p.off[4] + out_entry(b), os = out_stride();
    float d[RM], lse_i[RM];
    [[unroll]] for (uint i = 0u; i < RM; i++) {
        uint r = i0 + ty * RM + i;
        d[i] = 0.0;
        if (r < L)
            for (uint c = tx; c < Ev; c += TX) d[i] += dout[db + r * os + c] * o[ob + r * os + c];
        lse_i[i] = r < L ? lse[p.off[6] + b * L + r] : POS_INF;
    }
    ROW_REDUCE(d, OP_ADD)
    if (tx == 0u)
        [[unroll]] for (uint i = 0u; i < RM; i++)
            if (i0 + ty * RM + i < L) delta[p.off[7] + b * L + i0 + ty * RM + i] = d[i];
    float acc[ACC];
    [[unroll]] for (uint x = 0u; x < ACC; x++) acc[x] = 0.0;
    const uint keys = p.causal != 0 ? min(S, i0 + OWN) : S;
    for (uint j0 = 0u; j0 < keys; j0 += OTHER) {
        float s[RM * CN], dp[RM * CN];
        [[unroll]] for (uint x = 0u; x < RM * CN; x++) s[x] = dp[x] = 0.0;
        DOT_ROWS(s, q, qb, i0, L, qk_stride(), k, kb, j0, S, qk_stride(), E)
        DOT_ROWS(dp, dout, db, i0, L, os, v, vb, j0, S, v_stride(), Ev)
        [[unroll]] for (uint i = 0u; i < RM; i++)
            [[unroll]] for (uint j = 0u; j < CN; j++) {
                float sc = finish_score(s[i * CN + j], b, i0 + ty * RM + i, j0 + tx + TX * j);
                float w = sc == NEG_INF || lse_i[i] == POS_INF ? 0.0 : exp(sc - lse_i[i]);
                weights[ty * RM + i][tx + TX * j] = w * (dp[i * CN + j] - d[i]);
            }
        ADD_WEIGHTED(acc, k, kb, j0, S, qk_stride(), E, p.scale)
    }
    float one[RM];
    [[unroll]] for (uint i = 0u; i < RM; i++) one[i] = 1.0;
    STORE_ROWS(dq, i0, L, p.off[8] + grad_entry(0u, b, L, E) + r_ * qk_stride(), E, acc, one, p.accumulate)
}
