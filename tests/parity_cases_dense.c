/* The kernel parity test's cases for the unfused kernels (parity_cases.h):
 * GEMM with and without an epilogue, im2col, col2im and the convolutions,
 * max pooling, bias, the pointwise kernels and reductions, softmax and
 * cross-entropy, the SGD updates, the device loop's kernels (gather,
 * counter, fill, metrics) and dropout. Each runs its kernel through
 * parity_check (parity_harness.h) at the sizes and variants listed here. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "parity_cases.h"
#include "parity_harness.h"

/* ---- GEMM and GEMM with an epilogue ---- */

/* C = alpha op(A) op(B) (+ epilogue) + beta C over `batch` products (summed
 * into one C, as convolution's dW, when `summed`), leading dimensions
 * `pad` past the matrices' widths. */
static void gemm_run(nn_backend *o, nn_kernel kernel, int m, int n, int k, int ta, int tb, int batch, bool summed,
                     int pad, float alpha, float beta, int epilogue) {
    const int lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
    const int64_t sa = (int64_t)(ta ? k : m) * lda, sb = (int64_t)(tb ? n : k) * ldb, sc = (int64_t)m * ldc;
    const size_t na = (size_t)(sa * batch), nb = (size_t)(sb * batch), nc = (size_t)(sc * (summed ? 1 : batch));
    const size_t naux = (epilogue & NN_EPI_MASK)        ? nc
                        : (epilogue & NN_EPI_BIAS_ROWS) ? (size_t)m
                        : (epilogue & NN_EPI_BIAS_COLS) ? (size_t)n
                                                        : 0;
    const nn_gemm_epilogue_params p = {
        .gemm = {.m = m, .n = n, .k = k, .trans_a = ta, .trans_b = tb, .lda = lda, .ldb = ldb, .ldc = ldc,
                 .batch = batch, .stride_a = sa, .stride_b = sb, .stride_c = summed ? 0 : sc, .alpha = alpha,
                 .beta = beta},
        .epilogue = epilogue};
    const double terms = (double)k * (summed ? batch : 1) + 1.0;
    /* views on 16-byte boundaries (without padding) and off them */
    parity_arg a[4] = {arg_in(parity_randoms(na, -1, 1), na, pad ? 4 : 16),
                       arg_in(parity_randoms(nb, -1, 1), nb, pad ? 8 : 16),
                       arg_near(parity_randoms(nc, -1, 1), nc, 12, sums_tol(terms)),
                       given(naux > 0, arg_in(parity_randoms(naux, -1, 1), naux, 4))};
    const bool plain = kernel == NN_KERNEL_GEMM;
    parity_check(o, kernel, a, plain ? 3 : 4, plain ? (const void *)&p.gemm : (const void *)&p,
                 "m=%d n=%d k=%d ta=%d tb=%d batch=%d%s pad=%d alpha=%g beta=%g epilogue=%#x", m, n, k, ta, tb, batch,
                 summed ? " summed" : "", pad, alpha, beta, epilogue);
}

void parity_gemm_case(nn_backend *o) {
    /* the last in multiples of 4, whose views may be read four floats at a time */
    static const int shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {33, 17, 65}, {67, 130, 29}, {64, 36, 20}};
    for (int s = 0; s < 5; s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                gemm_run(o, NN_KERNEL_GEMM, shapes[s][0], shapes[s][1], shapes[s][2], ta, tb, s == 2 ? 3 : 1, false,
                         s % 2, s == 2 ? 0.5f : 1.0f, s == 1 ? 0.5f : s == 2 ? -1.5f : 0.0f, 0);
    gemm_run(o, NN_KERNEL_GEMM, 6, 25, 37, 0, 1, 5, true, 0, 1.0f, 1.0f, 0);  /* a summed batch added into C */
    gemm_run(o, NN_KERNEL_GEMM, 5, 9, 3001, 1, 0, 1, false, 2, 1.0f, 0.0f, 0); /* long k: split over k */
    /* a product large enough for a backend's tiled route */
    gemm_run(o, NN_KERNEL_GEMM, 257, 263, 1025, 0, 1, 1, false, 0, 1.0f, 0.25f, 0);
    /* B transposed with many rows of A: a backend may store B transposed first */
    gemm_run(o, NN_KERNEL_GEMM, 601, 37, 45, 0, 1, 1, false, 1, 1.0f, 0.5f, 0);
    gemm_run(o, NN_KERNEL_GEMM, 530, 19, 23, 1, 1, 1, false, 0, 1.0f, 0.0f, 0);
}

void parity_gemm_epilogue_case(nn_backend *o) {
    const nn_kernel e = NN_KERNEL_GEMM_EPILOGUE;
    gemm_run(o, e, 1, 7, 5, 0, 1, 1, false, 0, 1, 0, NN_EPI_BIAS_COLS | NN_EPI_RELU); /* a Linear on one row */
    gemm_run(o, e, 13, 9, 21, 0, 1, 1, false, 1, 1, 0, NN_EPI_BIAS_COLS);
    gemm_run(o, e, 6, 37, 25, 0, 0, 3, false, 0, 1, 0, NN_EPI_BIAS_ROWS | NN_EPI_RELU); /* a convolution per image */
    gemm_run(o, e, 7, 11, 13, 0, 0, 1, false, 2, 1, 1, NN_EPI_MASK);                    /* added into C */
    gemm_run(o, e, 3, 5, 4, 1, 1, 2, false, 0, 0.5f, -1.5f, NN_EPI_MASK);
    gemm_run(o, e, 9, 4, 30, 1, 0, 4, true, 0, 1, 1, NN_EPI_RELU); /* no aux; the ReLU after the summed batch */
    gemm_run(o, e, 5, 3, 3000, 0, 1, 1, false, 0, 1, 0, NN_EPI_BIAS_COLS | NN_EPI_RELU); /* split over k */
    gemm_run(o, e, 64, 120, 257, 0, 0, 1, false, 3, 1, 1, NN_EPI_MASK);
    gemm_run(o, e, 8, 8, 8, 0, 0, 1, false, 0, 1, 0, 0); /* no epilogue, no aux */
    gemm_run(o, e, 257, 263, 1025, 0, 1, 1, false, 0, 1, 0, NN_EPI_BIAS_ROWS | NN_EPI_RELU);
    gemm_run(o, e, 520, 70, 33, 0, 1, 1, false, 2, 1, 0, NN_EPI_BIAS_COLS); /* a Linear of many rows */
}

