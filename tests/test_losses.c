/* softmax / log_softmax along any dimension and the losses (mse, l1,
 * smooth_l1, binary_cross_entropy_with_logits, nll_loss, cross_entropy
 * with class indices and with class probabilities) on the CPU and Vulkan:
 * values against double-precision loops, the input's gradient against
 * central finite differences of those loops, every reduction, at awkward
 * sizes (C = 7, N = 1, spatial targets [N, C, 3, 5]) with ignore_index
 * hits, class weights and label smoothing 0.1; then the errors: bad
 * targets reported by name on both devices, bad arguments refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_engine.h"
#include "test.h"
#include "vulkan_harness.h"

static const char *const kDevices[] = {"cpu", "vulkan"};


typedef enum kind { SOFTMAX, LOG_SOFTMAX, NLL, CE, CE_PROB, MSE, L1, SMOOTH_L1, BCE } kind;

typedef struct loss_case {
    const char *what;
    kind kind;
    int ndim;
    int64_t shape[4];
    int dim;            /* softmax */
    bool weight;        /* class weights (NLL, CE, CE_PROB), or BCE's weight [last dim] */
    bool pos_weight;    /* BCE */
    int ignore_index;   /* NLL, CE */
    float smoothing;    /* CE, CE_PROB */
    float beta;         /* SMOOTH_L1 */
} loss_case;

typedef struct loss_data {
    int64_t n, classes, positions, inner;
    double *target;    /* float targets, or class indices as doubles */
    double *weight;    /* classes (or last dim for BCE) */
    double *pos_weight;
} loss_data;

static int64_t numel_of(const loss_case *c) {
    int64_t n = 1;
    for (int d = 0; d < c->ndim; d++) n *= c->shape[d];
    return n;
}

static bool class_loss(const loss_case *c) { return c->kind == NLL || c->kind == CE || c->kind == CE_PROB; }

/* log_softmax (or softmax) of x along dim into y, in double. */
static void softmax_ref(const loss_case *c, int dim, const double *x, double *y, bool log_form) {
    const int axis = dim < 0 ? dim + c->ndim : dim;
    int64_t outer = 1, inner = 1, size = c->shape[axis];
    for (int d = 0; d < axis; d++) outer *= c->shape[d];
    for (int d = axis + 1; d < c->ndim; d++) inner *= c->shape[d];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const int64_t base = o * size * inner + i;
            double m = x[base], s = 0.0;
            for (int64_t j = 1; j < size; j++) m = fmax(m, x[base + j * inner]);
            for (int64_t j = 0; j < size; j++) s += exp(x[base + j * inner] - m);
            for (int64_t j = 0; j < size; j++)
                y[base + j * inner] = log_form ? x[base + j * inner] - m - log(s) : exp(x[base + j * inner] - m) / s;
        }
}

static double reduce_ref(int reduction, const double *per, int64_t count, double denominator, double *out) {
    if (reduction == NN_REDUCTION_NONE) {
        memcpy(out, per, (size_t)count * sizeof *per);
        return 0;
    }
    double s = 0.0;
    for (int64_t i = 0; i < count; i++) s += per[i];
    out[0] = reduction == NN_REDUCTION_SUM ? s : s / denominator;
    return 0;
}

