#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "winograd.glsl"
// An activation's patches into the Winograd domain (vk_conv_winograd.c),
// v[xi][row][channel] with `rows` rows per xi, row r holding tile
// first_tile + r of the m x m output tiles (m = 7 - p.taps; image n, tile
// row ty, tile column tx; tiles_h x tiles_w per image):
//   mode 0: B^T d B of the 6x6 input patch d at (m ty - pad_h, m tx - pad_w);
//   mode 1: A dy A^T of the m x m output-gradient patch at (m ty, m tx)
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
        uint c = e % p.channels, row = e / p.channels, m = 7u - p.taps;
        float v[36];
        if (row >= p.count) {
            for (uint xi = 0u; xi < 36u; xi++) v[xi] = 0.0;
        } else {
            uint tile = p.first_tile + row, per_image = p.tiles_h * p.tiles_w;
            uint n = tile / per_image, in_image = tile - n * per_image;
            uint ty = in_image / p.tiles_w, tx = in_image - ty * p.tiles_w;
            if (p.mode == 0u) {
                int y0 = int(m * ty) - int(p.pad_h), x0 = int(m * tx) - int(p.pad_w);
                float t[36]; // B^T d along the columns
                for (int b = 0; b < 6; b++) {
                    float col[6], r[6];
                    for (int a = 0; a < 6; a++) col[a] = at(n, c, y0 + a, x0 + b);
                    winograd_bt(col, r);
                    for (int a = 0; a < 6; a++) t[a * 6 + b] = r[a];
                }
                for (int a = 0; a < 6; a++) {
                    float row6[6], r[6];
                    for (int b = 0; b < 6; b++) row6[b] = t[a * 6 + b];
                    winograd_bt(row6, r);
                    for (int b = 0; b < 6; b++) v[a * 6 + b] = r[b];
                }
            } else {
                int y0 = int(m * ty), x0 = int(m * tx), size = int(m);
                float t[24]; // A dy along the columns: 6 rows of m
                for (int j = 0; j < size; j++) {
                    float col[4], r[6];
                    for (int i = 0; i < 4; i++) col[i] = i < size ? at(n, c, y0 + i, x0 + j) : 0.0;
                    winograd_a(col, m, r);
                    for (int a = 0; a < 6; a++) t[a * 4 + j] = r[a];
                }
                for (int a = 0; a < 6; a++) {
                    float row4[4], r[6];
                    for (int j = 0; j < 4; j++) row4[j] = j < size ? t[a * 4 + j] : 0.0;
                    winograd_a(row4, m, r);
                    for (int b = 0; b < 6; b++) v[a * 6 + b] = r[b];
                }
            }
        }
        for (uint xi = 0u; xi < 36u; xi++) dst[p.off[1] + (xi * p.rows + row) * p.channels + c] = v[xi];
    }
}