/* ---- convolution ---- */

typedef struct conv_shape {
    int batch, channels, height, width, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, filters;
} conv_shape;

static const conv_shape kConvShapes[] = {
    {1, 1, 5, 5, 3, 3, 1, 1, 0, 0, 3},   /* one image, one channel */
    {2, 3, 7, 6, 3, 2, 2, 1, 1, 0, 5},   /* a non-square window; strides and padding differ by axis */
    {3, 2, 11, 13, 5, 5, 1, 1, 2, 2, 7}, /* padding that keeps an odd image's size */
    {2, 2, 8, 7, 2, 2, 3, 3, 0, 1, 4},   /* a stride past the window: pixels no window reads */
    {5, 1, 27, 29, 5, 5, 1, 1, 0, 0, 6}, /* LeNet-5's first layer on an odd image */
};
#define CONV_SHAPES (sizeof kConvShapes / sizeof kConvShapes[0])
/* Enough multiply-adds that a backend takes the column route and keeps the
 * column matrix (nn_backend.conv_keeps_columns). */
static const conv_shape kLargeConv = {2, 16, 61, 59, 5, 5, 1, 1, 2, 2, 24};

static nn_conv_params conv_params_of(const conv_shape *c) {
    nn_conv_geometry g = {c->batch, c->channels, c->height, c->width, c->kernel_h, c->kernel_w,
                          c->stride_h, c->stride_w, c->pad_h, c->pad_w, 0, 0, 0, 1, 1};
    g.out_h = (g.height + 2 * g.pad_h - g.kernel_h) / g.stride_h + 1;
    g.out_w = (g.width + 2 * g.pad_w - g.kernel_w) / g.stride_w + 1;
    return (nn_conv_params){.g = g, .filters = c->filters};
}

#define SHAPE_FMT "%dx%dx%dx%d f%d k%dx%d s%d,%d p%d,%d"
#define SHAPE_ARGS(c) \
    (c)->batch, (c)->channels, (c)->height, (c)->width, (c)->filters, (c)->kernel_h, (c)->kernel_w, (c)->stride_h, \
        (c)->stride_w, (c)->pad_h, (c)->pad_w

void parity_im2col_case(nn_backend *o) {
    for (size_t i = 0; i < CONV_SHAPES; i++) {
        nn_conv_params p = conv_params_of(&kConvShapes[i]);
        const parity_conv_sizes s = parity_conv_sizes_of(&p);
        parity_arg a[2] = {arg_in(parity_randoms(s.x, -1, 1), s.x, 4),
                           arg_exact(parity_randoms(s.cols, -1, 1), s.cols, 8)};
        parity_check(o, NN_KERNEL_IM2COL, a, 2, &p.g, SHAPE_FMT, SHAPE_ARGS(&kConvShapes[i]));
    }
    parity_im2col_dilated_case(o); /* groups and dilation: parity_cases_conv_ext.c */
}

void parity_col2im_case(nn_backend *o) {
    for (size_t i = 0; i < CONV_SHAPES; i++)
        for (int acc = 0; acc < 2; acc++) {
            nn_conv_params p = conv_params_of(&kConvShapes[i]);
            p.g.accumulate = acc;
            const parity_conv_sizes s = parity_conv_sizes_of(&p);
            /* a pixel adds at most kernel_h * kernel_w column entries */
            parity_arg a[2] = {arg_in(parity_randoms(s.cols, -1, 1), s.cols, 12),
                               arg_near(parity_randoms(s.x, -1, 1), s.x, 4, sums_tol(s.k + 1.0))};
            parity_check(o, NN_KERNEL_COL2IM, a, 2, &p.g, SHAPE_FMT " accumulate %d", SHAPE_ARGS(&kConvShapes[i]),
                         acc);
        }
    parity_col2im_dilated_case(o); /* groups and dilation: parity_cases_conv_ext.c */
}

static void conv_forward_run(nn_backend *o, const conv_shape *c, int epilogue, bool columns) {
    nn_conv_params p = conv_params_of(c);
    p.epilogue = epilogue;
    const parity_conv_sizes s = parity_conv_sizes_of(&p);
    const size_t f = (size_t)c->filters;
    parity_arg a[5] = {arg_in(parity_randoms(s.x, -1, 1), s.x, 4), arg_in(parity_randoms(s.w, -1, 1), s.w, 0),
                       arg_near(parity_randoms(s.y, -1, 1), s.y, 8, sums_tol(s.k + 1.0)),
                       given(epilogue & NN_EPI_BIAS_ROWS, arg_in(parity_randoms(f, -1, 1), f, 12)),
                       given(columns, arg_exact(columns ? parity_randoms(s.cols, -1, 1) : NULL, s.cols, 4))};
    parity_check(o, NN_KERNEL_CONV2D_FORWARD, a, 5, &p, SHAPE_FMT " epilogue %#x%s", SHAPE_ARGS(c), epilogue,
                 columns ? ", columns kept" : "");
}

void parity_conv_forward_case(nn_backend *o) {
    for (size_t i = 0; i < CONV_SHAPES; i++)
        for (int epi = 0; epi < 4; epi++) {
            const nn_conv_params p = conv_params_of(&kConvShapes[i]);
            conv_forward_run(o, &kConvShapes[i], (epi & 1 ? NN_EPI_BIAS_ROWS : 0) | (epi & 2 ? NN_EPI_RELU : 0),
                             parity_keeps_columns(o, &p));
        }
    const nn_conv_params large = conv_params_of(&kLargeConv);
    conv_forward_run(o, &kLargeConv, NN_EPI_BIAS_ROWS | NN_EPI_RELU, parity_keeps_columns(o, &large));
    conv_forward_run(o, &kLargeConv, 0, false);
    parity_conv_grouped_forward_case(o); /* groups and dilation: parity_cases_conv_ext.c */
    parity_conv_routes_forward_case(o); /* the Vulkan routes: parity_cases_conv_implicit.c */
}

static void conv_data_run(nn_backend *o, const conv_shape *c, int acc) {
    nn_conv_params p = conv_params_of(c);
    p.g.accumulate = acc;
    const parity_conv_sizes s = parity_conv_sizes_of(&p);
    const double terms = (double)c->filters * c->kernel_h * c->kernel_w + acc;
    parity_arg a[3] = {arg_in(parity_randoms(s.y, -1, 1), s.y, 0), arg_in(parity_randoms(s.w, -1, 1), s.w, 4),
                       arg_near(parity_randoms(s.x, -1, 1), s.x, 8, sums_tol(terms))};
    parity_check(o, NN_KERNEL_CONV2D_BACKWARD_DATA, a, 3, &p, SHAPE_FMT " accumulate %d", SHAPE_ARGS(c), acc);
}

