/* The kernel parity test's cases for 2-D pooling (parity_cases.h): the
 * POOL2D_* kernels over sliding windows (rectangular, padded, strided past
 * the window, dilated, ceil_mode with windows running past the padded edge)
 * and adaptive ones (uneven, 1 x 1, larger than the input, windows of
 * thousands of taps), batch 1 and more, accumulate on and off, count_include_pad and divisor_override. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "parity_cases.h"
#include "parity_harness.h"

/* PyTorch's pooling_output_shape, written again here. */
static int32_t out_size(int size, int kernel, int stride, int pad, int dilation, bool ceil_mode) {
    int n = (size + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0)) / stride + 1;
    if (ceil_mode && (n - 1) * stride >= size + pad) n--;
    return n;
}

static const int kWindows[][13] = {
    /* batch, channels, height, width, kernel h w, stride h w, pad h w, dilation h w, ceil_mode */
    {1, 1, 5, 5, 2, 2, 2, 2, 0, 0, 1, 1, 1},     /* ceil_mode: a last window past the edge */
    {2, 3, 7, 9, 3, 2, 2, 1, 1, 1, 1, 1, 0},     /* rectangular, padded, overlapping */
    {1, 2, 11, 13, 3, 3, 2, 3, 1, 1, 2, 3, 1},   /* dilated, ceil_mode */
    {3, 5, 17, 6, 5, 3, 3, 2, 2, 1, 1, 2, 1},    /* odd sizes everywhere */
    {2, 1, 6, 7, 2, 3, 4, 4, 1, 1, 1, 1, 1},     /* strides past the window, padding and ceil_mode */
    {1, 2, 6, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1},     /* ceil_mode windows past the padded edge */
    {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0},     /* one pixel */
};
#define WINDOWS (sizeof kWindows / sizeof kWindows[0])

static const int kAdaptive[][6] = {
    /* batch, channels, height, width, out h, out w */
    {2, 3, 7, 9, 3, 4},   /* uneven, overlapping windows */
    {1, 2, 5, 6, 1, 1},   /* global pooling */
    {1, 1, 3, 4, 7, 9},   /* larger than the input */
    {2, 1, 13, 11, 5, 11},
    /* windows of 256 taps or more: a workgroup per output on Vulkan */
    {3, 5, 67, 53, 1, 1}, /* global pooling */
    {1, 3, 41, 37, 2, 1}, /* uneven windows of 21 x 37 and 21 x 37 */
    {1, 1, 16, 16, 1, 1}, /* exactly 256 taps */
};
#define ADAPTIVE (sizeof kAdaptive / sizeof kAdaptive[0])
#define CASES (WINDOWS + ADAPTIVE)

/* Case i (windows first, then adaptive); average pooling takes no
 * dilation, so `average` sets it to 1. */
static nn_pool2d_geometry geometry_of(size_t i, bool average) {
    if (i >= WINDOWS) {
        const int *c = kAdaptive[i - WINDOWS];
        return (nn_pool2d_geometry){.batch = c[0], .channels = c[1], .height = c[2], .width = c[3], .out_h = c[4],
                                    .out_w = c[5], .kernel_h = 1, .kernel_w = 1, .stride_h = 1, .stride_w = 1,
                                    .dilation_h = 1, .dilation_w = 1, .adaptive = 1};
    }
    const int *c = kWindows[i];
    const int dh = average ? 1 : c[10], dw = average ? 1 : c[11];
    return (nn_pool2d_geometry){
        .batch = c[0], .channels = c[1], .height = c[2], .width = c[3], .kernel_h = c[4], .kernel_w = c[5],
        .stride_h = c[6], .stride_w = c[7], .pad_h = c[8], .pad_w = c[9], .dilation_h = dh, .dilation_w = dw,
        .out_h = out_size(c[2], c[4], c[6], c[8], dh, c[12]), .out_w = out_size(c[3], c[5], c[7], c[9], dw, c[12])};
}

static size_t in_count(const nn_pool2d_geometry *g) { return (size_t)g->batch * g->channels * g->height * g->width; }
static size_t out_count(const nn_pool2d_geometry *g) { return (size_t)g->batch * g->channels * g->out_h * g->out_w; }
/* The most outputs adding into one input element, and terms of one window. */
static double window_terms(const nn_pool2d_geometry *g) {
    if (g->adaptive) return (double)(g->height / g->out_h + 2) * (g->width / g->out_w + 2);
    return (double)g->kernel_h * g->kernel_w;
}

