/* Conv2d -> ReLU -> MaxPool2d fused (kernels.h, nn_conv_pool_params;
 * src/fusion/conv_pool.c): the CPU kernels against double-precision loops, the
 * Vulkan kernels against the CPU, and the fused layers of nn_sequential
 * against the three layers op by op, on awkward geometries (odd sizes,
 * strides and padding, windows that drop rows, several image groups in the
 * weight gradient, accumulate on and off, an absent bias or weight
 * gradient).
 *
 * Inputs, weights and biases are small multiples of powers of two, so every
 * convolution output is exact in float whatever the order of its sums: the
 * pooled outputs must then match exactly, and the winners too, ties
 * included (the first maximum in row-major order wins). The gradients are
 * random floats and compared with a tolerance. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "conv_pool_reference.h"
#include "core/graph.h" /* whether the layers ran fused (a segment on the pooling's node) */
#include "nn_engine.h"
#include "test.h"
#include "vulkan_harness.h"

static const conv_pool_case kCases[] = {
    {3, 2, 11, 13, 4, 3, 3, 1, 1, 2},  /* padding; 11x13 output, a row and a column dropped */
    {2, 3, 10, 9, 5, 5, 3, 2, 2, 2},   /* stride 2, a non-square window */
    {1, 4, 7, 7, 5, 3, 3, 1, 0, 3},    /* 5x5 output, one 3x3 window */
    {5, 2, 9, 9, 3, 2, 2, 3, 1, 4},    /* stride 3, a 4x4 window */
    {37, 1, 28, 28, 6, 5, 5, 1, 0, 2}, /* LeNet-5's first layer: many image groups */
    {37, 6, 12, 12, 16, 5, 5, 1, 0, 2}, /* its second */
    {2, 1, 6, 6, 1, 1, 1, 1, 0, 1},    /* 1x1 everything */
    /* Enough outputs for Vulkan's two filters per invocation (an odd count
     * of them here), and weight-gradient groups of several rounds. */
    {40, 2, 30, 30, 5, 3, 3, 1, 1, 2},
    {64, 1, 28, 28, 6, 5, 5, 1, 0, 2},
    {400, 1, 28, 28, 6, 5, 5, 1, 0, 2}, /* more images than groups of one round */
};

/* ---- the CPU kernels against the reference ---- */