/* The reference output of the case for input x (outputs: out_count). */
static void reference(const loss_case *c, int reduction, const loss_data *d, const double *x, double *out) {
    const int64_t n = d->n;
    double *per = calloc((size_t)n, sizeof *per), *lp = calloc((size_t)n, sizeof *lp);
    switch (c->kind) {
    case SOFTMAX:
    case LOG_SOFTMAX: softmax_ref(c, c->dim, x, out, c->kind == LOG_SOFTMAX); break;
    case NLL:
    case CE: {
        if (c->kind == CE) softmax_ref(c, 1, x, lp, true);
        else memcpy(lp, x, (size_t)n * sizeof *x);
        double total = 0.0;
        const double eps = c->kind == CE ? c->smoothing : 0.0;
        for (int64_t pos = 0; pos < d->positions; pos++) {
            const int t = (int)d->target[pos];
            const int64_t base = (pos / d->inner) * d->classes * d->inner + pos % d->inner;
            if (t == c->ignore_index) {
                per[pos] = 0.0;
                continue;
            }
            const double wt = c->weight ? d->weight[t] : 1.0;
            double all = 0.0;
            for (int64_t k = 0; k < d->classes; k++) all += (c->weight ? d->weight[k] : 1.0) * lp[base + k * d->inner];
            per[pos] = -(1.0 - eps) * wt * lp[base + t * d->inner] - eps / d->classes * all;
            total += wt;
        }
        reduce_ref(reduction, per, d->positions, total, out);
        break;
    }
    case CE_PROB: {
        softmax_ref(c, 1, x, lp, true);
        const double eps = c->smoothing;
        for (int64_t pos = 0; pos < d->positions; pos++) {
            const int64_t base = (pos / d->inner) * d->classes * d->inner + pos % d->inner;
            per[pos] = 0.0;
            for (int64_t k = 0; k < d->classes; k++) {
                const double t = d->target[base + k * d->inner] * (1.0 - eps) + eps / d->classes;
                per[pos] -= (c->weight ? d->weight[k] : 1.0) * t * lp[base + k * d->inner];
            }
        }
        reduce_ref(reduction, per, d->positions, (double)d->positions, out);
        break;
    }
    case MSE:
    case L1:
    case SMOOTH_L1:
    case BCE:
        for (int64_t i = 0; i < n; i++) {
            const double diff = x[i] - d->target[i], a = fabs(diff);
            if (c->kind == MSE) per[i] = diff * diff;
            if (c->kind == L1) per[i] = a;
            if (c->kind == SMOOTH_L1) per[i] = a < c->beta ? 0.5 * diff * diff / c->beta : a - 0.5 * c->beta;
            if (c->kind == BCE) {
                const int64_t last = i % c->shape[c->ndim - 1];
                const double t = d->target[i], pw = c->pos_weight ? d->pos_weight[last] : 1.0;
                const double log_sig = -(log1p(exp(-fabs(x[i]))) + fmax(-x[i], 0.0));  /* log sigmoid(x) */
                const double log_one_minus = -(log1p(exp(-fabs(x[i]))) + fmax(x[i], 0.0)); /* log sigmoid(-x) */
                per[i] = -(pw * t * log_sig + (1.0 - t) * log_one_minus) * (c->weight ? d->weight[last] : 1.0);
            }
        }
        reduce_ref(reduction, per, n, (double)n, out);
        break;
    }
    free(per);
    free(lp);
}

static int64_t out_count(const loss_case *c, int reduction, const loss_data *d) {
    if (c->kind == SOFTMAX || c->kind == LOG_SOFTMAX) return d->n;
    if (reduction != NN_REDUCTION_NONE) return 1;
    return class_loss(c) ? d->positions : d->n;
}

static nn_tensor *engine(const loss_case *c, int reduction, nn_tensor *x, nn_tensor *t, nn_tensor *w, nn_tensor *pw) {
    switch (c->kind) {
    case SOFTMAX: return nn_softmax_dim(x, c->dim);
    case LOG_SOFTMAX: return nn_log_softmax(x, c->dim);
    case NLL: return nn_nll_loss(x, t, w, reduction, c->ignore_index);
    case CE:
    case CE_PROB: return nn_cross_entropy(x, t, w, reduction, c->ignore_index, c->smoothing);
    case MSE: return nn_mse_loss(x, t, reduction);
    case L1: return nn_l1_loss(x, t, reduction);
    case SMOOTH_L1: return nn_smooth_l1_loss(x, t, reduction, c->beta);
    case BCE: return nn_binary_cross_entropy_with_logits(x, t, w, pw, reduction);
    }
    return NULL;
}

