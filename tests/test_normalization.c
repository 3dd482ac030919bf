/* BatchNorm, LayerNorm and GroupNorm on the CPU and Vulkan: outputs against
 * double-precision loops, the gradients of x, weight and bias against
 * central finite differences of those loops, at awkward sizes (C = 3, H =
 * W = 5 and 7, batch 1 and 2, LayerNorm groups of one element, a BatchNorm
 * channel of 180,000 elements); BatchNorm's running statistics after three
 * training steps (momentum 0.1 and the cumulative average) and its
 * evaluation mode; the errors; a checkpoint round trip of the buffers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h" /* nn_ctx_run: a kernel's own refusal */
#include "nn_engine.h"
#include "test.h"
#include "vulkan_harness.h"

static const char *const kDevices[] = {"cpu", "vulkan"};


static float *randoms(size_t n, double lo, double hi, unsigned seed) {
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = (float)vkt_uniform(&seed, lo, hi);
    return v;
}

/* ---- the reference: groups and channels as kernels.h describes them ---- */

typedef enum kind { BATCH_TRAIN, BATCH_EVAL, LAYER, GROUP } kind;

typedef struct norm_case {
    const char *what;
    kind kind;
    int ndim;
    int64_t shape[4];
    int param; /* GroupNorm: groups; LayerNorm: normalised trailing dimensions */
    bool affine;
} norm_case;

typedef struct layout {
    int64_t n, groups, group_size, channels, affine_size;
} layout;

static int64_t numel_of(const norm_case *c) {
    int64_t n = 1;
    for (int i = 0; i < c->ndim; i++) n *= c->shape[i];
    return n;
}

/* Element e's group and channel. */
static void locate(const norm_case *c, int64_t e, int64_t *group, int64_t *channel) {
    const int64_t n = numel_of(c);
    if (c->kind == LAYER) {
        int64_t d = 1;
        for (int i = c->ndim - c->param; i < c->ndim; i++) d *= c->shape[i];
        *group = e / d;
        *channel = e % d;
        return;
    }
    const int64_t channels = c->shape[1], spatial = n / (c->shape[0] * channels);
    const int64_t image = e / (channels * spatial), ch = (e / spatial) % channels;
    *channel = ch;
    *group = c->kind == GROUP ? image * c->param + ch / (channels / c->param) : ch;
}

static int64_t group_count(const norm_case *c) {
    int64_t g = 0, ch;
    for (int64_t e = 0; e < numel_of(c); e++) {
        int64_t k;
        locate(c, e, &k, &ch);
        if (k + 1 > g) g = k + 1;
    }
    return g;
}

static int64_t affine_count(const norm_case *c) {
    if (c->kind != LAYER) return c->shape[1];
    int64_t d = 1;
    for (int i = c->ndim - c->param; i < c->ndim; i++) d *= c->shape[i];
    return d;
}

/* y in double; for BATCH_EVAL the statistics are rm, rv. */
static void reference(const norm_case *c, const double *x, const double *w, const double *b, const float *rm,
                      const float *rv, double *y) {
    const int64_t n = numel_of(c), groups = group_count(c);
    double *sum = calloc((size_t)groups, sizeof *sum), *sq = calloc((size_t)groups, sizeof *sq);
    double *count = calloc((size_t)groups, sizeof *count);
    int64_t g, ch;
    for (int64_t e = 0; e < n; e++) {
        locate(c, e, &g, &ch);
        sum[g] += x[e];
        count[g] += 1;
    }
    for (int64_t e = 0; e < n; e++) {
        locate(c, e, &g, &ch);
        const double d = x[e] - sum[g] / count[g];
        sq[g] += d * d;
    }
    for (int64_t e = 0; e < n; e++) {
        locate(c, e, &g, &ch);
        double mean = sum[g] / count[g], var = sq[g] / count[g];
        if (c->kind == BATCH_EVAL) mean = rm[g], var = rv[g];
        y[e] = (x[e] - mean) / sqrt(var + 1e-5) * (w ? w[ch] : 1.0) + (b ? b[ch] : 0.0);
    }
    free(sum);
    free(sq);
    free(count);
}

