#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "winograd.glsl"
// The filter's side of a Winograd convolution (vk_conv_winograd.c) for the
// weight w [filters][channels][r][r], r = p.taps (3 or 5); xi = a * 6 + b
// for row a and column b of a 6x6 block:
//   mode 0 (forward):  u[xi][c][f] = (G w[f][c] G^T)[a][b];
//   mode 1 (data):     u[xi][f][c] the same of w[f][c] turned by 180 degrees
//                      (the data gradient is the forward convolution of dy
//                      with the turned filters, channels and filters swapped);
//   mode 2 (weight):   dw[f][c] = beta dw[f][c] + G^T q G, q the sum of the
//                      product's `splits` partials [xi][split][c][f].
// One invocation per (channel, filter) pair, the contiguous index of its
// transformed entries the fastest.
PUSH_CONSTANTS(PUSH_WINOGRAD_FILTER)
layout(std430, binding = 0) readonly buffer In { float src[]; };
layout(std430, binding = 1) buffer Out { float dst[]; };
layout(local_size_x = 256) in;

void main() {
    uint pairs = p.channels * p.filters, r = p.taps, taps = r * r;
    GRID_STRIDE_LOOP(e, pairs) {
        uint c, f;
        if (p.mode == 1u) c = e % p.channels, f = e / p.channels;
        else f = e % p.filters, c = e / p.filters;
        if (p.mode == 2u) {
            float q[36];
            for (uint xi = 0u; xi < 36u; xi++) {
                float sum = 0.0;
                for (uint s = 0u; s < p.splits; s++)
                    sum += src[p.off[0] + ((xi * p.splits + s) * p.channels + c) * p.filters + f];
                q[xi] = sum;
            }
            float t[30]; // G^T q along the columns: r rows of 6
            for (uint b = 0u; b < 6u; b++) {
                float col[6], g[5];
                for (uint a = 0u; a < 6u; a++) col[a] = q[a * 6u + b];
                winograd_gt(col, r, g);
                for (uint i = 0u; i < r; i++) t[i * 6u + b] = g[i];
            }
            uint at = p.off[1] + (f * p.channels + c) * taps;
            for (uint i = 0u; i < r; i++) {
                float row[6], g[5];
                for (uint b = 0u; b < 6u; b++) row[b] = t[i * 6u + b];
                winograd_gt(row, r, g);
                for (uint j = 0u; j < r; j++)
                    dst[at + i * r + j] = p.beta == 0.0 ? g[j] : p.beta * dst[at + i * r + j] + g[j];
            }
            continue;
        }
        float w[25];
        uint from = p.off[0] + (f * p.channels + c) * taps;
        for (uint i = 0u; i < taps; i++) w[i] = src[from + (p.mode == 1u ? taps - 1u - i : i)];
        float t[30]; // G w along the columns: 6 rows of r
        for (uint j = 0u; j < r; j++) {
            float col[5], g[6];
            for (uint i = 0u; i < 5u; i++) col[i] = i < r ? w[i * r + j] : 0.0;
            winograd_g(col, r, g);
            for (uint a = 0u; a < 6u; a++) t[a * r + j] = g[a];
        }
        uint pair = p.mode == 1u ? f * p.channels + c : c * p.filters + f;
        for (uint a = 0u; a < 6u; a++) {
            float row[5], g[6];
            for (uint j = 0u; j < 5u; j++) row[j] = j < r ? t[a * r + j] : 0.0;
            winograd_g(row, r, g);
            for (uint b = 0u; b < 6u; b++) dst[p.off[1] + (a * 6u + b) * pairs + pair] = g[b];
        }
    }
}
