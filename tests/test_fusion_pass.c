/* The fusion pass (core/fusion.h) keeps eager semantics where fused kernels
 * leave outputs unwritten or make decisions ahead: with the pass on, every
 * value and gradient equals what the same operations give with it off, on
 * the CPU and on Vulkan, when
 *   - a fused chain's unwritten output (a convolution's before its ReLU) is
 *     read, or used by another operation, after the fused kernels ran: it
 *     is computed again from its recipe;
 *   - that later use takes part in the loss, so an interior output of a
 *     fused chain receives a gradient from outside the chain;
 *   - a ReLU's output gets a second reader after its first reader claimed
 *     its mask at forward (the fused head's input gradient);
 *   - the logits of a fused head and loss take part in a second loss term;
 *   - a normalisation's output, unwritten under its activation (the
 *     apply's epilogue), is read and used after: its recipe normalises
 *     again without a second update of BatchNorm's running statistics;
 *   - a normalisation, an add of a residual (either side) and a ReLU, or
 *     a normalisation and an add alone (residual blocks' ends), leave the
 *     normalised tensor and the sum unwritten, and the sum is read after.
 * Inputs are random, of awkward sizes; gradients are compared with a
 * tolerance for the different order of sums in fused kernels. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/graph.h" /* whether the pass fused: a recipe on an unwritten output, a segment */
#include "core/internal.h"
#include "nn_engine.h"
#include "test.h"
#include "vulkan_harness.h"

#define MAX_VALUES 16

/* What one run gives: values read and the gradients of the leaves. */
typedef struct outcome {
    int count;
    float *values[MAX_VALUES];
    int64_t sizes[MAX_VALUES];
} outcome;

static void keep(outcome *o, nn_tensor *t) {
    int64_t n = t ? nn_tensor_numel(t) : 0;
    float *v = calloc((size_t)(n ? n : 1), sizeof *v);
    CHECK_MSG(t && nn_tensor_read(t, v, (size_t)n * sizeof *v) == NN_OK, "read: %s", nn_last_error());
    o->values[o->count] = v;
    o->sizes[o->count++] = n;
}

static void compare(const outcome *got, const outcome *want, double tol, const char *what) {
    CHECK_MSG(got->count == want->count, "%s: %d values, want %d", what, got->count, want->count);
    for (int i = 0; i < got->count && i < want->count; i++) {
        CHECK_MSG(got->sizes[i] == want->sizes[i], "%s: value %d has %lld elements, want %lld", what, i,
                  (long long)got->sizes[i], (long long)want->sizes[i]);
        if (got->sizes[i] == want->sizes[i])
            vkt_check_near_f32(got->values[i], want->values[i], (size_t)got->sizes[i], tol, "%s: value %d", what, i);
    }
}

static void outcome_free(outcome *o) {
    for (int i = 0; i < o->count; i++) free(o->values[i]);
}

static nn_tensor *randn(nn_ctx *ctx, int ndim, const int64_t *shape, unsigned seed, bool grad) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    float *data = vkt_randoms((size_t)n, -1.0f, 1.0f, seed);
    nn_tensor *t = nn_tensor_from_data(ctx, NN_F32, ndim, shape, data);
    free(data);
    if (grad) nn_tensor_set_requires_grad(t, true);
    return t;
}

/* Conv2d -> ReLU -> MaxPool2d (fused on Vulkan; Conv2d + ReLU fused on the
 * CPU), then the convolution's output z, unwritten by the fused kernels,
 * read after them and used in a second loss term; backward through both. */
static outcome conv_interior(const char *device, bool fusion) {
    outcome o = {0};
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .threads = 2, .seed = 3});
    nn_ctx_set_fusion(ctx, fusion);
    const int64_t xs[4] = {3, 2, 13, 11}, ws[4] = {5, 2, 3, 3}, bs[1] = {5};
    nn_tensor *x = randn(ctx, 4, xs, 11, true), *w = randn(ctx, 4, ws, 12, true), *b = randn(ctx, 1, bs, 13, true);
    nn_tensor *z = nn_conv2d(x, w, b, 1, 1);
    nn_tensor *y = nn_maxpool2d(nn_relu(z), 2, 2);
    int64_t ys[NN_MAX_DIMS], zs[NN_MAX_DIMS];
    nn_tensor_shape(y, ys);
    nn_tensor_shape(z, zs);
    nn_tensor *wy = randn(ctx, 4, ys, 14, false), *wz = randn(ctx, 4, zs, 15, false);
    keep(&o, y); /* runs the fused kernels */
    CHECK_MSG(!fusion || z->recipe, "%s: the convolution and its ReLU did not run fused", device);
    keep(&o, z); /* then z from its recipe */
    nn_tensor *loss = nn_add(nn_sum(nn_mul(y, wy)), nn_sum(nn_mul(z, wz)));
    CHECK_MSG(nn_backward(loss) == NN_OK, "%s backward: %s", device, nn_last_error());
    keep(&o, nn_tensor_grad(x));
    keep(&o, nn_tensor_grad(w));
    keep(&o, nn_tensor_grad(b));
    nn_ctx_free(ctx);
    return o;
}

