// The body of pool2d_max_backward.comp and pool2d_avg_backward.comp: one
// invocation per input element gathers, in the CPU's order, the gradients
// of the outputs whose windows read it -- those that chose it (MAX, argmax
// at binding 1, dx at binding 2) or all of them over their divisors (dx at
// binding 1) -- starting from its old value (accumulate) or zero. No two
// invocations write one element, so overlapping windows need no atomics.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer DY { float dy[]; };
#if MAX
layout(std430, binding = 1) readonly buffer A { int argmax[]; };
layout(std430, binding = 2) buffer DX { float dx[]; };
#define DX_OFFSET p.off[2]
#else
layout(std430, binding = 1) buffer DX { float dx[]; };
#define DX_OFFSET p.off[1]
#endif

void main() {
    uint in_plane = uint(p.height * p.width);
    uint out_plane = uint(p.out_h * p.out_w);
    uint total = uint(p.batch * p.channels) * in_plane;
    int candidates_h = pool2d_candidates(p.height, p.out_h, p.kernel_h, p.adaptive);
    int candidates_w = pool2d_candidates(p.width, p.out_w, p.kernel_w, p.adaptive);
    GRID_STRIDE_LOOP(idx, total) {
        uint nc = idx / in_plane;
        int pixel = int(idx % in_plane);
        int h = pixel / p.width, w = pixel % p.width;
        uint o = DX_OFFSET + idx;
        float sum = p.accumulate != 0 ? dx[o] : 0.0;
        uint base = nc * out_plane;
        for (int ch = 0; ch < candidates_h; ch++) {
            int oh = row_reader(ch, h);
            if (oh < 0) continue;
            for (int cw = 0; cw < candidates_w; cw++) {
                int ow = column_reader(cw, w);
                if (ow < 0) continue;
                uint q = base + uint(oh * p.out_w + ow);
#if MAX
                if (argmax[p.off[1] + q] == pixel) sum += dy[p.off[0] + q];
#else
                sum += dy[p.off[0] + q] / avg_divisor(oh, ow);
#endif
            }
        }
        dx[o] = sum;
    }
}
