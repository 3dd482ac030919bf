/* Convolution with groups (depthwise with a channel multiplier among them)
 * and dilation, transposed convolution and resampling (nn_conv2d_ex,
 * nn_conv_transpose2d, nn_interpolate) on the CPU and on Vulkan: values
 * against double-precision loops written here from PyTorch's definitions,
 * gradients of every input against central differences of those loops,
 * on awkward sizes (odd and prime, batch 1, rectangular 3 x 2 kernels,
 * stride (2, 1), padding (1, 0)); bad arguments refused by name; grouped
 * and dilated convolutions never taken by the fused Conv2d -> ReLU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn_engine.h"
#include "test.h"
#include "vulkan_harness.h"

typedef enum ext_kind { CONV, TRANSPOSE, NEAREST, BILINEAR } ext_kind;

typedef struct ext_case {
    ext_kind kind;
    int n, c, h, w;
    /* CONV, TRANSPOSE: out channels, kernel, stride, padding, output padding, dilation, groups, bias */
    int oc, kh, kw, sh, sw, ph, pw, oph, opw, dh, dw, groups, bias;
    /* NEAREST, BILINEAR: size (out_h, out_w) or scale factor, align_corners */
    int out_h, out_w;
    double scale;
    int align;
} ext_case;

static const ext_case kCases[] = {
    /* groups 2, rectangular 3x2 kernel, stride (2, 1), padding (1, 0) */
    {CONV, 2, 4, 7, 6, .oc = 6, .kh = 3, .kw = 2, .sh = 2, .sw = 1, .ph = 1, .pw = 0, .dh = 1, .dw = 1, .groups = 2, .bias = 1},
    /* groups 3, batch 1, no bias */
    {CONV, 1, 6, 9, 11, .oc = 9, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1, .dh = 1, .dw = 1, .groups = 3},
    /* depthwise with multiplier 2, dilation 2 */
    {CONV, 2, 3, 11, 9, .oc = 6, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 2, .pw = 2, .dh = 2, .dw = 2, .groups = 3, .bias = 1},
    /* depthwise (MobileNet's 3x3 stride 2), batch 1 */
    {CONV, 1, 5, 13, 11, .oc = 5, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1, .dh = 1, .dw = 1, .groups = 5, .bias = 1},
    /* dilation (2, 3), ungrouped, a 3x2 kernel, stride (2, 1), padding (1, 0) */
    {CONV, 3, 2, 13, 11, .oc = 5, .kh = 3, .kw = 2, .sh = 2, .sw = 1, .ph = 1, .pw = 0, .dh = 2, .dw = 3, .groups = 1, .bias = 1},
    /* depthwise, multiplier 2, rectangular kernel, stride (2, 1), padding (1, 0) */
    {CONV, 2, 3, 7, 6, .oc = 6, .kh = 3, .kw = 2, .sh = 2, .sw = 1, .ph = 1, .pw = 0, .dh = 1, .dw = 1, .groups = 3},
    /* transposed: stride 2, padding 1, output padding 1 */
    {TRANSPOSE, 2, 3, 5, 4, .oc = 4, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1, .oph = 1, .opw = 1, .dh = 1, .dw = 1, .groups = 1, .bias = 1},
    /* transposed: groups 2, dilation 2, a 3x2 kernel, stride (2, 1), padding (1, 0) */
    {TRANSPOSE, 1, 4, 5, 7, .oc = 6, .kh = 3, .kw = 2, .sh = 2, .sw = 1, .ph = 1, .pw = 0, .oph = 1, .dh = 2, .dw = 2, .groups = 2, .bias = 1},
    /* transposed: one group per input channel, 2 outputs each, batch 1, no bias */
    {TRANSPOSE, 1, 3, 6, 5, .oc = 6, .kh = 2, .kw = 3, .sh = 3, .sw = 2, .ph = 0, .pw = 1, .opw = 1, .dh = 1, .dw = 1, .groups = 3},
    /* transposed: one group per output channel (the depthwise kernels in the convolution's view) */
    {TRANSPOSE, 2, 6, 4, 5, .oc = 3, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1, .dh = 1, .dw = 1, .groups = 3, .bias = 1},
    {NEAREST, 2, 3, 5, 7, .out_h = 11, .out_w = 3},          /* by size, up and down */
    {NEAREST, 1, 2, 5, 7, .scale = 2.0},                     /* x2 */
    {NEAREST, 1, 2, 5, 5, .scale = 1.5},                     /* a fractional factor: 1 / 1.5 maps back */
    {BILINEAR, 2, 3, 6, 9, .out_h = 13, .out_w = 17},        /* by size */
    {BILINEAR, 1, 2, 6, 9, .out_h = 13, .out_w = 17, .align = 1},
    {BILINEAR, 2, 1, 11, 13, .out_h = 5, .out_w = 4},        /* downsampling */
    {BILINEAR, 1, 3, 3, 4, .scale = 3.0},                    /* x3 */
    {BILINEAR, 1, 1, 4, 5, .out_h = 1, .out_w = 7, .align = 1}, /* one output row */
};
#define CASES (int)(sizeof kCases / sizeof kCases[0])