/* Linear -> ReLU -> Linear -> softmax cross-entropy (fused on Vulkan) whose
 * input is a ReLU's output: read after the fused kernels, that ReLU output
 * gets a second reader, and the logits a second loss term. */
static outcome head_second_readers(const char *device, bool fusion) {
    outcome o = {0};
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .threads = 2, .seed = 4});
    nn_ctx_set_fusion(ctx, fusion);
    const int64_t xs[2] = {37, 19}, w0s[2] = {23, 19}, was[2] = {29, 23}, wbs[2] = {7, 29}, ls[1] = {37};
    int32_t labels[37];
    for (int i = 0; i < 37; i++) labels[i] = (i * 5) % 7;
    nn_tensor *x = randn(ctx, 2, xs, 21, true), *w0 = randn(ctx, 2, w0s, 22, true);
    nn_tensor *wa = randn(ctx, 2, was, 23, true), *wb = randn(ctx, 2, wbs, 24, true);
    nn_tensor *y = nn_tensor_from_data(ctx, NN_I32, 1, ls, labels);
    nn_tensor *z = nn_linear(x, w0, NULL), *r = nn_relu(z);
    nn_tensor *logits = nn_linear(nn_relu(nn_linear(r, wa, NULL)), wb, NULL);
    nn_tensor *loss = nn_softmax_cross_entropy(logits, y);
    keep(&o, loss); /* runs the fused kernels: r's gradient computed ahead, masked */
    CHECK_MSG(!fusion || z->recipe, "%s: the first Linear and its ReLU did not run fused", device);
    const bool head_fused = loss->grad_fn && loss->grad_fn->segment;
    CHECK_MSG(!fusion || strcmp(device, "vulkan") || head_fused, "the head and its loss did not run fused");
    const int64_t rs[2] = {37, 23}, ys[2] = {37, 7};
    nn_tensor *wr = randn(ctx, 2, rs, 25, false), *wl = randn(ctx, 2, ys, 26, false);
    nn_tensor *total = nn_add(nn_add(loss, nn_sum(nn_mul(r, wr))), nn_mean(nn_mul(logits, wl)));
    CHECK_MSG(nn_backward(total) == NN_OK, "%s backward: %s", device, nn_last_error());
    keep(&o, nn_tensor_grad(x));
    keep(&o, nn_tensor_grad(w0));
    keep(&o, nn_tensor_grad(wa));
    keep(&o, nn_tensor_grad(wb));
    nn_ctx_free(ctx);
    return o;
}

/* BatchNorm (training, running statistics) -> ReLU, GroupNorm -> ReLU6,
 * LayerNorm -> sigmoid, each normalised output unwritten when fused; then
 * BatchNorm's output read and used in a second loss term. The running
 * statistics are compared too (updated once per forward either way). */
