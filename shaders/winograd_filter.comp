#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "winograd.glsl"
// The filter's side of a Winograd F(4x4, 3x3) convolution (vk_conv_winograd.c),
// for the weight w [filters][channels][3][3]; xi = a * 6 + b for row a and
// column b of a 6x6 block:
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
    uint pairs = p.channels * p.filters;
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
            float t[18]; // G^T q along the columns: 3 rows of 6
            for (uint b = 0u; b < 6u; b++) {
                float col[6], r[3];
                for (uint a = 0u; a < 6u; a++) col[a] = q[a * 6u + b];
                winograd_gt(col, r);
                for (uint i = 0u; i < 3u; i++) t[i * 6u + b] = r[i];
            }
            uint at = p.off[1] + (f * p.channels + c) * 9u;
            for (uint i = 0u; i < 3u; i++) {
                float row[6], r[3];
                for (uint b = 0u; b < 6u; b++) row[b] = t[i * 6u + b];
                winograd_gt(row, r);
                for (uint j = 0u; j < 3u; j++)
                    dst[at + i * 3u + j] = p.beta == 0.0 ? r[j] : p.beta * dst[at + i * 3u + j] + r[j];
            }
            continue;
        }
        float w[9];
        uint from = p.off[0] + (f * p.channels + c) * 9u;
        for (uint i = 0u; i < 9u; i++) w[i] = src[from + (p.mode == 1u ? 8u - i : i)];
        float t[18]; // G w along the columns: 6 rows of 3
        for (uint j = 0u; j < 3u; j++) {
            float col[3] = float[3](w[j], w[3u + j], w[6u + j]), r[6];
            winograd_g(col, r);
            for (uint a = 0u; a < 6u; a++) t[a * 3u + j] = r[a];
        }
        uint pair = p.mode == 1u ? f * p.channels + c : c * p.filters + f;
        for (uint a = 0u; a < 6u; a++) {
            float row[3] = float[3](t[a * 3u], t[a * 3u + 1u], t[a * 3u + 2u]), r[6];
            winograd_g(row, r);
            for (uint b = 0u; b < 6u; b++) dst[p.off[1] + (a * 6u + b) * pairs + pair] = r[b];
        }
    }
}
