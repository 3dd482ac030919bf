/* Linear -> ReLU -> Linear fused (kernels.h, nn_linear_head_params;
 * src/fusion/linear_head.c): the CPU kernels against double-precision loops,
 * the Vulkan kernels against the CPU, and the fused op (and nn_sequential,
 * where the backend fuses) against the layers op by op, on awkward sizes:
 * single features, odd counts, 256 features (the Vulkan kernels' limit),
 * row counts that leave a partial block of rows; biases absent or not, the
 * input's mask and accumulation on and off, no input gradient. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "core/graph.h" /* whether the head ran fused (a segment on its nodes) */
#include "head_cases.h"
#include "nn_engine.h"
#include "test.h"
#include "vulkan_harness.h"


static nn_linear_head_params params_of(const head_case *c) {
    return (nn_linear_head_params){.rows = c->rows, .in = c->in, .hidden = c->hidden, .out = c->out};
}

static float *randoms(size_t n, unsigned seed) { return vkt_randoms(n, -1.0f, 1.0f, seed); }

/* The head in double: h, y forward; dh, dx backward (dx without the
 * accumulation, masked by x > 0 when mask). */
typedef struct reference {
    double *h, *y, *dh, *dx;
} reference;

static reference reference_of(const head_case *c, const float *x, const float *wa, const float *ba, const float *wb,
                              const float *bb, const float *dy, bool mask) {
    reference r = {calloc((size_t)c->rows * c->hidden, 8), calloc((size_t)c->rows * c->out, 8),
                   calloc((size_t)c->rows * c->hidden, 8), calloc((size_t)c->rows * c->in, 8)};
    for (int n = 0; n < c->rows; n++) {
        for (int j = 0; j < c->hidden; j++) {
            double t = ba ? ba[j] : 0.0;
            for (int k = 0; k < c->in; k++) t += (double)x[n * c->in + k] * wa[j * c->in + k];
            r.h[n * c->hidden + j] = t > 0.0 ? t : 0.0;
        }
        for (int o = 0; o < c->out; o++) {
            double t = bb ? bb[o] : 0.0;
            for (int j = 0; j < c->hidden; j++) t += r.h[n * c->hidden + j] * wb[o * c->hidden + j];
            r.y[n * c->out + o] = t;
        }
        for (int j = 0; j < c->hidden; j++) {
            double t = 0.0;
            for (int o = 0; o < c->out; o++) t += (double)dy[n * c->out + o] * wb[o * c->hidden + j];
            r.dh[n * c->hidden + j] = r.h[n * c->hidden + j] > 0.0 ? t : 0.0;
        }
        for (int k = 0; k < c->in; k++) {
            double t = 0.0;
            for (int j = 0; j < c->hidden; j++) t += r.dh[n * c->hidden + j] * wa[j * c->in + k];
            r.dx[n * c->in + k] = !mask || x[n * c->in + k] > 0.0f ? t : 0.0;
        }
    }
    return r;
}

static void reference_free(reference *r) { free(r->h), free(r->y), free(r->dh), free(r->dx); }