static outcome norm_activation(const char *device, bool fusion) {
    outcome o = {0};
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .threads = 2, .seed = 5});
    nn_ctx_set_fusion(ctx, fusion);
    const int64_t xs[4] = {3, 6, 7, 5}, cs[1] = {6}, ls[2] = {7, 5};
    nn_tensor *x = randn(ctx, 4, xs, 31, true), *w = randn(ctx, 1, cs, 32, true), *b = randn(ctx, 1, cs, 33, true);
    nn_tensor *gw = randn(ctx, 1, cs, 34, true), *gb = randn(ctx, 1, cs, 35, true);
    nn_tensor *lw = randn(ctx, 2, ls, 36, true), *lb = randn(ctx, 2, ls, 37, true);
    float *variances = vkt_randoms(6, 0.5f, 1.5f, 39);
    nn_tensor *rm = randn(ctx, 1, cs, 38, false), *rv = nn_tensor_from_data(ctx, NN_F32, 1, cs, variances);
    free(variances);
    nn_tensor *z = nn_batch_norm(x, rm, rv, w, b, true, 0.1f, 1e-5f);
    nn_tensor *r = nn_relu(z);
    nn_tensor *g = nn_relu6(nn_mul_scalar(nn_group_norm(r, 3, gw, gb, 1e-5f), 4.0f));
    nn_tensor *l = nn_sigmoid(nn_layer_norm(x, 2, ls, lw, lb, 1e-5f));
    nn_tensor *wr = randn(ctx, 4, xs, 40, false), *wz = randn(ctx, 4, xs, 41, false);
    keep(&o, r); /* runs the fused kernels */
    CHECK_MSG(!fusion || z->recipe, "%s: BatchNorm and its ReLU did not run fused", device);
    keep(&o, z); /* then z from its recipe */
    nn_tensor *loss = nn_add(nn_add(nn_sum(nn_mul(g, wr)), nn_sum(nn_mul(z, wz))), nn_mean(l));
    CHECK_MSG(nn_backward(loss) == NN_OK, "%s backward: %s", device, nn_last_error());
    keep(&o, g);
    keep(&o, l);
    nn_tensor *leaves[] = {x, w, b, gw, gb, lw, lb};
    for (int i = 0; i < 7 && o.count < MAX_VALUES; i++) keep(&o, nn_tensor_grad(leaves[i]));
    keep(&o, rm);
    keep(&o, rv);
    nn_ctx_free(ctx);
    return o;
}

/* Two residual blocks' ends over channels-last activations (convolutions'
 * outputs): relu(shortcut + BatchNorm(conv(x))), the residual on the add's
 * left; then BatchNorm(conv(u)) + u with no activation, the residual on the
 * right. The sum inside the first, unwritten when fused, is read after the
 * fused kernels and used in a second loss term. */
static outcome norm_residual(const char *device, bool fusion) {
    outcome o = {0};
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .threads = 2, .seed = 7});
    nn_ctx_set_fusion(ctx, fusion);
    nn_ctx_set_memory_format(ctx, NN_MEMORY_FORMAT_CHANNELS_LAST);
    const int64_t xs[4] = {3, 5, 7, 9}, ws[4] = {8, 5, 3, 3}, ss[4] = {8, 5, 1, 1}, vs[4] = {8, 8, 3, 3};
    const int64_t cs[1] = {8}, ys[4] = {3, 8, 7, 9};
    nn_tensor *x = randn(ctx, 4, xs, 61, true), *w = randn(ctx, 4, ws, 62, true), *ws1 = randn(ctx, 4, ss, 63, true);
    nn_tensor *w2 = randn(ctx, 4, vs, 64, true), *g1 = randn(ctx, 1, cs, 65, true), *b1 = randn(ctx, 1, cs, 66, true);
    nn_tensor *g2 = randn(ctx, 1, cs, 67, true), *b2 = randn(ctx, 1, cs, 68, true);
    float *variances = vkt_randoms(8, 0.5f, 1.5f, 69);
    nn_tensor *rm = randn(ctx, 1, cs, 70, false), *rv = nn_tensor_from_data(ctx, NN_F32, 1, cs, variances);
    nn_tensor *rm2 = randn(ctx, 1, cs, 71, false), *rv2 = nn_tensor_from_data(ctx, NN_F32, 1, cs, variances);
    free(variances);
    nn_tensor *shortcut = nn_conv2d(x, ws1, NULL, 1, 0);
    nn_tensor *z = nn_batch_norm(nn_conv2d(x, w, NULL, 1, 1), rm, rv, g1, b1, true, 0.1f, 1e-5f);
    nn_tensor *sum = nn_add(shortcut, z);
    nn_tensor *u = nn_relu(sum);
    nn_tensor *z2 = nn_batch_norm(nn_conv2d(u, w2, NULL, 1, 1), rm2, rv2, g2, b2, true, 0.1f, 1e-5f);
    nn_tensor *v = nn_add(z2, u);
    keep(&o, v); /* runs the fused kernels */
    CHECK_MSG(!fusion || (z->recipe && sum->recipe), "%s: BatchNorm, the add and the ReLU did not run fused", device);
    CHECK_MSG(!fusion || z2->recipe, "%s: BatchNorm and the add did not run fused", device);
    keep(&o, sum); /* then the sum from its recipe */
    nn_tensor *wv = randn(ctx, 4, ys, 72, false), *wsum = randn(ctx, 4, ys, 73, false);
    nn_tensor *loss = nn_add(nn_sum(nn_mul(v, wv)), nn_sum(nn_mul(sum, wsum)));
    CHECK_MSG(nn_backward(loss) == NN_OK, "%s backward: %s", device, nn_last_error());
    nn_tensor *leaves[] = {x, w, ws1, w2, g1, b1, g2, b2};
    for (int i = 0; i < 8; i++) keep(&o, nn_tensor_grad(leaves[i]));
    keep(&o, rm);
    keep(&o, rv);
    keep(&o, rm2);
    keep(&o, rv2);
    nn_ctx_free(ctx);
    return o;
}