static void check_case(const char *device, const loss_case *c, int reduction) {
    nn_ctx *ctx = vkt_open_device(device);
    if (!ctx) return;
    unsigned seed = 17u + (unsigned)c->kind * 31u + (unsigned)reduction;
    loss_data d = {.n = numel_of(c), .classes = c->ndim > 1 ? c->shape[1] : 1, .inner = 1};
    for (int k = 2; k < c->ndim; k++) d.inner *= c->shape[k];
    d.positions = d.n / d.classes;
    const int64_t weights = c->kind == BCE ? c->shape[c->ndim - 1] : d.classes;
    float *xv = malloc((size_t)d.n * 4), *tv = malloc((size_t)d.n * 4), *wv = malloc((size_t)weights * 4),
          *pv = malloc((size_t)weights * 4);
    int32_t *labels = malloc((size_t)d.positions * 4);
    double *x = malloc((size_t)d.n * 8);
    d.target = malloc((size_t)d.n * 8), d.weight = malloc((size_t)weights * 8), d.pos_weight = malloc((size_t)weights * 8);
    for (int64_t i = 0; i < d.n; i++) x[i] = xv[i] = (float)vkt_uniform(&seed, c->kind == NLL ? -5.0 : -3.0, c->kind == NLL ? 0.0 : 3.0);
    for (int64_t k = 0; k < weights; k++) d.weight[k] = wv[k] = (float)vkt_uniform(&seed, 0.2, 2.0);
    for (int64_t k = 0; k < weights; k++) d.pos_weight[k] = pv[k] = (float)vkt_uniform(&seed, 0.5, 3.0);
    if (c->kind == NLL || c->kind == CE) {
        for (int64_t p = 0; p < d.positions; p++) {
            labels[p] = (int32_t)(vkt_uniform(&seed, 0, (double)d.classes)) % (int32_t)d.classes;
            if (p % 4 == 1) labels[p] = c->ignore_index; /* ignore_index hits */
            d.target[p] = labels[p];
        }
    } else if (c->kind == CE_PROB) {
        for (int64_t pos = 0; pos < d.positions; pos++) { /* a distribution per position */
            const int64_t base = (pos / d.inner) * d.classes * d.inner + pos % d.inner;
            double s = 0.0;
            for (int64_t k = 0; k < d.classes; k++) s += d.target[base + k * d.inner] = vkt_uniform(&seed, 0.05, 1.0);
            for (int64_t k = 0; k < d.classes; k++) tv[base + k * d.inner] = (float)(d.target[base + k * d.inner] /= s);
            for (int64_t k = 0; k < d.classes; k++) d.target[base + k * d.inner] = tv[base + k * d.inner];
        }
    } else {
        for (int64_t i = 0; i < d.n; i++) d.target[i] = tv[i] = (float)vkt_uniform(&seed, c->kind == BCE ? 0.0 : -3.0, c->kind == BCE ? 1.0 : 3.0);
    }
    nn_tensor *xt = nn_tensor_from_data(ctx, NN_F32, c->ndim, c->shape, xv);
    nn_tensor *tt = NULL;
    if (c->kind == NLL || c->kind == CE) {
        int64_t tshape[4] = {c->shape[0]};
        for (int k = 2; k < c->ndim; k++) tshape[k - 1] = c->shape[k];
        tt = nn_tensor_from_data(ctx, NN_I32, c->ndim - 1, tshape, labels);
    } else if (c->kind != SOFTMAX && c->kind != LOG_SOFTMAX) {
        tt = nn_tensor_from_data(ctx, NN_F32, c->ndim, c->shape, tv);
    }
    nn_tensor *wt = c->weight ? nn_tensor_from_data(ctx, NN_F32, 1, &weights, wv) : NULL;
    nn_tensor *pwt = c->pos_weight ? nn_tensor_from_data(ctx, NN_F32, 1, &weights, pv) : NULL;
    nn_tensor_set_requires_grad(xt, true);
    nn_tensor *y = engine(c, reduction, xt, tt, wt, pwt);
    CHECK_MSG(y, "%s %s reduction %d: %s", device, c->what, reduction, nn_last_error());
    const int64_t outs = out_count(c, reduction, &d);
    double *want = malloc((size_t)outs * 8), *r = malloc((size_t)outs * 8), *plus = malloc((size_t)outs * 8),
           *minus = malloc((size_t)outs * 8);
    float *got = malloc((size_t)(outs > d.n ? outs : d.n) * 4), *rv = malloc((size_t)outs * 4);
    for (int64_t i = 0; i < outs; i++) r[i] = rv[i] = (float)vkt_uniform(&seed, -1.0, 1.0);
    reference(c, reduction, &d, x, want);
    if (y && nn_tensor_numel(y) != outs) CHECK_MSG(false, "%s %s: %lld outputs, want %lld", device, c->what,
                                                   (long long)nn_tensor_numel(y), (long long)outs);
    else if (y && nn_tensor_read(y, got, (size_t)outs * 4) == NN_OK)
        for (int64_t i = 0; i < outs; i++)
            CHECK_MSG(fabs(got[i] - want[i]) <= 2e-5 * fmax(1.0, fabs(want[i])), "%s %s reduction %d: y[%lld] = %.7g, want %.7g",
                      device, c->what, reduction, (long long)i, got[i], want[i]);
    /* dx of sum(y * r) against central differences of the reference */
    nn_tensor *rt = nn_tensor_from_data(ctx, NN_F32, 1, &outs, rv);
    nn_tensor *flat = y ? nn_reshape(y, 1, &outs) : NULL;
    nn_tensor *loss = flat ? nn_sum(nn_mul(flat, rt)) : NULL;
    CHECK_MSG(loss && nn_backward(loss) == NN_OK, "%s %s backward: %s", device, c->what, nn_last_error());
    if (loss && nn_tensor_read(nn_tensor_grad(xt), got, (size_t)d.n * 4) == NN_OK)
        for (int64_t i = 0; i < d.n; i++) {
            const double h = 1e-5, keep = x[i];
            double fp = 0.0, fm = 0.0;
            x[i] = keep + h, reference(c, reduction, &d, x, plus);
            x[i] = keep - h, reference(c, reduction, &d, x, minus);
            x[i] = keep;
            for (int64_t j = 0; j < outs; j++) fp += r[j] * plus[j], fm += r[j] * minus[j];
            const double fd = (fp - fm) / (2 * h);
            CHECK_MSG(fabs(got[i] - fd) <= 1e-3 * fmax(1.0, fabs(fd)), "%s %s reduction %d: dx[%lld] = %.7g, want %.7g",
                      device, c->what, reduction, (long long)i, got[i], fd);
        }
    nn_ctx_step_end(ctx);
    nn_tensor_free(xt), nn_tensor_free(tt), nn_tensor_free(wt), nn_tensor_free(pwt), nn_tensor_free(rt);
    free(xv), free(tv), free(wv), free(pv), free(labels), free(x), free(d.target), free(d.weight), free(d.pos_weight);
    free(want), free(r), free(plus), free(minus), free(got), free(rv);
    nn_ctx_free(ctx);
}

