#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "winograd.glsl"
// An activation's patches into the Winograd domain (vk_conv_winograd.c),
// v[xi][row][channel] with `rows` rows per xi (xi = a * ALPHA + b for row
// a and column b of the transformed block), row r holding tile
// first_tile + r of the 4x4 output tiles (image n, tile row ty, tile column
// tx; tiles_h x tiles_w per image):
//   mode 0: B^T d B of the ALPHA x ALPHA input patch d at (4 ty - pad_h, 4 tx - pad_w);
//   mode 1: A dy A^T of the 4x4 output-gradient patch at (4 ty, 4 tx)
//           (the weight gradient's, the output transform's adjoint).
// Entries outside the tensor read as 0; rows from `count` on (a split
// product's padding) are written as 0. One invocation per (row, channel),
// the channel the fastest (channels-last tensors: contiguous reads).
PUSH_CONSTANTS(PUSH_WINOGRAD_TILES)
layout(std430, binding = 0) readonly buffer In { float src[]; };
layout(std430, binding = 1) writeonly buffer Out { float dst[]; };
layout(local_size_x = 256) in;

float at(uint n, uint c, int y, int x) {
    if (y < 0 || x < 0 || uint(y) >= p.height || uint(x) >= p.width) return 0.0;
    return src[p.off[0] + n * p.sn + c * p.sc + uint(y) * p.sh + uint(x) * p.sw];
}

void main() {
    GRID_STRIDE_LOOP(e, p.rows * p.channels) {
        uint c = e % p.channels, row = e / p.channels;
        uint out_at = p.off[1] + row * p.channels + c, point_stride = p.rows * p.channels;
        if (row >= p.count) {
            [[unroll]] for (uint xi = 0u; xi < ALPHA * ALPHA; xi++) dst[out_at + xi * point_stride] = 0.0;
            continue;
        }
        uint tile = p.first_tile + row, per_image = p.tiles_h * p.tiles_w;
        uint n = tile / per_image, in_image = tile - n * per_image;
        uint ty = in_image / p.tiles_w, tx = in_image - ty * p.tiles_w;
        // The block transformed along its columns into t, then each row of t
        // along its rows straight to the output.
        float t[MAX_ALPHA * MAX_ALPHA];
        if (p.mode == 0u) {
            int y0 = int(M * ty) - int(p.pad_h), x0 = int(M * tx) - int(p.pad_w);
            [[unroll]] for (uint b = 0u; b < ALPHA; b++) {
                float col[MAX_ALPHA], r[MAX_ALPHA];
                [[unroll]] for (uint a = 0u; a < MAX_ALPHA; a++) col[a] = a < ALPHA ? at(n, c, y0 + int(a), x0 + int(b)) : 0.0;
                winograd_bt(col, r);
                [[unroll]] for (uint a = 0u; a < ALPHA; a++) t[a * MAX_ALPHA + b] = r[a];
            }
        } else {
            int y0 = int(M * ty), x0 = int(M * tx);
            [[unroll]] for (uint j = 0u; j < M; j++) {
                float col[M], r[MAX_ALPHA];
                [[unroll]] for (uint i = 0u; i < M; i++) col[i] = at(n, c, y0 + int(i), x0 + int(j));
                winograd_a(col, r);
                [[unroll]] for (uint a = 0u; a < ALPHA; a++) t[a * MAX_ALPHA + j] = r[a];
            }
        }
        [[unroll]] for (uint a = 0u; a < ALPHA; a++) {
            float r[MAX_ALPHA];
            if (p.mode == 0u) {
                float line[MAX_ALPHA];
                [[unroll]] for (uint b = 0u; b < MAX_ALPHA; b++) line[b] = b < ALPHA ? t[a * MAX_ALPHA + b] : 0.0;
                winograd_bt(line, r);
            } else {
                float line[M];
                [[unroll]] for (uint j = 0u; j < M; j++) line[j] = t[a * MAX_ALPHA + j];
                winograd_a(line, r);
            }
            [[unroll]] for (uint b = 0u; b < ALPHA; b++) dst[out_at + (a * ALPHA + b) * point_stride] = r[b];
        }
    }
}
