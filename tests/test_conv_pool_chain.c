/* Two fused Conv2d -> ReLU -> MaxPool2d layers in a row, whose backward
 * chains (NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT: the first layer's weight and
 * bias gradients from the second's pooled gradient, the gradient between
 * them never in memory): the CPU kernel against double-precision loops
 * (the second layer's data gradient, then the first's weight gradient), the
 * Vulkan kernel against the CPU's, on pairs of awkward geometries (padding
 * and strides in either layer, odd planes, a last filter block shorter than
 * the others, final sums in one level and in two over blocks that do not
 * split the batch evenly, one image), with
 * accumulate on and off and an absent weight or bias gradient; its
 * refusals; and nn_sequential's LeNet-like container, whose backward takes
 * it, against the layers op by op.
 *
 * Inputs and weights are small multiples of powers of two (exact forward
 * passes, so both backends pick the same winners); the gradients are random
 * floats, compared with a tolerance. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "conv_pool_reference.h"
#include "nn_engine.h"
#include "test.h"
#include "vulkan_harness.h"

typedef struct chain_case {
    conv_pool_case first;
    int filters, kernel, stride, pad, pool; /* the second layer, on the first's pooled output */
} chain_case;

static const chain_case kChains[] = {
    {{37, 1, 28, 28, 6, 5, 5, 1, 0, 2}, 16, 5, 1, 0, 2}, /* LeNet-5's two layers */
    {{64, 1, 28, 28, 6, 5, 5, 1, 0, 2}, 16, 5, 1, 0, 2}, /* ... at the benchmark's batch: one final sum */
    {{67, 1, 28, 28, 6, 5, 5, 1, 0, 2}, 16, 5, 1, 0, 2}, /* two: blocks of 9 images, the last of 4 */
    {{1, 1, 28, 28, 6, 5, 5, 1, 0, 2}, 16, 5, 1, 0, 2},  /* one image */
    {{5, 2, 13, 11, 3, 3, 3, 1, 1, 2}, 4, 3, 1, 1, 2},   /* padding in both; a 6x5 plane between them */
    {{3, 3, 17, 15, 5, 3, 3, 2, 1, 2}, 7, 2, 1, 0, 3},   /* stride 2 first; filter blocks of 3 and 2 */
    {{4, 2, 16, 16, 4, 3, 3, 1, 0, 2}, 3, 3, 2, 1, 2},   /* stride 2 in the second */
};

static nn_conv_pool_chain_params chain_params_of(const chain_case *c, bool bias) {
    nn_conv_pool_chain_params p = {.first = conv_pool_params_of(&c->first, bias)};
    const conv_pool_case second = {c->first.batch, c->first.filters, p.first.pooled_h, p.first.pooled_w,
                                   c->filters, c->kernel, c->kernel, c->stride, c->pad, c->pool};
    p.second = conv_pool_params_of(&second, bias);
    return p;
}

/* One case's inputs: the two layers' weights and biases, the first's
 * input, the second's output gradient, and what the gradients held before
 * (for accumulate). */
typedef struct chain_inputs {
    conv_pool_sizes s1, s2;
    float *x, *w1, *b1, *w2, *b2, *dy2, *dw0, *db0;
} chain_inputs;

static chain_inputs inputs_of(const nn_conv_pool_chain_params *p, unsigned seed) {
    chain_inputs in = {.s1 = conv_pool_sizes_of(&p->first), .s2 = conv_pool_sizes_of(&p->second)};
    const size_t f1 = (size_t)p->first.conv.filters, f2 = (size_t)p->second.conv.filters;
    in.x = conv_pool_steps(in.s1.x, 4.0f, seed);
    in.w1 = conv_pool_steps(in.s1.w, 8.0f, seed + 1);
    in.b1 = conv_pool_steps(f1, 16.0f, seed + 2);
    in.w2 = conv_pool_steps(in.s2.w, 8.0f, seed + 3);
    in.b2 = conv_pool_steps(f2, 16.0f, seed + 4);
    in.dy2 = conv_pool_randoms(in.s2.y, seed + 5);
    in.dw0 = conv_pool_randoms(in.s1.w, seed + 6);
    in.db0 = conv_pool_randoms(f1, seed + 7);
    return in;
}

static void inputs_free(chain_inputs *in) {
    free(in->x), free(in->w1), free(in->b1), free(in->w2), free(in->b2), free(in->dy2), free(in->dw0), free(in->db0);
}

