/* Linear -> ReLU -> Linear with the softmax cross-entropy after it, as one
 * kernel (NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY; src/fusion/head_cross_entropy.c,
 * nn_module_forward_loss): the CPU kernel against double-precision loops,
 * the Vulkan kernel against the CPU, a bad label reported, and the loss of
 * nn_module_forward_loss with every gradient against the unfused forward
 * and nn_softmax_cross_entropy -- seeded and with the loss scaled, its
 * input a claimed ReLU's output or a leaf -- on awkward sizes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "core/graph.h" /* whether the head and the loss ran fused (a segment on their nodes) */
#include "nn_engine.h"
#include "head_cases.h"
#include "test.h"
#include "vulkan_harness.h"


static float *randoms(size_t n, unsigned seed) { return vkt_randoms(n, -1.0f, 1.0f, seed); }

static int32_t *labels_of(const head_case *c, unsigned seed) {
    int32_t *labels = malloc((size_t)c->rows * sizeof *labels);
    srand(seed);
    for (int r = 0; r < c->rows; r++) labels[r] = rand() % c->out;
    return labels;
}

/* The head and the loss's gradient in double. */
typedef struct reference {
    double *h, *logits, *row_loss, *dlogits, *dh, *dx;
} reference;

static reference reference_of(const head_case *c, const float *x, const float *wa, const float *ba, const float *wb,
                              const float *bb, const int32_t *labels, bool mask) {
    reference r = {calloc((size_t)c->rows * c->hidden, 8), calloc((size_t)c->rows * c->out, 8),
                   calloc((size_t)c->rows, 8),            calloc((size_t)c->rows * c->out, 8),
                   calloc((size_t)c->rows * c->hidden, 8), calloc((size_t)c->rows * c->in, 8)};
    for (int n = 0; n < c->rows; n++) {
        double *h = r.h + (size_t)n * c->hidden, *y = r.logits + (size_t)n * c->out;
        double *dy = r.dlogits + (size_t)n * c->out, *dh = r.dh + (size_t)n * c->hidden;
        for (int j = 0; j < c->hidden; j++) {
            double t = ba ? ba[j] : 0.0;
            for (int k = 0; k < c->in; k++) t += (double)x[n * c->in + k] * wa[j * c->in + k];
            h[j] = t > 0.0 ? t : 0.0;
        }
        double m = -INFINITY;
        for (int o = 0; o < c->out; o++) {
            double t = bb ? bb[o] : 0.0;
            for (int j = 0; j < c->hidden; j++) t += h[j] * wb[o * c->hidden + j];
            y[o] = t;
            m = t > m ? t : m;
        }
        double sum = 0.0;
        for (int o = 0; o < c->out; o++) sum += exp(y[o] - m);
        r.row_loss[n] = log(sum) + m - y[labels[n]];
        for (int o = 0; o < c->out; o++) dy[o] = (exp(y[o] - m) / sum - (o == labels[n])) / c->rows;
        for (int j = 0; j < c->hidden; j++) {
            double t = 0.0;
            for (int o = 0; o < c->out; o++) t += dy[o] * wb[o * c->hidden + j];
            dh[j] = h[j] > 0.0 ? t : 0.0;
        }
        for (int k = 0; k < c->in; k++) {
            double t = 0.0;
            for (int j = 0; j < c->hidden; j++) t += dh[j] * wa[j * c->in + k];
            r.dx[n * c->in + k] = !mask || x[n * c->in + k] > 0.0f ? t : 0.0;
        }
    }
    return r;
}

static void reference_free(reference *r) {
    free(r->h), free(r->logits), free(r->row_loss), free(r->dlogits), free(r->dh), free(r->dx);
}

/* The inputs of one case and variant. */
typedef struct inputs {
    float *x, *wa, *ba, *wb, *bb;
    int32_t *labels;
} inputs;

/* Weights uniform in +-1/sqrt(fan_in), as Linear initialises them, so
 * every layer's outputs stay near 1 and the tolerances mean the same in
 * each. */
static float *weights(size_t n, int fan_in, unsigned seed) {
    const float bound = 1.0f / sqrtf((float)(fan_in > 0 ? fan_in : 1));
    return vkt_randoms(n, -bound, bound, seed);
}

