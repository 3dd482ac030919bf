/* A fused Conv2d -> ReLU -> MaxPool2d with the Linear on its flattened
 * output in the same forward kernel (NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD):
 * the CPU kernel against double-precision loops, the Vulkan kernel against
 * the CPU's, on geometries that take each of the Vulkan kernel's shapes
 * (one workgroup per image; several, one or two filters per invocation,
 * adding their partial dot products), a Linear of more rows than one pass
 * holds, weights that are and are not whole 16-byte quads, with and without
 * biases and the ReLU; its refusals; and nn_sequential's container, whose
 * forward takes it, against the layers op by op.
 *
 * Inputs and convolution weights are small multiples of powers of two
 * (exact forward passes, so both backends pick the same winners); the
 * Linear's weights are random floats, compared with a tolerance. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "conv_pool_reference.h"
#include "nn_engine.h"
#include "test.h"
#include "vulkan_harness.h"

typedef struct linear_case {
    conv_pool_case conv;
    int out_features;
} linear_case;

static const linear_case kCases[] = {
    {{7, 6, 12, 12, 16, 5, 5, 1, 0, 2}, 120},   /* LeNet-5's second convolution and first Linear */
    {{64, 6, 12, 12, 16, 5, 5, 1, 0, 2}, 120},  /* ... at the benchmark's batch */
    {{5, 2, 14, 14, 9, 3, 3, 1, 1, 2}, 13},     /* 441 features: four workgroups per image; rows not in quads */
    {{64, 3, 8, 8, 40, 5, 5, 1, 2, 2}, 7},      /* two filters per invocation, three workgroups per image */
    {{40, 1, 12, 12, 24, 3, 3, 1, 1, 2}, 31},   /* two would split a 6x6 block: one filter per invocation */
    {{3, 2, 9, 11, 4, 3, 3, 2, 0, 2}, 130},     /* stride 2, odd planes; 130 rows: two passes */
    {{1, 1, 6, 6, 1, 3, 3, 1, 0, 4}, 1},        /* one image, filter, feature and output */
};

typedef struct linear_inputs {
    conv_pool_sizes s;
    size_t in, h; /* the Linear's input features, its output entries */
    float *x, *w, *b, *lw, *lb;
} linear_inputs;

static nn_conv_pool_linear_params params_of(const linear_case *c, bool conv_bias, bool lin_bias, bool relu) {
    nn_conv_pool_linear_params p = {.conv_pool = conv_pool_params_of(&c->conv, conv_bias),
                                    .out_features = c->out_features};
    p.epilogue = (lin_bias ? NN_EPI_BIAS_COLS : 0) | (relu ? NN_EPI_RELU : 0);
    return p;
}

static linear_inputs inputs_of(const nn_conv_pool_linear_params *p, unsigned seed) {
    linear_inputs in = {.s = conv_pool_sizes_of(&p->conv_pool)};
    const nn_conv_pool_params *c = &p->conv_pool;
    in.in = (size_t)c->conv.filters * c->pooled_h * c->pooled_w;
    in.h = (size_t)c->conv.g.batch * p->out_features;
    in.x = conv_pool_steps(in.s.x, 4.0f, seed);
    in.w = conv_pool_steps(in.s.w, 8.0f, seed + 1);
    in.b = conv_pool_steps((size_t)c->conv.filters, 16.0f, seed + 2);
    /* As Linear initialises them, so the outputs stay near 1. */
    const float bound = 1.0f / sqrtf((float)in.in);
    in.lw = vkt_randoms(in.in * (size_t)p->out_features, -bound, bound, seed + 3);
    in.lb = vkt_randoms((size_t)p->out_features, -bound, bound, seed + 4);
    return in;
}

static void inputs_free(linear_inputs *in) { free(in->x), free(in->w), free(in->b), free(in->lw), free(in->lb); }