static const loss_case kSoftmaxCases[] = {
    {"softmax [3, 7, 5] dim 0", SOFTMAX, 3, {3, 7, 5}, .dim = 0},
    {"softmax [3, 7, 5] dim 1", SOFTMAX, 3, {3, 7, 5}, .dim = 1},
    {"softmax [3, 7, 5] dim -1", SOFTMAX, 3, {3, 7, 5}, .dim = -1},
    {"softmax [1, 7] dim 0 (rows of one)", SOFTMAX, 2, {1, 7}, .dim = 0},
    {"log_softmax [3, 7, 5] dim 0", LOG_SOFTMAX, 3, {3, 7, 5}, .dim = 0},
    {"log_softmax [2, 7, 3, 5] dim -3", LOG_SOFTMAX, 4, {2, 7, 3, 5}, .dim = -3},
    {"log_softmax [1, 7] dim -1", LOG_SOFTMAX, 2, {1, 7}, .dim = -1},
};

static const loss_case kLossCases[] = {
    {"nll [5, 7]", NLL, 2, {5, 7}, .ignore_index = -100},
    {"nll [1, 7] weighted", NLL, 2, {1, 7}, .weight = true, .ignore_index = -100},
    {"nll [2, 7, 3, 5] weighted, ignore_index 3", NLL, 4, {2, 7, 3, 5}, .weight = true, .ignore_index = 3},
    {"cross_entropy [5, 7]", CE, 2, {5, 7}, .ignore_index = -100},
    {"cross_entropy [5, 7] weighted, smoothing 0.1", CE, 2, {5, 7}, .weight = true, .ignore_index = -100,
     .smoothing = 0.1f},
    {"cross_entropy [2, 7, 3, 5] weighted, ignore_index 2, smoothing 0.1", CE, 4, {2, 7, 3, 5}, .weight = true,
     .ignore_index = 2, .smoothing = 0.1f},
    {"cross_entropy [1, 7, 3, 5] smoothing 0.1", CE, 4, {1, 7, 3, 5}, .ignore_index = -100, .smoothing = 0.1f},
    {"cross_entropy probabilities [5, 7]", CE_PROB, 2, {5, 7}, .ignore_index = -100},
    {"cross_entropy probabilities [2, 7, 3, 5] weighted, smoothing 0.1", CE_PROB, 4, {2, 7, 3, 5}, .weight = true,
     .ignore_index = -100, .smoothing = 0.1f},
    {"mse [3, 7, 5]", MSE, 3, {3, 7, 5}, .dim = 0},
    {"l1 [1, 13]", L1, 2, {1, 13}, .dim = 0},
    {"smooth_l1 [3, 7, 5] beta 1", SMOOTH_L1, 3, {3, 7, 5}, .beta = 1.0f},
    {"smooth_l1 [3, 7, 5] beta 0.5", SMOOTH_L1, 3, {3, 7, 5}, .beta = 0.5f},
    {"smooth_l1 [3, 7] beta 0 (l1)", SMOOTH_L1, 2, {3, 7}, .beta = 0.0f},
    {"bce_with_logits [5, 7]", BCE, 2, {5, 7}, .dim = 0},
    {"bce_with_logits [3, 5, 7] weight, pos_weight", BCE, 3, {3, 5, 7}, .weight = true, .pos_weight = true},
};

