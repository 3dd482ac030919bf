// The body of maxpool_backward.comp and maxpool_backward_masked.comp.
// The scatter dx[argmax] += dy as a gather: one invocation per input pixel
// (in dx's memory order, dense or channels-last) adds the dy of every
// window that covers it and chose it, in output order
// starting from the old value (accumulate) or zero -- the CPU's order, and
// no two invocations write one pixel (overlapping windows are safe).
// MASKED (the fused ReLU backward): a window adds its dy only where the pool
// output y > 0, y at binding 2 and dx at binding 3.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) readonly buffer A { int argmax[]; };
#if MASKED
layout(std430, binding = 2) readonly buffer Y { float y[]; };
layout(std430, binding = 3) buffer DX { float dx[]; };
#define DX_OFFSET p.off[3]
#else
layout(std430, binding = 2) buffer DX { float dx[]; };
#define DX_OFFSET p.off[2]
#endif

void main() {
    uint in_plane = uint(p.height * p.width);
    uint out_plane = uint(p.out_h * p.out_w);
    uint total = uint(p.batch * p.channels) * in_plane;
    GRID_STRIDE_LOOP(idx, total) {
        uint n, c, pixel;
        pool_position(idx, in_plane, n, c, pixel);
        int pix = int(pixel);
        int h = pix / p.width, w = pix % p.width;
        // Windows oh with oh*stride - pad <= h < oh*stride - pad + kernel.
        int oh0 = max(0, (h + p.pad - p.kernel + p.stride) / p.stride);
        if (h + p.pad - p.kernel + 1 < 0) oh0 = 0;
        int oh1 = min(p.out_h - 1, (h + p.pad) / p.stride);
        int ow0 = max(0, (w + p.pad - p.kernel + p.stride) / p.stride);
        if (w + p.pad - p.kernel + 1 < 0) ow0 = 0;
        int ow1 = min(p.out_w - 1, (w + p.pad) / p.stride);
        uint o = DX_OFFSET + idx;
        float sum = p.accumulate != 0 ? dx[o] : 0.0;
        for (int oh = oh0; oh <= oh1; oh++) {
            for (int ow = ow0; ow <= ow1; ow++) {
                uint q = pool_element(n, c, uint(oh * p.out_w + ow), out_plane);
#if MASKED
                if (argmax[p.off[1] + q] == pix && y[p.off[2] + q] > 0.0) sum += dy[p.off[0] + q];
#else
                if (argmax[p.off[1] + q] == pix) sum += dy[p.off[0] + q];
#endif
            }
        }
        dx[o] = sum;
    }
}