/* sum of y * r, the loss whose gradients are checked. */
static double loss_of(const norm_case *c, const double *x, const double *w, const double *b, const float *rm,
                      const float *rv, const float *r) {
    const int64_t n = numel_of(c);
    double *y = malloc((size_t)n * sizeof *y), total = 0.0;
    reference(c, x, w, b, rm, rv, y);
    for (int64_t e = 0; e < n; e++) total += y[e] * r[e];
    free(y);
    return total;
}

/* d loss / d v[i] by central differences, for every element of v (double). */
static void finite_differences(const norm_case *c, double *x, double *w, double *b, const float *rm, const float *rv,
                               const float *r, double *v, int64_t count, double *out) {
    const double h = 1e-5;
    for (int64_t i = 0; i < count; i++) {
        const double keep = v[i];
        v[i] = keep + h;
        const double up = loss_of(c, x, w, b, rm, rv, r);
        v[i] = keep - h;
        const double down = loss_of(c, x, w, b, rm, rv, r);
        v[i] = keep;
        out[i] = (up - down) / (2 * h);
    }
}

static double *to_double(const float *v, int64_t n) {
    double *d = malloc((size_t)n * sizeof *d);
    for (int64_t i = 0; i < n; i++) d[i] = v[i];
    return d;
}

static nn_tensor *engine_op(const norm_case *c, nn_tensor *x, nn_tensor *w, nn_tensor *b, nn_tensor *rm,
                            nn_tensor *rv) {
    switch (c->kind) {
    case BATCH_TRAIN: return nn_batch_norm(x, rm, rv, w, b, true, 0.1f, 1e-5f);
    case BATCH_EVAL: return nn_batch_norm(x, rm, rv, w, b, false, 0.1f, 1e-5f);
    case LAYER: return nn_layer_norm(x, c->param, c->shape + c->ndim - c->param, w, b, 1e-5f);
    case GROUP: return nn_group_norm(x, c->param, w, b, 1e-5f);
    }
    return NULL;
}

static void check_values(const char *device, const norm_case *c, const char *what, const float *got,
                         const double *want, int64_t n, double tol) {
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 3; i++) {
        const double scale = fabs(want[i]) > 1.0 ? fabs(want[i]) : 1.0;
        if (!(fabs(got[i] - want[i]) <= tol * scale)) {
            nn_test_fail(__FILE__, __LINE__, "%s %s %s[%lld] = %.7g, want %.7g", device, c->what, what, (long long)i,
                         (double)got[i], want[i]);
            bad++;
        }
    }
}

/* The op's output and its x, weight and bias gradients (of sum(y * r))
 * against the double reference and its finite differences. */