/* The Linear's output in double from the layer's pooled output y. */
static double *linear_reference(const nn_conv_pool_linear_params *p, const linear_inputs *in, const double *y) {
    const size_t batch = (size_t)p->conv_pool.conv.g.batch, outs = (size_t)p->out_features;
    double *h = malloc(in->h * sizeof(double) + 8);
    for (size_t n = 0; n < batch; n++)
        for (size_t o = 0; o < outs; o++) {
            double s = (p->epilogue & NN_EPI_BIAS_COLS) ? in->lb[o] : 0.0;
            for (size_t f = 0; f < in->in; f++) s += y[n * in->in + f] * (double)in->lw[o * in->in + f];
            h[n * outs + o] = (p->epilogue & NN_EPI_RELU) && s < 0.0 ? 0.0 : s;
        }
    return h;
}

TEST(conv_pool_linear_cpu_vs_double) {
    nn_backend *cpu = vkt_cpu();
    for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; i++)
        for (int variant = 0; variant < 2; variant++) { /* 0: biases and the ReLU; 1: none of them */
            nn_conv_pool_linear_params p = params_of(&kCases[i], !variant, !variant, !variant);
            linear_inputs in = inputs_of(&p, 100 + 10 * (unsigned)i + (unsigned)variant);
            const size_t filters = (size_t)p.conv_pool.conv.filters, outs = (size_t)p.out_features;
            const nn_buffer_ref none = {NULL, 0, 0};
            nn_buffer_ref args[8] = {vkt_cpu_buffer(in.x, in.s.x), vkt_cpu_buffer(in.w, in.s.w),
                                     variant ? none : vkt_cpu_buffer(in.b, filters), vkt_cpu_buffer(NULL, in.s.y),
                                     vkt_cpu_buffer(NULL, in.s.y), vkt_cpu_buffer(in.lw, in.in * outs),
                                     variant ? none : vkt_cpu_buffer(in.lb, outs), vkt_cpu_buffer(NULL, in.h)};
            CHECK(cpu->run(cpu, NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD, args, 8, &p) == NN_OK);
            conv_pool_reference r = conv_pool_reference_of(&p.conv_pool, in.x, in.w, variant ? NULL : in.b, NULL);
            double *want_h = linear_reference(&p, &in, r.y);
            int32_t *winners = malloc(in.s.y * 4 + 4);
            vkt_cpu_read(args[4], winners, in.s.y);
            CHECK_MSG(memcmp(winners, r.winners, in.s.y * 4) == 0, "case %zu variant %d: winners differ", i,
                      variant);
            vkt_check_cpu_near(args[3], r.y, in.s.y, 1e-6, "case %zu variant %d: y", i, variant);
            vkt_check_cpu_near(args[7], want_h, in.h, 1e-5, "case %zu variant %d: h", i, variant);
            free(want_h), free(winners);
            conv_pool_reference_free(&r);
            for (int j = 0; j < 8; j++)
                if (args[j].buffer) cpu->free(cpu, args[j].buffer);
            inputs_free(&in);
        }
}

