/* Channels-last activations (core/layout.h, nn_ctx_set_memory_format):
 * whatever layout the convolutions' outputs take, every value and gradient
 * a model gives is the same, on the CPU and on Vulkan. A small network of
 * awkward sizes that meets every kind of reader (convolutions with bias,
 * stride, groups and depthwise, BatchNorm in training, ReLU and ReLU6, a
 * residual add, a broadcast multiply, max pooling, adaptive average
 * pooling, flatten and Linear) runs with CHANNELS_LAST and with
 * CONTIGUOUS; its loss, an interior activation read back, and the
 * gradients of the input and every parameter agree. Also: host reads and
 * writes of a channels-last tensor in the logical order, copies between
 * layouts, a captured step, and the ONNX export of a channels-last graph. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/graph.h" /* the tensors' layouts, the tape */
#include "nn_engine.h"
#include "test.h"
#include "vulkan_harness.h"

#define PARAMS 12

typedef struct net {
    nn_tensor *p[PARAMS];
    nn_tensor *mean[3], *var[3];
} net;

static nn_tensor *leaf(nn_ctx *ctx, int ndim, const int64_t *shape, unsigned seed, float scale, bool grad) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    float *data = vkt_randoms((size_t)n, -scale, scale, seed);
    nn_tensor *t = nn_tensor_from_data(ctx, NN_F32, ndim, shape, data);
    free(data);
    CHECK_MSG(t != NULL, "leaf: %s", nn_last_error());
    if (t && grad) nn_tensor_set_requires_grad(t, true);
    return t;
}

static net make_net(nn_ctx *ctx) {
    net n;
    const int64_t w1[4] = {6, 5, 3, 3}, w2[4] = {6, 6, 3, 3}, w3[4] = {6, 5, 1, 1}, wd[4] = {12, 1, 3, 3};
    const int64_t six[1] = {6}, twelve[1] = {12}, lin[2] = {4, 12}, four[1] = {4}, scale[4] = {1, 6, 1, 1};
    n.p[0] = leaf(ctx, 4, w1, 101, 0.4f, true);
    n.p[1] = leaf(ctx, 1, six, 102, 0.5f, true); /* conv1's bias */
    n.p[2] = leaf(ctx, 1, six, 103, 1.0f, true); /* bn1 */
    n.p[3] = leaf(ctx, 1, six, 104, 0.5f, true);
    n.p[4] = leaf(ctx, 4, w2, 105, 0.3f, true);
    n.p[5] = leaf(ctx, 4, w3, 106, 0.5f, true); /* the shortcut, stride 2 */
    n.p[6] = leaf(ctx, 4, scale, 107, 1.0f, true); /* broadcast over N, H, W */
    n.p[7] = leaf(ctx, 4, wd, 108, 0.5f, true);  /* depthwise, multiplier 2 */
    n.p[8] = leaf(ctx, 1, twelve, 109, 1.0f, true); /* bn3 */
    n.p[9] = leaf(ctx, 1, twelve, 110, 0.5f, true);
    n.p[10] = leaf(ctx, 2, lin, 111, 0.5f, true);
    n.p[11] = leaf(ctx, 1, four, 112, 0.5f, true);
    for (int i = 0; i < 3; i++) {
        const int64_t *c = i == 2 ? twelve : six;
        n.mean[i] = nn_tensor_new(ctx, NN_F32, 1, c);
        n.var[i] = nn_tensor_new(ctx, NN_F32, 1, c);
        nn_tensor_fill(n.var[i], 1.0f);
    }
    return n;
}

/* What one run gives: the loss, the block's output, the running mean of
 * the last BatchNorm, and the gradients of x and of every parameter. */
typedef struct outcome {
    int count;
    float *values[PARAMS + 4];
    int64_t sizes[PARAMS + 4];
    bool channels_last; /* the block's output and its max pooling's were stored channels-last */
} outcome;

static void keep(outcome *o, nn_tensor *t) {
    const int64_t n = t ? nn_tensor_numel(t) : 0;
    float *v = calloc((size_t)(n ? n : 1), sizeof *v);
    CHECK_MSG(t && nn_tensor_read(t, v, (size_t)n * sizeof *v) == NN_OK, "read: %s", nn_last_error());
    o->values[o->count] = v;
    o->sizes[o->count++] = n;
}

