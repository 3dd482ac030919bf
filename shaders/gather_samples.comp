#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "gather_params.glsl"
#include "dropout_philox.glsl"
// A batch of uint8 samples (packed four to a word) gathered by a device-side
// step counter and normalised to float: value * scale[c] + shift[c]; with
// augmentation, each sample shifted and mirrored as kernels.h's
// nn_gather_params says (the CPU's cpu_device_loop.c, the reference).
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer S { uint samples[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(std430, binding = 4) readonly buffer D { int draws[]; };

void main() {
    uint total = uint(p.rows) * uint(p.row_elems);
    GRID_STRIDE_LOOP(idx, total) {
        int i = int(idx / uint(p.row_elems));
        int j = int(idx % uint(p.row_elems));
        int row = source_row(i);
        float v = 0.0;
        if (row >= 0) {
            int c = j / p.plane, source = j;
            bool inside = true;
            if (p.crop_pad != 0 || p.flip != 0) {
                uint w = philox_word(uint(p.draw_row + i), uint(draws[p.off[4]]), p.seed_lo, p.seed_hi);
                uint span = 2u * uint(p.crop_pad) + 1u;
                int dy = int((w & 255u) % span) - p.crop_pad, dx = int(((w >> 8) & 255u) % span) - p.crop_pad;
                bool mirrored = p.flip != 0 && ((w >> 16) & 1u) != 0u;
                int height = p.plane / p.width, y = (j % p.plane) / p.width, x = j % p.width;
                int sy = y + dy, sx = (mirrored ? p.width - 1 - x : x) + dx;
                inside = sy >= 0 && sy < height && sx >= 0 && sx < p.width;
                source = inside ? c * p.plane + sy * p.width + sx : 0; // outside: a zero pixel, nothing read
            }
            uint byte_index = p.off[0] * 4u + uint(row) * uint(p.row_elems) + uint(source);
            uint b = (samples[byte_index >> 2] >> ((byte_index & 3u) * 8u)) & 255u;
            if (!inside) b = 0u;
            float scale = c == 0 ? p.scale[0] : c == 1 ? p.scale[1] : c == 2 ? p.scale[2] : p.scale[3];
            float shift = c == 0 ? p.shift[0] : c == 1 ? p.shift[1] : c == 2 ? p.shift[2] : p.shift[3];
            v = float(b) * scale + shift;
        }
        y[p.off[3] + idx] = v;
    }
}