static bool is_conv(const ext_case *t) { return t->kind == CONV || t->kind == TRANSPOSE; }

static void out_size(const ext_case *t, int *oh, int *ow) {
    if (t->kind == CONV) {
        *oh = (t->h + 2 * t->ph - t->dh * (t->kh - 1) - 1) / t->sh + 1;
        *ow = (t->w + 2 * t->pw - t->dw * (t->kw - 1) - 1) / t->sw + 1;
    } else if (t->kind == TRANSPOSE) {
        *oh = (t->h - 1) * t->sh - 2 * t->ph + t->dh * (t->kh - 1) + t->oph + 1;
        *ow = (t->w - 1) * t->sw - 2 * t->pw + t->dw * (t->kw - 1) + t->opw + 1;
    } else if (t->scale > 0) {
        *oh = (int)floor(t->h * t->scale), *ow = (int)floor(t->w * t->scale);
    } else {
        *oh = t->out_h, *ow = t->out_w;
    }
}

/* Weight elements: [oc, c / groups, kh, kw] (conv) or [c, oc / groups, kh, kw] (transposed). */
static int weight_count(const ext_case *t) {
    if (!is_conv(t)) return 0;
    return t->kind == CONV ? t->oc * (t->c / t->groups) * t->kh * t->kw : t->c * (t->oc / t->groups) * t->kh * t->kw;
}

/* PyTorch's convolution: y[n, o, i, j] = b[o] + sum over the group's channels and taps. */
static void conv_ref(const ext_case *t, const double *x, const double *wt, const double *b, double *y) {
    int oh, ow;
    out_size(t, &oh, &ow);
    const int cg = t->c / t->groups, og = t->oc / t->groups;
    for (int n = 0; n < t->n; n++)
        for (int o = 0; o < t->oc; o++)
            for (int i = 0; i < oh; i++)
                for (int j = 0; j < ow; j++) {
                    double s = t->bias ? b[o] : 0.0;
                    for (int cl = 0; cl < cg; cl++) {
                        const int c = o / og * cg + cl;
                        for (int ki = 0; ki < t->kh; ki++)
                            for (int kj = 0; kj < t->kw; kj++) {
                                const int r = i * t->sh - t->ph + ki * t->dh, q = j * t->sw - t->pw + kj * t->dw;
                                if (r < 0 || r >= t->h || q < 0 || q >= t->w) continue;
                                s += wt[((o * cg + cl) * t->kh + ki) * t->kw + kj] *
                                     x[((n * t->c + c) * t->h + r) * t->w + q];
                            }
                    }
                    y[((n * t->oc + o) * oh + i) * ow + j] = s;
                }
}

/* PyTorch's transposed convolution as a scatter: every input pixel adds
 * its weighted kernel into the output at stride spacing. */