void parity_conv_data_case(nn_backend *o) {
    for (size_t i = 0; i < CONV_SHAPES; i++)
        for (int acc = 0; acc < 2; acc++) conv_data_run(o, &kConvShapes[i], acc);
    conv_data_run(o, &kLargeConv, 1);
    parity_conv_grouped_data_case(o); /* groups and dilation: parity_cases_conv_ext.c */
    parity_conv_routes_data_case(o); /* the Vulkan routes: parity_cases_conv_implicit.c */
}

static void conv_weight_run(nn_backend *o, const conv_shape *c, int acc, bool columns) {
    nn_conv_params p = conv_params_of(c);
    p.g.accumulate = acc;
    const parity_conv_sizes s = parity_conv_sizes_of(&p);
    const float *x = parity_randoms(s.x, -1, 1);
    const double terms = (double)c->batch * s.positions + acc;
    parity_arg a[4] = {arg_in(parity_randoms(s.y, -1, 1), s.y, 4), arg_in(x, s.x, 0),
                       arg_near(parity_randoms(s.w, -1, 1), s.w, 12, sums_tol(terms)),
                       given(columns, arg_in(columns ? parity_host_im2col(&p.g, x) : NULL, s.cols, 8))};
    parity_check(o, NN_KERNEL_CONV2D_BACKWARD_WEIGHT, a, 4, &p, SHAPE_FMT " accumulate %d%s", SHAPE_ARGS(c), acc,
                 columns ? ", columns kept" : "");
}

void parity_conv_weight_case(nn_backend *o) {
    for (size_t i = 0; i < CONV_SHAPES; i++)
        for (int acc = 0; acc < 2; acc++) {
            const nn_conv_params p = conv_params_of(&kConvShapes[i]);
            conv_weight_run(o, &kConvShapes[i], acc, parity_keeps_columns(o, &p));
        }
    const nn_conv_params large = conv_params_of(&kLargeConv);
    conv_weight_run(o, &kLargeConv, 0, parity_keeps_columns(o, &large));
    conv_weight_run(o, &kLargeConv, 1, false);
    parity_conv_grouped_weight_case(o); /* groups and dilation: parity_cases_conv_ext.c */
    parity_conv_routes_weight_case(o); /* the Vulkan routes: parity_cases_conv_implicit.c */
}

/* ---- max pooling ---- */

static nn_pool_params pool_params(int batch, int channels, int height, int width, int kernel, int stride, int pad) {
    return (nn_pool_params){.batch = batch, .channels = channels, .height = height, .width = width, .kernel = kernel,
                            .stride = stride, .pad = pad, .out_h = (height + 2 * pad - kernel) / stride + 1,
                            .out_w = (width + 2 * pad - kernel) / stride + 1};
}

static const int kPools[][7] = {
    /* batch, channels, height, width, kernel, stride, pad */
    {1, 1, 5, 5, 2, 2, 0},    /* a row and a column dropped */
    {2, 3, 7, 9, 3, 2, 1},    /* overlapping windows, padding */
    {1, 2, 6, 6, 3, 1, 1},    /* stride 1: a pixel in up to nine windows */
    {2, 1, 5, 5, 2, 3, 0},    /* a stride past the window */
    {3, 6, 27, 29, 2, 2, 0},  /* LeNet-5's pooling on an odd plane */
    {1, 1, 1, 1, 1, 1, 0},    /* one pixel */
    {2, 8, 9, 11, 3, 2, 1},   /* channels in fours (Vulkan's four-channel invocations), overlapping windows */
    {1, 12, 7, 6, 3, 1, 1},   /* the same at stride 1 */
};
#define POOLS (sizeof kPools / sizeof kPools[0])

static nn_pool_params pool_of(size_t i) {
    const int *c = kPools[i];
    return pool_params(c[0], c[1], c[2], c[3], c[4], c[5], c[6]);
}

static size_t pool_in(const nn_pool_params *p) { return (size_t)p->batch * p->channels * p->height * p->width; }
static size_t pool_out(const nn_pool_params *p) { return (size_t)p->batch * p->channels * p->out_h * p->out_w; }

/* x with ties (whole numbers) and a NaN, which must win its windows; as a
 * ReLU's output when `relu`. */
static float *pool_input(const nn_pool_params *p, bool relu) {
    const size_t n = pool_in(p);
    float *x = parity_randoms(n, -4, 4);
    for (size_t j = 0; j < n; j++) x[j] = relu ? relu_of(roundf(x[j])) : roundf(x[j]);
    if (n > 7 && !relu) x[7] = NAN;
    return x;
}

#define POOL_FMT "%dx%dx%dx%d window %d stride %d pad %d layout %d"
#define POOL_ARGS(p) (p)->batch, (p)->channels, (p)->height, (p)->width, (p)->kernel, (p)->stride, (p)->pad, (p)->layout

/* Each shape dense, channels-last, and channels-last with every argument
 * 16-byte aligned (Vulkan takes channels in fours only then). */
#define POOL_CASES (3 * POOLS)
static nn_pool_params pool_case(size_t i) {
    nn_pool_params p = pool_of(i / 3);
    p.layout = i % 3 ? NN_LAYOUT_CHANNELS_LAST : NN_LAYOUT_DENSE;
    return p;
}

/* Argument `arg`'s byte offset in case i: a few words in, a multiple of 16 in aligned cases. */
static size_t pool_offset(size_t i, int arg) {
    static const size_t kUnaligned[4] = {12, 4, 8, 4};
    return i % 3 == 2 ? 16u * (size_t)arg : kUnaligned[arg];
}

void parity_maxpool_forward_case(nn_backend *o) {
    for (size_t i = 0; i < POOL_CASES; i++) {
        const nn_pool_params p = pool_case(i);
        const size_t in = pool_in(&p), out = pool_out(&p);
        parity_arg a[3] = {arg_in(pool_input(&p, false), in, pool_offset(i, 0)),
                           arg_near(parity_randoms(out, -1, 1), out, pool_offset(i, 1), 0.0),
                           arg_exact(parity_randoms(out, -1, 1), out, pool_offset(i, 2))};
        parity_check(o, NN_KERNEL_MAXPOOL_FORWARD, a, 3, &p, POOL_FMT, POOL_ARGS(&p));
    }
}