TEST(conv_pool_linear_vulkan_vs_cpu) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; i++)
        for (int variant = 0; variant < 4; variant++) {
            /* 0: all; 1: no biases; 2: no ReLU; 3: the Linear's weights off their 16-byte quads */
            nn_conv_pool_linear_params p = params_of(&kCases[i], variant != 1, variant != 1, variant != 2);
            linear_inputs in = inputs_of(&p, 500 + 10 * (unsigned)i + (unsigned)variant);
            const size_t filters = (size_t)p.conv_pool.conv.filters, outs = (size_t)p.out_features;
            vkt_pair args[8] = {vkt_pair_new(in.x, in.s.x, 12),
                                vkt_pair_new(in.w, in.s.w, 4),
                                variant == 1 ? vkt_pair_none() : vkt_pair_new(in.b, filters, 8),
                                vkt_pair_new(NULL, in.s.y, 16),
                                vkt_pair_new(NULL, in.s.y, 4),
                                vkt_pair_new(in.lw, in.in * outs, variant == 3 ? 4 : 16),
                                variant == 1 ? vkt_pair_none() : vkt_pair_new(in.lb, outs, 12),
                                vkt_pair_new(NULL, in.h, 8)};
            if (vkt_run(NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD, args, 8, &p)) {
                char what[96];
                snprintf(what, sizeof what, "case %zu variant %d: winners", i, variant);
                vkt_compare_i32(&args[4], what);
                snprintf(what, sizeof what, "case %zu variant %d: y", i, variant);
                vkt_compare_f32(&args[3], 1e-6, what);
                /* Float dot products of up to 640 terms, in other orders. */
                snprintf(what, sizeof what, "case %zu variant %d: h", i, variant);
                vkt_compare_f32(&args[7], 2e-5, what);
            }
            for (int j = 0; j < 8; j++) vkt_pair_free(&args[j]);
            inputs_free(&in);
            if (nn_test_failures()) return;
        }
}

/* No output, an epilogue other than bias and ReLU, and a bias epilogue
 * without the bias are refused by name on both backends. */
TEST(conv_pool_linear_refuses_bad_calls) {
    nn_backend *backends[2] = {vkt_cpu(), NULL};
    if (!vkt_skipped()) backends[1] = vkt_vulkan();
    for (int b = 0; b < 2 && backends[b]; b++) {
        nn_backend *be = backends[b];
        nn_buffer *any = be->alloc(be, 4096);
        CHECK(any != NULL);
        if (!any) return;
        const nn_buffer_ref given = {any, 0, 0}, none = {NULL, 0, 0};
        nn_buffer_ref args[8] = {given, given, given, given, given, given, none, given};
        nn_conv_pool_linear_params p = params_of(&kCases[6], true, true, true);
        p.out_features = 0;
        CHECK(be->run(be, NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD, args, 8, &p) == NN_ERR_ARGUMENT);
        CHECK_MSG(strstr(nn_last_error(), "out_features must be >= 1") != NULL, "%s", nn_last_error());
        p = params_of(&kCases[6], true, true, true);
        p.epilogue |= NN_EPI_MASK;
        CHECK(be->run(be, NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD, args, 8, &p) == NN_ERR_ARGUMENT);
        CHECK_MSG(strstr(nn_last_error(), "only a bias and a ReLU") != NULL, "%s", nn_last_error());
        p = params_of(&kCases[6], true, true, true);
        CHECK(be->run(be, NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD, args, 8, &p) == NN_ERR_ARGUMENT);
        CHECK_MSG(strstr(nn_last_error(), "needs its bias buffer") != NULL, "%s", nn_last_error());
        be->free(be, any);
    }
}

/* ---- nn_sequential: the container against the layers op by op ---- */

/* Conv2d(6 -> 16, 5), ReLU, MaxPool2d(2), Flatten, Linear(256 -> 120),
 * then ReLU, Linear(120 -> 10), ReLU, or Linear(120 -> 10) alone (a
 * Linear, ReLU, Linear at the end would fuse as a head instead) on 9
 * images: the output and every gradient (x's included) after two backward
 * passes into the same gradients, the container against the layers op by
 * op on the same parameters. */