static void check_case(const char *device, const norm_case *c, bool gradients) {
    nn_ctx *ctx = vkt_open_device(device);
    if (!ctx) return;
    const int64_t n = numel_of(c), channels = affine_count(c);
    const int64_t stats = c->kind == LAYER || c->kind == GROUP ? 1 : c->shape[1];
    const int affine_ndim = c->kind == LAYER ? c->param : 1;
    const int64_t *affine_shape = c->kind == LAYER ? c->shape + c->ndim - c->param : &c->shape[1];
    float *xv = randoms((size_t)n, -2.0, 3.0, 11), *r = randoms((size_t)n, -1.0, 1.0, 12);
    float *wv = randoms((size_t)channels, 0.5, 1.5, 13), *bv = randoms((size_t)channels, -0.5, 0.5, 14);
    float *rm = randoms((size_t)stats, -0.5, 0.5, 15), *rv = randoms((size_t)stats, 0.5, 2.0, 16);
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, c->ndim, c->shape, xv);
    nn_tensor *rt = nn_tensor_from_data(ctx, NN_F32, c->ndim, c->shape, r);
    nn_tensor *w = c->affine ? nn_tensor_from_data(ctx, NN_F32, affine_ndim, affine_shape, wv) : NULL;
    nn_tensor *b = c->affine ? nn_tensor_from_data(ctx, NN_F32, affine_ndim, affine_shape, bv) : NULL;
    const bool running = c->kind == BATCH_TRAIN || c->kind == BATCH_EVAL;
    nn_tensor *rmt = running ? nn_tensor_from_data(ctx, NN_F32, 1, &stats, rm) : NULL;
    nn_tensor *rvt = running ? nn_tensor_from_data(ctx, NN_F32, 1, &stats, rv) : NULL;
    nn_tensor_set_requires_grad(x, gradients);
    if (w) nn_tensor_set_requires_grad(w, gradients);
    if (b) nn_tensor_set_requires_grad(b, gradients);
    nn_tensor *y = engine_op(c, x, w, b, rmt, rvt);
    CHECK_MSG(y, "%s %s: %s", device, c->what, nn_last_error());
    double *xd = to_double(xv, n), *wd = to_double(wv, channels), *bd = to_double(bv, channels);
    double *want = malloc((size_t)n * sizeof *want);
    float *got = malloc((size_t)n * sizeof *got);
    if (y && nn_tensor_read(y, got, (size_t)n * 4) == NN_OK) {
        reference(c, xd, c->affine ? wd : NULL, c->affine ? bd : NULL, rm, rv, want);
        check_values(device, c, "y", got, want, n, 2e-5);
    }
    if (y && gradients) {
        nn_tensor *loss = nn_sum(nn_mul(y, rt));
        CHECK_MSG(loss && nn_backward(loss) == NN_OK, "%s %s backward: %s", device, c->what, nn_last_error());
        double *fd = malloc((size_t)n * sizeof *fd);
        float *g = malloc((size_t)n * sizeof *g);
        double *wp = c->affine ? wd : NULL, *bp = c->affine ? bd : NULL;
        finite_differences(c, xd, wp, bp, rm, rv, r, xd, n, fd);
        if (nn_tensor_read(nn_tensor_grad(x), g, (size_t)n * 4) == NN_OK) check_values(device, c, "dx", g, fd, n, 2e-3);
        if (c->affine) {
            finite_differences(c, xd, wp, bp, rm, rv, r, wd, channels, fd);
            if (nn_tensor_read(nn_tensor_grad(w), g, (size_t)channels * 4) == NN_OK)
                check_values(device, c, "dweight", g, fd, channels, 2e-3);
            finite_differences(c, xd, wp, bp, rm, rv, r, bd, channels, fd);
            if (nn_tensor_read(nn_tensor_grad(b), g, (size_t)channels * 4) == NN_OK)
                check_values(device, c, "dbias", g, fd, channels, 2e-3);
        }
        free(fd);
        free(g);
    }
    nn_ctx_step_end(ctx);
    free(xd), free(wd), free(bd), free(want), free(got);
    free(xv), free(r), free(wv), free(bv), free(rm), free(rv);
    nn_tensor_free(x), nn_tensor_free(rt), nn_tensor_free(w), nn_tensor_free(b), nn_tensor_free(rmt),
        nn_tensor_free(rvt);
    nn_ctx_free(ctx);
}

static const norm_case kCases[] = {
    {"batchnorm [2, 3, 5, 5]", BATCH_TRAIN, 4, {2, 3, 5, 5}, 0, true},
    {"batchnorm [1, 3, 7, 7]", BATCH_TRAIN, 4, {1, 3, 7, 7}, 0, true},
    {"batchnorm [5, 3] no affine", BATCH_TRAIN, 2, {5, 3}, 0, false},
    {"batchnorm [2, 3, 7]", BATCH_TRAIN, 3, {2, 3, 7}, 0, true},
    {"batchnorm eval [2, 3, 5, 5]", BATCH_EVAL, 4, {2, 3, 5, 5}, 0, true},
    {"batchnorm eval [1, 3]", BATCH_EVAL, 2, {1, 3}, 0, true},
    {"layernorm [3, 5, 7] over 7", LAYER, 3, {3, 5, 7}, 1, true},
    {"layernorm [3, 5, 7] over [5, 7]", LAYER, 3, {3, 5, 7}, 2, true},
    {"layernorm [4, 1] over 1 (one-element groups)", LAYER, 2, {4, 1}, 1, true},
    {"layernorm [1, 13] no affine", LAYER, 2, {1, 13}, 1, false},
    {"groupnorm [2, 6, 5, 5] in 3 groups", GROUP, 4, {2, 6, 5, 5}, 3, true},
    {"groupnorm [1, 3, 7] in 1 group", GROUP, 3, {1, 3, 7}, 1, true},
    {"groupnorm [2, 3, 5] in 3 groups no affine", GROUP, 3, {2, 3, 5}, 3, false},
};