static nn_tensor *forward(net *n, nn_tensor *x, nn_tensor **block) {
    const nn_conv2d_params s2 = {.stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1};
    const nn_conv2d_params same = {.stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1};
    const nn_conv2d_params shortcut = {.stride_h = 2, .stride_w = 2};
    const nn_conv2d_params depthwise = {.stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = 6};
    nn_tensor *h = nn_conv2d_ex(x, n->p[0], n->p[1], &s2);
    h = nn_relu(nn_batch_norm(h, n->mean[0], n->var[0], n->p[2], n->p[3], true, 0.1f, 1e-5f));
    h = nn_batch_norm(nn_conv2d_ex(h, n->p[4], NULL, &same), n->mean[1], n->var[1], NULL, NULL, true, 0.1f, 1e-5f);
    *block = nn_relu(nn_add(h, nn_conv2d_ex(x, n->p[5], NULL, &shortcut)));
    h = nn_maxpool2d_ex(*block, 2, 1, 0);
    h = nn_mul(h, n->p[6]);
    h = nn_conv2d_ex(h, n->p[7], NULL, &depthwise);
    h = nn_relu6(nn_batch_norm(h, n->mean[2], n->var[2], n->p[8], n->p[9], true, 0.1f, 1e-5f));
    return nn_linear(nn_flatten(nn_adaptive_avgpool2d(h, 1, 1)), n->p[10], n->p[11]);
}

static outcome run(const char *device, nn_memory_format format, bool fusion) {
    outcome o = {0};
    nn_ctx *ctx = vkt_open_device(device);
    if (!ctx) return o;
    nn_ctx_set_fusion(ctx, fusion);
    nn_ctx_set_memory_format(ctx, format);
    net n = make_net(ctx);
    const int64_t xs[4] = {3, 5, 11, 9}, ls[1] = {3};
    const int32_t labels[3] = {1, 3, 0};
    nn_tensor *x = leaf(ctx, 4, xs, 100, 1.0f, true);
    nn_tensor *y = nn_tensor_from_data(ctx, NN_I32, 1, ls, labels);
    nn_tensor *block;
    nn_tensor *loss = nn_softmax_cross_entropy(forward(&n, x, &block), y);
    CHECK_MSG(loss != NULL, "%s forward: %s", device, nn_last_error());
    const nn_tensor *pooled = NULL;
    for (int64_t i = 0; i < ctx->tape_count && !pooled; i++)
        if (ctx->tape[i]->inputs[0] == block && ctx->tape[i]->output->shape[2] < block->shape[2])
            pooled = ctx->tape[i]->output;
    CHECK_MSG(pooled != NULL, "%s: the max pooling is not on the tape", device);
    o.channels_last = block->layout == NN_LAYOUT_CHANNELS_LAST && pooled && pooled->layout == NN_LAYOUT_CHANNELS_LAST;
    keep(&o, loss);
    keep(&o, block);
    CHECK_MSG(nn_backward(loss) == NN_OK, "%s backward: %s", device, nn_last_error());
    keep(&o, n.mean[2]);
    keep(&o, nn_tensor_grad(x));
    for (int i = 0; i < PARAMS; i++) keep(&o, nn_tensor_grad(n.p[i]));
    nn_ctx_free(ctx);
    return o;
}

static void compare(const outcome *got, const outcome *want, const char *what) {
    CHECK_MSG(got->count == want->count, "%s: %d values, want %d", what, got->count, want->count);
    for (int i = 0; i < got->count && i < want->count; i++) {
        CHECK_MSG(got->sizes[i] == want->sizes[i], "%s: value %d has %lld elements, want %lld", what, i,
                  (long long)got->sizes[i], (long long)want->sizes[i]);
        if (got->sizes[i] == want->sizes[i])
            vkt_check_near_f32(got->values[i], want->values[i], (size_t)got->sizes[i], 2e-4, "%s: value %d", what, i);
    }
}

static void outcome_free(outcome *o) {
    for (int i = 0; i < o->count; i++) free(o->values[i]);
}

static void layouts_agree(const char *device) {
    for (int fusion = 0; fusion < 2; fusion++) {
        outcome last = run(device, NN_MEMORY_FORMAT_CHANNELS_LAST, fusion);
        outcome dense = run(device, NN_MEMORY_FORMAT_CONTIGUOUS, fusion);
        if (!last.count) return; /* no device */
        CHECK_MSG(last.channels_last, "%s: CHANNELS_LAST left the block's output dense", device);
        CHECK_MSG(!dense.channels_last, "%s: CONTIGUOUS stored the block's output channels-last", device);
        char label[64];
        snprintf(label, sizeof label, "%s, fusion %s", device, fusion ? "on" : "off");
        compare(&last, &dense, label);
        outcome_free(&last);
        outcome_free(&dense);
    }
}

TEST(channels_last_model_equals_contiguous_cpu) { layouts_agree("cpu"); }

TEST(channels_last_model_equals_contiguous_vulkan) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    layouts_agree("vulkan");
}

/* A convolution's channels-last output read and written in the logical
 * order, copied to and from dense tensors of its shape and of a flat one. */