static void transpose_ref(const ext_case *t, const double *x, const double *wt, const double *b, double *y) {
    int oh, ow;
    out_size(t, &oh, &ow);
    const int cg = t->c / t->groups, og = t->oc / t->groups;
    for (int n = 0; n < t->n; n++)
        for (int o = 0; o < t->oc; o++)
            for (int i = 0; i < oh * ow; i++) y[(n * t->oc + o) * oh * ow + i] = t->bias ? b[o] : 0.0;
    for (int n = 0; n < t->n; n++)
        for (int c = 0; c < t->c; c++)
            for (int r = 0; r < t->h; r++)
                for (int q = 0; q < t->w; q++)
                    for (int ol = 0; ol < og; ol++) {
                        const int o = c / cg * og + ol;
                        for (int ki = 0; ki < t->kh; ki++)
                            for (int kj = 0; kj < t->kw; kj++) {
                                const int i = r * t->sh - t->ph + ki * t->dh, j = q * t->sw - t->pw + kj * t->dw;
                                if (i < 0 || i >= oh || j < 0 || j >= ow) continue;
                                y[((n * t->oc + o) * oh + i) * ow + j] +=
                                    x[((n * t->c + c) * t->h + r) * t->w + q] *
                                    wt[((c * og + ol) * t->kh + ki) * t->kw + kj];
                            }
                    }
}

/* PyTorch's source coordinate of output o (upsample kernels: float
 * scale and position, as its CPU code computes them), then its taps. */
static void taps(const ext_case *t, int o, int in, int out, int *i0, int *i1, double *lambda) {
    float scale;
    if (t->align) scale = out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.0f;
    else scale = t->scale > 0 ? (float)(1.0 / t->scale) : (float)in / (float)out;
    if (t->kind == NEAREST) {
        const int i = (int)floorf(scale * (float)o);
        *i0 = *i1 = i < in - 1 ? i : in - 1;
        *lambda = 0;
        return;
    }
    float src = t->align ? scale * (float)o : scale * ((float)o + 0.5f) - 0.5f;
    if (src < 0) src = 0;
    *i0 = (int)src;
    *i1 = *i0 + (*i0 < in - 1 ? 1 : 0);
    *lambda = (double)src - *i0;
}

static void interp_ref(const ext_case *t, const double *x, double *y) {
    int oh, ow;
    out_size(t, &oh, &ow);
    for (int plane = 0; plane < t->n * t->c; plane++)
        for (int i = 0; i < oh; i++)
            for (int j = 0; j < ow; j++) {
                int h0, h1, w0, w1;
                double lh, lw;
                taps(t, i, t->h, oh, &h0, &h1, &lh);
                taps(t, j, t->w, ow, &w0, &w1, &lw);
                const double *p = x + plane * t->h * t->w;
                y[(plane * oh + i) * ow + j] = (1 - lh) * ((1 - lw) * p[h0 * t->w + w0] + lw * p[h0 * t->w + w1]) +
                                               lh * ((1 - lw) * p[h1 * t->w + w0] + lw * p[h1 * t->w + w1]);
            }
}

static void reference(const ext_case *t, const double *x, const double *w, const double *b, double *y) {
    if (t->kind == CONV) conv_ref(t, x, w, b, y);
    else if (t->kind == TRANSPOSE) transpose_ref(t, x, w, b, y);
    else interp_ref(t, x, y);
}

