/* The fused paths give the unfused results: LeNet-5 run through
 * nn_sequential with the fusion pass on (Conv2d/Linear + ReLU fused, ReLU
 * masks applied by the next layer, softmax-CE gradient taken from its
 * forward; on Vulkan the fused layer kernels) against the same network
 * spelled out op by op with fusion off (nn_ctx_set_fusion), on the CPU and
 * on Vulkan: the same loss and the same gradient of every parameter. Also the cases where fusion must step aside or accumulate: the
 * network run twice into one loss, a loss that is not nn_backward's root, a
 * ReLU that ends the container. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn_engine.h"
#include "reference.h"
#include "test.h"
#include "vulkan_harness.h"

#define BATCH 3

typedef struct grads {
    float loss;
    float *g[10];
    int64_t n[10];
} grads;

static void grads_free(grads *r) {
    for (int i = 0; i < 10; i++) free(r->g[i]);
}

/* mode 0: one forward, loss the root. 1: two forwards of the same input
 * into one loss (sum). 2: the loss scaled by 3 (not the root). */
static grads run(const char *device, bool fused, int mode) {
    grads r = {0};
    nn_ctx_options o = {.device = device, .threads = 2, .seed = 77};
    nn_ctx *ctx = nn_ctx_new(&o);
    if (!ctx) {
        CHECK_MSG(0, "nn_ctx_new(%s): %s", device, nn_last_error());
        return r;
    }
    nn_ctx_set_fusion(ctx, fused);
    nn_module *net = nn_lenet5(ctx, NN_INIT_KAIMING_UNIFORM);
    int64_t xs[4] = {BATCH, 1, 28, 28}, ys[1] = {BATCH};
    float img[BATCH * 784];
    vkt_fill(img, BATCH * 784, -1.0f, 1.0f, 4242);
    int32_t labels[BATCH] = {3, 9, 0};
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 4, xs, img);
    nn_tensor *y = nn_tensor_from_data(ctx, NN_I32, 1, ys, labels);
    nn_tensor *logits = fused ? nn_module_forward(net, x) : ref_lenet5_by_ops(net, x);
    nn_tensor *loss = nn_softmax_cross_entropy(logits, y);
    if (mode == 1) {
        nn_tensor *again = fused ? nn_module_forward(net, x) : ref_lenet5_by_ops(net, x);
        loss = nn_add(loss, nn_softmax_cross_entropy(again, y));
    } else if (mode == 2) {
        loss = nn_scale(loss, 3.0f);
    }
    CHECK(loss != NULL);
    CHECK(nn_backward(loss) == NN_OK);
    CHECK(nn_tensor_read(loss, &r.loss, sizeof r.loss) == NN_OK);
    for (int i = 0; i < 10; i++) {
        nn_tensor *g = nn_tensor_grad(nn_module_param(net, i));
        r.n[i] = nn_tensor_numel(nn_module_param(net, i));
        r.g[i] = calloc((size_t)r.n[i], sizeof(float));
        CHECK_MSG(g != NULL, "parameter %d has no gradient", i);
        if (g) CHECK(nn_tensor_read(g, r.g[i], (size_t)r.n[i] * sizeof(float)) == NN_OK);
    }
    nn_module_free(net);
    nn_ctx_free(ctx);
    return r;
}

static void compare(const grads *a, const grads *b, double tol, const char *what) {
    CHECK_MSG(fabs(a->loss - b->loss) <= tol * fmax(1.0, fabs(b->loss)), "%s: loss %.9g vs %.9g", what, a->loss,
              b->loss);
    for (int i = 0; i < 10; i++) {
        double max_abs = 0.0, max_diff = 0.0;
        for (int64_t j = 0; j < a->n[i]; j++) {
            max_abs = fmax(max_abs, fabs(b->g[i][j]));
            max_diff = fmax(max_diff, fabs(a->g[i][j] - b->g[i][j]));
        }
        CHECK_MSG(max_abs > 0.0, "%s: parameter %d has an all-zero gradient", what, i);
        CHECK_MSG(max_diff <= tol * fmax(1e-3, max_abs), "%s: parameter %d differs by %g (largest %g)", what, i,
                  max_diff, max_abs);
    }
}

static void fused_matches_unfused(const char *device, double tol) {
    static const char *modes[] = {"loss as root", "network run twice into one loss", "loss scaled (not root)"};
    for (int mode = 0; mode < 3; mode++) {
        grads f = run(device, true, mode), u = run(device, false, mode);
        char what[96];
        snprintf(what, sizeof what, "%s, %s", device, modes[mode]);
        if (f.g[0] && u.g[0]) compare(&f, &u, tol, what);
        grads_free(&f);
        grads_free(&u);
    }
    /* The scaled loss's gradients are 3x the root's. */
    grads root = run(device, true, 0), scaled = run(device, true, 2);
    if (root.g[0] && scaled.g[0]) {
        for (int i = 0; i < 10; i++)
            for (int64_t j = 0; j < root.n[i]; j++) root.g[i][j] *= 3.0f;
        root.loss *= 3.0f;
        compare(&scaled, &root, 1e-5, "scaled loss vs 3 x root");
    }
    grads_free(&root);
    grads_free(&scaled);
}

