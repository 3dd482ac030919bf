/* Conv2d -> ReLU -> MaxPool2d fused (kernels.h, nn_conv_pool_params;
 * src/ops/conv_pool.c): the CPU kernels against double-precision loops, the
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
#include "nn_engine.h"
#include "ops/fused_relu.h" /* the fused op, which the CPU's nn_sequential does not take */
#include "test.h"
#include "vulkan_harness.h"

typedef struct conv_pool_case {
    int batch, channels, height, width, filters, kernel_h, kernel_w, stride, pad, pool;
} conv_pool_case;

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

static nn_conv_pool_params params_of(const conv_pool_case *c, bool bias) {
    nn_conv_geometry g = {c->batch, c->channels, c->height, c->width, c->kernel_h, c->kernel_w,
                          c->stride, c->stride, c->pad, c->pad, 0, 0, 0};
    g.out_h = (g.height + 2 * g.pad_h - g.kernel_h) / g.stride_h + 1;
    g.out_w = (g.width + 2 * g.pad_w - g.kernel_w) / g.stride_w + 1;
    nn_conv_pool_params p = {.conv = {.g = g, .filters = c->filters,
                                      .epilogue = (bias ? NN_EPI_BIAS_ROWS : 0) | NN_EPI_RELU},
                             .pool = c->pool, .pooled_h = g.out_h / c->pool, .pooled_w = g.out_w / c->pool};
    return p;
}

/* Multiples of 1/denominator in [-3, 3] / denominator. */
static float *steps(size_t n, float denominator, unsigned seed) {
    float *x = malloc((n ? n : 1) * sizeof *x);
    vkt_fill(x, n, -3.5f, 3.5f, seed);
    for (size_t i = 0; i < n; i++) x[i] = roundf(x[i]) / denominator;
    return x;
}

static float *randoms(size_t n, unsigned seed) { return vkt_randoms(n, -1.0f, 1.0f, seed); }

typedef struct sizes {
    size_t x, w, z, y;
} sizes;

static sizes sizes_of(const nn_conv_pool_params *p) {
    const nn_conv_geometry *g = &p->conv.g;
    return (sizes){(size_t)g->batch * g->channels * g->height * g->width,
                   (size_t)p->conv.filters * g->channels * g->kernel_h * g->kernel_w,
                   (size_t)g->batch * p->conv.filters * g->out_h * g->out_w,
                   (size_t)g->batch * p->conv.filters * p->pooled_h * p->pooled_w};
}

/* ---- the reference, in double ---- */

typedef struct reference {
    double *y, *dw, *db, *dx;
    int32_t *winners;
} reference;

static double x_at(const nn_conv_geometry *g, const float *x, int n, int c, int h, int w) {
    if (h < 0 || w < 0 || h >= g->height || w >= g->width) return 0.0;
    return x[(((size_t)n * g->channels + c) * g->height + h) * g->width + w];
}