#define POOL2D_FMT "%dx%dx%dx%d to %dx%d: kernel %dx%d stride %dx%d pad %dx%d dilation %dx%d adaptive %d"
#define POOL2D_ARGS(g)                                                                                             \
    (g)->batch, (g)->channels, (g)->height, (g)->width, (g)->out_h, (g)->out_w, (g)->kernel_h, (g)->kernel_w,      \
        (g)->stride_h, (g)->stride_w, (g)->pad_h, (g)->pad_w, (g)->dilation_h, (g)->dilation_w, (g)->adaptive

/* Whole numbers (ties) and a NaN, which must win its windows. */
static float *max_input(const nn_pool2d_geometry *g) {
    const size_t n = in_count(g);
    float *x = parity_randoms(n, -4, 4);
    for (size_t j = 0; j < n; j++) x[j] = roundf(x[j]);
    if (n > 7) x[7] = NAN;
    return x;
}

void parity_pool2d_max_forward_case(nn_backend *o) {
    for (size_t i = 0; i < CASES; i++) {
        const nn_pool2d_geometry g = geometry_of(i, false);
        const size_t in = in_count(&g), out = out_count(&g);
        parity_arg a[3] = {arg_in(max_input(&g), in, 12), arg_near(parity_randoms(out, -1, 1), out, 0, 0.0),
                           arg_exact(parity_randoms(out, -1, 1), out, 4)};
        parity_check(o, NN_KERNEL_POOL2D_MAX_FORWARD, a, 3, &g, POOL2D_FMT, POOL2D_ARGS(&g));
    }
}

void parity_pool2d_max_backward_case(nn_backend *o) {
    for (size_t i = 0; i < CASES; i++)
        for (int acc = 0; acc < 2; acc++) {
            nn_pool2d_geometry g = geometry_of(i, false);
            const size_t in = in_count(&g), out = out_count(&g);
            float *y = parity_array(out * 4);
            int32_t *argmax = parity_array(out * 4);
            parity_arg f[3] = {arg_in(max_input(&g), in, 0), with_cpu_after(arg_exact(y, out, 0), y),
                               with_cpu_after(arg_exact(argmax, out, 0), argmax)};
            parity_cpu_outputs(NN_KERNEL_POOL2D_MAX_FORWARD, f, 3, &g, "the argmax the backward reads");
            g.accumulate = acc;
            parity_arg a[3] = {arg_in(parity_randoms(out, -1, 1), out, 0), arg_in(argmax, out, 8),
                               arg_near(parity_randoms(in, -1, 1), in, 4, sums_tol(window_terms(&g)))};
            parity_check(o, NN_KERNEL_POOL2D_MAX_BACKWARD, a, 3, &g, POOL2D_FMT " accumulate %d", POOL2D_ARGS(&g),
                         acc);
        }
}

/* The divisor variants: count_include_pad off and on, divisor_override. */
static nn_pool2d_geometry average_of(size_t i, int variant) {
    nn_pool2d_geometry g = geometry_of(i, true);
    g.count_include_pad = variant == 1;
    g.divisor = variant == 2 ? 7 : 0;
    return g;
}

void parity_pool2d_avg_forward_case(nn_backend *o) {
    for (size_t i = 0; i < CASES; i++)
        for (int variant = 0; variant < 3; variant++) {
            const nn_pool2d_geometry g = average_of(i, variant);
            const size_t in = in_count(&g), out = out_count(&g);
            parity_arg a[2] = {arg_in(parity_randoms(in, -2, 2), in, 4),
                               arg_near(parity_randoms(out, -1, 1), out, 8, sums_tol(window_terms(&g)))};
            parity_check(o, NN_KERNEL_POOL2D_AVG_FORWARD, a, 2, &g, POOL2D_FMT " include_pad %d divisor %d",
                         POOL2D_ARGS(&g), g.count_include_pad, g.divisor);
        }
}

void parity_pool2d_avg_backward_case(nn_backend *o) {
    for (size_t i = 0; i < CASES; i++)
        for (int variant = 0; variant < 3; variant++)
            for (int acc = 0; acc < 2; acc++) {
                nn_pool2d_geometry g = average_of(i, variant);
                g.accumulate = acc;
                const size_t in = in_count(&g), out = out_count(&g);
                parity_arg a[2] = {arg_in(parity_randoms(out, -2, 2), out, 12),
                                   arg_near(parity_randoms(in, -1, 1), in, 0, sums_tol(window_terms(&g)))};
                parity_check(o, NN_KERNEL_POOL2D_AVG_BACKWARD, a, 2, &g,
                             POOL2D_FMT " include_pad %d divisor %d accumulate %d", POOL2D_ARGS(&g),
                             g.count_include_pad, g.divisor, acc);
            }
}