TEST(conv_pool_chain_cpu_vs_double) {
    nn_backend *cpu = vkt_cpu();
    const nn_buffer_ref none = {NULL, 0, 0};
    for (size_t i = 0; i < sizeof kChains / sizeof kChains[0]; i++) {
        nn_conv_pool_chain_params p = chain_params_of(&kChains[i], true);
        chain_inputs in = inputs_of(&p, 300 + 10 * (unsigned)i);
        const size_t f1 = (size_t)p.first.conv.filters, f2 = (size_t)p.second.conv.filters;
        /* The forwards, on the CPU (the winners the chain reads). */
        nn_buffer_ref fx = vkt_cpu_buffer(in.x, in.s1.x), fw1 = vkt_cpu_buffer(in.w1, in.s1.w);
        nn_buffer_ref fb1 = vkt_cpu_buffer(in.b1, f1), fy1 = vkt_cpu_buffer(NULL, in.s1.y);
        nn_buffer_ref fwin1 = vkt_cpu_buffer(NULL, in.s1.y), fw2 = vkt_cpu_buffer(in.w2, in.s2.w);
        nn_buffer_ref fb2 = vkt_cpu_buffer(in.b2, f2), fy2 = vkt_cpu_buffer(NULL, in.s2.y);
        nn_buffer_ref fwin2 = vkt_cpu_buffer(NULL, in.s2.y), fdy2 = vkt_cpu_buffer(in.dy2, in.s2.y);
        nn_buffer_ref first[6] = {fx, fw1, fb1, fy1, fwin1, none}, second[6] = {fy1, fw2, fb2, fy2, fwin2, none};
        CHECK(cpu->run(cpu, NN_KERNEL_CONV2D_POOL_FORWARD, first, 6, &p.first) == NN_OK);
        CHECK(cpu->run(cpu, NN_KERNEL_CONV2D_POOL_FORWARD, second, 6, &p.second) == NN_OK);
        /* The reference: the second layer's input gradient in double, then
         * the first layer's weight gradient from it (rounded to float, as
         * the kernels hold it). */
        float *y1 = malloc(in.s1.y * 4 + 4), *dy1 = malloc(in.s1.y * 4 + 4);
        vkt_cpu_read(fy1, y1, in.s1.y);
        conv_pool_reference r2 = conv_pool_reference_of(&p.second, y1, in.w2, in.b2, in.dy2);
        for (size_t j = 0; j < in.s1.y; j++) dy1[j] = (float)r2.dx[j];
        conv_pool_reference r1 = conv_pool_reference_of(&p.first, in.x, in.w1, in.b1, dy1);
        for (int acc = 0; acc < 2; acc++) {
            p.first.conv.g.accumulate = acc;
            p.first.bias_accumulate = 1 - acc; /* the two flags apart */
            nn_buffer_ref fdw = vkt_cpu_buffer(in.dw0, in.s1.w), fdb = vkt_cpu_buffer(in.db0, f1);
            nn_buffer_ref args[7] = {fdy2, fwin2, fw2, fwin1, fx, fdw, fdb};
            CHECK(cpu->run(cpu, NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT, args, 7, &p) == NN_OK);
            float *got_w = malloc(in.s1.w * 4 + 4), *got_b = malloc(f1 * 4 + 4);
            double *want_w = malloc(in.s1.w * 8 + 8), *want_b = malloc(f1 * 8 + 8);
            vkt_cpu_read(fdw, got_w, in.s1.w);
            vkt_cpu_read(fdb, got_b, f1);
            for (size_t j = 0; j < in.s1.w; j++) want_w[j] = r1.dw[j] + (acc ? in.dw0[j] : 0.0);
            for (size_t j = 0; j < f1; j++) want_b[j] = r1.db[j] + (acc ? 0.0 : in.db0[j]);
            vkt_check_near(got_w, want_w, in.s1.w, 5e-5, "chain case %zu accumulate %d dweight", i, acc);
            vkt_check_near(got_b, want_b, f1, 5e-5, "chain case %zu accumulate %d dbias", i, acc);
            free(got_w), free(got_b), free(want_w), free(want_b);
            cpu->free(cpu, fdw.buffer), cpu->free(cpu, fdb.buffer);
        }
        nn_buffer_ref used[10] = {fx, fw1, fb1, fy1, fwin1, fw2, fb2, fy2, fwin2, fdy2};
        for (int j = 0; j < 10; j++) cpu->free(cpu, used[j].buffer);
        conv_pool_reference_free(&r1), conv_pool_reference_free(&r2);
        free(y1), free(dy1);
        inputs_free(&in);
    }
}

/* Layers that do not meet, and a call with nothing to write, are refused
 * by name on both backends (before any buffer is read). */
