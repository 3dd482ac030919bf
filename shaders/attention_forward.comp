#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Attention's forward (nn_attention_params): workgroup (x, b) is queries
// 32x to 32x + 31 of batch entry b, walking the keys 32 at a time with a
// running maximum and sum (online softmax), so each query's output is one
// pass over k and v. lse keeps each row's log-sum-exp for the backward.
PUSH_CONSTANTS(PUSH_ATTENTION)
#include "attention_tiles.glsl"
layout(std430, binding = 4) buffer Out { float o[]; };
layout(std430, binding = 5) writeonly buffer Lse { float lse[]; };

void main() {
    const uint row = gl_LocalInvocationIndex / PER_ROW, lane = gl_LocalInvocationIndex % PER_ROW;
    const uint b = gl_WorkGroupID.y, i0 = gl_WorkGroupID.x * TILE, i = i0 + row;
    const uint L = uint(p.queries), S = uint(p.keys), E = uint(p.head_dim), Ev = uint(p.value_dim);
    const uint qb = p.off[0] + entry(0u, b), kb = p.off[1] + entry(1u, b), vb = p.off[2] + entry(2u, b);
    float acc[CHUNKS * SPAN];
    [[unroll]] for (uint x = 0u; x < CHUNKS * SPAN; x++) acc[x] = 0.0;
    float m = NEG_INF, l = 0.0;
    const uint keys = p.causal != 0 ? min(S, i0 + TILE) : S;
    for (uint j0 = 0u; j0 < keys; j0 += TILE) {
        float s[SCORES];
        [[unroll]] for (uint j = 0u; j < SCORES; j++) s[j] = 0.0;
        DOT_ROWS(s, q, qb, i0, L, k, kb, j0, S, E)
        float top = NEG_INF;
        [[unroll]] for (uint j = 0u; j < SCORES; j++) {
            s[j] = finish_score(s[j], b, i, j0 + lane + PER_ROW * j);
            top = max(top, s[j]);
        }
        const float m_new = max(m, row_maximum(row, lane, top));
        const float alpha = m == NEG_INF ? 0.0 : exp(m - m_new);
        float sum = 0.0;
        [[unroll]] for (uint j = 0u; j < SCORES; j++) {
            float w = s[j] == NEG_INF ? 0.0 : exp(s[j] - m_new);
            weights[row][lane + PER_ROW * j] = w;
            sum += w;
        }
        l = l * alpha + row_total(row, lane, sum);
        m = m_new;
        [[unroll]] for (uint x = 0u; x < CHUNKS * SPAN; x++) acc[x] *= alpha;
        ADD_WEIGHTED(acc, weights, v, vb, j0, S, Ev, 1.0)
    }
    if (i >= L) return;
    const float inv = l > 0.0 ? 1.0 / l : 0.0;
    STORE_ROW(o, p.off[4] + (b * L + i) * Ev, Ev, acc, inv, 0)
    if (lane == 0u) lse[p.off[5] + b * L + i] = l > 0.0 ? m + log(l) : POS_INF;
}