static reference reference_of(const nn_conv_pool_params *p, const float *x, const float *w, const float *b,
                              const float *dy) {
    const nn_conv_geometry *g = &p->conv.g;
    const sizes s = sizes_of(p);
    const int F = p->conv.filters, KK = g->kernel_h * g->kernel_w;
    double *z = calloc(s.z + 1, sizeof *z), *dz = calloc(s.z + 1, sizeof *dz);
    reference r = {calloc(s.y + 1, sizeof(double)), calloc(s.w + 1, sizeof(double)), calloc((size_t)F + 1, sizeof(double)),
                   calloc(s.x + 1, sizeof(double)), calloc(s.y + 1, sizeof(int32_t))};
    for (int n = 0; n < g->batch; n++)
        for (int f = 0; f < F; f++)
            for (int oh = 0; oh < g->out_h; oh++)
                for (int ow = 0; ow < g->out_w; ow++) {
                    double sum = b ? b[f] : 0.0;
                    for (int c = 0; c < g->channels; c++)
                        for (int ki = 0; ki < g->kernel_h; ki++)
                            for (int kj = 0; kj < g->kernel_w; kj++)
                                sum += (double)w[((size_t)f * g->channels + c) * KK + ki * g->kernel_w + kj] *
                                       x_at(g, x, n, c, oh * g->stride_h - g->pad_h + ki, ow * g->stride_w - g->pad_w + kj);
                    z[(((size_t)n * F + f) * g->out_h + oh) * g->out_w + ow] = sum > 0.0 ? sum : 0.0;
                }
    const size_t z_plane = (size_t)g->out_h * g->out_w, y_plane = (size_t)p->pooled_h * p->pooled_w;
    for (size_t plane = 0; plane < (size_t)g->batch * F; plane++)
        for (int py = 0; py < p->pooled_h; py++)
            for (int px = 0; px < p->pooled_w; px++) {
                int best = -1;
                for (int a = 0; a < p->pool; a++)
                    for (int c = 0; c < p->pool; c++) {
                        int i = (py * p->pool + a) * g->out_w + px * p->pool + c;
                        if (best < 0 || z[plane * z_plane + i] > z[plane * z_plane + best]) best = i;
                    }
                size_t j = plane * y_plane + (size_t)py * p->pooled_w + px;
                r.y[j] = z[plane * z_plane + best];
                r.winners[j] = r.y[j] > 0.0 ? best : -1;
                if (r.winners[j] >= 0) dz[plane * z_plane + best] = dy[j];
            }
    for (int n = 0; n < g->batch; n++)
        for (int f = 0; f < F; f++)
            for (int oh = 0; oh < g->out_h; oh++)
                for (int ow = 0; ow < g->out_w; ow++) {
                    double d = dz[(((size_t)n * F + f) * g->out_h + oh) * g->out_w + ow];
                    if (d == 0.0) continue;
                    r.db[f] += d;
                    for (int c = 0; c < g->channels; c++)
                        for (int ki = 0; ki < g->kernel_h; ki++)
                            for (int kj = 0; kj < g->kernel_w; kj++) {
                                int h = oh * g->stride_h - g->pad_h + ki, wc = ow * g->stride_w - g->pad_w + kj;
                                size_t wi = ((size_t)f * g->channels + c) * KK + ki * g->kernel_w + kj;
                                r.dw[wi] += d * x_at(g, x, n, c, h, wc);
                                if (h >= 0 && wc >= 0 && h < g->height && wc < g->width)
                                    r.dx[(((size_t)n * g->channels + c) * g->height + h) * g->width + wc] += d * w[wi];
                            }
                }
    free(z);
    free(dz);
    return r;
}

static void reference_free(reference *r) { free(r->y), free(r->dw), free(r->db), free(r->dx), free(r->winners); }

/* ---- the CPU kernels against the reference ---- */

static void cpu_read(nn_buffer_ref ref, void *out, size_t count) { vkt_cpu()->read(vkt_cpu(), ref, out, count * 4); }

TEST(conv_pool_cpu_vs_double) {
    nn_backend *cpu = vkt_cpu();
    for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; i++) {
        for (int with_bias = 0; with_bias < 2; with_bias++) {
            nn_conv_pool_params p = params_of(&kCases[i], with_bias);
            const sizes s = sizes_of(&p);
            unsigned seed = 100 * (unsigned)i + 10 * (unsigned)with_bias;
            float *x = steps(s.x, 4.0f, seed), *w = steps(s.w, 8.0f, seed + 1);
            float *b = with_bias ? steps((size_t)p.conv.filters, 16.0f, seed + 2) : NULL;
            float *dy = randoms(s.y, seed + 3), *dw0 = randoms(s.w, seed + 4), *db0 = randoms((size_t)p.conv.filters, seed + 5);
            float *dx0 = randoms(s.x, seed + 6);
            reference r = reference_of(&p, x, w, b, dy);
            nn_buffer_ref none = {NULL, 0, 0};
            nn_buffer_ref fx = vkt_cpu_buffer(x, s.x), fw = vkt_cpu_buffer(w, s.w), fb = b ? vkt_cpu_buffer(b, (size_t)p.conv.filters) : none;
            nn_buffer_ref fy = vkt_cpu_buffer(NULL, s.y), fwin = vkt_cpu_buffer(NULL, s.y);
            nn_buffer_ref fwd[6] = {fx, fw, fb, fy, fwin, none};
            CHECK(cpu->run(cpu, NN_KERNEL_CONV2D_POOL_FORWARD, fwd, 6, &p) == NN_OK);
            float *y = malloc(s.y * 4 + 4);
            int32_t *winners = malloc(s.y * 4 + 4);
            cpu_read(fy, y, s.y);
            cpu_read(fwin, winners, s.y);
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
                cpu_read(fdw, got_w, s.w);
                cpu_read(fdb, got_b, (size_t)p.conv.filters);
                cpu_read(fdx, got_x, s.x);
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
            reference_free(&r);
            free(x), free(w), free(b), free(dy), free(dw0), free(db0), free(dx0), free(y), free(winners);
        }
    }
}

