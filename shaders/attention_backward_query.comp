#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
// Attention's query gradient (nn_attention_params): workgroup (x, b) is
// queries 32x to 32x + 31 of batch entry b. With p = exp(s - lse) again
// from the scores, dq = scale sum_j p_j (dout . v_j - delta) k_j, where
// delta = dout . out, which this kernel writes for the keys' gradients.
PUSH_CONSTANTS(PUSH_ATTENTION)
#include "attention_tiles.glsl"
layout(std430, binding = 4) readonly buffer Out { float o[]; };
layout(std430, binding = 5) readonly buffer Dout { float dout[]; };
layout(std430, binding = 6) readonly buffer Lse { float lse[]; };
layout(std430, binding = 7) buffer Delta { float delta[]; };
layout(std430, binding = 9) buffer Dq { float dq[]; };

void main() {
    const uint row = gl_LocalInvocationIndex / PER_ROW, lane = gl_LocalInvocationIndex % PER_ROW;
    const uint b = gl_WorkGroupID.y, i0 = gl_WorkGroupID.x * TILE, i = i0 + row;
    const uint L = uint(p.queries), S = uint(p.keys), E = uint(p.head_dim), Ev = uint(p.value_dim);
    const uint kb = p.off[1] + entry(1u, b), vb = p.off[2] + entry(2u, b), db = p.off[5] + b * L * Ev;
    float part = 0.0;
    if (i < L)
        for (uint c = lane; c < Ev; c += PER_ROW) part += dout[db + i * Ev + c] * o[p.off[4] + (b * L + i) * Ev + c];
    const float delta_i = row_total(row, lane, part);
    if (i < L && lane == 0u) delta[p.off[7] + b * L + i] = delta_i;
    const float lse_i = i < L ? lse[p.off[6] + b * L + i] : POS_INF;
    float acc[CHUNKS * SPAN];
    [[unroll]] for (uint x = 0u; x < CHUNKS * SPAN; x++) acc[x] = 0.0;
    const uint keys = p.causal != 0 ? min(S, i0 + TILE) : S;
    for (uint j0 = 0u; j0 < keys; j0 += TILE) {
        float s[SCORES], dp[SCORES];
        [[unroll]] for (uint j = 0u; j < SCORES; j++) s[j] = dp[j] = 0.0;
        DOT_ROWS(s, q, p.off[0] + entry(0u, b), i0, L, k, kb, j0, S, E)
        DOT_ROWS(dp, dout, db, i0, L, v, vb, j0, S, Ev)
        [[unroll]] for (uint j = 0u; j < SCORES; j++) {
            float sc = finish_score(s[j], b, i, j0 + lane + PER_ROW * j);
            float w = sc == NEG_INF || lse_i == POS_INF ? 0.0 : exp(sc - lse_i);
            weights[row][lane + PER_ROW * j] = w * (dp[j] - delta_i);
        }
        ADD_WEIGHTED(acc, weights, k, kb, j0, S, E, p.scale)
    }
    if (i < L) STORE_ROW(dq, p.off[8] + (b * L + i) * E, E, acc, 1.0, p.accumulate)
}
