/* 2-D pooling as operations (nn_maxpool2d_window, nn_avgpool2d,
 * nn_adaptive_maxpool2d, nn_adaptive_avgpool2d) on the CPU and on Vulkan:
 * values against double-precision loops written here from PyTorch's rules
 * (not the kernels' window header), gradients against central differences
 * of those loops, on awkward shapes (odd and prime sizes, batch 1,
 * rectangular windows, padding, dilation, ceil_mode windows past the padded
 * edge, adaptive windows that overlap or repeat), unbatched inputs, and
 * bad arguments refused by name; the fused Conv2d -> ReLU -> MaxPool2d
 * kernels take only the square windows they took before. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h" /* whether the fusion pass fused: a recipe on an unwritten output */
#include "nn_engine.h"
#include "test.h"
#include "vulkan_harness.h"

typedef enum pool_kind { MAX_WINDOW, AVG_WINDOW, MAX_ADAPTIVE, AVG_ADAPTIVE } pool_kind;

typedef struct pool_case {
    pool_kind kind;
    int n, c, h, w;
    nn_pool2d_params window; /* sliding kinds */
    bool include_pad;        /* AVG_WINDOW */
    int divisor;             /* AVG_WINDOW: divisor_override */
    int out_h, out_w;        /* adaptive kinds */
} pool_case;

#define SHAPE(N, C, H, W) .n = N, .c = C, .h = H, .w = W
static const pool_case kCases[] = {
    {.kind = MAX_WINDOW, SHAPE(2, 3, 7, 9), .window = {3, 2, 2, 1, 1, 1, 0, 0, false}}, /* dilation 0 means 1 */
    {.kind = MAX_WINDOW, SHAPE(1, 2, 11, 13), .window = {3, 3, 2, 3, 1, 1, 2, 3, true}},
    {.kind = MAX_WINDOW, SHAPE(1, 1, 5, 5), .window = {.kernel_h = 2, .kernel_w = 2, .ceil_mode = true}}, /* past the edge */
    {.kind = MAX_WINDOW, SHAPE(3, 2, 17, 6), .window = {5, 3, 3, 2, 2, 1, 1, 2, true}},
    {.kind = AVG_WINDOW, SHAPE(2, 3, 7, 9), .window = {3, 2, 2, 1, 1, 1, 0, 0, false}, .include_pad = true},
    {.kind = AVG_WINDOW, SHAPE(1, 2, 7, 9), .window = {3, 2, 2, 1, 1, 1, 0, 0, false}},
    {.kind = AVG_WINDOW, SHAPE(1, 1, 6, 7), .window = {2, 3, 4, 4, 1, 1, 0, 0, true}, .include_pad = true}, /* ceil_mode */
    {.kind = AVG_WINDOW, SHAPE(2, 1, 6, 7), .window = {2, 3, 4, 4, 1, 1, 0, 0, true}},
    /* ceil_mode windows running past the padded edge (columns 7..9 of 8 + 1) */
    {.kind = AVG_WINDOW, SHAPE(1, 2, 6, 8), .window = {3, 3, 2, 2, 1, 1, 0, 0, true}, .include_pad = true},
    {.kind = AVG_WINDOW, SHAPE(1, 2, 6, 8), .window = {3, 3, 2, 2, 1, 1, 0, 0, true}},
    {.kind = AVG_WINDOW, SHAPE(1, 3, 5, 11), .window = {3, 5, 2, 3, 1, 2, 0, 0, true}, .include_pad = true, .divisor = 4},
    /* ceil_mode windows larger than the padded input (issue 40, item 15): one output each way */
    {.kind = MAX_WINDOW, SHAPE(2, 1, 2, 3), .window = {3, 3, 2, 2, 0, 0, 1, 1, true}},
    {.kind = AVG_WINDOW, SHAPE(1, 2, 2, 3), .window = {3, 3, 2, 2, 0, 0, 0, 0, true}, .include_pad = true},
    {.kind = AVG_WINDOW, SHAPE(1, 2, 2, 3), .window = {3, 3, 2, 2, 0, 0, 0, 0, true}},
    {.kind = MAX_ADAPTIVE, SHAPE(2, 3, 7, 9), .out_h = 3, .out_w = 4},
    {.kind = MAX_ADAPTIVE, SHAPE(1, 1, 3, 4), .out_h = 7, .out_w = 9}, /* larger than the input */
    {.kind = AVG_ADAPTIVE, SHAPE(2, 3, 13, 11), .out_h = 5, .out_w = 11},
    {.kind = AVG_ADAPTIVE, SHAPE(1, 2, 5, 6), .out_h = 1, .out_w = 1}, /* global average pooling */
    {.kind = AVG_ADAPTIVE, SHAPE(1, 1, 3, 2), .out_h = 5, .out_w = 7},
};
#undef SHAPE
#define CASES (int)(sizeof kCases / sizeof kCases[0])