TEST(conv_pool_chain_refuses_bad_calls) {
    nn_backend *backends[2] = {vkt_cpu(), NULL};
    if (!vkt_skipped()) backends[1] = vkt_vulkan();
    for (int b = 0; b < 2 && backends[b]; b++) {
        nn_backend *be = backends[b];
        nn_buffer *any = be->alloc(be, 64);
        CHECK(any != NULL);
        if (!any) return;
        const nn_buffer_ref given = {any, 0, 0}, none = {NULL, 0, 0};
        nn_buffer_ref args[7] = {given, given, given, given, given, none, none};
        nn_conv_pool_chain_params p = chain_params_of(&kChains[3], true);
        p.second.conv.g.channels += 1; /* not the first layer's filters */
        CHECK(be->run(be, NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT, args, 7, &p) == NN_ERR_ARGUMENT);
        CHECK_MSG(strstr(nn_last_error(), "is not the second's input") != NULL, "%s", nn_last_error());
        p = chain_params_of(&kChains[3], true);
        CHECK(be->run(be, NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT, args, 7, &p) == NN_ERR_ARGUMENT);
        CHECK_MSG(strstr(nn_last_error(), "neither dweight nor dbias") != NULL, "%s", nn_last_error());
        be->free(be, any);
    }
}

TEST(conv_pool_chain_vulkan_vs_cpu) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    for (size_t i = 0; i < sizeof kChains / sizeof kChains[0]; i++) {
        for (int variant = 0; variant < 3; variant++) { /* 0: both gradients; 1: the weight's; 2: the bias's */
            nn_conv_pool_chain_params p = chain_params_of(&kChains[i], true);
            chain_inputs in = inputs_of(&p, 700 + 10 * (unsigned)i + (unsigned)variant);
            const size_t f1 = (size_t)p.first.conv.filters, f2 = (size_t)p.second.conv.filters;
            vkt_pair x = vkt_pair_new(in.x, in.s1.x, 12), w1 = vkt_pair_new(in.w1, in.s1.w, 4);
            vkt_pair b1 = vkt_pair_new(in.b1, f1, 8), y1 = vkt_pair_new(NULL, in.s1.y, 16);
            vkt_pair win1 = vkt_pair_new(NULL, in.s1.y, 4), w2 = vkt_pair_new(in.w2, in.s2.w, 8);
            vkt_pair b2 = vkt_pair_new(in.b2, f2, 4), y2 = vkt_pair_new(NULL, in.s2.y, 4);
            vkt_pair win2 = vkt_pair_new(NULL, in.s2.y, 12), dy2 = vkt_pair_new(in.dy2, in.s2.y, 4);
            vkt_pair first[6] = {x, w1, b1, y1, win1, vkt_pair_none()};
            vkt_pair second[6] = {y1, w2, b2, y2, win2, vkt_pair_none()};
            char what[96];
            bool ran = vkt_run(NN_KERNEL_CONV2D_POOL_FORWARD, first, 6, &p.first) &&
                       vkt_run(NN_KERNEL_CONV2D_POOL_FORWARD, second, 6, &p.second);
            snprintf(what, sizeof what, "chain case %zu: second layer's winners", i);
            if (ran) vkt_compare_i32(&win2, what);
            for (int acc = 0; acc < 2 && ran; acc++) {
                p.first.conv.g.accumulate = acc;
                p.first.bias_accumulate = 1 - acc;
                vkt_pair dw = variant == 2 ? vkt_pair_none() : vkt_pair_new(in.dw0, in.s1.w, 8);
                vkt_pair db = variant == 1 ? vkt_pair_none() : vkt_pair_new(in.db0, f1, 4);
                vkt_pair args[7] = {dy2, win2, w2, win1, x, dw, db};
                if (vkt_run(NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT, args, 7, &p)) {
                    /* Float sums over up to 9,216 terms each way, in different orders. */
                    snprintf(what, sizeof what, "chain case %zu variant %d accumulate %d dweight", i, variant, acc);
                    if (dw.cpu) vkt_compare_f32(&args[5], 1e-4, what);
                    snprintf(what, sizeof what, "chain case %zu variant %d accumulate %d dbias", i, variant, acc);
                    if (db.cpu) vkt_compare_f32(&args[6], 1e-4, what);
                }
                vkt_pair_free(&dw), vkt_pair_free(&db);
            }
            vkt_pair used[10] = {x, w1, b1, y1, win1, w2, b2, y2, win2, dy2};
            for (int j = 0; j < 10; j++) vkt_pair_free(&used[j]);
            inputs_free(&in);
            if (nn_test_failures()) return;
        }
    }
}