TEST(conv_pool_cpu_vs_double) {
    nn_backend *cpu = vkt_cpu();
    for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; i++) {
        for (int with_bias = 0; with_bias < 2; with_bias++) {
            nn_conv_pool_params p = conv_pool_params_of(&kCases[i], with_bias);
            const conv_pool_sizes s = conv_pool_sizes_of(&p);
            unsigned seed = 100 * (unsigned)i + 10 * (unsigned)with_bias;
            float *x = conv_pool_steps(s.x, 4.0f, seed), *w = conv_pool_steps(s.w, 8.0f, seed + 1);
            float *b = with_bias ? conv_pool_steps((size_t)p.conv.filters, 16.0f, seed + 2) : NULL;
            float *dy = conv_pool_randoms(s.y, seed + 3), *dw0 = conv_pool_randoms(s.w, seed + 4), *db0 = conv_pool_randoms((size_t)p.conv.filters, seed + 5);
            float *dx0 = conv_pool_randoms(s.x, seed + 6);
            conv_pool_reference r = conv_pool_reference_of(&p, x, w, b, dy);
            nn_buffer_ref none = {NULL, 0, 0};
            nn_buffer_ref fx = vkt_cpu_buffer(x, s.x), fw = vkt_cpu_buffer(w, s.w), fb = b ? vkt_cpu_buffer(b, (size_t)p.conv.filters) : none;
            nn_buffer_ref fy = vkt_cpu_buffer(NULL, s.y), fwin = vkt_cpu_buffer(NULL, s.y);
            nn_buffer_ref fwd[6] = {fx, fw, fb, fy, fwin, none};
            CHECK(cpu->run(cpu, NN_KERNEL_CONV2D_POOL_FORWARD, fwd, 6, &p) == NN_OK);
            float *y = malloc(s.y * 4 + 4);
            int32_t *winners = malloc(s.y * 4 + 4);
            vkt_cpu_read(fy, y, s.y);
            vkt_cpu_read(fwin, winners, s.y);
            vkt_check_near(y, r.y, s.y, 0.0, "case %zu y", i);
            CHECK_MSG(memcmp(winners, r.winners, s.y * 4) == 0, "case %zu: winners differ from the reference", i);
            for (int acc = 0; acc < 2; acc++) {
                p.conv.g.accumulate = acc;
                p.bias_accumulate = acc;
                nn_buffer_ref fdy = vkt_cpu_buffer(dy, s.y), fdw = vkt_cpu_buffer(dw0, s.w);
                nn_buffer_ref fdb = vkt_cpu_buffer(db0, (size_t)p.conv.filters), fdx = vkt_cpu_buffer(dx0, s.x);
                nn_buffer_ref wgt[6] = {fdy, fwin, fx, fdw, fdb, none}, dat[4] = {fdy, fwin, fw, fdx};
                CHECK(cpu->run(cpu, NN_KERNEL_CONV2D_POOL_BACKWARD_WEIGHT, wgt, 6, &p) == NN_OK);
                CHECK(cpu->run(cpu, NN_KERNEL_CONV2D_POOL_BACKWARD_DATA, dat, 4, &p) == NN_OK);
                float *got_w = malloc(s.w * 4 + 4), *got_b = malloc((size_t)p.conv.filters * 4 + 4), *got_x = malloc(s.x * 4 + 4);
                vkt_cpu_read(fdw, got_w, s.w);
                vkt_cpu_read(fdb, got_b, (size_t)p.conv.filters);
                vkt_cpu_read(fdx, got_x, s.x);
                double *want_w = malloc(s.w * 8 + 8), *want_b = malloc((size_t)p.conv.filters * 8 + 8), *want_x = malloc(s.x * 8 + 8);
                for (size_t j = 0; j < s.w; j++) want_w[j] = r.dw[j] + (acc ? dw0[j] : 0.0);
                for (int j = 0; j < p.conv.filters; j++) want_b[j] = r.db[j] + (acc ? db0[j] : 0.0);
                for (size_t j = 0; j < s.x; j++) want_x[j] = r.dx[j] + (acc ? dx0[j] : 0.0);
                /* Float sums of up to 57,600 terms (400 images) against double. */
                const char *added = acc ? " (accumulated)" : "";
                vkt_check_near(got_w, want_w, s.w, 5e-5, "case %zu dweight%s", i, added);
                vkt_check_near(got_b, want_b, (size_t)p.conv.filters, 5e-5, "case %zu dbias%s", i, added);
                vkt_check_near(got_x, want_x, s.x, 1e-5, "case %zu dx%s", i, added);
                free(got_w), free(got_b), free(got_x), free(want_w), free(want_b), free(want_x);
                cpu->free(cpu, fdy.buffer), cpu->free(cpu, fdw.buffer), cpu->free(cpu, fdb.buffer), cpu->free(cpu, fdx.buffer);
            }
            cpu->free(cpu, fx.buffer), cpu->free(cpu, fw.buffer), cpu->free(cpu, fy.buffer), cpu->free(cpu, fwin.buffer);
            if (fb.buffer) cpu->free(cpu, fb.buffer);
            conv_pool_reference_free(&r);
            free(x), free(w), free(b), free(dy), free(dw0), free(db0), free(dx0), free(y), free(winners);
        }
    }
}

/* Kernels refuse what they do not describe. */
TEST(conv_pool_kernels_refuse_bad_pooling) {
    nn_backend *cpu = vkt_cpu();
    nn_conv_pool_params p = conv_pool_params_of(&kCases[0], false);
    nn_buffer_ref none = {NULL, 0, 0}, args[6] = {none, none, none, none, none, none};
    CHECK(cpu->run(cpu, NN_KERNEL_CONV2D_POOL_FORWARD, args, 6, &p) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "buffer argument 0 is missing") != NULL);
    nn_buffer *held = cpu->alloc(cpu, 4096);
    for (int i = 0; i < 5; i++) args[i] = (nn_buffer_ref){held, 0, 0};
    p.pooled_h += 1; /* a window past the output */
    CHECK(cpu->run(cpu, NN_KERNEL_CONV2D_POOL_FORWARD, args, 6, &p) == NN_ERR_ARGUMENT);
    CHECK_MSG(strstr(nn_last_error(), "pooling") != NULL, "message: %s", nn_last_error());
    p = conv_pool_params_of(&kCases[0], false);
    args[3] = args[4] = none;
    CHECK(cpu->run(cpu, NN_KERNEL_CONV2D_POOL_BACKWARD_WEIGHT, args, 6, &p) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "neither dweight nor dbias") != NULL);
    cpu->free(cpu, held);
}