/* PyTorch's pooling_output_shape. */
static int pooled_size(int size, int kernel, int stride, int pad, int dilation, bool ceil_mode) {
    int n = (size + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0)) / stride + 1;
    if (ceil_mode && (n - 1) * stride >= size + pad) n--;
    return n;
}

static bool adaptive(const pool_case *t) { return t->kind == MAX_ADAPTIVE || t->kind == AVG_ADAPTIVE; }
static bool is_max(const pool_case *t) { return t->kind == MAX_WINDOW || t->kind == MAX_ADAPTIVE; }
static int stride_h(const pool_case *t) { return t->window.stride_h ? t->window.stride_h : t->window.kernel_h; }
static int stride_w(const pool_case *t) { return t->window.stride_w ? t->window.stride_w : t->window.kernel_w; }
static int dil_h(const pool_case *t) { return t->window.dilation_h ? t->window.dilation_h : 1; }
static int dil_w(const pool_case *t) { return t->window.dilation_w ? t->window.dilation_w : 1; }

static void out_shape(const pool_case *t, int *oh, int *ow) {
    if (adaptive(t)) {
        *oh = t->out_h, *ow = t->out_w;
        return;
    }
    *oh = pooled_size(t->h, t->window.kernel_h, stride_h(t), t->window.pad_h, dil_h(t), t->window.ceil_mode);
    *ow = pooled_size(t->w, t->window.kernel_w, stride_w(t), t->window.pad_w, dil_w(t), t->window.ceil_mode);
}

/* One output of one plane, in double: PyTorch's CPU loops. */
static double reference_one(const pool_case *t, const double *x, int oh, int ow, int out_h, int out_w) {
    if (adaptive(t)) {
        const int h0 = oh * t->h / out_h, h1 = ((oh + 1) * t->h + out_h - 1) / out_h;
        const int w0 = ow * t->w / out_w, w1 = ((ow + 1) * t->w + out_w - 1) / out_w;
        double best = -INFINITY, sum = 0;
        for (int h = h0; h < h1; h++)
            for (int w = w0; w < w1; w++) {
                best = x[h * t->w + w] > best ? x[h * t->w + w] : best;
                sum += x[h * t->w + w];
            }
        return is_max(t) ? best : sum / ((h1 - h0) * (w1 - w0));
    }
    const nn_pool2d_params *p = &t->window;
    const int hstart = oh * stride_h(t) - p->pad_h, wstart = ow * stride_w(t) - p->pad_w;
    if (is_max(t)) {
        double best = -INFINITY;
        for (int i = 0; i < p->kernel_h; i++)
            for (int j = 0; j < p->kernel_w; j++) {
                const int h = hstart + i * dil_h(t), w = wstart + j * dil_w(t);
                if (h >= 0 && h < t->h && w >= 0 && w < t->w && x[h * t->w + w] > best) best = x[h * t->w + w];
            }
        return best;
    }
    int hend = hstart + p->kernel_h < t->h + p->pad_h ? hstart + p->kernel_h : t->h + p->pad_h;
    int wend = wstart + p->kernel_w < t->w + p->pad_w ? wstart + p->kernel_w : t->w + p->pad_w;
    const int pool_size = (hend - hstart) * (wend - wstart);
    const int h0 = hstart > 0 ? hstart : 0, w0 = wstart > 0 ? wstart : 0;
    hend = hend < t->h ? hend : t->h;
    wend = wend < t->w ? wend : t->w;
    double sum = 0;
    for (int h = h0; h < hend; h++)
        for (int w = w0; w < wend; w++) sum += x[h * t->w + w];
    const int divisor = t->divisor ? t->divisor : t->include_pad ? pool_size : (hend - h0) * (wend - w0);
    return sum / divisor;
}