/* The pool's output and argmax as the CPU computes them. */
static void pool_forward_on_cpu(const nn_pool_params *p, const float *x, float *y, int32_t *argmax) {
    const size_t in = pool_in(p), out = pool_out(p);
    parity_arg a[3] = {arg_in(x, in, 0), with_cpu_after(arg_exact(y, out, 0), y),
                       with_cpu_after(arg_exact(argmax, out, 0), argmax)};
    parity_cpu_outputs(NN_KERNEL_MAXPOOL_FORWARD, a, 3, p, "the forward a backward case reads");
}

/* Plain (NN_KERNEL_MAXPOOL_BACKWARD) or masked by the pool output (x a
 * ReLU's output: windows of zeros pass no gradient). */
static void maxpool_backward_run(nn_backend *o, bool masked) {
    for (size_t i = 0; i < POOL_CASES; i++)
        for (int acc = 0; acc < 2; acc++) {
            nn_pool_params p = pool_case(i);
            const size_t in = pool_in(&p), out = pool_out(&p);
            float *y = parity_array(out * 4);
            int32_t *argmax = parity_array(out * 4);
            pool_forward_on_cpu(&p, pool_input(&p, masked), y, argmax);
            p.accumulate = acc;
            /* a pixel takes the gradient of every window that chose it, in the same order */
            parity_arg dx = arg_near(parity_randoms(in, -1, 1), in, pool_offset(i, masked ? 3 : 2), ROUNDING);
            parity_arg a[4] = {arg_in(parity_randoms(out, -1, 1), out, pool_offset(i, 0)),
                               arg_in(argmax, out, pool_offset(i, 1)),
                               masked ? arg_in(y, out, pool_offset(i, 2)) : dx, dx};
            parity_check(o, masked ? NN_KERNEL_MAXPOOL_BACKWARD_MASKED : NN_KERNEL_MAXPOOL_BACKWARD, a,
                         masked ? 4 : 3, &p, POOL_FMT " accumulate %d", POOL_ARGS(&p), acc);
        }
}

void parity_maxpool_backward_case(nn_backend *o) { maxpool_backward_run(o, false); }
void parity_maxpool_backward_masked_case(nn_backend *o) { maxpool_backward_run(o, true); }

/* ---- bias ---- */

static const int64_t kBiasShapes[][3] = {
    /* outer, channels, inner */
    {1, 1, 1}, {3, 5, 7}, {64, 120, 1}, {1, 300, 3}, {300, 7, 13},
    {64, 6, 575}, /* a channel's sum over several workgroups */
    {1300, 70, 1}, {5000, 16, 1}, /* rows of channels (Vulkan's column mode): blocks of 64 over chunks of rows */
};

void parity_bias_add_case(nn_backend *o) {
    for (size_t i = 0; i < sizeof kBiasShapes / sizeof kBiasShapes[0]; i++) {
        const nn_bias_params p = {.outer = kBiasShapes[i][0], .channels = (int32_t)kBiasShapes[i][1],
                                  .inner = kBiasShapes[i][2]};
        const size_t n = (size_t)(p.outer * p.channels * p.inner), c = (size_t)p.channels;
        parity_arg a[2] = {arg_near(parity_randoms(n, -1, 1), n, 8, 0.0), arg_in(parity_randoms(c, -1, 1), c, 4)};
        parity_check(o, NN_KERNEL_BIAS_ADD, a, 2, &p, "outer %lld channels %d inner %lld", (long long)p.outer,
                     p.channels, (long long)p.inner);
    }
}

void parity_bias_grad_case(nn_backend *o) {
    for (size_t i = 0; i < sizeof kBiasShapes / sizeof kBiasShapes[0]; i++)
        for (int acc = 0; acc < 2; acc++) {
            const nn_bias_params p = {.outer = kBiasShapes[i][0], .channels = (int32_t)kBiasShapes[i][1],
                                      .inner = kBiasShapes[i][2], .accumulate = acc};
            const size_t n = (size_t)(p.outer * p.channels * p.inner), c = (size_t)p.channels;
            parity_arg a[2] = {arg_in(parity_randoms(n, -1, 1), n, 0),
                               arg_near(parity_randoms(c, -1, 1), c, 12, sums_tol((double)(p.outer * p.inner) + acc))};
            parity_check(o, NN_KERNEL_BIAS_GRAD, a, 2, &p, "outer %lld channels %d inner %lld accumulate %d",
                         (long long)p.outer, p.channels, (long long)p.inner, acc);
        }
}

/* ---- pointwise ---- */

static const size_t kSizes[] = {1, 5, 1000, 70001};
#define SIZES (sizeof kSizes / sizeof kSizes[0])

/* A view's byte offset for size s: `quads` 16-byte steps in, and off by one
 * element at the even sizes, so the pointwise kernels' four-at-a-time path
 * (every argument 16-byte aligned) and their one-at-a-time path both run. */
static size_t view_at(size_t s, size_t quads) { return 16 * quads + (s % 2 ? 0 : 4); }

/* Values in [-2, 2) with a NaN, which passes through. */
static float *pointwise_input(size_t n) {
    float *x = parity_randoms(n, -2, 2);
    if (n > 3) x[3] = NAN;
    return x;
}

void parity_relu_forward_case(nn_backend *o) {
    for (size_t s = 0; s < SIZES; s++) {
        const size_t n = kSizes[s];
        const nn_pointwise_params p = {.n = (int64_t)n};
        parity_arg a[2] = {arg_in(pointwise_input(n), n, 4), arg_near(parity_randoms(n, -1, 1), n, 0, 0.0)};
        parity_check(o, NN_KERNEL_RELU_FORWARD, a, 2, &p, "n=%zu", n);
    }
}

void parity_relu_backward_case(nn_backend *o) {
    for (size_t s = 0; s < SIZES; s++)
        for (int acc = 0; acc < 2; acc++) {
            const size_t n = kSizes[s];
            const nn_pointwise_params p = {.n = (int64_t)n, .accumulate = acc};
            float *y = parity_randoms(n, -1, 1);
            for (size_t j = 0; j < n; j++) y[j] = relu_of(y[j]);
            parity_arg a[3] = {arg_in(y, n, 8), arg_in(parity_randoms(n, -1, 1), n, 0),
                               arg_near(parity_randoms(n, -1, 1), n, 4, 0.0)};
            parity_check(o, NN_KERNEL_RELU_BACKWARD, a, 3, &p, "n=%zu accumulate %d", n, acc);
        }
}