static void fused_equals_unfused(const char *device, outcome (*run)(const char *, bool), const char *what) {
    outcome fused = run(device, true), plain = run(device, false);
    char label[96];
    snprintf(label, sizeof label, "%s %s", device, what);
    compare(&fused, &plain, 2e-5, label);
    outcome_free(&fused);
    outcome_free(&plain);
}

TEST(fusion_pass_recomputes_and_backpropagates_unwritten_outputs_cpu) {
    fused_equals_unfused("cpu", conv_interior, "conv interior");
}

TEST(fusion_pass_recomputes_and_backpropagates_unwritten_outputs_vulkan) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    fused_equals_unfused("vulkan", conv_interior, "conv interior");
}

TEST(fusion_pass_second_readers_after_fusion_cpu) { fused_equals_unfused("cpu", head_second_readers, "head"); }

TEST(fusion_pass_second_readers_after_fusion_vulkan) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    fused_equals_unfused("vulkan", head_second_readers, "head");
}

TEST(fusion_pass_norm_activation_cpu) { fused_equals_unfused("cpu", norm_activation, "norm activation"); }

TEST(fusion_pass_norm_activation_vulkan) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    fused_equals_unfused("vulkan", norm_activation, "norm activation");
}

/* On the CPU the fused apply rounds as the operations do (the normalised
 * value to float, then the add in float), so the blocks' outputs are the
 * unfused ones bit for bit: a sum rounded once instead can flip a later
 * activation at its threshold. */
TEST(fusion_pass_norm_residual_cpu) {
    fused_equals_unfused("cpu", norm_residual, "norm residual");
    outcome fused = norm_residual("cpu", true), plain = norm_residual("cpu", false);
    for (int i = 0; i < 2; i++) /* v, then the sum from its recipe */
        CHECK_MSG(fused.sizes[i] == plain.sizes[i] &&
                      !memcmp(fused.values[i], plain.values[i], sizeof(float) * (size_t)plain.sizes[i]),
                  "cpu norm residual: value %d differs from the unfused operations' in its bits", i);
    outcome_free(&fused);
    outcome_free(&plain);
}

TEST(fusion_pass_norm_residual_vulkan) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    fused_equals_unfused("vulkan", norm_residual, "norm residual");
}

/* BatchNorm's running statistics read right after the operation is
 * recorded (no flush between) hold the update: the read runs it. */
static void running_statistics_read_at_once(const char *device) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .threads = 2, .seed = 6});
    const int64_t xs[4] = {2, 3, 4, 5}, cs[1] = {3};
    const float zeros[3] = {0.0f, 0.0f, 0.0f}, ones[3] = {1.0f, 1.0f, 1.0f};
    nn_tensor *x = randn(ctx, 4, xs, 51, false);
    nn_tensor *rm = nn_tensor_from_data(ctx, NN_F32, 1, cs, zeros), *rv = nn_tensor_from_data(ctx, NN_F32, 1, cs, ones);
    float data[120], got[3], want[3];
    CHECK(nn_tensor_read(x, data, sizeof data) == NN_OK);
    nn_tensor *y = nn_relu(nn_batch_norm(x, rm, rv, NULL, NULL, true, 0.5f, 1e-5f));
    CHECK_MSG(y && nn_tensor_read(rm, got, sizeof got) == NN_OK, "%s: %s", device, nn_last_error());
    for (int c = 0; c < 3; c++) { /* 0.5 times the channel's mean */
        double sum = 0.0;
        for (int n = 0; n < 2; n++)
            for (int i = 0; i < 20; i++) sum += data[(n * 3 + c) * 20 + i];
        want[c] = (float)(0.5 * sum / 40.0);
    }
    vkt_check_near_f32(got, want, 3, 1e-5, "%s running mean read at once", device);
    nn_ctx_free(ctx);
}

TEST(fusion_pass_running_statistics_read_at_once_cpu) { running_statistics_read_at_once("cpu"); }

TEST(fusion_pass_running_statistics_read_at_once_vulkan) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    running_statistics_read_at_once("vulkan");
}