static nn_tensor *run_op(const ext_case *t, nn_tensor *x, nn_tensor *w, nn_tensor *b) {
    if (t->kind == CONV) {
        const nn_conv2d_params p = {.stride_h = t->sh, .stride_w = t->sw, .pad_h = t->ph, .pad_w = t->pw,
                                    .dilation_h = t->dh, .dilation_w = t->dw, .groups = t->groups};
        return nn_conv2d_ex(x, w, b, &p);
    }
    if (t->kind == TRANSPOSE) {
        const nn_conv_transpose2d_params p = {.stride_h = t->sh, .stride_w = t->sw, .pad_h = t->ph, .pad_w = t->pw,
                                              .output_pad_h = t->oph, .output_pad_w = t->opw, .dilation_h = t->dh,
                                              .dilation_w = t->dw, .groups = t->groups};
        return nn_conv_transpose2d(x, w, b, &p);
    }
    const nn_interpolate_mode mode = t->kind == NEAREST ? NN_INTERPOLATE_NEAREST : NN_INTERPOLATE_BILINEAR;
    if (t->scale > 0) return nn_interpolate(x, 0, 0, t->scale, t->scale, mode, t->align);
    return nn_interpolate(x, t->out_h, t->out_w, 0, 0, mode, t->align);
}

/* d loss / d v[i] for loss = sum(y * r), by central differences of the reference. */
static void numeric_grad(const ext_case *t, double *v, int count, double *xd, double *wd, double *bd,
                         const float *r, int out, double *yd, double *grad) {
    const double step = 1e-3;
    for (int i = 0; i < count; i++) {
        const double keep = v[i];
        double loss[2];
        for (int s = 0; s < 2; s++) {
            v[i] = keep + (s ? -step : step);
            reference(t, xd, wd, bd, yd);
            loss[s] = 0;
            for (int j = 0; j < out; j++) loss[s] += yd[j] * r[j];
        }
        v[i] = keep;
        grad[i] = (loss[0] - loss[1]) / (2 * step);
    }
}

static void check_case(const char *device, nn_ctx *ctx, int index) {
    const ext_case *t = &kCases[index];
    int oh, ow;
    out_size(t, &oh, &ow);
    const int oc = is_conv(t) ? t->oc : t->c;
    const int in = t->n * t->c * t->h * t->w, out = t->n * oc * oh * ow, nw = weight_count(t);
    const int nb = is_conv(t) && t->bias ? t->oc : 0;
    float *x = vkt_randoms((size_t)in, -1, 1, 100 + index), *r = vkt_randoms((size_t)out, -1, 1, 200 + index);
    float *w = vkt_randoms((size_t)(nw ? nw : 1), -1, 1, 300 + index), *b = vkt_randoms((size_t)(nb ? nb : 1), -1, 1, 400 + index);
    double *xd = malloc(sizeof(double) * in), *wd = malloc(sizeof(double) * (nw + 1)), *bd = malloc(sizeof(double) * (nb + 1));
    double *want = malloc(sizeof(double) * out), *yd = malloc(sizeof(double) * out);
    double *want_grad = malloc(sizeof(double) * (in > nw ? in : nw) + 8);
    float *got = malloc(sizeof(float) * (out > in ? (out > nw ? out : nw) : (in > nw ? in : nw)) + 8);
    for (int i = 0; i < in; i++) xd[i] = x[i];
    for (int i = 0; i < nw; i++) wd[i] = w[i];
    for (int i = 0; i < nb; i++) bd[i] = b[i];
    reference(t, xd, wd, bd, want);

    const int64_t xs[4] = {t->n, t->c, t->h, t->w}, ys[4] = {t->n, oc, oh, ow};
    const int groups = t->groups ? t->groups : 1;
    const int64_t ws[4] = {t->kind == CONV ? t->oc : t->c, t->kind == CONV ? t->c / groups : t->oc / groups, t->kh,
                           t->kw};
    const int64_t bs[1] = {nb};
    nn_tensor *xt = nn_tensor_from_data(ctx, NN_F32, 4, xs, x), *rt = nn_tensor_from_data(ctx, NN_F32, 4, ys, r);
    nn_tensor *wt = nw ? nn_tensor_from_data(ctx, NN_F32, 4, ws, w) : NULL;
    nn_tensor *bt = nb ? nn_tensor_from_data(ctx, NN_F32, 1, bs, b) : NULL;
    nn_tensor_set_requires_grad(xt, true);
    if (wt) nn_tensor_set_requires_grad(wt, true);
    if (bt) nn_tensor_set_requires_grad(bt, true);
    nn_tensor *y = run_op(t, xt, wt, bt);
    CHECK_MSG(y, "%s case %d: %s", device, index, nn_last_error());
    if (!y) goto done;
    CHECK_MSG(nn_tensor_dim(y, 1) == oc && nn_tensor_dim(y, 2) == oh && nn_tensor_dim(y, 3) == ow,
              "%s case %d: output %lldx%lldx%lld, want %dx%dx%d", device, index, (long long)nn_tensor_dim(y, 1),
              (long long)nn_tensor_dim(y, 2), (long long)nn_tensor_dim(y, 3), oc, oh, ow);
    CHECK(nn_tensor_read(y, got, sizeof(float) * out) == NN_OK);
    vkt_check_near(got, want, (size_t)out, 1e-5, "%s case %d forward", device, index);

    CHECK_MSG(nn_backward(nn_sum(nn_mul(y, rt))) == NN_OK, "%s case %d backward: %s", device, index, nn_last_error());
    numeric_grad(t, xd, in, xd, wd, bd, r, out, yd, want_grad);
    CHECK(nn_tensor_read(nn_tensor_grad(xt), got, sizeof(float) * in) == NN_OK);
    vkt_check_near(got, want_grad, (size_t)in, 1e-4, "%s case %d dx", device, index);
    if (wt) {
        numeric_grad(t, wd, nw, xd, wd, bd, r, out, yd, want_grad);
        CHECK(nn_tensor_read(nn_tensor_grad(wt), got, sizeof(float) * nw) == NN_OK);
        vkt_check_near(got, want_grad, (size_t)nw, 1e-4, "%s case %d dweight", device, index);
    }
    if (bt) {
        numeric_grad(t, bd, nb, xd, wd, bd, r, out, yd, want_grad);
        CHECK(nn_tensor_read(nn_tensor_grad(bt), got, sizeof(float) * nb) == NN_OK);
        vkt_check_near(got, want_grad, (size_t)nb, 1e-4, "%s case %d dbias", device, index);
    }
done:
    nn_ctx_step_end(ctx);
    nn_tensor_free(xt), nn_tensor_free(rt);
    if (wt) nn_tensor_free(wt);
    if (bt) nn_tensor_free(bt);
    free(x), free(r), free(w), free(b), free(xd), free(wd), free(bd), free(want), free(yd), free(want_grad), free(got);
}