/* Every row of unary_ops.h on values in [-6, 6) and at the edges of its
 * formulas: zero, tiny and huge magnitudes, infinities and a NaN. */
static float *unary_input(size_t n) {
    static const float edges[] = {0.0f, -0.0f, 1e-6f, -1e-6f, 0.2499f, -0.2501f, 20.0f, -20.0f, 90.0f, -90.0f,
                                  INFINITY, -INFINITY, NAN};
    float *x = parity_randoms(n, -6, 6);
    for (size_t j = 0; j < n && j < sizeof edges / sizeof edges[0]; j++) x[(j * 7) % n] = edges[j];
    return x;
}

/* Parameter sets (alpha, beta) every row runs with (rows without
 * parameters ignore them): a fraction and a bound, an integer with min >
 * max for clamp and a threshold below 0 for softplus, a negative odd
 * integer (pow's sign rule, negative slopes). */
static const float kUnaryParams[][2] = {{0.37f, 1.7f}, {2.0f, -1.5f}, {-3.0f, 20.0f}};
#define UNARY_PARAMS (sizeof kUnaryParams / sizeof kUnaryParams[0])

void parity_unary_forward_case(nn_backend *o) {
    for (int op = 0; op < NN_UNARY_COUNT; op++)
        for (size_t k = 0; k < UNARY_PARAMS; k++)
            for (size_t s = 0; s < SIZES; s++) {
                const size_t n = kSizes[s];
                const nn_pointwise_params p = {
                    .n = (int64_t)n, .op = op, .alpha = kUnaryParams[k][0], .beta = kUnaryParams[k][1]};
                parity_arg a[2] = {arg_in(unary_input(n), n, view_at(s, 0)),
                                   arg_near(parity_randoms(n, -1, 1), n, view_at(s, 1), 4 * ROUNDING)};
                parity_check(o, NN_KERNEL_UNARY_FORWARD, a, 2, &p, "function %d (%g, %g) n=%zu", op, p.alpha, p.beta,
                             n);
            }
}

/* y is the CPU's forward of x, as the operation hands it on. */
void parity_unary_backward_case(nn_backend *o) {
    for (int op = 0; op < NN_UNARY_COUNT; op++)
        for (size_t k = 0; k < UNARY_PARAMS; k++)
            for (size_t s = 0; s < SIZES; s++)
                for (int acc = 0; acc < 2; acc++) {
                    const size_t n = kSizes[s];
                    const nn_pointwise_params p = {.n = (int64_t)n, .op = op, .accumulate = acc,
                                                   .alpha = kUnaryParams[k][0], .beta = kUnaryParams[k][1]};
                    float *x = unary_input(n), *y = parity_array(n * sizeof *y);
                    parity_arg f[2] = {arg_in(x, n, 0),
                                       with_cpu_after(arg_near(parity_randoms(n, -1, 1), n, 0, 0), y)};
                    parity_cpu_outputs(NN_KERNEL_UNARY_FORWARD, f, 2, &p, "the forward of a backward case");
                    parity_arg a[4] = {arg_in(x, n, view_at(s, 0)), arg_in(y, n, view_at(s, 1)),
                                       arg_in(parity_randoms(n, -2, 2), n, view_at(s, 2)),
                                       arg_near(parity_randoms(n, -1, 1), n, view_at(s, 0), 8 * ROUNDING)};
                    parity_check(o, NN_KERNEL_UNARY_BACKWARD, a, 4, &p, "function %d (%g, %g) n=%zu accumulate %d", op,
                                 p.alpha, p.beta, n, acc);
                }
}

void parity_elementwise_case(nn_backend *o) {
    for (size_t s = 0; s < SIZES; s++)
        for (int acc = 0; acc < 2; acc++)
            for (int op = 0; op < 4; op++) { /* ADD, MUL, SCALE without b, SCALE with b (unused) */
                const size_t n = kSizes[s];
                const int ew = op < 3 ? op : NN_EW_SCALE;
                const nn_pointwise_params p = {.n = (int64_t)n, .op = ew, .accumulate = acc, .alpha = -0.75f};
                parity_arg a[3] = {arg_in(pointwise_input(n), n, view_at(s, 0)),
                                   given(op != NN_EW_SCALE, arg_in(parity_randoms(n, -2, 2), n, view_at(s, 1))),
                                   arg_near(parity_randoms(n, -2, 2), n, view_at(s, 2), ROUNDING)};
                parity_check(o, NN_KERNEL_ELEMENTWISE, a, 3, &p, "op %d%s n=%zu accumulate %d", ew,
                             op == 2 ? " (b absent)" : "", n, acc);
            }
}

/* float32 -> int32 over random magnitudes up to 2^40 with NaN, infinities,
 * halves and the edges of int32's range; int32 -> float32 over any int32,
 * with neighbours of 2^24 and 2^31 (ties to even). */
void parity_cast_case(nn_backend *o) {
    static const float edges[] = {NAN, INFINITY, -INFINITY, -2.7f, 2.7f, -0.5f, -0.0f, 3e9f, -3e9f,
                                  2147483520.0f, 2147483648.0f, -2147483648.0f, -2147483904.0f};
    static const int32_t edge_ints[] = {16777217, 16777219, -16777217, 33554435, 2147483583, 2147483584, -2147483585};
    for (size_t s = 0; s < SIZES; s++)
        for (int op = 0; op < NN_CAST_OP_COUNT; op++) {
            const size_t n = kSizes[s];
            const nn_pointwise_params p = {.n = (int64_t)n, .op = op};
            void *x;
            if (op == NN_CAST_FLOAT_TO_INT) {
                float *f = parity_randoms(n, -1, 1);
                const float *scale = parity_randoms(n, 0, 40);
                for (size_t j = 0; j < n; j++) f[j] = ldexpf(f[j], (int)scale[j]);
                for (size_t j = 0; j < n && j < sizeof edges / sizeof edges[0]; j++) f[(j * 5) % n] = edges[j];
                x = f;
            } else {
                int32_t *i = parity_ints(n, INT32_MIN, INT32_MAX);
                for (size_t j = 0; j < n && j < sizeof edge_ints / sizeof edge_ints[0]; j++)
                    i[(j * 3) % n] = edge_ints[j];
                x = i;
            }
            parity_arg a[2] = {arg_in(x, n, view_at(s, 0)), arg_exact(parity_randoms(n, -1, 1), n, view_at(s, 1))};
            parity_check(o, NN_KERNEL_CAST, a, 2, &p, "conversion %d n=%zu", op, n);
        }
}