/* On the CPU the fused kernels do the same float operations in the same
 * order as the unfused ones. */
TEST(fusion_lenet_fused_equals_unfused_cpu) { fused_matches_unfused("cpu", 0.0); }

TEST(fusion_lenet_fused_equals_unfused_vulkan) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    fused_matches_unfused("vulkan", 1e-5);
}

/* A Linear + ReLU that ends the container: the ReLU output is the caller's,
 * so nothing may claim it; and a ReLU before a Flatten (not a mask taker). */
TEST(fusion_sequential_relu_at_end_and_before_flatten) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1, .seed = 3});
    nn_module *net = nn_sequential(ctx);
    CHECK(nn_sequential_append(net, "c", nn_conv2d_layer(ctx, 2, 3, 3, 1, 1, NN_INIT_KAIMING_UNIFORM)) == NN_OK);
    CHECK(nn_sequential_append(net, "r0", nn_relu_layer(ctx)) == NN_OK);
    CHECK(nn_sequential_append(net, "f", nn_flatten_layer(ctx)) == NN_OK);
    CHECK(nn_sequential_append(net, "l", nn_linear_layer(ctx, 3 * 5 * 5, 7, NN_INIT_KAIMING_UNIFORM)) == NN_OK);
    CHECK(nn_sequential_append(net, "r1", nn_relu_layer(ctx)) == NN_OK);
    int64_t xs[4] = {2, 2, 5, 5};
    float data[100];
    vkt_fill(data, 100, -1, 1, 9);
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 4, xs, data);
    nn_tensor_set_requires_grad(x, true);
    /* Fused, then op by op with the same parameters. */
    nn_tensor *out = nn_module_forward(net, x);
    nn_tensor *loss = nn_sum(nn_mul(out, out));
    CHECK(nn_backward(loss) == NN_OK);
    float g_fused[100], g_ref[100], out_f[14], out_r[14];
    CHECK(nn_tensor_read(nn_tensor_grad(x), g_fused, sizeof g_fused) == NN_OK);
    CHECK(nn_tensor_read(out, out_f, sizeof out_f) == NN_OK);
    nn_tensor_zero_grad(x);
    nn_tensor *h = nn_relu(nn_conv2d(x, nn_module_param(net, 0), nn_module_param(net, 1), 1, 1));
    nn_tensor *out2 = nn_relu(nn_linear(nn_flatten(h), nn_module_param(net, 2), nn_module_param(net, 3)));
    CHECK(nn_backward(nn_sum(nn_mul(out2, out2))) == NN_OK);
    CHECK(nn_tensor_read(nn_tensor_grad(x), g_ref, sizeof g_ref) == NN_OK);
    CHECK(nn_tensor_read(out2, out_r, sizeof out_r) == NN_OK);
    CHECK(memcmp(out_f, out_r, sizeof out_f) == 0);
    CHECK(memcmp(g_fused, g_ref, sizeof g_fused) == 0);
    double total = 0;
    for (int i = 0; i < 100; i++) total += fabs(g_ref[i]);
    CHECK(total > 0);
    nn_module_free(net);
    nn_ctx_free(ctx);
}

/* Softmax-CE on a leaf: the fused gradient is added to the leaf's running
 * sum (twice over two backward passes), never taken over as its tensor. */
TEST(fusion_softmax_ce_leaf_logits_accumulate) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1});
    float x[15];
    vkt_fill(x, 15, -3, 3, 17);
    int64_t xs[2] = {3, 5}, ys[1] = {3};
    int32_t labels[3] = {4, 0, 2};
    nn_tensor *logits = nn_tensor_from_data(ctx, NN_F32, 2, xs, x);
    nn_tensor *y = nn_tensor_from_data(ctx, NN_I32, 1, ys, labels);
    nn_tensor_set_requires_grad(logits, true);
    for (int pass = 1; pass <= 2; pass++) {
        CHECK(nn_backward(nn_softmax_cross_entropy(logits, y)) == NN_OK);
        float g[15];
        CHECK(nn_tensor_read(nn_tensor_grad(logits), g, sizeof g) == NN_OK);
        for (int r = 0; r < 3; r++) {
            double m = -1e30, sum = 0;
            for (int j = 0; j < 5; j++) m = fmax(m, x[r * 5 + j]);
            for (int j = 0; j < 5; j++) sum += exp(x[r * 5 + j] - m);
            for (int j = 0; j < 5; j++) {
                double want = pass * (exp(x[r * 5 + j] - m) / sum - (j == labels[r])) / 3.0;
                CHECK_CLOSE(g[r * 5 + j], want, 1e-6);
            }
        }
        CHECK(nn_ctx_step_end(ctx) == NN_OK);
    }
    nn_ctx_free(ctx);
}