static void check_on(const char *device) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .threads = 2, .seed = 1});
    CHECK_MSG(ctx, "%s: %s", device, nn_last_error());
    if (!ctx) return;
    for (int i = 0; i < CASES; i++) check_case(device, ctx, i);
    nn_ctx_free(ctx);
}

TEST(convolution_ext_values_and_gradients_cpu) { check_on("cpu"); }

TEST(convolution_ext_values_and_gradients_vulkan) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    check_on("vulkan");
}

static void expect_refused(nn_tensor *got, const char *what, const char *needle1, const char *needle2) {
    CHECK_MSG(!got, "%s: accepted", what);
    const char *e = nn_last_error();
    CHECK_MSG(strstr(e, needle1) && strstr(e, needle2), "%s: message \"%s\" should name \"%s\" and \"%s\"", what, e,
              needle1, needle2);
}

TEST(convolution_ext_bad_arguments_refused_by_name) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1});
    const int64_t xs[4] = {2, 6, 9, 9}, ws[4] = {4, 3, 3, 3}, ws_bad[4] = {4, 4, 3, 3}, ts[4] = {6, 2, 3, 3};
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 4, xs), *w = nn_tensor_new(ctx, NN_F32, 4, ws);
    nn_tensor *w_bad = nn_tensor_new(ctx, NN_F32, 4, ws_bad), *tw = nn_tensor_new(ctx, NN_F32, 4, ts);
    nn_conv2d_params p = {.stride_h = 1, .stride_w = 1, .groups = 2};
    CHECK_MSG(nn_conv2d_ex(x, w, NULL, &p) != NULL, "groups 2: %s", nn_last_error());
    expect_refused(nn_conv2d_ex(x, w_bad, NULL, &p), "channels per group", "nn_conv2d", "groups 2");
    p.groups = 4;
    expect_refused(nn_conv2d_ex(x, w, NULL, &p), "groups not dividing", "nn_conv2d", "groups 4");
    p.groups = -1;
    expect_refused(nn_conv2d_ex(x, w, NULL, &p), "negative groups", "groups", "-1");
    p = (nn_conv2d_params){.stride_h = 1, .stride_w = 1, .dilation_h = -2, .groups = 2};
    expect_refused(nn_conv2d_ex(x, w, NULL, &p), "negative dilation", "dilation", "-2");
    p = (nn_conv2d_params){.stride_h = 1, .stride_w = 1, .dilation_h = 5, .groups = 2};
    expect_refused(nn_conv2d_ex(x, w, NULL, &p), "dilated kernel past the input", "nn_conv2d", "dilation 5x1");
    nn_conv_transpose2d_params tp = {.stride_h = 2, .stride_w = 2, .output_pad_h = 2, .groups = 3};
    expect_refused(nn_conv_transpose2d(x, tw, NULL, &tp), "output padding at the stride", "nn_conv_transpose2d",
                   "output_padding 2x0");
    tp.output_pad_h = 0, tp.groups = 4;
    expect_refused(nn_conv_transpose2d(x, tw, NULL, &tp), "transposed groups", "nn_conv_transpose2d", "groups 4");
    expect_refused(nn_conv_transpose2d(x, tw, NULL, NULL), "no params", "nn_conv_transpose2d", "params");
    expect_refused(nn_interpolate(x, 0, 0, 0, 0, NN_INTERPOLATE_NEAREST, false), "neither size nor scale",
                   "nn_interpolate", "neither");
    expect_refused(nn_interpolate(x, 4, 4, 2, 2, NN_INTERPOLATE_NEAREST, false), "size and scale", "nn_interpolate",
                   "both");
    expect_refused(nn_interpolate(x, 4, 4, 0, 0, NN_INTERPOLATE_NEAREST, true), "align_corners with nearest",
                   "nn_interpolate", "align_corners");
    expect_refused(nn_interpolate(x, 0, 0, -1, 2, NN_INTERPOLATE_BILINEAR, false), "negative scale",
                   "nn_interpolate", "-1");
    expect_refused(nn_interpolate(x, 4, 4, 0, 0, (nn_interpolate_mode)7, false), "unknown mode", "nn_interpolate",
                   "7");
    expect_refused(nn_interpolate(x, 0, 0, 0.01, 0.01, NN_INTERPOLATE_BILINEAR, false), "empty output",
                   "nn_interpolate", "0x0");
    nn_ctx_free(ctx);
}