void parity_broadcast_scalar_case(nn_backend *o) {
    for (size_t s = 0; s < SIZES; s++)
        for (int acc = 0; acc < 2; acc++) {
            const size_t n = kSizes[s];
            const nn_pointwise_params p = {.n = (int64_t)n, .accumulate = acc, .alpha = -1.25f};
            parity_arg a[2] = {arg_in(parity_randoms(1, -2, 2), 1, 4),
                               arg_near(parity_randoms(n, -1, 1), n, 0, ROUNDING)};
            parity_check(o, NN_KERNEL_BROADCAST_SCALAR, a, 2, &p, "n=%zu accumulate %d", n, acc);
        }
}

/* REDUCE_SUM or SUM_SQUARES into out[1], over sizes that take one
 * workgroup and several. */
static void reduction_run(nn_backend *o, nn_kernel kernel) {
    static const size_t sizes[] = {1, 255, 4097, 70001};
    for (size_t s = 0; s < 4; s++)
        for (int acc = 0; acc < 2; acc++) {
            const size_t n = sizes[s];
            const nn_pointwise_params p = {.n = (int64_t)n, .accumulate = acc, .alpha = acc ? 0.5f : -1.25f};
            parity_arg a[2] = {arg_in(parity_randoms(n, -1, 3), n, 4),
                               arg_near(parity_randoms(1, -1, 1), 1, 8, sums_tol(n + 1.0))};
            parity_check(o, kernel, a, 2, &p, "n=%zu accumulate %d alpha %g", n, acc, p.alpha);
        }
}

void parity_reduce_sum_case(nn_backend *o) { reduction_run(o, NN_KERNEL_REDUCE_SUM); }
void parity_sum_squares_case(nn_backend *o) { reduction_run(o, NN_KERNEL_SUM_SQUARES); }

/* ---- softmax and cross-entropy ---- */

static const int kSoftmaxShapes[][2] = {{1, 1}, {1, 10}, {7, 13}, {300, 7}, {5, 1000}};
#define SOFTMAX_SHAPES (sizeof kSoftmaxShapes / sizeof kSoftmaxShapes[0])

/* Logits in [-8, 8), one of them large (it must not overflow). */
static float *logits_of(size_t n) {
    float *x = parity_randoms(n, -8, 8);
    x[0] += 1000.0f;
    return x;
}

void parity_softmax_forward_case(nn_backend *o) {
    for (size_t s = 0; s < SOFTMAX_SHAPES; s++) {
        const nn_softmax_params p = {.rows = kSoftmaxShapes[s][0], .cols = kSoftmaxShapes[s][1]};
        const size_t n = (size_t)p.rows * p.cols;
        parity_arg a[2] = {arg_in(logits_of(n), n, 4), arg_near(parity_randoms(n, -1, 1), n, 0, sums_tol(p.cols))};
        parity_check(o, NN_KERNEL_SOFTMAX_FORWARD, a, 2, &p, "%dx%d", p.rows, p.cols);
    }
}

/* Softmax of random logits, as the CPU computes it. */
static float *probabilities(const nn_softmax_params *p) {
    const size_t n = (size_t)p->rows * p->cols;
    float *y = parity_array(n * 4);
    parity_arg a[2] = {arg_in(parity_randoms(n, -6, 6), n, 0), with_cpu_after(arg_near(y, n, 0, 0.0), y)};
    parity_cpu_outputs(NN_KERNEL_SOFTMAX_FORWARD, a, 2, p, "the probabilities a backward case reads");
    return y;
}

void parity_softmax_backward_case(nn_backend *o) {
    for (size_t s = 0; s < SOFTMAX_SHAPES; s++)
        for (int acc = 0; acc < 2; acc++) {
            const nn_softmax_params p = {.rows = kSoftmaxShapes[s][0], .cols = kSoftmaxShapes[s][1], .accumulate = acc};
            const size_t n = (size_t)p.rows * p.cols;
            parity_arg a[3] = {arg_in(probabilities(&p), n, 8), arg_in(parity_randoms(n, -1, 1), n, 0),
                               arg_near(parity_randoms(n, -1, 1), n, 4, sums_tol(p.cols + 1.0))};
            parity_check(o, NN_KERNEL_SOFTMAX_BACKWARD, a, 3, &p, "%dx%d accumulate %d", p.rows, p.cols, acc);
        }
}

/* Narrow rows an invocation each (one workgroup, then 3 at 600 rows),
 * wide ones (over 32 columns) a workgroup each: softmax_ce_rows.glsl. */
static const int kCrossEntropyShapes[][2] = {{1, 1},   {1, 10},   {7, 3},   {64, 10},
                                             {300, 17}, {600, 10}, {3, 1000}, {130, 33}, {2, 4099}};
#define CE_SHAPES (sizeof kCrossEntropyShapes / sizeof kCrossEntropyShapes[0])

/* SOFTMAX_CE_FORWARD (probs, loss) or SOFTMAX_CE_FUSED (dlogits, loss; its
 * accumulate is not used, so both values must give the same). */
static void cross_entropy_run(nn_backend *o, nn_kernel kernel) {
    for (size_t s = 0; s < CE_SHAPES; s++)
        for (int acc = 0; acc < (kernel == NN_KERNEL_SOFTMAX_CE_FUSED ? 2 : 1); acc++) {
            const nn_softmax_params p = {.rows = kCrossEntropyShapes[s][0], .cols = kCrossEntropyShapes[s][1],
                                         .accumulate = acc};
            const size_t n = (size_t)p.rows * p.cols, rows = (size_t)p.rows;
            parity_arg a[4] = {arg_in(logits_of(n), n, 4), arg_in(parity_labels_of(rows, p.cols), rows, 8),
                               arg_near(parity_randoms(n, -1, 1), n, 0, sums_tol(p.cols + 1.0)),
                               arg_near(parity_randoms(1, -1, 1), 1, 12, sums_tol((double)p.rows + p.cols))};
            parity_check(o, kernel, a, 4, &p, "%dx%d accumulate %d", p.rows, p.cols, acc);
        }
}

void parity_softmax_ce_forward_case(nn_backend *o) { cross_entropy_run(o, NN_KERNEL_SOFTMAX_CE_FORWARD); }
void parity_softmax_ce_fused_case(nn_backend *o) { cross_entropy_run(o, NN_KERNEL_SOFTMAX_CE_FUSED); }

