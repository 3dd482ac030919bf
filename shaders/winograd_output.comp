#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "winograd.glsl"
// The Winograd domain's products m[xi][row][filter] back to m x m output
// patches (m = 7 - p.taps; vk_conv_winograd.c): y = A^T m A for tile first_tile + row (as
// winograd_tiles.comp numbers them), `rows` rows per xi, `count` of them
// real; then the bias and ReLU (nn_conv_params.epilogue), or beta times
// what y held (the data gradient's accumulate). Outputs past the tensor's
// edge are not written. One invocation per (row, filter), the filter the
// fastest (channels-last tensors: contiguous writes).
PUSH_CONSTANTS(PUSH_WINOGRAD_OUTPUT)
layout(std430, binding = 0) readonly buffer In { float src[]; };
layout(std430, binding = 1) buffer Out { float dst[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(local_size_x = 256) in;

const uint CONV_BIAS = 2u, CONV_RELU = 4u; // NN_EPI_BIAS_ROWS, NN_EPI_RELU

void main() {
    GRID_STRIDE_LOOP(e, p.count * p.filters) {
        uint f = e % p.filters, row = e / p.filters, m = 7u - p.taps;
        uint tile = p.first_tile + row, per_image = p.tiles_h * p.tiles_w;
        uint n = tile / per_image, in_image = tile - n * per_image;
        uint ty = in_image / p.tiles_w, tx = in_image - ty * p.tiles_w;
        float t[24]; // A^T m along the columns: m rows of 6
        for (uint b = 0u; b < 6u; b++) {
            float col[6], r[4];
            for (uint a = 0u; a < 6u; a++) col[a] = src[p.off[0] + ((a * 6u + b) * p.rows + row) * p.filters + f];
            winograd_at(col, m, r);
            for (uint i = 0u; i < m; i++) t[i * 6u + b] = r[i];
        }
        float add = (p.epilogue & CONV_BIAS) != 0u ? bias[p.off[2] + f] : 0.0;
        for (uint i = 0u; i < m; i++) {
            uint y = m * ty + i;
            if (y >= p.height) break;
            float row6[6], r[4];
            for (uint b = 0u; b < 6u; b++) row6[b] = t[i * 6u + b];
            winograd_at(row6, m, r);
            for (uint j = 0u; j < m; j++) {
                uint x = m * tx + j;
                if (x >= p.width) break;
                uint idx = p.off[1] + n * p.sn + f * p.sc + y * p.sh + x * p.sw;
                float v = r[j] + add;
                if ((p.epilogue & CONV_RELU) != 0u && !(v > 0.0 || isnan(v))) v = 0.0;
                dst[idx] = p.beta == 0.0 ? v : p.beta * dst[idx] + v;
            }
        }
    }
}