/* A grouped or dilated convolution followed by a ReLU runs unfused: the
 * same values as with fusion off. */
TEST(convolution_ext_grouped_relu_matches_unfused) {
    const int64_t xs[4] = {2, 4, 9, 8}, ws[4] = {6, 2, 3, 3};
    float *x = vkt_randoms(2 * 4 * 9 * 8, -1, 1, 7), *w = vkt_randoms(6 * 2 * 3 * 3, -1, 1, 8);
    float got[2][2 * 6 * 7 * 6];
    for (int fused = 0; fused < 2; fused++) {
        nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 2});
        nn_ctx_set_fusion(ctx, fused);
        nn_tensor *xt = nn_tensor_from_data(ctx, NN_F32, 4, xs, x), *wt = nn_tensor_from_data(ctx, NN_F32, 4, ws, w);
        const nn_conv2d_params p = {.stride_h = 1, .stride_w = 1, .dilation_w = 1, .groups = 2};
        nn_tensor *y = nn_relu(nn_conv2d_ex(xt, wt, NULL, &p));
        CHECK_MSG(y && nn_tensor_read(y, got[fused], sizeof got[fused]) == NN_OK, "%s", nn_last_error());
        nn_ctx_free(ctx);
    }
    CHECK(memcmp(got[0], got[1], sizeof got[0]) == 0);
    free(x), free(w);
}