static void host_order(const char *device) {
    nn_ctx *ctx = vkt_open_device(device);
    if (!ctx) return;
    nn_ctx_set_memory_format(ctx, NN_MEMORY_FORMAT_CHANNELS_LAST);
    const int64_t xs[4] = {2, 3, 5, 4}, ws[4] = {7, 3, 1, 1};
    nn_tensor *x = leaf(ctx, 4, xs, 201, 1.0f, false), *w = leaf(ctx, 4, ws, 202, 1.0f, false);
    nn_tensor *y = nn_conv2d(x, w, NULL, 1, 0);
    const int64_t count = 2 * 7 * 5 * 4;
    float *got = calloc(count, sizeof *got), *want = calloc(count, sizeof *want);
    float xv[120], wv[21];
    CHECK(nn_tensor_read(x, xv, sizeof xv) == NN_OK && nn_tensor_read(w, wv, sizeof wv) == NN_OK);
    for (int n = 0; n < 2; n++) /* a 1x1 convolution in the logical order, in double */
        for (int f = 0; f < 7; f++)
            for (int p = 0; p < 20; p++) {
                double s = 0;
                for (int c = 0; c < 3; c++) s += (double)wv[f * 3 + c] * xv[(n * 3 + c) * 20 + p];
                want[(n * 7 + f) * 20 + p] = (float)s;
            }
    CHECK_MSG(nn_tensor_read(y, got, count * sizeof *got) == NN_OK, "read: %s", nn_last_error());
    CHECK_MSG(y->layout == NN_LAYOUT_CHANNELS_LAST, "%s: the convolution's output is not channels-last", device);
    vkt_check_near_f32(got, want, count, 1e-5, "%s: channels-last read", device);

    const int64_t ys[4] = {2, 7, 5, 4}, flat[1] = {count};
    nn_tensor *dense = nn_tensor_new(ctx, NN_F32, 4, ys), *line = nn_tensor_new(ctx, NN_F32, 1, flat);
    CHECK(nn_tensor_copy(dense, y) == NN_OK && nn_tensor_copy(line, y) == NN_OK);
    CHECK(nn_tensor_read(dense, got, count * sizeof *got) == NN_OK);
    vkt_check_near_f32(got, want, count, 1e-5, "%s: copy to a dense tensor", device);
    CHECK(nn_tensor_read(line, got, count * sizeof *got) == NN_OK);
    vkt_check_near_f32(got, want, count, 1e-5, "%s: copy to a flat tensor", device);

    for (int64_t i = 0; i < count; i++) want[i] = (float)i;
    CHECK(nn_tensor_write(y, want, count * sizeof *want) == NN_OK);
    CHECK(nn_tensor_read(y, got, count * sizeof *got) == NN_OK);
    vkt_check_near_f32(got, want, count, 0, "%s: channels-last write then read", device);
    CHECK(nn_tensor_write(line, want, count * sizeof *want) == NN_OK && nn_tensor_copy(y, line) == NN_OK);
    CHECK(nn_tensor_copy(dense, y) == NN_OK && nn_tensor_read(dense, got, count * sizeof *got) == NN_OK);
    vkt_check_near_f32(got, want, count, 0, "%s: copy into a channels-last tensor", device);
    free(got);
    free(want);
    nn_ctx_free(ctx);
}

TEST(channels_last_tensor_reads_and_writes_in_logical_order_cpu) { host_order("cpu"); }

TEST(channels_last_tensor_reads_and_writes_in_logical_order_vulkan) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    host_order("vulkan");
}

TEST(channels_last_sizes_that_are_dense_stay_dense) {
    nn_ctx *ctx = vkt_open_device("cpu");
    nn_ctx_set_memory_format(ctx, NN_MEMORY_FORMAT_CHANNELS_LAST);
    const int64_t xs[4] = {2, 3, 1, 1}, ws[4] = {5, 3, 1, 1}, one[4] = {2, 3, 4, 4}, wo[4] = {1, 3, 3, 3};
    nn_tensor *pixel = nn_conv2d(leaf(ctx, 4, xs, 301, 1, false), leaf(ctx, 4, ws, 302, 1, false), NULL, 1, 0);
    nn_tensor *channel = nn_conv2d(leaf(ctx, 4, one, 303, 1, false), leaf(ctx, 4, wo, 304, 1, false), NULL, 1, 1);
    CHECK_MSG(pixel && pixel->layout == NN_LAYOUT_DENSE, "a 1x1 image stored channels-last");
    CHECK_MSG(channel && channel->layout == NN_LAYOUT_DENSE, "one channel stored channels-last");
    CHECK(nn_ctx_set_memory_format(ctx, (nn_memory_format)7) == NN_MEMORY_FORMAT_CHANNELS_LAST);
    CHECK(nn_last_status() == NN_ERR_ARGUMENT && strstr(nn_last_error(), "format 7"));
    CHECK(nn_ctx_memory_format(ctx) == NN_MEMORY_FORMAT_CHANNELS_LAST);
    nn_ctx_free(ctx);
}