TEST(normalization_values_and_gradients_match_double_reference_and_finite_differences) {
    for (int d = 0; d < 2; d++)
        for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; i++) check_case(kDevices[d], &kCases[i], true);
}

TEST(normalization_large_groups_match_double_reference) {
    static const norm_case large[] = {
        {"batchnorm [2, 2, 300, 300]", BATCH_TRAIN, 4, {2, 2, 300, 300}, 0, true},
        {"layernorm [3, 65537]", LAYER, 2, {3, 65537}, 1, true},
        {"groupnorm [1, 4, 250, 250] in 2 groups", GROUP, 4, {1, 4, 250, 250}, 2, true},
    };
    for (int d = 0; d < 2; d++)
        for (size_t i = 0; i < sizeof large / sizeof large[0]; i++) check_case(kDevices[d], &large[i], false);
}

/* ---- BatchNorm's running statistics, evaluation mode, errors ---- */

/* Three training steps of a BatchNorm2d(3) on [2, 3, 5, 5] inputs, then
 * one evaluation step; running statistics against the double recurrence. */
static void check_running(const char *device, float momentum) {
    nn_ctx *ctx = vkt_open_device(device);
    if (!ctx) return;
    nn_module *bn = nn_batchnorm2d(ctx, 3, 1e-5f, momentum, true, true);
    CHECK_MSG(bn, "%s: %s", device, nn_last_error());
    if (!bn) {
        nn_ctx_free(ctx);
        return;
    }
    const int64_t shape[4] = {2, 3, 5, 5}, n = 150, per = 50;
    double rm[3] = {0, 0, 0}, rv[3] = {1, 1, 1};
    for (int step = 1; step <= 3; step++) {
        float *xv = randoms((size_t)n, -1.0 + step, 2.0 * step, 100u + (unsigned)step);
        nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 4, shape, xv);
        CHECK(nn_module_forward(bn, x) != NULL);
        const double f = momentum < 0 ? 1.0 / step : momentum;
        for (int c = 0; c < 3; c++) {
            double sum = 0, sq = 0;
            for (int img = 0; img < 2; img++)
                for (int i = 0; i < 25; i++) sum += xv[(img * 3 + c) * 25 + i];
            const double mean = sum / per;
            for (int img = 0; img < 2; img++)
                for (int i = 0; i < 25; i++) sq += pow(xv[(img * 3 + c) * 25 + i] - mean, 2);
            rm[c] = (1 - f) * rm[c] + f * mean;
            rv[c] = (1 - f) * rv[c] + f * sq / (per - 1);
        }
        nn_ctx_step_end(ctx);
        nn_tensor_free(x);
        free(xv);
    }
    float got_mean[3], got_var[3];
    int32_t batches = 0;
    CHECK(nn_tensor_read(nn_module_get_buffer(bn, "running_mean"), got_mean, sizeof got_mean) == NN_OK);
    CHECK(nn_tensor_read(nn_module_get_buffer(bn, "running_var"), got_var, sizeof got_var) == NN_OK);
    CHECK(nn_tensor_read(nn_module_get_buffer(bn, "num_batches_tracked"), &batches, sizeof batches) == NN_OK);
    CHECK_MSG(batches == 3, "%s: num_batches_tracked %d, want 3", device, batches);
    for (int c = 0; c < 3; c++) {
        CHECK_CLOSE(got_mean[c], rm[c], 1e-5);
        CHECK_CLOSE(got_var[c], rv[c], 1e-5);
    }
    /* Evaluation: the running statistics, and nothing updated. */
    CHECK(nn_module_set_training(bn, false) == NN_OK);
    float *xv = randoms((size_t)n, -3.0, 3.0, 77), y[150];
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 4, shape, xv);
    nn_tensor *out = nn_module_forward(bn, x);
    CHECK(out && nn_tensor_read(out, y, sizeof y) == NN_OK);
    for (int64_t e = 0; e < n; e++) {
        const int c = (int)((e / 25) % 3);
        CHECK_CLOSE(y[e], (xv[e] - rm[c]) / sqrt(rv[c] + 1e-5), 1e-5);
    }
    CHECK(nn_tensor_read(nn_module_get_buffer(bn, "num_batches_tracked"), &batches, sizeof batches) == NN_OK);
    CHECK(batches == 3);
    nn_ctx_step_end(ctx);
    nn_tensor_free(x);
    free(xv);
    nn_module_free(bn);
    nn_ctx_free(ctx);
}