static inputs inputs_of(const head_case *c, unsigned seed) {
    return (inputs){randoms((size_t)c->rows * c->in, seed),
                    weights((size_t)c->hidden * c->in, c->in, seed + 1),
                    randoms((size_t)c->hidden, seed + 2),
                    weights((size_t)c->out * c->hidden, c->hidden, seed + 3),
                    randoms((size_t)c->out, seed + 4),
                    labels_of(c, seed + 5)};
}

static void inputs_free(inputs *in) {
    free(in->x), free(in->wa), free(in->ba), free(in->wb), free(in->bb), free(in->labels);
}

TEST(head_cross_entropy_cpu_vs_double) {
    nn_backend *cpu = vkt_cpu();
    const nn_buffer_ref none = {NULL, 0, 0};
    for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; i++) {
        const head_case *c = &kCases[i];
        const size_t nx = (size_t)c->rows * c->in, nh = (size_t)c->rows * c->hidden, ny = (size_t)c->rows * c->out;
        for (int variant = 0; variant < 2; variant++) { /* 1: no biases, the input masked */
            inputs in = inputs_of(c, 300 + 40 * (unsigned)i + 9 * (unsigned)variant);
            const bool bias = variant == 0, mask = variant == 1;
            reference r = reference_of(c, in.x, in.wa, bias ? in.ba : NULL, in.wb, bias ? in.bb : NULL, in.labels,
                                       mask);
            nn_buffer_ref a[12] = {vkt_cpu_buffer(in.x, nx),
                                   vkt_cpu_buffer(in.wa, (size_t)c->hidden * c->in),
                                   bias ? vkt_cpu_buffer(in.ba, (size_t)c->hidden) : none,
                                   vkt_cpu_buffer(in.wb, (size_t)c->out * c->hidden),
                                   bias ? vkt_cpu_buffer(in.bb, (size_t)c->out) : none,
                                   vkt_cpu_buffer(in.labels, (size_t)c->rows),
                                   vkt_cpu_buffer(NULL, nh),
                                   vkt_cpu_buffer(NULL, ny),
                                   vkt_cpu_buffer(NULL, (size_t)c->rows),
                                   vkt_cpu_buffer(NULL, ny),
                                   vkt_cpu_buffer(NULL, nh),
                                   vkt_cpu_buffer(NULL, nx)};
            nn_linear_head_params p = {.rows = c->rows, .in = c->in, .hidden = c->hidden, .out = c->out,
                                       .mask_input = mask};
            CHECK_MSG(cpu->run(cpu, NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY, a, 12, &p) == NN_OK, "case %zu: %s", i,
                      nn_last_error());
            vkt_check_cpu_near(a[6], r.h, nh, 1e-5, "case %zu h", i);
            vkt_check_cpu_near(a[7], r.logits, ny, 1e-5, "case %zu logits", i);
            vkt_check_cpu_near(a[8], r.row_loss, (size_t)c->rows, 1e-5, "case %zu row loss", i);
            vkt_check_cpu_near(a[9], r.dlogits, ny, 1e-6, "case %zu dlogits", i);
            vkt_check_cpu_near(a[10], r.dh, nh, 1e-5, "case %zu dh", i);
            vkt_check_cpu_near(a[11], r.dx, nx, 1e-5, "case %zu dx", i);
            for (int b = 0; b < 12; b++)
                if (a[b].buffer) cpu->free(cpu, a[b].buffer);
            reference_free(&r);
            inputs_free(&in);
            if (nn_test_failures()) return;
        }
    }
}