TEST(linear_head_cpu_vs_double) {
    nn_backend *cpu = vkt_cpu();
    const nn_buffer_ref none = {NULL, 0, 0};
    for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; i++) {
        const head_case *c = &kCases[i];
        const size_t nx = (size_t)c->rows * c->in, nh = (size_t)c->rows * c->hidden, ny = (size_t)c->rows * c->out;
        for (int variant = 0; variant < 2; variant++) { /* 1: no biases, the input masked, accumulate */
            unsigned seed = 40 * (unsigned)i + 7 * (unsigned)variant;
            float *x = randoms(nx, seed), *wa = randoms((size_t)c->hidden * c->in, seed + 1);
            float *ba = randoms((size_t)c->hidden, seed + 2), *wb = randoms((size_t)c->out * c->hidden, seed + 3);
            float *bb = randoms((size_t)c->out, seed + 4), *dy = randoms(ny, seed + 5), *dx0 = randoms(nx, seed + 6);
            const bool bias = variant == 0, mask = variant == 1;
            reference r = reference_of(c, x, wa, bias ? ba : NULL, wb, bias ? bb : NULL, dy, mask);
            nn_buffer_ref fx = vkt_cpu_buffer(x, nx), fwa = vkt_cpu_buffer(wa, (size_t)c->hidden * c->in);
            nn_buffer_ref fba = bias ? vkt_cpu_buffer(ba, (size_t)c->hidden) : none;
            nn_buffer_ref fwb = vkt_cpu_buffer(wb, (size_t)c->out * c->hidden);
            nn_buffer_ref fbb = bias ? vkt_cpu_buffer(bb, (size_t)c->out) : none;
            nn_buffer_ref fh = vkt_cpu_buffer(NULL, nh), fy = vkt_cpu_buffer(NULL, ny);
            nn_linear_head_params p = params_of(c);
            nn_buffer_ref fwd[7] = {fx, fwa, fba, fwb, fbb, fh, fy};
            CHECK(cpu->run(cpu, NN_KERNEL_LINEAR_HEAD_FORWARD, fwd, 7, &p) == NN_OK);
            vkt_check_cpu_near(fh, r.h, nh, 1e-5, "case %zu h", i);
            vkt_check_cpu_near(fy, r.y, ny, 1e-5, "case %zu y", i);
            p.mask_input = mask;
            p.accumulate = variant;
            nn_buffer_ref fdy = vkt_cpu_buffer(dy, ny), fdh = vkt_cpu_buffer(NULL, nh), fdx = vkt_cpu_buffer(dx0, nx);
            nn_buffer_ref dat[7] = {fdy, fwb, fh, fwa, mask ? fx : none, fdh, fdx};
            CHECK(cpu->run(cpu, NN_KERNEL_LINEAR_HEAD_BACKWARD_DATA, dat, 7, &p) == NN_OK);
            vkt_check_cpu_near(fdh, r.dh, nh, 1e-5, "case %zu dh", i);
            for (size_t j = 0; j < nx; j++) r.dx[j] += p.accumulate ? dx0[j] : 0.0;
            /* dx sums hidden sums of out terms each, with cancellation: 5e-5. */
            vkt_check_cpu_near(fdx, r.dx, nx, 5e-5, "case %zu dx", i);
            nn_buffer_ref bufs[] = {fx, fwa, fba, fwb, fbb, fh, fy, fdy, fdh, fdx};
            for (size_t b = 0; b < sizeof bufs / sizeof bufs[0]; b++)
                if (bufs[b].buffer) cpu->free(cpu, bufs[b].buffer);
            reference_free(&r);
            free(x), free(wa), free(ba), free(wb), free(bb), free(dy), free(dx0);
        }
    }
}

/* Kernels refuse what they do not describe, by name: missing buffers, then
 * parameters. */
TEST(linear_head_kernels_refuse_bad_params) {
    nn_backend *cpu = vkt_cpu();
    nn_linear_head_params p = params_of(&kCases[1]);
    nn_buffer_ref none = {NULL, 0, 0}, args[7] = {none, none, none, none, none, none, none};
    CHECK(cpu->run(cpu, NN_KERNEL_LINEAR_HEAD_FORWARD, args, 7, &p) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "buffer argument 0 is missing") != NULL);
    nn_buffer *held = cpu->alloc(cpu, 4096);
    for (int i = 0; i < 7; i++) args[i] = (nn_buffer_ref){held, 0, 0};
    p.accumulate = 2;
    CHECK(cpu->run(cpu, NN_KERNEL_LINEAR_HEAD_BACKWARD_DATA, args, 7, &p) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "must be 0 or 1") != NULL);
    p = params_of(&kCases[1]);
    p.hidden = -1;
    CHECK(cpu->run(cpu, NN_KERNEL_LINEAR_HEAD_FORWARD, args, 7, &p) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "negative size") != NULL);
    cpu->free(cpu, held);
    if (vkt_skipped() || !vkt_vulkan()) return;
    nn_backend *vk = vkt_vulkan();
    p = params_of(&kCases[1]);
    CHECK(vk->supports(vk, NN_KERNEL_LINEAR_HEAD_FORWARD, &p));
    p.hidden = 300;
    CHECK(!vk->supports(vk, NN_KERNEL_LINEAR_HEAD_FORWARD, &p));
    nn_buffer *b = vk->alloc(vk, 4096);
    for (int i = 0; i < 7; i++) args[i] = (nn_buffer_ref){b, 0, 0};
    CHECK(vk->run(vk, NN_KERNEL_LINEAR_HEAD_FORWARD, args, 7, &p) == NN_ERR_BACKEND);
    CHECK(strstr(nn_last_error(), "more than 256 features") != NULL);
    vk->free(vk, b);
}