static void reference(const pool_case *t, const double *x, double *y) {
    int oh, ow;
    out_shape(t, &oh, &ow);
    for (int plane = 0; plane < t->n * t->c; plane++)
        for (int i = 0; i < oh; i++)
            for (int j = 0; j < ow; j++)
                y[(plane * oh + i) * ow + j] = reference_one(t, x + plane * t->h * t->w, i, j, oh, ow);
}

static nn_tensor *run_op(const pool_case *t, nn_tensor *x) {
    switch (t->kind) {
    case MAX_WINDOW: return nn_maxpool2d_window(x, &t->window);
    case AVG_WINDOW: return nn_avgpool2d(x, &t->window, t->include_pad, t->divisor);
    case MAX_ADAPTIVE: return nn_adaptive_maxpool2d(x, t->out_h, t->out_w);
    case AVG_ADAPTIVE: return nn_adaptive_avgpool2d(x, t->out_h, t->out_w);
    }
    return NULL;
}

/* Distinct values 0.01 apart, shuffled: a max has one winner, and
 * differences of 1e-3 never change it. */
static void distinct_values(float *x, int n, unsigned seed) {
    float *r = vkt_randoms((size_t)n, 0, 1, seed);
    for (int i = 0; i < n; i++) x[i] = 0.01f * (float)(i - n / 2);
    for (int i = n - 1; i > 0; i--) {
        const int j = (int)(r[i] * (float)(i + 1)) % (i + 1);
        const float v = x[i];
        x[i] = x[j], x[j] = v;
    }
    free(r);
}

static void check_case(const char *device, nn_ctx *ctx, int index) {
    const pool_case *t = &kCases[index];
    int oh, ow;
    out_shape(t, &oh, &ow);
    const int in = t->n * t->c * t->h * t->w, out = t->n * t->c * oh * ow;
    float *x = malloc(sizeof(float) * in), *weights = vkt_randoms((size_t)out, -1, 1, 40 + index);
    float *got_y = malloc(sizeof(float) * out), *got_dx = malloc(sizeof(float) * in);
    double *xd = malloc(sizeof(double) * in), *want_y = malloc(sizeof(double) * out);
    double *yd = malloc(sizeof(double) * out), *want_dx = malloc(sizeof(double) * in);
    distinct_values(x, in, 20 + index);
    for (int i = 0; i < in; i++) xd[i] = x[i];
    reference(t, xd, want_y);

    const int64_t xs[4] = {t->n, t->c, t->h, t->w}, ys[4] = {t->n, t->c, oh, ow};
    nn_tensor *xt = nn_tensor_from_data(ctx, NN_F32, 4, xs, x);
    nn_tensor *wt = nn_tensor_from_data(ctx, NN_F32, 4, ys, weights);
    nn_tensor_set_requires_grad(xt, true);
    nn_tensor *y = run_op(t, xt);
    CHECK_MSG(y, "%s case %d: %s", device, index, nn_last_error());
    if (!y) goto done;
    CHECK_MSG(nn_tensor_ndim(y) == 4 && nn_tensor_dim(y, 2) == oh && nn_tensor_dim(y, 3) == ow,
              "%s case %d: output %lld x %lld, want %d x %d", device, index, (long long)nn_tensor_dim(y, 2),
              (long long)nn_tensor_dim(y, 3), oh, ow);
    CHECK(nn_tensor_read(y, got_y, sizeof(float) * out) == NN_OK);
    vkt_check_near(got_y, want_y, (size_t)out, 2e-6, "%s case %d forward", device, index);

    /* d/dx of sum(y * weights): central differences of the reference */
    CHECK_MSG(nn_backward(nn_sum(nn_mul(y, wt))) == NN_OK, "%s case %d backward: %s", device, index, nn_last_error());
    CHECK(nn_tensor_read(nn_tensor_grad(xt), got_dx, sizeof(float) * in) == NN_OK);
    const double step = 1e-3;
    for (int i = 0; i < in; i++) {
        double loss[2];
        for (int s = 0; s < 2; s++) {
            xd[i] = x[i] + (s ? -step : step);
            reference(t, xd, yd);
            loss[s] = 0;
            for (int j = 0; j < out; j++) loss[s] += yd[j] * weights[j];
        }
        xd[i] = x[i];
        want_dx[i] = (loss[0] - loss[1]) / (2 * step);
    }
    vkt_check_near(got_dx, want_dx, (size_t)in, 1e-5, "%s case %d gradient", device, index);

    /* Unbatched [C, H, W]: the first image's result. */
    nn_tensor *x3 = nn_tensor_from_data(ctx, NN_F32, 3, xs + 1, x);
    nn_tensor *y3 = run_op(t, x3);
    CHECK_MSG(y3 && nn_tensor_ndim(y3) == 3 && nn_tensor_dim(y3, 0) == t->c, "%s case %d unbatched: %s", device,
              index, nn_last_error());
    if (y3) {
        CHECK(nn_tensor_read(y3, got_y, sizeof(float) * t->c * oh * ow) == NN_OK);
        vkt_check_near(got_y, want_y, (size_t)(t->c * oh * ow), 2e-6, "%s case %d unbatched", device, index);
    }
    nn_tensor_free(x3);
done:
    nn_ctx_step_end(ctx);
    nn_tensor_free(xt);
    nn_tensor_free(wt);
    free(x), free(weights), free(got_y), free(got_dx), free(xd), free(want_y), free(yd), free(want_dx);
}