TEST(head_cross_entropy_vulkan_vs_cpu) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; i++) {
        const head_case *c = &kCases[i];
        const size_t nx = (size_t)c->rows * c->in, nh = (size_t)c->rows * c->hidden, ny = (size_t)c->rows * c->out;
        /* 1: no biases, masked; 2: no dx; 3: neither dh nor dx */
        for (int variant = 0; variant < 4; variant++) {
            inputs in = inputs_of(c, 1300 + 40 * (unsigned)i + 9 * (unsigned)variant);
            const bool bias = variant != 1;
            vkt_pair a[12] = {vkt_pair_new(in.x, nx, 12),
                              vkt_pair_new(in.wa, (size_t)c->hidden * c->in, 4),
                              bias ? vkt_pair_new(in.ba, (size_t)c->hidden, 8) : vkt_pair_none(),
                              vkt_pair_new(in.wb, (size_t)c->out * c->hidden, 16),
                              bias ? vkt_pair_new(in.bb, (size_t)c->out, 4) : vkt_pair_none(),
                              vkt_pair_new(in.labels, (size_t)c->rows, 8),
                              vkt_pair_new(NULL, nh, 8),
                              vkt_pair_new(NULL, ny, 4),
                              vkt_pair_new(NULL, (size_t)c->rows, 12),
                              vkt_pair_new(NULL, ny, 0),
                              variant < 3 ? vkt_pair_new(NULL, nh, 4) : vkt_pair_none(),
                              variant < 2 ? vkt_pair_new(NULL, nx, 8) : vkt_pair_none()};
            nn_linear_head_params p = {.rows = c->rows, .in = c->in, .hidden = c->hidden, .out = c->out,
                                       .mask_input = variant == 1};
            if (vkt_run(NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY, a, 12, &p)) {
                static const char *names[12] = {"", "", "", "", "", "", "h", "logits", "row loss", "dlogits", "dh",
                                                 "dx"};
                for (int j = 6; j < 12; j++) {
                    if (!a[j].cpu) continue;
                    char what[96];
                    snprintf(what, sizeof what, "head cross-entropy case %zu variant %d %s", i, variant, names[j]);
                    vkt_compare_f32(&a[j], 2e-5, what);
                }
            }
            for (int j = 0; j < 12; j++) vkt_pair_free(&a[j]);
            inputs_free(&in);
            if (nn_test_failures()) return;
        }
    }
}

/* A label outside [0, out): the CPU names the first bad row; Vulkan reports
 * it at the next read, and the row's loss is NaN on both. */
TEST(head_cross_entropy_bad_label_reported) {
    float *x = randoms(54, 1), *wa = randoms(45, 2), *wb = randoms(20, 3);
    int32_t labels[6] = {0, 3, 1, 4, 2, 0};
    const nn_buffer_ref none = {NULL, 0, 0};
    nn_linear_head_params p = {.rows = 6, .in = 9, .hidden = 5, .out = 4};
    nn_backend *cpu = vkt_cpu();
    nn_buffer_ref a[12] = {vkt_cpu_buffer(x, 54),    vkt_cpu_buffer(wa, 45),   none,
                           vkt_cpu_buffer(wb, 20),   none,                     vkt_cpu_buffer(labels, 6),
                           vkt_cpu_buffer(NULL, 30), vkt_cpu_buffer(NULL, 24), vkt_cpu_buffer(NULL, 6),
                           vkt_cpu_buffer(NULL, 24), none,                     none};
    CHECK(cpu->run(cpu, NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY, a, 12, &p) == NN_ERR_ARGUMENT);
    CHECK_MSG(strstr(nn_last_error(), "label 4 at row 3 is outside [0, 4)"), "message: %s", nn_last_error());
    float row_loss[6];
    cpu->read(cpu, a[8], row_loss, sizeof row_loss);
    CHECK(isnan(row_loss[3]) && !isnan(row_loss[2]));
    for (int b = 0; b < 12; b++)
        if (a[b].buffer) cpu->free(cpu, a[b].buffer);
    if (!vkt_skipped() && vkt_vulkan()) {
        nn_backend *gpu = vkt_vulkan();
        vkt_pair v[12] = {vkt_pair_new(x, 54, 0),    vkt_pair_new(wa, 45, 0),   vkt_pair_none(),
                          vkt_pair_new(wb, 20, 0),   vkt_pair_none(),           vkt_pair_new(labels, 6, 0),
                          vkt_pair_new(NULL, 30, 0), vkt_pair_new(NULL, 24, 0), vkt_pair_new(NULL, 6, 0),
                          vkt_pair_new(NULL, 24, 0), vkt_pair_none(),           vkt_pair_none()};
        nn_buffer_ref g[12];
        for (int j = 0; j < 12; j++) g[j] = (nn_buffer_ref){v[j].gpu, 0, 0};
        CHECK(gpu->run(gpu, NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY, g, 12, &p) == NN_OK);
        CHECK(gpu->read(gpu, g[8], row_loss, sizeof row_loss) == NN_ERR_ARGUMENT);
        CHECK_MSG(strstr(nn_last_error(), "label 4 at row 3 is outside [0, 4)"), "message: %s", nn_last_error());
        CHECK(gpu->read(gpu, g[8], row_loss, sizeof row_loss) == NN_OK); /* reported once */
        CHECK(isnan(row_loss[3]) && !isnan(row_loss[2]));
        for (int j = 0; j < 12; j++) vkt_pair_free(&v[j]);
    }
    free(x), free(wa), free(wb);
}