TEST(normalization_batchnorm_running_statistics_three_steps_then_eval) {
    for (int d = 0; d < 2; d++) {
        check_running(kDevices[d], 0.1f);
        check_running(kDevices[d], NN_BATCH_NORM_CUMULATIVE);
    }
}

static void expect_error(nn_tensor *result, const char *fragment) {
    CHECK_MSG(!result, "expected an error containing '%s'", fragment);
    CHECK_MSG(strstr(nn_last_error(), fragment), "error '%s' lacks '%s'", nn_last_error(), fragment);
}

TEST(normalization_bad_arguments_are_refused_by_name) {
    nn_ctx *ctx = vkt_open_device("cpu");
    const int64_t s13[2] = {1, 3}, s234[3] = {2, 3, 4}, s4[1] = {4}, s3[1] = {3};
    nn_tensor *x13 = nn_tensor_new(ctx, NN_F32, 2, s13), *x234 = nn_tensor_new(ctx, NN_F32, 3, s234);
    nn_tensor *rm = nn_tensor_new(ctx, NN_F32, 1, s3), *rv = nn_tensor_new(ctx, NN_F32, 1, s3);
    nn_tensor *w4 = nn_tensor_new(ctx, NN_F32, 1, s4);
    expect_error(nn_batch_norm(x13, rm, rv, NULL, NULL, true, 0.1f, 1e-5f),
                 "expected more than 1 value per channel when training, got input size [1, 3]");
    CHECK(nn_batch_norm(x13, rm, rv, NULL, NULL, false, 0.1f, 1e-5f) != NULL); /* eval: fine */
    expect_error(nn_batch_norm(x234, rm, rv, w4, NULL, true, 0.1f, 1e-5f), "nn_batch_norm: weight has shape [4]");
    expect_error(nn_batch_norm(x234, rm, NULL, NULL, NULL, true, 0.1f, 1e-5f), "running_mean and running_var");
    expect_error(nn_batch_norm(x234, rm, rv, NULL, NULL, true, 1.5f, 1e-5f), "momentum must be in [0, 1]");
    expect_error(nn_batch_norm(x234, rm, rv, NULL, NULL, true, 0.1f, -1.0f), "eps must be >= 0");
    expect_error(nn_layer_norm(x234, 1, s3, NULL, NULL, 1e-5f), "normalized_shape [3] is not the trailing");
    expect_error(nn_layer_norm(x234, 4, s234, NULL, NULL, 1e-5f), "normalized_shape must name 1 to 3");
    expect_error(nn_group_norm(x234, 2, NULL, NULL, 1e-5f), "num_groups 2 must be >= 1 and divide the 3 channels");
    expect_error(nn_group_norm(x234, 3, w4, NULL, 1e-5f), "nn_group_norm: weight has shape [4]");
    nn_module *bn2 = nn_batchnorm2d(ctx, 3, 1e-5f, 0.1f, true, true);
    expect_error(nn_module_forward(bn2, x234), "BatchNorm2d: expected 4D input (got 3D input)");
    nn_module *bn1 = nn_batchnorm1d(ctx, 3, 1e-5f, 0.1f, true, true);
    CHECK(nn_module_forward(bn1, x234) != NULL);
    expect_error((nn_tensor *)nn_groupnorm(ctx, 4, 6, 1e-5f, true), "num_channels 6 must be divisible by num_groups 4");
    expect_error((nn_tensor *)nn_batchnorm2d(ctx, 0, 1e-5f, 0.1f, true, true), "channels must be >= 1, got 0");
    expect_error((nn_tensor *)nn_batchnorm2d(ctx, 3, 1e-5f, -0.5f, true, true), "momentum must be in [0, 1]");
    nn_ctx_step_end(ctx);
    nn_module_free(bn1), nn_module_free(bn2);
    nn_tensor_free(x13), nn_tensor_free(x234), nn_tensor_free(rm), nn_tensor_free(rv), nn_tensor_free(w4);
    nn_ctx_free(ctx);
}

