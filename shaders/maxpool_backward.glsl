// The body of maxpool_backward.comp and maxpool_backward_masked.comp.
// The scatter dx[argmax] += dy as a gather: one invocation per input pixel
// (in dx's memory order, dense or channels-last) adds the dy of every
// window that covers it and chose it, in output order
// starting from the old value (accumulate) or zero -- the CPU's order, and
// no two invocations write one pixel (overlapping windows are safe).
// With p.quads an invocation takes four channels of a channels-last pixel
// and reads a window's dy (and y) only where one of them chose the pixel.
// MASKED (the fused ReLU backward): a window adds its dy only where the pool
// output y > 0, y at binding 2 and dx at binding 3.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 0) readonly buffer DY4 { vec4 dy4[]; };
layout(std430, binding = 1) readonly buffer A { int argmax[]; };
layout(std430, binding = 1) readonly buffer A4 { ivec4 argmax4[]; };
#if MASKED
layout(std430, binding = 2) readonly buffer Y { float y[]; };
layout(std430, binding = 2) readonly buffer Y4 { vec4 y4[]; };
layout(std430, binding = 3) buffer DX { float dx[]; };
layout(std430, binding = 3) buffer DX4 { vec4 dx4[]; };
#define DX_OFFSET p.off[3]
#else
layout(std430, binding = 2) buffer DX { float dx[]; };
layout(std430, binding = 2) buffer DX4 { vec4 dx4[]; };
#define DX_OFFSET p.off[2]
#endif

// The windows oh0..oh1, ow0..ow1 that cover pixel (h, w): those with
// oh*stride - pad <= h < oh*stride - pad + kernel.
void covering_windows(int h, int w, out int oh0, out int oh1, out int ow0, out int ow1) {
    oh0 = max(0, (h + p.pad - p.kernel + p.stride) / p.stride);
    if (h + p.pad - p.kernel + 1 < 0) oh0 = 0;
    oh1 = min(p.out_h - 1, (h + p.pad) / p.stride);
    ow0 = max(0, (w + p.pad - p.kernel + p.stride) / p.stride);
    if (w + p.pad - p.kernel + 1 < 0) ow0 = 0;
    ow1 = min(p.out_w - 1, (w + p.pad) / p.stride);
}

void backward_quads() {
    uint total = uint(p.batch * p.height * p.width) * uint(p.channels / 4);
    GRID_STRIDE_LOOP(idx, total) {
        uint n, c;
        int h, w, oh0, oh1, ow0, ow1;
        pool_quad_position(idx, uint(p.height), uint(p.width), n, c, h, w);
        covering_windows(h, w, oh0, oh1, ow0, ow1);
        int pix = h * p.width + w;
        uint o = (DX_OFFSET + idx * 4u) / 4u;
        vec4 sum = p.accumulate != 0 ? dx4[o] : vec4(0.0);
        for (int oh = oh0; oh <= oh1; oh++) {
            for (int ow = ow0; ow <= ow1; ow++) {
                uint q = (n * uint(p.out_h * p.out_w) + uint(oh * p.out_w + ow)) * uint(p.channels) + c;
                bvec4 chose = equal(argmax4[(p.off[1] + q) / 4u], ivec4(pix));
                if (!any(chose)) continue;
#if MASKED
                bvec4 passes = greaterThan(y4[(p.off[2] + q) / 4u], vec4(0.0));
#else
                bvec4 passes = bvec4(true);
#endif
                vec4 g = dy4[(p.off[0] + q) / 4u];
                for (int i = 0; i < 4; i++)
                    if (chose[i] && passes[i]) sum[i] += g[i];
            }
        }
        dx4[o] = sum;
    }
}

void main() {
    if (p.quads != 0) {
        backward_quads();
        return;
    }
    uint in_plane = uint(p.height * p.width);
    uint out_plane = uint(p.out_h * p.out_w);
    uint total = uint(p.batch * p.channels) * in_plane;
    GRID_STRIDE_LOOP(idx, total) {
        uint n, c, pixel;
        pool_position(idx, in_plane, n, c, pixel);
        int pix = int(pixel);
        int h = pix / p.width, w = pix % p.width, oh0, oh1, ow0, ow1;
        covering_windows(h, w, oh0, oh1, ow0, ow1);
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