/* The layers: PyTorch's parameter names and shapes, bias=False leaving one
 * parameter, and the forward of each its operation on its own parameters. */
TEST(convolution_ext_layers) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1, .seed = 3});
    const nn_conv2d_params cp = {.stride_h = 2, .stride_w = 1, .pad_h = 1, .dilation_h = 2, .groups = 2};
    const nn_conv_transpose2d_params tp = {.stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .output_pad_h = 1,
                                           .groups = 2};
    nn_module *conv = nn_conv2d_layer_ex(ctx, 4, 6, 3, 2, &cp, false);
    nn_module *tconv = nn_conv_transpose2d_layer(ctx, 4, 6, 3, 3, &tp, true);
    nn_module *up = nn_upsample_layer(ctx, 0, 0, 2.0, 2.0, NN_INTERPOLATE_BILINEAR, true);
    CHECK_MSG(conv && tconv && up, "%s", nn_last_error());
    if (!conv || !tconv || !up) return;
    CHECK(nn_module_param_count(conv) == 1 && nn_module_param_count(tconv) == 2);
    CHECK(strcmp(nn_module_param_name(conv, 0), "weight") == 0 && strcmp(nn_module_param_name(tconv, 1), "bias") == 0);
    const nn_tensor *w = nn_module_param(conv, 0), *tw = nn_module_param(tconv, 0);
    CHECK(nn_tensor_dim(w, 0) == 6 && nn_tensor_dim(w, 1) == 2 && nn_tensor_dim(w, 2) == 3 && nn_tensor_dim(w, 3) == 2);
    CHECK(nn_tensor_dim(tw, 0) == 4 && nn_tensor_dim(tw, 1) == 3 && nn_tensor_dim(nn_module_param(tconv, 1), 0) == 6);
    const int64_t xs[4] = {2, 4, 9, 7};
    float *x = vkt_randoms(2 * 4 * 9 * 7, -1, 1, 9);
    nn_tensor *xt = nn_tensor_from_data(ctx, NN_F32, 4, xs, x);
    nn_module *layers[3] = {conv, tconv, up};
    for (int i = 0; i < 3; i++) {
        nn_tensor *got = nn_module_forward(layers[i], xt);
        nn_tensor *want = i == 0 ? nn_conv2d_ex(xt, nn_module_param(conv, 0), NULL, &cp)
                          : i == 1 ? nn_conv_transpose2d(xt, nn_module_param(tconv, 0), nn_module_param(tconv, 1), &tp)
                                   : nn_interpolate(xt, 0, 0, 2.0, 2.0, NN_INTERPOLATE_BILINEAR, true);
        CHECK_MSG(got && want && nn_tensor_numel(got) == nn_tensor_numel(want), "layer %d: %s", i, nn_last_error());
        if (!got || !want) continue;
        const size_t n = (size_t)nn_tensor_numel(got);
        float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
        CHECK(nn_tensor_read(got, a, n * sizeof *a) == NN_OK && nn_tensor_read(want, b, n * sizeof *b) == NN_OK);
        CHECK_MSG(memcmp(a, b, n * sizeof *a) == 0, "layer %d differs from its operation", i);
        free(a), free(b);
    }
    CHECK(nn_conv2d_layer_ex(ctx, 4, 6, 3, 3, &(nn_conv2d_params){.groups = 4}, true) == NULL &&
          strstr(nn_last_error(), "groups 4"));
    nn_ctx_step_end(ctx);
    nn_tensor_free(xt);
    free(x);
    nn_module_free(conv), nn_module_free(tconv), nn_module_free(up);
    nn_ctx_free(ctx);
}