TEST(linear_head_vulkan_vs_cpu) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; i++) {
        const head_case *c = &kCases[i];
        const size_t nx = (size_t)c->rows * c->in, nh = (size_t)c->rows * c->hidden, ny = (size_t)c->rows * c->out;
        for (int variant = 0; variant < 3; variant++) { /* 1: no biases, masked, accumulate; 2: no dx */
            unsigned seed = 900 + 40 * (unsigned)i + 7 * (unsigned)variant;
            float *x = randoms(nx, seed), *wa = randoms((size_t)c->hidden * c->in, seed + 1);
            float *ba = randoms((size_t)c->hidden, seed + 2), *wb = randoms((size_t)c->out * c->hidden, seed + 3);
            float *bb = randoms((size_t)c->out, seed + 4), *dy = randoms(ny, seed + 5), *dx0 = randoms(nx, seed + 6);
            const bool bias = variant != 1;
            char what[96];
            vkt_pair fwd[7] = {vkt_pair_new(x, nx, 12),
                               vkt_pair_new(wa, (size_t)c->hidden * c->in, 4),
                               bias ? vkt_pair_new(ba, (size_t)c->hidden, 8) : vkt_pair_none(),
                               vkt_pair_new(wb, (size_t)c->out * c->hidden, 16),
                               bias ? vkt_pair_new(bb, (size_t)c->out, 4) : vkt_pair_none(),
                               vkt_pair_new(NULL, nh, 8),
                               vkt_pair_new(NULL, ny, 4)};
            nn_linear_head_params p = params_of(c);
            if (vkt_run(NN_KERNEL_LINEAR_HEAD_FORWARD, fwd, 7, &p)) {
                snprintf(what, sizeof what, "linear head case %zu variant %d h", i, variant);
                vkt_compare_f32(&fwd[5], 2e-5, what);
                snprintf(what, sizeof what, "linear head case %zu variant %d y", i, variant);
                vkt_compare_f32(&fwd[6], 2e-5, what);
            }
            p.mask_input = variant == 1;
            p.accumulate = variant == 1;
            vkt_pair dat[7] = {vkt_pair_new(dy, ny, 4), fwd[3], fwd[5], fwd[1],
                               variant == 1 ? fwd[0] : vkt_pair_none(), vkt_pair_new(NULL, nh, 12),
                               variant == 2 ? vkt_pair_none() : vkt_pair_new(dx0, nx, 8)};
            if (vkt_run(NN_KERNEL_LINEAR_HEAD_BACKWARD_DATA, dat, 7, &p)) {
                snprintf(what, sizeof what, "linear head case %zu variant %d dh", i, variant);
                vkt_compare_f32(&dat[5], 2e-5, what);
                snprintf(what, sizeof what, "linear head case %zu variant %d dx", i, variant);
                if (dat[6].cpu) vkt_compare_f32(&dat[6], 2e-5, what);
            }
            vkt_pair_free(&dat[0]), vkt_pair_free(&dat[5]), vkt_pair_free(&dat[6]);
            for (int j = 0; j < 7; j++) vkt_pair_free(&fwd[j]);
            free(x), free(wa), free(ba), free(wb), free(bb), free(dy), free(dx0);
            if (nn_test_failures()) return;
        }
    }
}

/* Linear(in0 -> in) + ReLU, then the head Linear(in -> hidden) + ReLU +
 * Linear(hidden -> out), x requiring its gradient: the fused side (the
 * container where the backend fuses the head, Vulkan; else the fused ops
 * themselves, the CPU, whose nn_sequential runs the layers unfused; the
 * head then claims the first ReLU's output, whose gradient it masks)
 * against nn_linear and nn_relu op by op on the same parameters: outputs
 * and every gradient, twice into the same gradients (the second pass
 * accumulates). */