/* ---- Vulkan against the CPU ---- */

TEST(conv_pool_vulkan_vs_cpu) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; i++) {
        for (int variant = 0; variant < 3; variant++) { /* 0: all; 1: no bias; 2: bias gradient only */
            nn_conv_pool_params p = conv_pool_params_of(&kCases[i], variant != 1);
            const conv_pool_sizes s = conv_pool_sizes_of(&p);
            const size_t F = (size_t)p.conv.filters;
            unsigned seed = 500 + 10 * (unsigned)i + (unsigned)variant;
            float *x = conv_pool_steps(s.x, 4.0f, seed), *w = conv_pool_steps(s.w, 8.0f, seed + 1), *b = conv_pool_steps(F, 16.0f, seed + 2);
            float *dy = conv_pool_randoms(s.y, seed + 3), *dw0 = conv_pool_randoms(s.w, seed + 4), *db0 = conv_pool_randoms(F, seed + 5);
            float *dx0 = conv_pool_randoms(s.x, seed + 6);
            char what[96];
            vkt_pair fwd[6] = {vkt_pair_new(x, s.x, 12), vkt_pair_new(w, s.w, 4),
                               variant != 1 ? vkt_pair_new(b, F, 8) : vkt_pair_none(), vkt_pair_new(NULL, s.y, 16),
                               vkt_pair_new(NULL, s.y, 4), vkt_pair_none()};
            if (vkt_run(NN_KERNEL_CONV2D_POOL_FORWARD, fwd, 6, &p)) {
                snprintf(what, sizeof what, "conv_pool case %zu variant %d y", i, variant);
                vkt_compare_f32(&fwd[3], 0.0, what);
                snprintf(what, sizeof what, "conv_pool case %zu variant %d winners", i, variant);
                vkt_compare_i32(&fwd[4], what);
            }
            for (int acc = 0; acc < 2; acc++) {
                p.conv.g.accumulate = acc;
                p.bias_accumulate = 1 - acc; /* the two flags apart */
                vkt_pair wgt[6] = {vkt_pair_new(dy, s.y, 4), fwd[4], fwd[0],
                                   variant == 2 ? vkt_pair_none() : vkt_pair_new(dw0, s.w, 8),
                                   variant == 1 ? vkt_pair_none() : vkt_pair_new(db0, F, 4), vkt_pair_none()};
                vkt_pair dat[4] = {wgt[0], fwd[4], fwd[1], vkt_pair_new(dx0, s.x, 4)};
                if (vkt_run(NN_KERNEL_CONV2D_POOL_BACKWARD_WEIGHT, wgt, 6, &p)) {
                    snprintf(what, sizeof what, "conv_pool case %zu variant %d accumulate %d dweight", i, variant, acc);
                    /* Sums of up to 9,216 terms in float against the CPU's: 1e-4. */
                    if (wgt[3].cpu) vkt_compare_f32(&wgt[3], 1e-4, what);
                    snprintf(what, sizeof what, "conv_pool case %zu variant %d accumulate %d dbias", i, variant, acc);
                    if (wgt[4].cpu) vkt_compare_f32(&wgt[4], 1e-4, what);
                }
                if (vkt_run(NN_KERNEL_CONV2D_POOL_BACKWARD_DATA, dat, 4, &p)) {
                    snprintf(what, sizeof what, "conv_pool case %zu variant %d accumulate %d dx", i, variant, acc);
                    vkt_compare_f32(&dat[3], 2e-5, what);
                }
                vkt_pair_free(&wgt[0]), vkt_pair_free(&wgt[3]), vkt_pair_free(&wgt[4]), vkt_pair_free(&dat[3]);
            }
            for (int j = 0; j < 5; j++) vkt_pair_free(&fwd[j]);
            free(x), free(w), free(b), free(dy), free(dw0), free(db0), free(dx0);
            if (nn_test_failures()) return;
        }
    }
}

/* ---- the fused layers against the layers op by op ---- */

/* Conv2d(channels -> filters) + ReLU + MaxPool2d as the container runs
 * them (fused where the backend has the kernels: Vulkan), x requiring its
 * gradient, against nn_conv2d -> nn_relu -> nn_maxpool2d with fusion off,
 * on the same parameters: outputs and every gradient, twice into the same
 * gradients (the second pass accumulates). */