/* Kernels refuse what they do not describe, by name. */
TEST(head_cross_entropy_refuses_bad_params) {
    nn_backend *cpu = vkt_cpu();
    nn_linear_head_params p = {.rows = 2, .in = 3, .hidden = 4, .out = 5, .accumulate = 1};
    nn_buffer *b = cpu->alloc(cpu, 4096);
    const nn_buffer_ref none = {NULL, 0, 0};
    nn_buffer_ref a[12];
    for (int i = 0; i < 12; i++) a[i] = (nn_buffer_ref){b, 0, 0};
    CHECK(cpu->run(cpu, NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY, a, 12, &p) == NN_ERR_ARGUMENT);
    CHECK_MSG(strstr(nn_last_error(), "accumulate must be 0"), "message: %s", nn_last_error());
    p.accumulate = 0;
    a[10] = none;
    CHECK(cpu->run(cpu, NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY, a, 12, &p) == NN_ERR_ARGUMENT);
    CHECK_MSG(strstr(nn_last_error(), "dx needs dh"), "message: %s", nn_last_error());
    cpu->free(cpu, b);
    if (vkt_skipped() || !vkt_vulkan()) return;
    nn_backend *vk = vkt_vulkan();
    p = (nn_linear_head_params){.rows = 64, .in = 120, .hidden = 84, .out = 10};
    CHECK(vk->supports(vk, NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY, &p));
    p.out = 300;
    CHECK(!vk->supports(vk, NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY, &p));
}

/* `before` Linear + ReLU pairs (11 -> 13 -> c->in features), then fc1
 * (in -> hidden), relu1, fc2 (hidden -> out): the loss of
 * nn_module_forward_loss and every gradient against the container's forward
 * and nn_softmax_cross_entropy, twice into the same gradients (the second
 * pass accumulates); scaled: the loss times 2.5 is what backward starts
 * from. With a pair before, the fused op's input is a fused ReLU's output
 * that it claims; with none, x, a leaf. */