/* NORM_BACKWARD_FROM_SUMS writes the affine gradients only from sums
 * without the weight (which are those gradients): each backend refuses
 * them with weighted sums, by name. */
TEST(norm_backward_from_sums_refuses_affine_outputs_of_weighted_sums) {
    static const char *const devices[] = {"cpu", "vulkan"};
    for (int d = 0; d < 2; d++) {
        nn_ctx *ctx = vkt_open_device(devices[d]);
        if (!ctx) continue;
        const int64_t n = 12, c = 3, two = 6;
        nn_tensor *x = nn_tensor_new(ctx, NN_F32, 1, &n), *dy = nn_tensor_new(ctx, NN_F32, 1, &n);
        nn_tensor *dx = nn_tensor_new(ctx, NN_F32, 1, &n), *sums = nn_tensor_new(ctx, NN_F32, 1, &two);
        nn_tensor *mean = nn_tensor_new(ctx, NN_F32, 1, &c), *var = nn_tensor_new(ctx, NN_F32, 1, &c);
        nn_tensor *dweight = nn_tensor_new(ctx, NN_F32, 1, &c);
        const nn_norm_params p = {.outer = 4, .inner = 1, .channel_inner = 1, .groups = 3, .channels = 3,
                                  .eps = 1e-5f, .batch_stats = 1};
        nn_buffer_ref args[10] = {nn_tensor_ref(x),  nn_tensor_ref(mean), nn_tensor_ref(var),
                                  {0},               nn_tensor_ref(dy),   nn_tensor_ref(dx),
                                  nn_tensor_ref(sums), nn_tensor_ref(dweight), {0}, {0}};
        CHECK(nn_ctx_run(ctx, NN_KERNEL_NORM_BACKWARD_FROM_SUMS, args, 10, &p) == NN_ERR_ARGUMENT);
        CHECK_MSG(strstr(nn_last_error(), "norm_backward_from_sums: dweight and dbias come from sums without the "
                                          "weight") && strstr(nn_last_error(), devices[d]),
                  "%s: %s", devices[d], nn_last_error());
        nn_tensor *made[7] = {x, dy, dx, sums, mean, var, dweight};
        for (int k = 0; k < 7; k++) nn_tensor_free(made[k]);
        nn_ctx_free(ctx);
    }
}

/* The state_dict names and a checkpoint round trip of the buffers. */
TEST(normalization_modules_state_dict_names_and_checkpoint_round_trip) {
    nn_ctx *ctx = vkt_open_device("cpu");
    nn_module *bn = nn_batchnorm2d(ctx, 3, 1e-5f, 0.1f, true, true);
    static const char *const names[] = {"weight", "bias", "running_mean", "running_var", "num_batches_tracked"};
    CHECK(nn_module_state_count(bn) == 5);
    for (int i = 0; i < 5 && i < nn_module_state_count(bn); i++) CHECK(strcmp(nn_module_state_name(bn, i), names[i]) == 0);
    const int64_t shape[4] = {2, 3, 5, 5}, ln_shape[2] = {5, 5};
    float *xv = randoms(150, -1, 2, 5);
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 4, shape, xv);
    CHECK(nn_module_forward(bn, x) != NULL);
    nn_ctx_step_end(ctx);
    char path[] = "/tmp/nn_norm_ckpt_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    CHECK_MSG(nn_save_module(bn, path) == NN_OK, "%s", nn_last_error());
    nn_module *again = nn_batchnorm2d(ctx, 3, 1e-5f, 0.1f, true, true);
    CHECK_MSG(nn_load_module(again, path) == NN_OK, "%s", nn_last_error());
    float a[3], b[3];
    int32_t count = 0;
    CHECK(nn_tensor_read(nn_module_get_buffer(bn, "running_var"), a, sizeof a) == NN_OK);
    CHECK(nn_tensor_read(nn_module_get_buffer(again, "running_var"), b, sizeof b) == NN_OK);
    CHECK(memcmp(a, b, sizeof a) == 0 && a[0] != 1.0f);
    CHECK(nn_tensor_read(nn_module_get_buffer(again, "num_batches_tracked"), &count, sizeof count) == NN_OK);
    CHECK(count == 1);
    nn_module *ln = nn_layernorm(ctx, 2, ln_shape, 1e-5f, true, false);
    CHECK(ln && nn_module_state_count(ln) == 1 && strcmp(nn_module_state_name(ln, 0), "weight") == 0);
    nn_module *gn = nn_groupnorm(ctx, 3, 6, 1e-5f, false);
    CHECK(gn && nn_module_state_count(gn) == 0);
    unlink(path);
    nn_module_free(bn), nn_module_free(again), nn_module_free(ln), nn_module_free(gn);
    nn_tensor_free(x);
    free(xv);
    nn_ctx_free(ctx);
}