static void container_matches_ops(bool relu_after) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "vulkan", .threads = 2, .seed = 7});
    CHECK_MSG(ctx != NULL, "nn_ctx_new(vulkan): %s", nn_last_error());
    if (!ctx) return;
    nn_module *net = nn_sequential(ctx);
    CHECK(nn_sequential_append(net, "c", nn_conv2d_layer(ctx, 6, 16, 5, 1, 0, NN_INIT_KAIMING_UNIFORM)) == NN_OK);
    CHECK(nn_sequential_append(net, "r", nn_relu_layer(ctx)) == NN_OK);
    CHECK(nn_sequential_append(net, "p", nn_maxpool2d_layer(ctx, 2, 2)) == NN_OK);
    CHECK(nn_sequential_append(net, "f", nn_flatten_layer(ctx)) == NN_OK);
    CHECK(nn_sequential_append(net, "l1", nn_linear_layer(ctx, 256, 120, NN_INIT_KAIMING_UNIFORM)) == NN_OK);
    if (relu_after) CHECK(nn_sequential_append(net, "r1", nn_relu_layer(ctx)) == NN_OK);
    CHECK(nn_sequential_append(net, "l2", nn_linear_layer(ctx, 120, 10, NN_INIT_KAIMING_UNIFORM)) == NN_OK);
    if (relu_after) CHECK(nn_sequential_append(net, "r2", nn_relu_layer(ctx)) == NN_OK);
    const int64_t xs[4] = {9, 6, 12, 12};
    float *data = conv_pool_randoms(9 * 6 * 12 * 12, 61);
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 4, xs, data);
    nn_tensor_set_requires_grad(x, true);
    nn_tensor *t[7] = {nn_module_param(net, 0), nn_module_param(net, 1), nn_module_param(net, 2),
                       nn_module_param(net, 3), nn_module_param(net, 4), nn_module_param(net, 5), x};
    float *got[2][8] = {{0}};
    const int64_t ys[2] = {9, 10};
    for (int by_ops = 0; by_ops < 2; by_ops++) {
        for (int k = 0; k < 7; k++) nn_tensor_zero_grad(t[k]);
        for (int pass = 0; pass < 2; pass++) {
            nn_tensor *y;
            if (by_ops) {
                nn_tensor *h = nn_linear(nn_flatten(nn_maxpool2d(nn_relu(nn_conv2d(x, t[0], t[1], 1, 0)), 2, 2)), t[2],
                                         t[3]);
                y = relu_after ? nn_relu(nn_linear(nn_relu(h), t[4], t[5])) : nn_linear(h, t[4], t[5]);
            } else {
                y = nn_module_forward(net, x);
            }
            CHECK_MSG(y != NULL, "forward: %s", nn_last_error());
            if (!y) return;
            if (pass == 0) {
                got[by_ops][7] = malloc(90 * 4);
                CHECK(nn_tensor_read(y, got[by_ops][7], 90 * 4) == NN_OK);
            }
            float *r = conv_pool_randoms(90, 63 + (unsigned)pass);
            nn_tensor *weights = nn_tensor_from_data(ctx, NN_F32, 2, ys, r);
            CHECK(nn_backward(nn_sum(nn_mul(y, weights))) == NN_OK);
            free(r);
        }
        for (int k = 0; k < 7; k++) {
            size_t n = (size_t)nn_tensor_numel(t[k]);
            got[by_ops][k] = malloc(n * 4);
            CHECK(nn_tensor_read(nn_tensor_grad(t[k]), got[by_ops][k], n * 4) == NN_OK);
        }
        CHECK(nn_ctx_step_end(ctx) == NN_OK);
    }
    static const char *names[8] = {"conv weight", "conv bias", "l1 weight", "l1 bias",
                                   "l2 weight",   "l2 bias",   "x",         "output"};
    static const int64_t counts[8] = {2400, 16, 30720, 120, 1200, 10, 9 * 6 * 12 * 12, 90};
    for (int k = 0; k < 8; k++) {
        vkt_check_near_f32(got[0][k], got[1][k], (size_t)counts[k], 2e-5,
                           "ReLU after l1 %s: %s%s, container (want: layers op by op)", relu_after ? "yes" : "no",
                           names[k], k < 7 ? " gradient" : "");
        free(got[0][k]), free(got[1][k]);
    }
    free(data);
    nn_module_free(net);
    nn_ctx_free(ctx);
}

TEST(conv_pool_linear_container_equals_layers_vulkan) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    container_matches_ops(true);
    container_matches_ops(false);
}