/* Max pooling's edges: padding never wins (a window of -inf gives -inf),
 * ties go to the first maximum in row-major order, a NaN wins. */
static void check_max_edges(const char *device, nn_ctx *ctx) {
    const int64_t shape[4] = {1, 1, 2, 3};
    const float x[6] = {-INFINITY, -INFINITY, 2, -INFINITY, 2, NAN};
    nn_tensor *xt = nn_tensor_from_data(ctx, NN_F32, 4, shape, x);
    nn_tensor_set_requires_grad(xt, true);
    /* kernel 2x2, stride 1, padding 1, dilation 2 in width: rectangular and dilated, so not nn_maxpool2d_ex */
    const nn_pool2d_params p = {.kernel_h = 2, .kernel_w = 2, .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1,
                                .dilation_w = 2};
    nn_tensor *y = nn_maxpool2d_window(xt, &p);
    CHECK_MSG(y && nn_tensor_dim(y, 2) == 3 && nn_tensor_dim(y, 3) == 3, "%s edges: %s", device, nn_last_error());
    if (!y) return;
    /* Output (i, j) reads rows i - 1, i and columns j - 1, j + 1, worked out by hand: */
    float got[9], dx[6];
    CHECK(nn_tensor_read(y, got, sizeof got) == NN_OK);
    const float want[9] = {-INFINITY, 2, -INFINITY, 2, NAN, 2, 2, NAN, 2};
    for (int i = 0; i < 9; i++)
        CHECK_MSG(isnan(want[i]) ? isnan(got[i]) : got[i] == want[i], "%s edges: y[%d] = %g, want %g", device, i,
                  got[i], want[i]);
    CHECK(nn_backward(nn_sum(y)) == NN_OK);
    CHECK(nn_tensor_read(nn_tensor_grad(xt), dx, sizeof dx) == NN_OK);
    /* all -inf windows: the first tap inside the image (x1, twice) */
    const float want_dx[6] = {0, 2, 1, 0, 4, 2};
    for (int i = 0; i < 6; i++)
        CHECK_MSG(dx[i] == want_dx[i], "%s edges: dx[%d] = %g, want %g", device, i, dx[i], want_dx[i]);
    nn_ctx_step_end(ctx);
    nn_tensor_free(xt);
}

/* Dilated windows whose taps all fall in the padding (issue 40, item 1:
 * the first tap was read before the window was known to hold one, past
 * the input or from another row): -inf, as PyTorch, and no gradient. */