TEST(losses_softmax_along_any_dimension_matches_double_reference_and_finite_differences) {
    for (size_t dev = 0; dev < 2; dev++)
        for (size_t i = 0; i < sizeof kSoftmaxCases / sizeof kSoftmaxCases[0]; i++)
            check_case(kDevices[dev], &kSoftmaxCases[i], NN_REDUCTION_NONE);
}

TEST(losses_every_reduction_matches_double_reference_and_finite_differences) {
    for (size_t dev = 0; dev < 2; dev++)
        for (size_t i = 0; i < sizeof kLossCases / sizeof kLossCases[0]; i++)
            for (int reduction = 0; reduction < 3; reduction++) check_case(kDevices[dev], &kLossCases[i], reduction);
}

TEST(losses_log_softmax_of_large_logits_is_finite) {
    nn_ctx *ctx = vkt_open_device("cpu");
    const int64_t shape[2] = {1, 3};
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 2, shape, (float[]){1000.0f, 0.0f, -1000.0f});
    float y[3];
    CHECK(nn_tensor_read(nn_log_softmax(x, 1), y, sizeof y) == NN_OK);
    CHECK_CLOSE(y[0], 0.0, 1e-6);
    CHECK_CLOSE(y[1], -1000.0, 1e-6);
    CHECK_CLOSE(y[2], -2000.0, 1e-6); /* log(softmax) would be -inf */
    nn_ctx_step_end(ctx);
    nn_tensor_free(x);
    nn_ctx_free(ctx);
}

TEST(losses_bad_targets_are_reported_by_name_on_every_device) {
    for (size_t dev = 0; dev < 2; dev++) {
        nn_ctx *ctx = vkt_open_device(kDevices[dev]);
        if (!ctx) continue;
        const int64_t xs[2] = {4, 7}, ts[1] = {4};
        float xv[28];
        for (int i = 0; i < 28; i++) xv[i] = (float)(i % 5) - 2.0f;
        for (int reduction = 0; reduction < 3; reduction++) {
            nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 2, xs, xv);
            nn_tensor *t = nn_tensor_from_data(ctx, NN_I32, 1, ts, (int32_t[]){1, -100, 7, 2});
            nn_tensor *loss = nn_cross_entropy(x, t, NULL, reduction, -100, 0.0f);
            CHECK_MSG(loss, "%s: %s", kDevices[dev], nn_last_error());
            float out[4];
            const size_t bytes = reduction == NN_REDUCTION_NONE ? 16 : 4;
            CHECK_MSG(loss && nn_tensor_read(loss, out, bytes) == NN_ERR_ARGUMENT, "%s reduction %d: bad target not reported",
                      kDevices[dev], reduction);
            /* Issue 41: named for cross_entropy as well as nll_loss, whose kernel it shares. */
            CHECK_MSG(strstr(nn_last_error(), "cross_entropy / nll_loss: target 7 at position 2 is outside [0, 7) and is "
                                              "not ignore_index -100"),
                      "%s: message: %s", kDevices[dev], nn_last_error());
            CHECK(nn_ctx_sync(ctx) == NN_OK); /* reported once */
            nn_ctx_step_end(ctx);
            nn_tensor_free(x), nn_tensor_free(t);
        }
        nn_ctx_free(ctx);
    }
}

