#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "winograd.glsl"
// The filter's side of a Winograd convolution (vk_conv_winograd.c) for the
// weight w [filters][channels][TAPS][TAPS]; xi = a * ALPHA + b for row a
// and column b of the transformed block:
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
    const uint taps = TAPS * TAPS;
    uint pairs = p.channels * p.filters;
    GRID_STRIDE_LOOP(e, pairs) {
        uint c, f;
        if (p.mode == 1u) c = e % p.channels, f = e / p.channels;
        else f = e % p.filters, c = e / p.filters;
        if (p.mode == 2u) {
            float t[MAX_TAPS * MAX_ALPHA]; // G^T q along the columns: TAPS rows of ALPHA
            [[unroll]] for (uint b = 0u; b < ALPHA; b++) {
                float col[MAX_ALPHA], g[MAX_TAPS];
                [[unroll]] for (uint a = 0u; a < MAX_ALPHA; a++) {
                    float sum = 0.0;
                    if (a < ALPHA)
                        for (uint s = 0u; s < p.splits; s++)
                            sum += src[p.off[0] + (((a * ALPHA + b) * p.splits + s) * p.channels + c) * p.filters + f];
                    col[a] = sum;
                }
                winograd_gt(col, g);
                [[unroll]] for (uint i = 0u; i < TAPS; i++) t[i * MAX_ALPHA + b] = g[i];
            }
            uint at = p.off[1] + (f * p.channels + c) * taps;
            [[unroll]] for (uint i = 0u; i < TAPS; i++) {
                float line[MAX_ALPHA], g[MAX_TAPS];
                [[unroll]] for (uint b = 0u; b < MAX_ALPHA; b++) line[b] = b < ALPHA ? t[i * MAX_ALPHA + b] : 0.0;
                winograd_gt(line, g);
                [[unroll]] for (uint j = 0u; j < TAPS; j++)
                    dst[at + i * TAPS + j] = p.beta == 0.0 ? g[j] : p.beta * dst[at + i * TAPS + j] + g[j];
            }
            continue;
        }
        float w[MAX_TAPS * MAX_TAPS];
        uint from = p.off[0] + (f * p.channels + c) * taps;
        [[unroll]] for (uint i = 0u; i < taps; i++) w[i] = src[from + (p.mode == 1u ? taps - 1u - i : i)];
        float t[MAX_ALPHA * MAX_TAPS]; // G w along the columns: ALPHA rows of TAPS
        [[unroll]] for (uint j = 0u; j < TAPS; j++) {
            float col[MAX_TAPS], g[MAX_ALPHA];
            [[unroll]] for (uint i = 0u; i < MAX_TAPS; i++) col[i] = i < TAPS ? w[i * TAPS + j] : 0.0;
            winograd_g(col, g);
            [[unroll]] for (uint a = 0u; a < ALPHA; a++) t[a * MAX_TAPS + j] = g[a];
        }
        uint pair = p.mode == 1u ? f * p.channels + c : c * p.filters + f;
        [[unroll]] for (uint a = 0u; a < ALPHA; a++) {
            float line[MAX_TAPS], g[MAX_ALPHA];
            [[unroll]] for (uint j = 0u; j < MAX_TAPS; j++) line[j] = j < TAPS ? t[a * MAX_TAPS + j] : 0.0;
            winograd_g(line, g);
            [[unroll]] for (uint b = 0u; b < ALPHA; b++) dst[p.off[1] + (a * ALPHA + b) * pairs + pair] = g[b];
        }
    }
}
