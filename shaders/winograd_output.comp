#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "winograd.glsl"
// The Winograd domain's products m[xi][row][filter] back to 4x4 output
// patches (vk_conv_winograd.c): y = A^T m A for tile first_tile + row (as
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
        uint f = e % p.filters, row = e / p.filters;
        uint tile = p.first_tile + row, per_image = p.tiles_h * p.tiles_w;
        uint n = tile / per_image, in_image = tile - n * per_image;
        uint ty = in_image / p.tiles_w, tx = in_image - ty * p.tiles_w;
        uint in_at = p.off[0] + row * p.filters + f, point_stride = p.rows * p.filters;
        float t[M * MAX_ALPHA]; // A^T m along the columns: M rows of ALPHA
        [[unroll]] for (uint b = 0u; b < ALPHA; b++) {
            float col[MAX_ALPHA], r[M];
            [[unroll]] for (uint a = 0u; a < MAX_ALPHA; a++) col[a] = a < ALPHA ? src[in_at + (a * ALPHA + b) * point_stride] : 0.0;
            winograd_at(col, r);
            [[unroll]] for (uint i = 0u; i < M; i++) t[i * MAX_ALPHA + b] = r[i];
        }
        float add = (p.epilogue & CONV_BIAS) != 0u ? bias[p.off[2] + f] : 0.0;
        [[unroll]] for (uint i = 0u; i < M; i++) {
            uint y = M * ty + i;
            if (y >= p.height) break;
            float line[MAX_ALPHA], r[M];
            [[unroll]] for (uint b = 0u; b < MAX_ALPHA; b++) line[b] = b < ALPHA ? t[i * MAX_ALPHA + b] : 0.0;
            winograd_at(line, r);
            [[unroll]] for (uint j = 0u; j < M; j++) {
                uint x = M * tx + j;
                if (x >= p.width) break;
                uint idx = p.off[1] + n * p.sn + f * p.sc + y * p.sh + x * p.sw;
                float v = r[j] + add;
                if ((p.epilogue & CONV_RELU) != 0u && !(v > 0.0 || isnan(v))) v = 0.0;
                dst[idx] = p.beta == 0.0 ? v : p.beta * dst[idx] + v;
            }
        }
    }
}