static void expect_error(nn_tensor *result, const char *fragment) {
    CHECK_MSG(!result, "expected an error containing '%s'", fragment);
    CHECK_MSG(strstr(nn_last_error(), fragment), "error '%s' lacks '%s'", nn_last_error(), fragment);
}

TEST(losses_bad_arguments_are_refused_by_name) {
    nn_ctx *ctx = vkt_open_device("cpu");
    const int64_t s47[2] = {4, 7}, s4[1] = {4}, s5[1] = {5}, s6[1] = {6}, s37[2] = {3, 7};
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 2, s47), *t = nn_tensor_new(ctx, NN_I32, 1, s4);
    nn_tensor *t5 = nn_tensor_new(ctx, NN_I32, 1, s5), *w6 = nn_tensor_new(ctx, NN_F32, 1, s6);
    nn_tensor *f37 = nn_tensor_new(ctx, NN_F32, 2, s37), *v4 = nn_tensor_new(ctx, NN_F32, 1, s4);
    expect_error(nn_softmax_dim(x, 2), "nn_softmax_dim: dim 2 is out of range for x [4, 7]");
    expect_error(nn_log_softmax(x, -3), "nn_log_softmax: dim -3 is out of range");
    expect_error(nn_log_softmax(NULL, 0), "nn_log_softmax");
    expect_error(nn_nll_loss(x, t5, NULL, NN_REDUCTION_MEAN, -100), "nn_nll_loss: target [5] must be input [4, 7]");
    expect_error(nn_nll_loss(x, t, w6, NN_REDUCTION_MEAN, -100), "nn_nll_loss: weight [6] must be [7]");
    expect_error(nn_nll_loss(v4, t, NULL, NN_REDUCTION_MEAN, -100), "nn_nll_loss: input [4] must be [N, C]");
    expect_error(nn_nll_loss(x, t, NULL, (nn_reduction)7, -100), "nn_nll_loss: reduction 7");
    expect_error(nn_cross_entropy(x, t, NULL, NN_REDUCTION_MEAN, -100, 1.5f), "nn_cross_entropy: label_smoothing 1.5");
    expect_error(nn_cross_entropy(x, f37, NULL, NN_REDUCTION_MEAN, -100, 0.0f),
                 "nn_cross_entropy: a float target (class probabilities) [3, 7] must have input's shape [4, 7]");
    expect_error(nn_cross_entropy(x, x, NULL, NN_REDUCTION_MEAN, 0, 0.0f), "nn_cross_entropy: ignore_index 0");
    expect_error(nn_mse_loss(x, f37, NN_REDUCTION_MEAN), "nn_mse_loss: nn_sub");
    expect_error(nn_mse_loss(x, t, NN_REDUCTION_MEAN), "nn_mse_loss: target");
    expect_error(nn_smooth_l1_loss(x, x, NN_REDUCTION_MEAN, -1.0f), "nn_smooth_l1_loss: beta -1");
    expect_error(nn_binary_cross_entropy_with_logits(x, f37, NULL, NULL, NN_REDUCTION_MEAN),
                 "nn_binary_cross_entropy_with_logits: target [3, 7] must have input's shape [4, 7]");
    nn_tensor_free(x), nn_tensor_free(t), nn_tensor_free(t5), nn_tensor_free(w6), nn_tensor_free(f37),
        nn_tensor_free(v4);
    nn_ctx_free(ctx);
}