/* Kernels refuse what they do not describe. */
TEST(conv_pool_kernels_refuse_bad_pooling) {
    nn_backend *cpu = vkt_cpu();
    nn_conv_pool_params p = params_of(&kCases[0], false);
    p.pooled_h += 1; /* a window past the output */
    nn_buffer_ref none = {NULL, 0, 0}, args[6] = {none, none, none, none, none, none};
    CHECK(cpu->run(cpu, NN_KERNEL_CONV2D_POOL_FORWARD, args, 6, &p) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "pooling") != NULL);
    p = params_of(&kCases[0], false);
    CHECK(cpu->run(cpu, NN_KERNEL_CONV2D_POOL_BACKWARD_WEIGHT, args, 6, &p) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "neither dweight nor dbias") != NULL);
}

/* ---- Vulkan against the CPU ---- */

TEST(conv_pool_vulkan_vs_cpu) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; i++) {
        for (int variant = 0; variant < 3; variant++) { /* 0: all; 1: no bias; 2: bias gradient only */
            nn_conv_pool_params p = params_of(&kCases[i], variant != 1);
            const sizes s = sizes_of(&p);
            const size_t F = (size_t)p.conv.filters;
            unsigned seed = 500 + 10 * (unsigned)i + (unsigned)variant;
            float *x = steps(s.x, 4.0f, seed), *w = steps(s.w, 8.0f, seed + 1), *b = steps(F, 16.0f, seed + 2);
            float *dy = randoms(s.y, seed + 3), *dw0 = randoms(s.w, seed + 4), *db0 = randoms(F, seed + 5);
            float *dx0 = randoms(s.x, seed + 6);
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

/* Conv2d(channels -> filters) + ReLU + MaxPool2d fused, x requiring its
 * gradient, against nn_conv2d -> nn_relu -> nn_maxpool2d on the same
 * parameters: outputs and every gradient, twice into the same gradients
 * (the second pass accumulates). The fused side is the container where the
 * backend fuses the layers (Vulkan), else the fused op itself (the CPU,
 * whose nn_sequential runs them unfused). */
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
    float *data = randoms(nx, 77);
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 4, xs, data);
    nn_tensor_set_requires_grad(x, true);
    nn_tensor *w = nn_module_param(net, 0), *b = nn_module_param(net, 1);
    float *got[2][3] = {{0}}, *out[2] = {0};
    size_t counts[3] = {nx, (size_t)nn_tensor_numel(w), (size_t)nn_tensor_numel(b)};
    size_t ny = 0;
    nn_conv2d_params cp = {c->stride, c->stride, c->pad, c->pad};
    const bool container_fuses = nn_conv2d_relu_maxpool_fuses(x, w, b, &cp, c->pool);
    CHECK_MSG(container_fuses == (strcmp(device, "vulkan") == 0), "%s: the backend %s these layers", device,
              container_fuses ? "fuses" : "does not fuse");
    for (int fused = 0; fused < 2; fused++) {
        nn_tensor *grads[3] = {x, w, b};
        for (int t = 0; t < 3; t++) nn_tensor_zero_grad(grads[t]);
        for (int pass = 0; pass < 2; pass++) {
            nn_tensor *y = !fused ? nn_maxpool2d(nn_relu(nn_conv2d(x, w, b, c->stride, c->pad)), c->pool, c->pool)
                           : container_fuses ? nn_module_forward(net, x)
                                             : nn_conv2d_relu_maxpool(x, w, b, &cp, c->pool);
            CHECK_MSG(y != NULL, "%s forward: %s", device, nn_last_error());
            if (!y) return;
            ny = (size_t)nn_tensor_numel(y);
            float *r = randoms(ny, 99);
            int64_t ys[4];
            int ndim = nn_tensor_shape(y, ys);
            nn_tensor *weights = nn_tensor_from_data(ctx, NN_F32, ndim, ys, r);
            CHECK(nn_backward(nn_sum(nn_mul(y, weights))) == NN_OK);
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