/* ---- nn_sequential: the container's backward against the layers op by op ---- */

/* Conv2d(1 -> 6, 5), ReLU, MaxPool2d(2), Conv2d(6 -> 16, 5), ReLU,
 * MaxPool2d(2) on 7 images (LeNet-5's layers), their parameters' gradients
 * after two backward passes into the same gradients, the container against
 * nn_conv2d -> nn_relu -> nn_maxpool2d twice on the same parameters. With x
 * wanting its gradient too the chain is not taken (x's gradient needs the
 * first layer's data gradient, and so the gradient between the layers);
 * compared as well. */
static void container_matches_ops(bool x_grad) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "vulkan", .threads = 2, .seed = 5});
    CHECK_MSG(ctx != NULL, "nn_ctx_new(vulkan): %s", nn_last_error());
    if (!ctx) return;
    nn_module *net = nn_sequential(ctx);
    CHECK(nn_sequential_append(net, "c1", nn_conv2d_layer(ctx, 1, 6, 5, 1, 0, NN_INIT_KAIMING_UNIFORM)) == NN_OK);
    CHECK(nn_sequential_append(net, "r1", nn_relu_layer(ctx)) == NN_OK);
    CHECK(nn_sequential_append(net, "p1", nn_maxpool2d_layer(ctx, 2, 2)) == NN_OK);
    CHECK(nn_sequential_append(net, "c2", nn_conv2d_layer(ctx, 6, 16, 5, 1, 0, NN_INIT_KAIMING_UNIFORM)) == NN_OK);
    CHECK(nn_sequential_append(net, "r2", nn_relu_layer(ctx)) == NN_OK);
    CHECK(nn_sequential_append(net, "p2", nn_maxpool2d_layer(ctx, 2, 2)) == NN_OK);
    const int64_t xs[4] = {7, 1, 28, 28};
    float *data = conv_pool_randoms(7 * 28 * 28, 41);
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 4, xs, data);
    nn_tensor_set_requires_grad(x, x_grad);
    nn_tensor *t[5] = {nn_module_param(net, 0), nn_module_param(net, 1), nn_module_param(net, 2),
                       nn_module_param(net, 3), x};
    const int tensors = x_grad ? 5 : 4;
    float *got[2][5] = {{0}};
    for (int by_ops = 0; by_ops < 2; by_ops++) {
        for (int k = 0; k < tensors; k++) nn_tensor_zero_grad(t[k]);
        for (int pass = 0; pass < 2; pass++) {
            nn_tensor *y = by_ops ? nn_maxpool2d(nn_relu(nn_conv2d(nn_maxpool2d(nn_relu(nn_conv2d(x, t[0], t[1], 1, 0)),
                                                                               2, 2),
                                                                  t[2], t[3], 1, 0)),
                                                 2, 2)
                                  : nn_module_forward(net, x);
            CHECK_MSG(y != NULL, "forward: %s", nn_last_error());
            if (!y) return;
            int64_t ys[NN_MAX_DIMS];
            int ndim = nn_tensor_shape(y, ys);
            float *r = conv_pool_randoms((size_t)nn_tensor_numel(y), 43 + (unsigned)pass);
            nn_tensor *weights = nn_tensor_from_data(ctx, NN_F32, ndim, ys, r);
            CHECK(nn_backward(nn_sum(nn_mul(y, weights))) == NN_OK);
            free(r);
        }
        for (int k = 0; k < tensors; k++) {
            size_t n = (size_t)nn_tensor_numel(t[k]);
            got[by_ops][k] = malloc(n * 4);
            CHECK(nn_tensor_read(nn_tensor_grad(t[k]), got[by_ops][k], n * 4) == NN_OK);
        }
        CHECK(nn_ctx_step_end(ctx) == NN_OK);
    }
    static const char *names[5] = {"conv1 weight", "conv1 bias", "conv2 weight", "conv2 bias", "x"};
    for (int k = 0; k < tensors; k++) {
        vkt_check_near_f32(got[0][k], got[1][k], (size_t)nn_tensor_numel(t[k]), 2e-5,
                           "x %s: %s gradient, container (want: layers op by op)", x_grad ? "with" : "without",
                           names[k]);
        free(got[0][k]), free(got[1][k]);
    }
    free(data);
    nn_module_free(net);
    nn_ctx_free(ctx);
}

TEST(conv_pool_chain_container_equals_layers_vulkan) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    container_matches_ops(false);
    container_matches_ops(true);
}