static void forward_loss_matches(const char *device, const head_case *c, int before, bool scaled, bool fuses,
                                 double tol) {
    nn_ctx_options o = {.device = device, .threads = 2, .seed = 5};
    nn_ctx *ctx = nn_ctx_new(&o);
    if (!ctx) {
        CHECK_MSG(0, "nn_ctx_new(%s): %s", device, nn_last_error());
        return;
    }
    const int widths[3] = {11, 13, c->in}, width = widths[2 - before];
    nn_module *net = nn_sequential(ctx);
    for (int k = 0; k < before; k++) {
        char name[16];
        snprintf(name, sizeof name, "pre%d", k);
        int from = widths[2 - before + k], to = widths[3 - before + k];
        CHECK(nn_sequential_append(net, name, nn_linear_layer(ctx, from, to, NN_INIT_KAIMING_UNIFORM)) == NN_OK);
        snprintf(name, sizeof name, "relu_pre%d", k);
        CHECK(nn_sequential_append(net, name, nn_relu_layer(ctx)) == NN_OK);
    }
    CHECK(nn_sequential_append(net, "fc1", nn_linear_layer(ctx, c->in, c->hidden, NN_INIT_KAIMING_UNIFORM)) == NN_OK);
    CHECK(nn_sequential_append(net, "relu1", nn_relu_layer(ctx)) == NN_OK);
    CHECK(nn_sequential_append(net, "fc2", nn_linear_layer(ctx, c->hidden, c->out, NN_INIT_KAIMING_UNIFORM)) == NN_OK);
    int64_t xs[2] = {c->rows, width}, ls[1] = {c->rows}, one = 1;
    float *data = randoms((size_t)c->rows * width, 77);
    int32_t *labels = labels_of(c, 78);
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 2, xs, data);
    nn_tensor *y = nn_tensor_from_data(ctx, NN_I32, 1, ls, labels);
    const float factor = 2.5f;
    nn_tensor *scale = nn_tensor_from_data(ctx, NN_F32, 1, &one, &factor);
    nn_tensor_set_requires_grad(x, true);
    const int count = 1 + nn_module_param_count(net);
    nn_tensor *t[9] = {x};
    for (int i = 1; i < count; i++) t[i] = nn_module_param(net, i - 1);
    float *got[2][9] = {{0}}, *logits[2] = {0}, loss[2] = {0};
    size_t ny = (size_t)c->rows * c->out;
    for (int fused = 0; fused < 2; fused++) {
        nn_ctx_set_fusion(ctx, fused);
        for (int i = 0; i < count; i++) nn_tensor_zero_grad(t[i]);
        for (int pass = 0; pass < 2; pass++) {
            nn_tensor *out = NULL, *l;
            if (fused) {
                l = nn_module_forward_loss(net, x, y, &out);
            } else {
                out = nn_module_forward(net, x);
                l = out ? nn_softmax_cross_entropy(out, y) : NULL;
            }
            CHECK_MSG(l != NULL && out != NULL, "%s forward: %s", device, nn_last_error());
            if (!l || !out) return;
            CHECK(nn_ctx_flush(ctx, NULL) == NN_OK);
            const bool ran_fused = out->grad_fn && out->grad_fn->segment;
            CHECK_MSG(ran_fused == (fused && fuses), "%s rows %d: the head and loss %s", device, c->rows,
                      ran_fused ? "ran fused" : "ran apart");
            CHECK(nn_backward(scaled ? nn_mul(l, scale) : l) == NN_OK);
            if (pass == 1) {
                logits[fused] = malloc(ny * 4);
                CHECK(nn_tensor_read(out, logits[fused], ny * 4) == NN_OK);
                CHECK(nn_tensor_read(l, &loss[fused], 4) == NN_OK);
            }
            CHECK(nn_ctx_step_end(ctx) == NN_OK);
        }
        for (int i = 0; i < count; i++) {
            size_t n = (size_t)nn_tensor_numel(t[i]);
            got[fused][i] = malloc(n * 4);
            CHECK(nn_tensor_read(nn_tensor_grad(t[i]), got[fused][i], n * 4) == NN_OK);
        }
    }
    vkt_check_near_f32(&loss[1], &loss[0], 1, tol, "%s rows %d: loss fused (want: unfused)", device, c->rows);
    vkt_check_near_f32(logits[1], logits[0], ny, tol, "%s rows %d: logits fused (want: unfused)", device, c->rows);
    for (int i = 0; i < count; i++) {
        vkt_check_near_f32(got[1][i], got[0][i], (size_t)nn_tensor_numel(t[i]), tol,
                           "%s rows %d, %d before%s: gradient %d fused (want: unfused)", device, c->rows, before,
                           scaled ? ", scaled" : "", i);
        free(got[0][i]), free(got[1][i]);
    }
    free(logits[0]), free(logits[1]), free(data), free(labels);
    nn_module_free(net);
    nn_ctx_free(ctx);
}

TEST(forward_loss_equals_forward_then_loss_cpu) {
    for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; i++)
        for (int before = 0; before < 2; before++) /* unfused on the CPU: exact */
            forward_loss_matches("cpu", &kCases[i], before, (i + (size_t)before) % 2 == 1, false, 0.0);
}