static void head_matches_ops(const char *device, const head_case *c, double tol) {
    nn_ctx_options o = {.device = device, .threads = 2, .seed = 5};
    nn_ctx *ctx = nn_ctx_new(&o);
    if (!ctx) {
        CHECK_MSG(0, "nn_ctx_new(%s): %s", device, nn_last_error());
        return;
    }
    const int in0 = 11;
    nn_module *net = nn_sequential(ctx);
    CHECK(nn_sequential_append(net, "fc0", nn_linear_layer(ctx, in0, c->in, NN_INIT_KAIMING_UNIFORM)) == NN_OK);
    CHECK(nn_sequential_append(net, "relu0", nn_relu_layer(ctx)) == NN_OK);
    CHECK(nn_sequential_append(net, "fc1", nn_linear_layer(ctx, c->in, c->hidden, NN_INIT_KAIMING_UNIFORM)) == NN_OK);
    CHECK(nn_sequential_append(net, "relu1", nn_relu_layer(ctx)) == NN_OK);
    CHECK(nn_sequential_append(net, "fc2", nn_linear_layer(ctx, c->hidden, c->out, NN_INIT_KAIMING_UNIFORM)) == NN_OK);
    int64_t xs[2] = {c->rows, in0};
    float *data = randoms((size_t)(c->rows * in0), 77);
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 2, xs, data);
    nn_tensor_set_requires_grad(x, true);
    nn_tensor *t[7] = {x};
    for (int i = 0; i < 6; i++) t[i + 1] = nn_module_param(net, i);
    float *got[2][7] = {{0}}, *out[2] = {0};
    size_t counts[7], ny = (size_t)c->rows * c->out;
    for (int i = 0; i < 7; i++) counts[i] = (size_t)nn_tensor_numel(t[i]);
    for (int fused = 0; fused < 2; fused++) {
        nn_ctx_set_fusion(ctx, fused);
        for (int i = 0; i < 7; i++) nn_tensor_zero_grad(t[i]);
        for (int pass = 0; pass < 2; pass++) {
            nn_tensor *y = fused ? nn_module_forward(net, x)
                                 : nn_linear(nn_relu(nn_linear(nn_relu(nn_linear(x, t[1], t[2])), t[3], t[4])), t[5], t[6]);
            CHECK_MSG(y != NULL, "%s forward: %s", device, nn_last_error());
            if (!y) return;
            float *r = randoms(ny, 99);
            int64_t ys[2] = {c->rows, c->out};
            nn_tensor *weights = nn_tensor_from_data(ctx, NN_F32, 2, ys, r);
            nn_tensor *loss = nn_sum(nn_mul(y, weights));
            CHECK(nn_ctx_flush(ctx, NULL) == NN_OK);
            const bool ran_fused = y->grad_fn && y->grad_fn->segment;
            CHECK_MSG(ran_fused == (fused && strcmp(device, "vulkan") == 0),
                      "%s: the head ran %s", device, ran_fused ? "fused" : "apart");
            CHECK(nn_backward(loss) == NN_OK);
            if (pass == 1) {
                out[fused] = malloc(ny * 4);
                CHECK(nn_tensor_read(y, out[fused], ny * 4) == NN_OK);
            }
            free(r);
        }
        for (int i = 0; i < 7; i++) {
            got[fused][i] = malloc(counts[i] * 4);
            CHECK(nn_tensor_read(nn_tensor_grad(t[i]), got[fused][i], counts[i] * 4) == NN_OK);
        }
        CHECK(nn_ctx_step_end(ctx) == NN_OK);
    }
    static const char *names[7] = {"dx", "dW0", "db0", "dW1", "db1", "dW2", "db2"};
    vkt_check_near_f32(out[1], out[0], ny, tol, "%s: y fused (want: unfused)", device);
    for (int i = 0; i < 7; i++) {
        vkt_check_near_f32(got[1][i], got[0][i], counts[i], tol, "%s: %s fused (want: unfused)", device, names[i]);
        free(got[0][i]), free(got[1][i]);
    }
    free(out[0]), free(out[1]), free(data);
    nn_module_free(net);
    nn_ctx_free(ctx);
}

TEST(linear_head_fused_equals_layers_cpu) {
    for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; i++)
        head_matches_ops("cpu", &kCases[i], 0.0); /* the same kernels: exact */
}

TEST(linear_head_sequential_equals_layers_vulkan) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; i++) head_matches_ops("vulkan", &kCases[i], 2e-5);
}