static void sequential_matches_ops(const char *device, const conv_pool_case *c, double tol) {
    nn_ctx_options o = {.device = device, .threads = 2, .seed = 11};
    nn_ctx *ctx = nn_ctx_new(&o);
    if (!ctx) {
        CHECK_MSG(0, "nn_ctx_new(%s): %s", device, nn_last_error());
        return;
    }
    nn_module *net = nn_sequential(ctx);
    CHECK(nn_sequential_append(net, "conv", nn_conv2d_layer(ctx, c->channels, c->filters, c->kernel_h, c->stride,
                                                             c->pad, NN_INIT_KAIMING_UNIFORM)) == NN_OK);
    CHECK(nn_sequential_append(net, "relu", nn_relu_layer(ctx)) == NN_OK);
    CHECK(nn_sequential_append(net, "pool", nn_maxpool2d_layer(ctx, c->pool, c->pool)) == NN_OK);
    int64_t xs[4] = {c->batch, c->channels, c->height, c->width};
    size_t nx = (size_t)(xs[0] * xs[1] * xs[2] * xs[3]);
    float *data = conv_pool_randoms(nx, 77);
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 4, xs, data);
    nn_tensor_set_requires_grad(x, true);
    nn_tensor *w = nn_module_param(net, 0), *b = nn_module_param(net, 1);
    float *got[2][3] = {{0}}, *out[2] = {0};
    size_t counts[3] = {nx, (size_t)nn_tensor_numel(w), (size_t)nn_tensor_numel(b)};
    size_t ny = 0;
    for (int fused = 0; fused < 2; fused++) {
        nn_ctx_set_fusion(ctx, fused);
        nn_tensor *grads[3] = {x, w, b};
        for (int t = 0; t < 3; t++) nn_tensor_zero_grad(grads[t]);
        for (int pass = 0; pass < 2; pass++) {
            nn_tensor *y = !fused ? nn_maxpool2d(nn_relu(nn_conv2d(x, w, b, c->stride, c->pad)), c->pool, c->pool)
                                  : nn_module_forward(net, x);
            CHECK_MSG(y != NULL, "%s forward: %s", device, nn_last_error());
            if (!y) return;
            ny = (size_t)nn_tensor_numel(y);
            float *r = conv_pool_randoms(ny, 99);
            int64_t ys[NN_MAX_DIMS];
            int ndim = nn_tensor_shape(y, ys);
            nn_tensor *weights = nn_tensor_from_data(ctx, NN_F32, ndim, ys, r);
            nn_tensor *loss = nn_sum(nn_mul(y, weights));
            CHECK(nn_ctx_flush(ctx, NULL) == NN_OK);
            const bool ran_fused = y->grad_fn && y->grad_fn->segment;
            CHECK_MSG(ran_fused == (fused && strcmp(device, "vulkan") == 0), "%s: the layers ran %s", device,
                      ran_fused ? "fused" : "apart");
            CHECK(nn_backward(loss) == NN_OK);
            if (pass == 1) {
                out[fused] = malloc(ny * 4);
                CHECK(nn_tensor_read(y, out[fused], ny * 4) == NN_OK);
            }
            free(r);
        }
        for (int t = 0; t < 3; t++) {
            got[fused][t] = malloc(counts[t] * 4);
            CHECK(nn_tensor_read(nn_tensor_grad(grads[t]), got[fused][t], counts[t] * 4) == NN_OK);
        }
        CHECK(nn_ctx_step_end(ctx) == NN_OK);
    }
    static const char *names[3] = {"dx", "dweight", "dbias"};
    vkt_check_near_f32(out[1], out[0], ny, tol, "%s: y fused (want: unfused)", device);
    for (int t = 0; t < 3; t++) {
        vkt_check_near_f32(got[1][t], got[0][t], counts[t], tol, "%s: %s fused (want: unfused)", device, names[t]);
        free(got[0][t]), free(got[1][t]);
    }
    free(out[0]), free(out[1]), free(data);
    nn_module_free(net);
    nn_ctx_free(ctx);
}

TEST(conv_pool_sequential_equals_layers_cpu) {
    for (size_t i = 0; i < 4; i++) sequential_matches_ops("cpu", &kCases[i], 0.0); /* the same kernels: exact */
}

TEST(conv_pool_sequential_equals_layers_vulkan) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    for (size_t i = 0; i < 4; i++) sequential_matches_ops("vulkan", &kCases[i], 2e-5);
}
