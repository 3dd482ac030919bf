/* The windows of 2-D pooling along one axis (rows or columns), for the
 * POOL2D_* kernels (nn_pool2d_geometry in kernels.h). Written in the part of
 * C and GLSL the two share (int arithmetic, ?:), so the CPU backend
 * (cpu_pool2d.c) and the shaders (pool2d_*.comp) walk the same windows in
 * the same order. Divisions and remainders only see non-negative operands
 * (GLSL leaves negative ones undefined).
 *
 * Output o's window reads positions start + j * dilation for j < taps;
 * those outside [0, size) are padding. Sliding windows start at
 * o * stride - pad and have `kernel` taps; adaptive ones (dilation 1) are
 * [floor(o * size / outputs), ceil((o + 1) * size / outputs)), all inside. */
#ifndef NN_SHADERS_POOL2D_WINDOW_H
#define NN_SHADERS_POOL2D_WINDOW_H

/* GLSL (#version 450 is a core profile) knows no static or inline. */
#ifdef GL_core_profile
#define POOL2D_FN
#else
#define POOL2D_FN static inline
#endif

POOL2D_FN int pool2d_start(int o, int size, int outputs, int stride, int pad, int adaptive) {
    return adaptive != 0 ? (o * size) / outputs : o * stride - pad;
}

POOL2D_FN int pool2d_taps(int o, int size, int outputs, int kernel, int adaptive) {
    return adaptive != 0 ? ((o + 1) * size + outputs - 1) / outputs - (o * size) / outputs : kernel;
}

/* The first tap inside the image, and one past the last: equal for a
 * dilated window whose taps all fall in the padding (the output size rules
 * let no window start past the image, but its taps can step over it). */
POOL2D_FN int pool2d_first_tap(int start, int dilation) {
    return start < 0 ? (dilation - 1 - start) / dilation : 0;
}

POOL2D_FN int pool2d_end_tap(int start, int taps, int size, int dilation) {
    int inside = (size - start + dilation - 1) / dilation;
    return inside < taps ? inside : taps;
}

/* Average pooling divides output o's sum by the product over the axes of
 * this count: its taps inside the image, or (include_pad, PyTorch's
 * count_include_pad) inside the padded image [-pad, size + pad). */
POOL2D_FN int pool2d_avg_count(int o, int size, int outputs, int kernel, int stride, int pad, int adaptive,
                               int include_pad) {
    int start = pool2d_start(o, size, outputs, stride, pad, adaptive);
    int end = start + pool2d_taps(o, size, outputs, kernel, adaptive);
    int lo = include_pad != 0 ? -pad : 0, hi = include_pad != 0 ? size + pad : size;
    return (end < hi ? end : hi) - (start > lo ? start : lo);
}

/* For the gathering backward: the outputs whose windows read position
 * `pos` are among candidates c < pool2d_candidates(...), and candidate c is
 * pool2d_reader(c, ...) (an output index) or -1 (none). Sliding windows:
 * candidate c is the output whose tap c lands on pos; adaptive: outputs
 * floor(pos * outputs / size) + c, whose windows end past pos, while they
 * start at or before it. */
POOL2D_FN int pool2d_candidates(int size, int outputs, int kernel, int adaptive) {
    return adaptive != 0 ? (outputs + size - 1) / size + 1 : kernel;
}

POOL2D_FN int pool2d_reader(int c, int pos, int size, int outputs, int stride, int pad, int dilation, int adaptive) {
    if (adaptive != 0) {
        int o = (pos * outputs) / size + c;
        return o < outputs && (o * size) / outputs <= pos ? o : -1;
    }
    int t = pos + pad - c * dilation;
    if (t < 0 || t % stride != 0) return -1;
    return t / stride < outputs ? t / stride : -1;
}

#endif
