#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Attention's key and value gradients (nn_attention_params): workgroup
// (x, b) is keys 32x to 32x + 31 of batch entry b, walking the queries 32
// at a time: dv_j = sum_i p_ij dout_i and dk_j = scale sum_i p_ij
// (dout_i . v_j - delta_i) q_i, p recomputed from the scores and lse.
PUSH_CONSTANTS(PUSH_ATTENTION)
#include "attention_tiles.glsl"
layout(std430, binding = 4) readonly buffer Dout { float dout[]; };
layout(std430, binding = 5) readonly buffer Lse { float lse[]; };
layout(std430, binding = 6) readonly buffer Delta { float delta[]; };
layout(std430, binding = 7) buffer Dk { float dk[]; };
layout(std430, binding = 9) buffer Dv { float dv[]; };

void main() {
    const uint row = gl_LocalInvocationIndex / PER_ROW, lane = gl_LocalInvocationIndex % PER_ROW;
    const uint b = gl_WorkGroupID.y, j0 = gl_WorkGroupID.x * TILE, j = j0 + row;
    const uint L = uint(p.queries), S = uint(p.keys), E = uint(p.head_dim), Ev = uint(p.value_dim);
    const uint qb = p.off[0] + entry(0u, b), kb = p.off[1] + entry(1u, b), vb = p.off[2] + entry(2u, b);
    const uint db = p.off[4] + b * L * Ev;
    float gk[CHUNKS * SPAN], gv[CHUNKS * SPAN];
    [[unroll]] for (uint x = 0u; x < CHUNKS * SPAN; x++) gk[x] = gv[x] = 0.0;
    for (uint i0 = p.causal != 0 ? j0 : 0u; i0 < L; i0 += TILE) {
        float s[SCORES], dp[SCORES];
        [[unroll]] for (uint c = 0u; c < SCORES; c++) s[c] = dp[c] = 0.0;
        DOT_ROWS(s, k, kb, j0, S, q, qb, i0, L, E)
        DOT_ROWS(dp, v, vb, j0, S, dout, db, i0, L, Ev)
        [[unroll]] for (uint c = 0u; c < SCORES; c++) {
            uint i = i0 + lane + PER_ROW * c;
            float sc = finish_score(s[c], b, i, j);
            float w = sc == NEG_INF ? 0.0 : exp(sc - lse[p.off[5] + b * L + i]);
            weights[row][lane + PER_ROW * c] = w;
            weights2[row][lane + PER_ROW * c] = sc == NEG_INF ? 0.0 : w * (dp[c] - delta[p.off[6] + b * L + i]);
        }
        ADD_WEIGHTED(gv, weights, dout, db, i0, L, Ev, 1.0)
        ADD_WEIGHTED(gk, weights2, q, qb, i0, L, E, p.scale)
    }
    if (j < S) {
        STORE_ROW(dk, p.off[7] + (b * S + j) * E, E, gk, 1.0, p.accumulate)
        STORE_ROW(dv, p.off[8] + (b * S + j) * Ev, Ev, gv, 1.0, p.accumulate_v)
    }
}