/* Four SGD steps in channels-last, eager or with the second step captured
 * and replayed for the last two: each step's loss, then conv1's weight. */
static void train(const char *device, bool capture, float *losses, float *weight) {
    nn_ctx *ctx = vkt_open_device(device);
    if (!ctx) return;
    nn_ctx_set_memory_format(ctx, NN_MEMORY_FORMAT_CHANNELS_LAST);
    net n = make_net(ctx);
    const int64_t xs[4] = {3, 5, 11, 9}, ls[1] = {3};
    const int32_t labels[3] = {2, 0, 1};
    nn_tensor *x = leaf(ctx, 4, xs, 400, 1.0f, false), *y = nn_tensor_from_data(ctx, NN_I32, 1, ls, labels);
    nn_optimizer *opt = nn_sgd_new(n.p, PARAMS, &(nn_sgd_options){.lr = 0.05f, .momentum = 0.9f});
    nn_capture *cap = NULL;
    nn_tensor *kept = NULL;
    for (int s = 0; s < 4; s++) {
        if (cap) {
            CHECK_MSG(nn_replay(cap, 1) == NN_OK, "%s replay: %s", device, nn_last_error());
            CHECK(nn_tensor_read(kept, &losses[s], sizeof(float)) == NN_OK);
            continue;
        }
        const bool record = capture && s == 1;
        if (record) CHECK(nn_capture_begin(ctx) == NN_OK);
        nn_tensor *block;
        CHECK(nn_optimizer_zero_grad(opt) == NN_OK);
        nn_tensor *loss = nn_softmax_cross_entropy(forward(&n, x, &block), y);
        CHECK_MSG(loss && nn_backward(loss) == NN_OK && nn_optimizer_step(opt) == NN_OK, "%s step: %s", device,
                  nn_last_error());
        if (record) {
            kept = loss;
            CHECK(nn_tensor_persist(kept) == NN_OK);
            CHECK(nn_ctx_step_end(ctx) == NN_OK);
            cap = nn_capture_end(ctx);
            CHECK_MSG(cap != NULL, "%s capture: %s", device, nn_last_error());
            if (!cap) break;
            CHECK(nn_tensor_read(kept, &losses[s], sizeof(float)) == NN_OK);
        } else {
            CHECK(nn_tensor_read(loss, &losses[s], sizeof(float)) == NN_OK);
            CHECK(nn_ctx_step_end(ctx) == NN_OK);
        }
    }
    CHECK(nn_tensor_read(n.p[0], weight, 6 * 5 * 9 * sizeof(float)) == NN_OK);
    nn_tensor_free(kept);
    nn_capture_free(cap);
    nn_optimizer_free(opt);
    nn_ctx_free(ctx);
}

static void captured(const char *device) {
    float eager[4] = {0}, replayed[4] = {0}, w_eager[270] = {0}, w_replayed[270] = {0};
    train(device, false, eager, w_eager);
    train(device, true, replayed, w_replayed);
    CHECK_MSG(eager[3] != eager[0], "%s: the loss did not move", device);
    vkt_check_near_f32(replayed, eager, 4, 1e-5, "%s: captured channels-last steps' losses", device);
    vkt_check_near_f32(w_replayed, w_eager, 270, 1e-5, "%s: weights after captured channels-last steps", device);
}

TEST(channels_last_captured_steps_replay_eager_cpu) { captured("cpu"); }

TEST(channels_last_captured_steps_replay_eager_vulkan) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    captured("vulkan");
}

TEST(channels_last_graph_exports_to_onnx) {
    nn_ctx *ctx = vkt_open_device("cpu");
    nn_ctx_set_memory_format(ctx, NN_MEMORY_FORMAT_CHANNELS_LAST);
    net n = make_net(ctx);
    const int64_t xs[4] = {3, 5, 11, 9};
    nn_tensor *x = leaf(ctx, 4, xs, 500, 1.0f, true), *block;
    nn_ctx_set_grad_enabled(ctx, true);
    nn_tensor *out = forward(&n, x, &block);
    char path[] = "/tmp/nn_channels_last_XXXXXX";
    const int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
    CHECK_MSG(nn_onnx_export(path, x, out, NULL) == NN_OK, "export: %s", nn_last_error());
    remove(path);
    nn_ctx_free(ctx);
}