/* ---- BatchNorm -> ReLU / ReLU6: the activation's mask taken by BatchNorm's backward ---- */

typedef struct masked_case {
    const char *what;
    int ndim;
    int64_t shape[4]; /* [N, C] or [N, C, H, W] */
    bool relu6;
} masked_case;

typedef struct masked_grads {
    double dx[1024], dw[16], db[16];
    int64_t commands; /* of the captured step */
} masked_grads;

/* loss = sum(act(batch_norm(x) w + b) * r) and its gradients in double. */
static void masked_reference(const masked_case *c, const float *x, const float *w, const float *b, const float *r,
                             masked_grads *out) {
    const int64_t n = c->shape[0], ch = c->shape[1], inner = c->ndim == 4 ? c->shape[2] * c->shape[3] : 1;
    const double count = (double)(n * inner);
    for (int64_t k = 0; k < ch; k++) {
        double mean = 0.0, var = 0.0, sdy = 0.0, sdyx = 0.0;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < inner; j++) mean += x[(i * ch + k) * inner + j];
        mean /= count;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < inner; j++) var += pow(x[(i * ch + k) * inner + j] - mean, 2);
        const double rstd = 1.0 / sqrt(var / count + 1e-5);
        double dy[1024];
        for (int pass = 0; pass < 2; pass++)
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < inner; j++) {
                    const int64_t e = (i * ch + k) * inner + j;
                    const double xhat = (x[e] - mean) * rstd, y = xhat * w[k] + b[k];
                    if (pass == 0) {
                        const bool passes = c->relu6 ? y > 0.0 && y < 6.0 : y > 0.0;
                        dy[e] = passes ? r[e] : 0.0;
                        sdy += dy[e];
                        sdyx += dy[e] * xhat;
                    } else {
                        out->dx[e] = w[k] * rstd / count * (count * dy[e] - sdy - xhat * sdyx);
                    }
                }
        out->db[k] = sdy;
        out->dw[k] = sdyx;
    }
}

/* The engine's step, captured once; `retain` keeps the normalised output's
 * gradient, so the activation's backward must run its own kernel. */