static void check_max_empty_windows(const char *device, nn_ctx *ctx) {
    static const struct {
        int64_t shape[4];
        nn_pool2d_params p;
        int64_t out_h, out_w;
    } kEmpty[] = {
        /* [1, 2, 3] as a 3x1 image: each window's columns are -1 and 1 */
        {{1, 1, 3, 1}, {.kernel_h = 3, .kernel_w = 2, .stride_h = 2, .stride_w = 3, .pad_w = 1, .dilation_w = 2}, 1, 1},
        /* one row: each window's rows are -1 and 1 */
        {{1, 2, 1, 7}, {.kernel_h = 2, .kernel_w = 1, .stride_h = 1, .stride_w = 1, .pad_h = 1, .dilation_h = 2}, 1, 7},
    };
    for (size_t k = 0; k < sizeof kEmpty / sizeof kEmpty[0]; k++) {
        const int64_t *shape = kEmpty[k].shape;
        const int64_t in = shape[0] * shape[1] * shape[2] * shape[3], out = shape[0] * shape[1] * kEmpty[k].out_h *
                                                                           kEmpty[k].out_w;
        float x[16], got[16], dx[16];
        for (int64_t i = 0; i < in; i++) x[i] = (float)(i + 1);
        nn_tensor *xt = nn_tensor_from_data(ctx, NN_F32, 4, shape, x);
        nn_tensor_set_requires_grad(xt, true);
        nn_tensor *y = nn_maxpool2d_window(xt, &kEmpty[k].p);
        CHECK_MSG(y && nn_tensor_dim(y, 2) == kEmpty[k].out_h && nn_tensor_dim(y, 3) == kEmpty[k].out_w,
                  "%s empty windows %zu: %s", device, k, nn_last_error());
        if (y && nn_tensor_read(y, got, sizeof(float) * (size_t)out) == NN_OK) {
            for (int64_t i = 0; i < out; i++)
                CHECK_MSG(got[i] == -INFINITY, "%s empty windows %zu: y[%lld] = %g, want -inf", device, k,
                          (long long)i, got[i]);
            CHECK(nn_backward(nn_sum(nn_mul_scalar(y, 2.0f))) == NN_OK);
            CHECK(nn_tensor_read(nn_tensor_grad(xt), dx, sizeof(float) * (size_t)in) == NN_OK);
            for (int64_t i = 0; i < in; i++)
                CHECK_MSG(dx[i] == 0.0f, "%s empty windows %zu: dx[%lld] = %g, want 0", device, k, (long long)i,
                          dx[i]);
        }
        nn_ctx_step_end(ctx);
        nn_tensor_free(xt);
    }
}

static void check_on(const char *device) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .threads = 2, .seed = 1});
    CHECK_MSG(ctx, "%s: %s", device, nn_last_error());
    if (!ctx) return;
    for (int i = 0; i < CASES; i++) check_case(device, ctx, i);
    check_max_edges(device, ctx);
    check_max_empty_windows(device, ctx);
    nn_ctx_free(ctx);
}

TEST(pooling_values_and_gradients_cpu) { check_on("cpu"); }

TEST(pooling_values_and_gradients_vulkan) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    check_on("vulkan");
}

/* The square windows nn_maxpool2d_ex handles run as it, with its values. */
TEST(pooling_square_windows_run_as_maxpool2d_ex) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 2});
    const int64_t shape[4] = {2, 3, 9, 7};
    float *x = vkt_randoms(2 * 3 * 9 * 7, -1, 1, 5);
    nn_tensor *xt = nn_tensor_from_data(ctx, NN_F32, 4, shape, x);
    const nn_pool2d_params p = {.kernel_h = 3, .kernel_w = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1};
    nn_tensor *a = nn_maxpool2d_window(xt, &p), *b = nn_maxpool2d_ex(xt, 3, 2, 1);
    float ya[2 * 3 * 5 * 4], yb[2 * 3 * 5 * 4];
    CHECK(a && b && nn_tensor_read(a, ya, sizeof ya) == NN_OK && nn_tensor_read(b, yb, sizeof yb) == NN_OK);
    CHECK(memcmp(ya, yb, sizeof ya) == 0);
    nn_ctx_step_end(ctx);
    nn_tensor_free(xt);
    free(x);
    nn_ctx_free(ctx);
}

/* On Vulkan, Conv2d -> ReLU -> a square max pool runs fused (the ReLU's
 * output left unwritten, to its recipe); a rectangular window does not, and
 * both give the unfused values. */