TEST(forward_loss_equals_forward_then_loss_vulkan) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    nn_backend *vk = vkt_vulkan();
    nn_linear_head_params lenet = {.rows = 64, .in = 120, .hidden = 84, .out = 10};
    CHECK(vk->supports(vk, NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY, &lenet)); /* the case that matters is tested fused */
    for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; i++)
        for (int before = 0; before < 2; before++)
            for (int scaled = 0; scaled < 2; scaled++) {
                const head_case *c = &kCases[i];
                nn_linear_head_params p = {.rows = c->rows, .in = c->in, .hidden = c->hidden, .out = c->out};
                forward_loss_matches("vulkan", c, before, scaled, vk->supports(vk, NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY, &p), 2e-5);
            }
}

/* Bad arguments to nn_module_forward_loss are refused with a message, fused
 * or not: NULL ones, labels of the wrong type or count, and labels outside
 * the classes (reported at the next read on Vulkan, as the loss's kernels
 * report them). */
static void forward_loss_refuses(const char *device) {
    nn_ctx_options o = {.device = device, .threads = 2, .seed = 5};
    nn_ctx *ctx = nn_ctx_new(&o);
    if (!ctx) {
        CHECK_MSG(0, "nn_ctx_new(%s): %s", device, nn_last_error());
        return;
    }
    nn_module *net = nn_sequential(ctx);
    CHECK(nn_sequential_append(net, "fc1", nn_linear_layer(ctx, 120, 84, NN_INIT_KAIMING_UNIFORM)) == NN_OK);
    CHECK(nn_sequential_append(net, "relu1", nn_relu_layer(ctx)) == NN_OK);
    CHECK(nn_sequential_append(net, "fc2", nn_linear_layer(ctx, 84, 10, NN_INIT_KAIMING_UNIFORM)) == NN_OK);
    int64_t xs[2] = {64, 120}, ls[1] = {64}, short_ls[1] = {63};
    float *data = randoms(64 * 120, 5);
    int32_t labels[64];
    for (int i = 0; i < 64; i++) labels[i] = i % 10;
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 2, xs, data);
    nn_tensor *y = nn_tensor_from_data(ctx, NN_I32, 1, ls, labels);
    nn_tensor *y_short = nn_tensor_from_data(ctx, NN_I32, 1, short_ls, labels);
    nn_tensor *y_float = nn_tensor_from_data(ctx, NN_F32, 1, ls, data);
    nn_tensor *logits = x;
    CHECK(nn_module_forward_loss(net, x, NULL, &logits) == NULL && logits == NULL);
    CHECK_MSG(strstr(nn_last_error(), "labels is NULL"), "%s: %s", device, nn_last_error());
    CHECK(nn_module_forward_loss(NULL, x, y, NULL) == NULL);
    CHECK_MSG(strstr(nn_last_error(), "module is NULL"), "%s: %s", device, nn_last_error());
    CHECK(nn_module_forward_loss(net, x, y_short, NULL) == NULL);
    CHECK_MSG(strstr(nn_last_error(), "63 labels"), "%s: %s", device, nn_last_error());
    CHECK(nn_module_forward_loss(net, x, y_float, NULL) == NULL);
    CHECK_MSG(strstr(nn_last_error(), "labels"), "%s: %s", device, nn_last_error());
    nn_ctx_step_end(ctx);
    labels[5] = 10;
    CHECK(nn_tensor_write(y, labels, sizeof labels) == NN_OK);
    nn_tensor *loss = nn_module_forward_loss(net, x, y, NULL);
    float value = 0.0f;
    nn_status st = loss ? nn_tensor_read(loss, &value, sizeof value) : nn_last_status();
    CHECK_MSG(st == NN_ERR_ARGUMENT && strstr(nn_last_error(), "label 10 at row 5"), "%s: status %d, %s", device,
              (int)st, nn_last_error());
    nn_ctx_step_end(ctx);
    nn_tensor *tensors[4] = {x, y, y_short, y_float};
    for (int i = 0; i < 4; i++) nn_tensor_free(tensors[i]);
    free(data);
    nn_module_free(net);
    nn_ctx_free(ctx);
}

TEST(forward_loss_refuses_bad_arguments_cpu) { forward_loss_refuses("cpu"); }

TEST(forward_loss_refuses_bad_arguments_vulkan) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    forward_loss_refuses("vulkan");
}
