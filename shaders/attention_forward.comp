#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Attention's forward (nn_attention_params): workgroup (x, b) is queries
// OWN x to OWN x + OWN - 1 of batch entry b, walking the keys 32 at a time
// with a running maximum and sum per query (online softmax), so each
// query's output is one pass over k and v. lse keeps each query's
// log-sum-exp for the backward.
PUSH_CONSTANTS(PUSH_ATTENTION)
#include "attention_tiles.glsl"
layout(std430, binding = 4) buffer Out { float o[]; };
layout(std430, binding = 5) writeonly buffer Lse { float lse[]; };

void main() {
    const uint tx = gl_LocalInvocationIndex % TX, ty = gl_LocalInvocationIndex / TX;
    const uint b = batch_entry(), i0 = gl_WorkGroupID.x * OWN;
    if (b >= uint(p.groups * p.heads)) return; // the last layer of z's workgroups runs past the batch
    const uint L = uint(p.queries), S = uint(p.keys), E = uint(p.head_dim), Ev = uint(p.value_dim);
    const uint qb = p.off[0] + entry(0u, b), kb = p.off[1] + entry(1u, b), vb = p.off[2] + entry(2u, b);
    float acc[ACC], m[RM], l[RM];
    [[unroll]] for (uint x = 0u; x < ACC; x++) acc[x] = 0.0;
    [[unroll]] for (uint i = 0u; i < RM; i++) m[i] = NEG_INF, l[i] = 0.0;
    const uint keys = p.causal != 0 ? min(S, i0 + OWN) : S;
    for (uint j0 = 0u; j0 < keys; j0 += OTHER) {
        float s[RM * CN], top[RM], sum[RM], alpha[RM];
        [[unroll]] for (uint x = 0u; x < RM * CN; x++) s[x] = 0.0;
        DOT_ROWS(s, q, qb, i0, L, qk_stride(), k, kb, j0, S, qk_stride(), E)
        [[unroll]] for (uint i = 0u; i < RM; i++) {
            top[i] = NEG_INF;
            [[unroll]] for (uint j = 0u; j < CN; j++) {
                s[i * CN + j] = finish_score(s[i * CN + j], b, i0 + ty * RM + i, j0 + tx + TX * j);
                top[i] = max(top[i], s[i * CN + j]);
            }
        }
        ROW_REDUCE(top, OP_MAX)
        [[unroll]] for (uint i = 0u; i < RM; i++) {
            const float m_new = max(m[i], top[i]);
            alpha[i] = m[i] == NEG_INF ? 0.0 : exp(m[i] - m_new);
            sum[i] = 0.0;
            [[unroll]] for (uint j = 0u; j < CN; j++) {
                float w = s[i * CN + j] == NEG_INF ? 0.0 : exp(s[i * CN + j] - m_new);
                weights[ty * RM + i][tx + TX * j] = w;
                sum[i] += w;
            }
            m[i] = m_new;
        }
        ROW_REDUCE(sum, OP_ADD)
        [[unroll]] for (uint i = 0u; i < RM; i++) {
            l[i] = l[i] * alpha[i] + sum[i];
            [[unroll]] for (uint x = 0u; x < CHUNKS * COLS; x++) acc[i * CHUNKS * COLS + x] *= alpha[i];
        }
        ADD_WEIGHTED(acc, v, vb, j0, S, v_stride(), Ev, 1.0)
    }
    float inv[RM];
    [[unroll]] for (uint i = 0u; i < RM; i++) inv[i] = l[i] > 0.0 ? 1.0 / l[i] : 0.0;
    STORE_ROWS(o, i0, L, p.off[4] + out_entry(b) + r_ * out_stride(), Ev, acc, inv, 0)
    if (tx == 0u)
        [[unroll]] for (uint i = 0u; i < RM; i++) {
            uint r = i0 + ty * RM + i;
            if (r < L) lse[p.off[5] + b * L + r] = l[i] > 0.0 ? m[i] + log(l[i]) : POS_INF;
        }
}