TEST(pooling_fused_convolution_takes_only_square_windows) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "vulkan", .seed = 3});
    const int64_t xs[4] = {3, 2, 13, 11}, ws[4] = {5, 2, 3, 3}, bs[1] = {5};
    float *xv = vkt_randoms(3 * 2 * 13 * 11, -1, 1, 1), *wv = vkt_randoms(90, -1, 1, 2), *bv = vkt_randoms(5, -1, 1, 3);
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 4, xs, xv), *w = nn_tensor_from_data(ctx, NN_F32, 4, ws, wv);
    nn_tensor *b = nn_tensor_from_data(ctx, NN_F32, 1, bs, bv);
    const nn_pool2d_params windows[2] = {{.kernel_h = 2, .kernel_w = 2}, {.kernel_h = 2, .kernel_w = 3}};
    for (int i = 0; i < 2; i++) {
        float fused[3 * 5 * 6 * 5], plain[3 * 5 * 6 * 5];
        const size_t bytes = sizeof(float) * 3 * 5 * 6 * (i ? 3 : 5);
        for (int fusion = 1; fusion >= 0; fusion--) {
            nn_ctx_set_fusion(ctx, fusion);
            nn_tensor *r = nn_relu(nn_conv2d(x, w, b, 1, 1));
            nn_tensor *y = nn_maxpool2d_window(r, &windows[i]);
            CHECK(y && nn_tensor_read(y, fusion ? fused : plain, bytes) == NN_OK);
            if (fusion) CHECK_MSG(!r->recipe == (i == 1), "window %d: fused %d, want %d", i, r->recipe != NULL, i == 0);
            nn_ctx_step_end(ctx);
        }
        for (size_t j = 0; j < bytes / sizeof(float); j++)
            CHECK_MSG(fabsf(fused[j] - plain[j]) <= 1e-5f * (1 + fabsf(plain[j])), "window %d: y[%zu] %g fused, %g not",
                      i, j, fused[j], plain[j]);
    }
    nn_tensor_free(x), nn_tensor_free(w), nn_tensor_free(b);
    free(xv), free(wv), free(bv);
    nn_ctx_free(ctx);
}

static void check_refused(nn_tensor *result, const char *name, const char *detail) {
    CHECK_MSG(!result, "%s: accepted, want refused with \"%s\"", name, detail);
    CHECK_MSG(strstr(nn_last_error(), name) && strstr(nn_last_error(), detail), "%s: message \"%s\" lacks \"%s\"",
              name, nn_last_error(), detail);
}

TEST(pooling_refuses_bad_arguments_by_name) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1});
    const int64_t shape[4] = {1, 2, 5, 4};
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 4, shape), *flat = nn_tensor_new(ctx, NN_F32, 2, shape);
    nn_tensor *labels = nn_tensor_new(ctx, NN_I32, 4, shape);
    const nn_pool2d_params ok = {.kernel_h = 2, .kernel_w = 3};
    check_refused(nn_maxpool2d_window(NULL, &ok), "nn_maxpool2d_window", "x is NULL");
    check_refused(nn_maxpool2d_window(x, NULL), "nn_maxpool2d_window", "window is NULL");
    check_refused(nn_maxpool2d_window(flat, &ok), "nn_maxpool2d_window", "[1, 2]");
    check_refused(nn_avgpool2d(labels, &ok, true, 0), "nn_avgpool2d", "x must be float32");
    check_refused(nn_maxpool2d_window(x, &(nn_pool2d_params){.kernel_h = 2, .kernel_w = 3, .pad_w = 2}),
                  "nn_maxpool2d_window", "width padding must be at most half the kernel (3 / 2 = 1), got 2");
    check_refused(nn_maxpool2d_window(x, &(nn_pool2d_params){.kernel_h = 0, .kernel_w = 3}), "nn_maxpool2d_window",
                  "got kernel 0");
    check_refused(nn_maxpool2d_window(x, &(nn_pool2d_params){.kernel_h = 2, .kernel_w = 2, .stride_h = -1}),
                  "nn_maxpool2d_window", "stride -1");
    check_refused(nn_maxpool2d_window(x, &(nn_pool2d_params){.kernel_h = 2, .kernel_w = 3, .dilation_w = 2}),
                  "nn_maxpool2d_window", "width window reaches 5");
    check_refused(nn_avgpool2d(x, &(nn_pool2d_params){.kernel_h = 2, .kernel_w = 2, .dilation_h = 2}, true, 0),
                  "nn_avgpool2d", "dilation must be 1");
    check_refused(nn_avgpool2d(x, &ok, true, -3), "nn_avgpool2d", "divisor_override must be > 0");
    check_refused(nn_adaptive_avgpool2d(x, 0, 3), "nn_adaptive_avgpool2d", "got 0x3");
    check_refused(nn_adaptive_maxpool2d(flat, 2, 2), "nn_adaptive_maxpool2d", "[N, C, H, W] or [C, H, W]");
    check_refused(nn_adaptive_maxpool2d(x, 1 << 30, 4), "nn_adaptive_maxpool2d", "too large");
    nn_tensor_free(x), nn_tensor_free(flat), nn_tensor_free(labels);
    nn_ctx_free(ctx);
}