static bool masked_engine(const char *device, const masked_case *c, const float *x, const float *w, const float *b,
                          const float *r, bool retain, masked_grads *out) {
    nn_ctx *ctx = vkt_open_device(device);
    if (!ctx) return false;
    const int64_t n = c->shape[0] * c->shape[1] * (c->ndim == 4 ? c->shape[2] * c->shape[3] : 1), ch = c->shape[1];
    nn_tensor *xt = nn_tensor_from_data(ctx, NN_F32, c->ndim, c->shape, x);
    nn_tensor *wt = nn_tensor_from_data(ctx, NN_F32, 1, &ch, w), *bt = nn_tensor_from_data(ctx, NN_F32, 1, &ch, b);
    nn_tensor *rt = nn_tensor_from_data(ctx, NN_F32, c->ndim, c->shape, r);
    nn_tensor *leaves[3] = {xt, wt, bt};
    for (int i = 0; i < 3; i++) nn_tensor_set_requires_grad(leaves[i], true);
    CHECK(nn_capture_begin(ctx) == NN_OK);
    nn_tensor *z = nn_batch_norm(xt, NULL, NULL, wt, bt, true, 0.1f, 1e-5f);
    if (retain && z) CHECK(nn_tensor_retain_grad(z) == NN_OK);
    nn_tensor *loss = nn_sum(nn_mul(c->relu6 ? nn_relu6(z) : nn_relu(z), rt));
    bool ok = loss && nn_backward(loss) == NN_OK && nn_ctx_step_end(ctx) == NN_OK;
    nn_capture *cap = ok ? nn_capture_end(ctx) : NULL;
    ok = ok && cap;
    CHECK_MSG(ok, "%s %s: %s", device, c->what, nn_last_error());
    float dx[1024], dw[16], db[16];
    ok = ok && nn_tensor_read(nn_tensor_grad(xt), dx, sizeof(float) * (size_t)n) == NN_OK &&
         nn_tensor_read(nn_tensor_grad(wt), dw, sizeof(float) * (size_t)ch) == NN_OK &&
         nn_tensor_read(nn_tensor_grad(bt), db, sizeof(float) * (size_t)ch) == NN_OK;
    for (int64_t i = 0; ok && i < n; i++) out->dx[i] = dx[i];
    for (int64_t k = 0; ok && k < ch; k++) out->dw[k] = dw[k], out->db[k] = db[k];
    out->commands = cap ? nn_capture_command_count(cap) : 0;
    nn_capture_free(cap);
    nn_ctx_free(ctx);
    return ok;
}

static void masked_compare(const char *label, const double *got, const double *want, int64_t n, double tol) {
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 3; i++)
        if (!(fabs(got[i] - want[i]) <= tol * (fabs(want[i]) > 1.0 ? fabs(want[i]) : 1.0))) {
            nn_test_fail(__FILE__, __LINE__, "%s[%lld] = %.7g, want %.7g", label, (long long)i, got[i], want[i]);
            bad++;
        }
}

TEST(batchnorm_leaves_relu_masks_to_its_backward_and_matches_double_reference) {
    static const masked_case cases[] = {
        {"[3, 5, 7, 6] relu", 4, {3, 5, 7, 6}, false},
        {"[3, 5, 7, 6] relu6", 4, {3, 5, 7, 6}, true},
        {"[37, 12] relu6 (BatchNorm1d: rows of channels)", 2, {37, 12}, true},
        {"[37, 12] relu", 2, {37, 12}, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const masked_case *c = &cases[i];
        const int64_t ch = c->shape[1], n = c->shape[0] * ch * (c->ndim == 4 ? c->shape[2] * c->shape[3] : 1);
        /* normalised values across relu6's [0, 6] and past it */
        float *x = randoms((size_t)n, -2, 2, 70 + (unsigned)i), *w = randoms((size_t)ch, 0.5, 3, 80);
        float *b = randoms((size_t)ch, -1, 5, 81), *r = randoms((size_t)n, -1, 1, 82);
        static masked_grads want, got, kept;
        masked_reference(c, x, w, b, r, &want);
        for (int d = 0; d < 2; d++) {
            if (!masked_engine(kDevices[d], c, x, w, b, r, false, &got) ||
                !masked_engine(kDevices[d], c, x, w, b, r, true, &kept))
                continue;
            char label[160];
            snprintf(label, sizeof label, "%s %s dx", kDevices[d], c->what);
            masked_compare(label, got.dx, want.dx, n, 1e-4);
            snprintf(label, sizeof label, "%s %s dweight", kDevices[d], c->what);
            masked_compare(label, got.dw, want.dw, ch, 1e-4);
            snprintf(label, sizeof label, "%s %s dbias", kDevices[d], c->what);
            masked_compare(label, got.db, want.db, ch, 1e-4);
            snprintf(label, sizeof label, "%s %s dx with the normalised output's gradient kept", kDevices[d], c->what);
            masked_compare(label, kept.dx, want.dx, n, 1e-4);
            CHECK_MSG(got.commands == kept.commands - 1,
                      "%s %s: %lld commands in the step, %lld with the activation's own backward; want one fewer",
                      kDevices[d], c->what, (long long)got.commands, (long long)kept.commands);
        }
        free(x), free(w), free(b), free(r);
    }
}