void parity_softmax_ce_backward_case(nn_backend *o) {
    for (size_t s = 0; s < CE_SHAPES; s++)
        for (int acc = 0; acc < 2; acc++) {
            const nn_softmax_params p = {.rows = kCrossEntropyShapes[s][0], .cols = kCrossEntropyShapes[s][1],
                                         .accumulate = acc};
            const size_t n = (size_t)p.rows * p.cols, rows = (size_t)p.rows;
            const float dloss = 0.7f;
            parity_arg a[4] = {arg_in(probabilities(&p), n, 0), arg_in(parity_labels_of(rows, p.cols), rows, 4),
                               arg_in(&dloss, 1, 8), arg_near(parity_randoms(n, -1, 1), n, 12, ROUNDING)};
            parity_check(o, NN_KERNEL_SOFTMAX_CE_BACKWARD, a, 4, &p, "%dx%d accumulate %d", p.rows, p.cols, acc);
        }
}

/* ---- SGD ---- */

void parity_sgd_update_case(nn_backend *o) {
    static const struct {
        float momentum, weight_decay, clip, max_norm;
        int nesterov, velocity, norm;
    } cases[] = {
        {0, 0, 0, 0, 0, 0, 0},             /* plain: no velocity, no norm */
        {0, 0, 0, 0, 0, 1, 0},             /* a velocity given without momentum: untouched */
        {0.9f, 0, 0, 0, 0, 1, 0},          /* momentum */
        {0.9f, 1e-3f, 0, 0, 1, 1, 0},      /* Nesterov, weight decay */
        {0, 5e-4f, 0.05f, 0, 0, 0, 0},     /* clipped per element */
        {0.5f, 0, 0, 1.5f, 0, 1, 1},       /* clipped by the global norm: scaled */
        {0, 0, 0, 1e6f, 0, 0, 1},          /* a norm under the limit: not scaled */
        {0, 0, 0, 0, 0, 0, 1},             /* a norm given, max_grad_norm off: not read */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int s = 0; s < 2; s++) {
            const size_t n = s ? 1001 : 1;
            const float norm_sq = 9.0f;
            const nn_sgd_params p = {.n = (int64_t)n, .lr = 0.05f, .momentum = cases[c].momentum,
                                     .weight_decay = cases[c].weight_decay, .clip_value = cases[c].clip,
                                     .max_grad_norm = cases[c].max_norm, .nesterov = cases[c].nesterov};
            parity_arg a[5] = {arg_near(parity_randoms(n, -1, 1), n, 4, ROUNDING),
                               arg_in(parity_randoms(n, -0.2f, 0.2f), n, 0),
                               given(cases[c].velocity, arg_near(parity_randoms(n, -0.1f, 0.1f), n, 8, ROUNDING)),
                               given(cases[c].norm, arg_in(&norm_sq, 1, 12)), arg_none()};
            /* the last case at the odd size also with the skip argument clear and set */
            (c + 1 == sizeof cases / sizeof cases[0] && n > 1 ? parity_check_skips : parity_check)(
                o, NN_KERNEL_SGD_UPDATE, a, 5, &p, "case %zu n=%zu", c, n);
        }
}

void parity_sgd_update_device_lr_case(nn_backend *o) {
    for (int variant = 0; variant < 4; variant++) /* bit 0: momentum and a velocity; bit 1: a norm limit */
        for (int s = 0; s < 2; s++) {
            const size_t n = s ? 777 : 1;
            const float scalars[2] = {0.037f, 9.5f}; /* the rate, the squared norm */
            const nn_sgd_params p = {.n = (int64_t)n, .lr = 123.0f /* not read */,
                                     .momentum = variant & 1 ? 0.9f : 0.0f, .weight_decay = 0.01f,
                                     .max_grad_norm = variant & 2 ? 2.0f : 0.0f, .nesterov = variant == 3};
            parity_arg a[5] = {arg_near(parity_randoms(n, -1, 1), n, 4, ROUNDING),
                               arg_in(parity_randoms(n, -2, 2), n, 0),
                               given(variant & 1, arg_near(parity_randoms(n, -1, 1), n, 8, ROUNDING)),
                               arg_in(scalars, 2, 4), arg_none()};
            (variant == 3 && n > 1 ? parity_check_skips : parity_check)(o, NN_KERNEL_SGD_UPDATE_DEVICE_LR, a, 5, &p,
                                                                        "variant %d n=%zu", variant, n);
        }
}

/* ---- the device loop: gather, counter, fill, metrics ---- */

/* Rows of an 11-row table picked by a device-side position: the order
 * given or not, the counter given or not (1, then 2: positions past the
 * epoch's 14), an order entry past the table and one negative (rows of
 * zeros). GATHER_SAMPLES reads uint8 values packed four to a word, rows
 * not on word boundaries, and scales them per channel of `plane` values. */
/* augment: GATHER_SAMPLES' shifts of up to crop_pad pixels and mirroring
 * (width: the images' width), keyed by a seed and drawn as the rows from
 * draw_row of a global batch */
static void gather_run(nn_backend *o, nn_kernel kernel, int row_elems, int plane, int width, int crop_pad, int flip,
                       int draw_row) {
    const int table_rows = 11, positions = 14, rows = 5;
    int32_t *order = parity_array((size_t)positions * 4);
    for (int i = 0; i < table_rows; i++) order[i] = (i * 7 + 3) % table_rows;
    order[11] = table_rows, order[12] = -1, order[13] = 4;
    const bool samples = kernel == NN_KERNEL_GATHER_SAMPLES;
    const size_t elems = (size_t)table_rows * row_elems, words = samples ? (elems + 3) / 4 : elems;
    uint32_t *table = parity_array(words * 4);
    const float *u = parity_randoms(words, 0.0f, 1.0f);
    for (size_t i = 0; i < words; i++) table[i] = (uint32_t)(u[i] * 4294967040.0f) ^ (uint32_t)(i * 2654435761u);
    const nn_gather_params p = {.rows = rows, .row_elems = row_elems, .first = 2, .stride = 5,
                                .positions = positions, .table_rows = table_rows, .plane = plane,
                                .scale = {1.0f / 255.0f, 0.5f, -2.0f, 0.125f}, .shift = {-0.5f, 1.0f, 0.25f, 3.0f},
                                .width = width, .crop_pad = crop_pad, .flip = flip, .seed_lo = 0x2545f491u,
                                .seed_hi = 17u, .draw_row = draw_row};
    const size_t out = (size_t)rows * row_elems;
    for (int with_order = 0; with_order < 2; with_order++)
        for (int32_t counter = 0; counter <= 2; counter++) { /* 0: no counter */
            const int32_t draw = 1000 * counter + 7;
            parity_arg a[5] = {arg_in(table, words, 4), given(with_order, arg_in(order, (size_t)positions, 8)),
                               given(counter > 0, arg_in(&counter, 1, 12)),
                               samples ? arg_near(parity_randoms(out, -1, 1), out, 0, ROUNDING)
                                       : arg_exact(parity_randoms(out, -1, 1), out, 0),
                               given(crop_pad || flip, arg_in(&draw, 1, 4))};
            parity_check(o, kernel, a, samples ? 5 : 4, &p,
                         "row elements %d plane %d order %s counter %d crop %d flip %d draw row %d", row_elems, plane,
                         with_order ? "given" : "absent", counter, crop_pad, flip, draw_row);
        }
}

void parity_gather_samples_case(nn_backend *o) {
    gather_run(o, NN_KERNEL_GATHER_SAMPLES, 27, 9, 3, 0, 0, 0); /* three channels of 3x3 */
    gather_run(o, NN_KERNEL_GATHER_SAMPLES, 10, 3, 3, 0, 0, 0); /* four channels, the last of one value */
    gather_run(o, NN_KERNEL_GATHER_SAMPLES, 27, 9, 3, 2, 0, 0); /* shifted */
    gather_run(o, NN_KERNEL_GATHER_SAMPLES, 27, 9, 3, 1, 1, 0); /* shifted and mirrored */
    gather_run(o, NN_KERNEL_GATHER_SAMPLES, 90, 30, 6, 0, 1, 0); /* mirrored 5x6 planes */
    gather_run(o, NN_KERNEL_GATHER_SAMPLES, 27, 9, 3, 1, 1, 10); /* a rank's rows from 10 of the global batch */
}

void parity_gather_rows_case(nn_backend *o) {
    gather_run(o, NN_KERNEL_GATHER_ROWS, 1, 1, 1, 0, 0, 0); /* labels */
    gather_run(o, NN_KERNEL_GATHER_ROWS, 3, 3, 3, 0, 0, 0);
}

void parity_counter_add_case(nn_backend *o) {
    static const int32_t starts[] = {0, 5, -7, 1000000};
    static const int32_t deltas[] = {1, 3, -2, -1000001};
    for (int i = 0; i < 4; i++) {
        const nn_counter_params p = {.delta = deltas[i]};
        parity_arg a[2] = {arg_exact(&starts[i], 1, (size_t)(4 * i)), arg_none()};
        (i == 3 ? parity_check_skips : parity_check)(o, NN_KERNEL_COUNTER_ADD, a, 2, &p, "counter %d delta %d",
                                                     starts[i], deltas[i]);
    }
}

/* A NaN with a payload, a negative zero, one past 1.0; an odd count, and
 * words in the view past it that must stay. */
void parity_fill_case(nn_backend *o) {
    static const uint32_t patterns[] = {0x7fc01234u, 0x80000000u, 0x3f800001u};
    static const int64_t counts[] = {1, 1031, 70001};
    for (int k = 0; k < 3; k++)
        for (int c = 0; c < 3; c++) {
            const nn_fill_params p = {.count = counts[c], .bits = patterns[k]};
            const size_t n = (size_t)counts[c] + 7;
            parity_arg a[1] = {arg_exact(parity_randoms(n, -1, 1), n, 12)};
            parity_check(o, NN_KERNEL_FILL, a, 1, &p, "count %lld bits %#x", (long long)p.count, p.bits);
        }
}

/* Logits with ties (whole numbers; the first of equals wins), labels right
 * on every other row, and sums that already hold values. */
void parity_metrics_accumulate_case(nn_backend *o) {
    static const int shapes[][2] = {{1, 1}, {7, 3}, {300, 10}};
    for (int s = 0; s < 3; s++) {
        const nn_metrics_params p = {.rows = shapes[s][0], .cols = shapes[s][1]};
        const size_t n = (size_t)p.rows * p.cols;
        float *logits = parity_randoms(n, -3, 3);
        for (size_t j = 0; j < n; j++) logits[j] = roundf(logits[j]);
        int32_t *labels = parity_labels_of((size_t)p.rows, p.cols);
        for (int r = 0; r < p.rows; r += 2) {
            int best = 0;
            for (int c = 1; c < p.cols; c++)
                if (logits[(size_t)r * p.cols + c] > logits[(size_t)r * p.cols + best]) best = c;
            labels[r] = best;
        }
        const float loss = 0.731f, sums[2] = {12.5f, 3.0f};
        parity_arg a[4] = {arg_in(logits, n, 4), arg_in(labels, (size_t)p.rows, 0), arg_in(&loss, 1, 8),
                           arg_near(sums, 2, 12, ROUNDING)};
        parity_check(o, NN_KERNEL_METRICS_ACCUMULATE, a, 4, &p, "%dx%d", p.rows, p.cols);
    }
}

/* ---- dropout ---- */

/* The mask from the same hash on every backend: y and mask bit for bit,
 * at draws 0, 7 and the last 32-bit draw. */
void parity_dropout_forward_case(nn_backend *o) {
    static const struct {
        uint32_t threshold;
        float scale;
    } rates[] = {{0x80000000u, 2.0f}, {429496729u, 1.0f / 0.9f}, {0u, 1.0f}}; /* p = 0.5, 0.1, 0 */
    static const uint32_t draws[] = {0u, 7u, 0xffffffffu};
    static const size_t sizes[] = {1, 1027, 70001};
    for (int r = 0; r < 3; r++)
        for (int d = 0; d < 3; d++) {
            const size_t n = sizes[(r + d) % 3];
            const nn_dropout_params p = {.n = (int64_t)n, .threshold = rates[r].threshold, .scale = rates[r].scale,
                                         .seed_lo = 99u + (uint32_t)r, .seed_hi = 5u * (uint32_t)d};
            parity_arg a[4] = {arg_in(parity_randoms(n, -2, 2), n, 8), arg_exact(parity_randoms(n, -1, 1), n, 0),
                               arg_exact(parity_randoms(n, -1, 1), n, 4), arg_in(&draws[d], 1, 12)};
            parity_check(o, NN_KERNEL_DROPOUT_FORWARD, a, 4, &p, "n=%zu threshold %#x draw %u", n, p.threshold,
                         draws[d]);
        }
}
