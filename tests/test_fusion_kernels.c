/* The fused kernels (kernels.h, "fusion"): the CPU kernels against
 * double-precision loops, and the Vulkan shaders against the CPU, on random
 * inputs of awkward sizes (odd, batch 1, views at offsets, accumulate on and
 * off, split-K). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "test.h"
#include "vulkan_harness.h"

/* Run one kernel on the CPU backend over host arrays (copied in and out). */
static nn_status cpu_run(nn_kernel kernel, float **data, const size_t *counts, int nargs, const void *params) {
    nn_backend *cpu = vkt_cpu();
    nn_buffer *bufs[5] = {0};
    nn_buffer_ref refs[5] = {{0}};
    for (int i = 0; i < nargs; i++) {
        if (!data[i]) continue;
        bufs[i] = cpu->alloc(cpu, counts[i] * 4 + 4);
        refs[i] = (nn_buffer_ref){bufs[i], 4, 0}; /* a view at an offset */
        cpu->write(cpu, refs[i], data[i], counts[i] * 4);
    }
    nn_status s = cpu->run(cpu, kernel, refs, nargs, params);
    for (int i = 0; i < nargs; i++) {
        if (!bufs[i]) continue;
        cpu->read(cpu, refs[i], data[i], counts[i] * 4);
        cpu->free(cpu, bufs[i]);
    }
    return s;
}

/* ---- GEMM + epilogue ---- */

typedef struct gemm_case {
    int m, n, k, ta, tb, batch, summed, pad;
    float alpha, beta;
    int epilogue;
} gemm_case;

static double at(const float *x, int ld, int r, int c, int trans) { return trans ? x[c * ld + r] : x[r * ld + c]; }

static void gemm_epilogue_reference(const gemm_case *g, const float *a, const float *b, float *c, const float *aux,
                                    int lda, int ldb, int ldc, int64_t sa, int64_t sb, int64_t sc) {
    int outputs = g->summed ? 1 : g->batch, products = g->summed ? g->batch : 1;
    for (int o = 0; o < outputs; o++)
        for (int i = 0; i < g->m; i++)
            for (int j = 0; j < g->n; j++) {
                double t = 0.0;
                for (int q = 0; q < products; q++) {
                    int bi = g->summed ? q : o;
                    for (int l = 0; l < g->k; l++)
                        t += at(a + bi * sa, lda, i, l, g->ta) * at(b + bi * sb, ldb, l, j, g->tb);
                }
                t *= g->alpha;
                int64_t idx = o * sc + (int64_t)i * ldc + j;
                if (g->epilogue & NN_EPI_BIAS_COLS) t += aux[j];
                if (g->epilogue & NN_EPI_BIAS_ROWS) t += aux[i];
                if ((g->epilogue & NN_EPI_RELU) && t < 0) t = 0;
                if ((g->epilogue & NN_EPI_MASK) && !(aux[idx] > 0)) t = 0;
                c[idx] = (float)(t + (g->beta != 0 ? g->beta * (double)c[idx] : 0.0));
            }
}

static void run_gemm_case(const gemm_case *g, unsigned seed, bool vulkan) {
    int lda = (g->ta ? g->m : g->k) + g->pad, ldb = (g->tb ? g->k : g->n) + g->pad, ldc = g->n + g->pad;
    int64_t sa = (int64_t)(g->ta ? g->k : g->m) * lda, sb = (int64_t)(g->tb ? g->n : g->k) * ldb;
    int64_t sc = (int64_t)g->m * ldc;
    int outputs = g->summed ? 1 : g->batch;
    size_t na = (size_t)(sa * g->batch), nb = (size_t)(sb * g->batch), nc = (size_t)(sc * outputs);
    bool mask = g->epilogue & NN_EPI_MASK;
    size_t nx = mask ? nc : (g->epilogue & NN_EPI_BIAS_ROWS) ? (size_t)g->m : (size_t)g->n;
    float *a = vkt_randoms(na, -1, 1, seed), *b = vkt_randoms(nb, -1, 1, seed + 1), *c = vkt_randoms(nc, -1, 1, seed + 2);
    float *aux = vkt_randoms(nx, -1, 1, seed + 3);
    nn_gemm_epilogue_params p = {
        .gemm = {.m = g->m, .n = g->n, .k = g->k, .trans_a = g->ta, .trans_b = g->tb, .lda = lda, .ldb = ldb,
                 .ldc = ldc, .batch = g->batch, .stride_a = sa, .stride_b = sb, .stride_c = g->summed ? 0 : sc,
                 .alpha = g->alpha, .beta = g->beta},
        .epilogue = g->epilogue};
    char what[200];
    snprintf(what, sizeof what, "gemm_epilogue 0x%x m=%d n=%d k=%d ta=%d tb=%d batch=%d summed=%d beta=%g",
             g->epilogue, g->m, g->n, g->k, g->ta, g->tb, g->batch, g->summed, g->beta);
    if (vulkan) {
        vkt_pair args[4] = {vkt_pair_new(a, na, 16), vkt_pair_new(b, nb, 0), vkt_pair_new(c, nc, 32),
                            vkt_pair_new(aux, nx, 8)};
        if (vkt_run(NN_KERNEL_GEMM_EPILOGUE, args, 4, &p))
            vkt_compare_f32(&args[2], 2e-5 * sqrt(g->k * g->batch + 1.0), what);
        for (int i = 0; i < 4; i++) vkt_pair_free(&args[i]);
    } else {
        float *want = malloc(nc * sizeof *want);
        memcpy(want, c, nc * sizeof *want);
        gemm_epilogue_reference(g, a, b, want, aux, lda, ldb, ldc, sa, sb, sc);
        float *data[4] = {a, b, c, aux};
        size_t counts[4] = {na, nb, nc, nx};
        CHECK_MSG(cpu_run(NN_KERNEL_GEMM_EPILOGUE, data, counts, 4, &p) == NN_OK, "%s: %s", what, nn_last_error());
        for (int o = 0; o < outputs; o++)
            for (int i = 0; i < g->m; i++)
                for (int j = 0; j < g->n; j++) {
                    size_t idx = (size_t)(o * sc + (int64_t)i * ldc + j);
                    double tol = 1e-5 * sqrt(g->k * g->batch + 1.0) * fmax(1.0, fabs(want[idx]));
                    if (!(fabs(c[idx] - want[idx]) <= tol)) {
                        CHECK_MSG(0, "%s: C[%zu] = %.9g, want %.9g", what, idx, c[idx], want[idx]);
                        o = outputs, i = g->m;
                        break;
                    }
                }
        free(want);
    }
    free(a);
    free(b);
    free(c);
    free(aux);
}

static const gemm_case kGemmCases[] = {
    /* Linear forward: x W^T + b, ReLU (batch 1, odd sizes) */
    {1, 7, 5, 0, 1, 1, 0, 0, 1, 0, NN_EPI_BIAS_COLS | NN_EPI_RELU},
    {13, 9, 21, 0, 1, 1, 0, 1, 1, 0, NN_EPI_BIAS_COLS | NN_EPI_RELU},
    {13, 9, 21, 0, 1, 1, 0, 0, 1, 0, NN_EPI_BIAS_COLS},
    /* conv forward: W cols per image + bias per filter, ReLU */
    {6, 37, 25, 0, 0, 3, 0, 0, 1, 0, NN_EPI_BIAS_ROWS | NN_EPI_RELU},
    {5, 11, 9, 0, 0, 1, 0, 1, 1, 0, NN_EPI_BIAS_ROWS},
    /* dX = dY W, masked, overwrite and accumulate */
    {7, 11, 13, 0, 0, 1, 0, 0, 1, 0, NN_EPI_MASK},
    {7, 11, 13, 0, 0, 1, 0, 2, 1, 1, NN_EPI_MASK},
    {3, 5, 4, 1, 1, 2, 0, 0, 0.5f, -1.5f, NN_EPI_MASK},
    /* relu alone, with beta and a summed batch */
    {9, 4, 30, 1, 0, 4, 1, 0, 1, 1, NN_EPI_RELU},
    {9, 4, 30, 0, 1, 3, 0, 1, -2, 0.25f, NN_EPI_BIAS_COLS | NN_EPI_RELU},
    /* long k: split-K on Vulkan, the epilogue in the second pass */
    {5, 3, 3000, 0, 1, 1, 0, 0, 1, 0, NN_EPI_BIAS_COLS | NN_EPI_RELU},
    {5, 3, 3000, 1, 0, 1, 0, 0, 1, 1, NN_EPI_MASK},
    {33, 17, 2000, 0, 0, 1, 0, 1, 1, 0, NN_EPI_BIAS_ROWS | NN_EPI_RELU},
    /* LeNet-5's first Linear at batch 64: a latency-bound product split over
     * k, its bias and ReLU applied by the split's last workgroup */
    {64, 120, 256, 0, 1, 1, 0, 0, 1, 0, NN_EPI_BIAS_COLS | NN_EPI_RELU},
    {64, 120, 257, 0, 0, 1, 0, 3, 1, 1, NN_EPI_MASK},
    /* no epilogue: the plain GEMM */
    {8, 8, 8, 0, 0, 1, 0, 0, 1, 0, 0},
};

TEST(fusion_cpu_gemm_epilogue_vs_double) {
    for (size_t i = 0; i < sizeof kGemmCases / sizeof kGemmCases[0]; i++) run_gemm_case(&kGemmCases[i], 40 + 7 * (unsigned)i, false);
}

TEST(fusion_cpu_gemm_epilogue_rejects_bad_flags) {
    float x[4] = {1, 2, 3, 4};
    float *data[4] = {x, x, x, NULL};
    size_t counts[4] = {4, 4, 4, 4};
    nn_gemm_epilogue_params p = {.gemm = {.m = 2, .n = 2, .k = 2, .lda = 2, .ldb = 2, .ldc = 2, .batch = 1, .alpha = 1},
                                 .epilogue = NN_EPI_BIAS_COLS};
    CHECK(cpu_run(NN_KERNEL_GEMM_EPILOGUE, data, counts, 4, &p) == NN_ERR_ARGUMENT); /* no aux */
    data[3] = x;
    p.epilogue = NN_EPI_BIAS_COLS | NN_EPI_MASK;
    CHECK(cpu_run(NN_KERNEL_GEMM_EPILOGUE, data, counts, 4, &p) == NN_ERR_BACKEND);
    CHECK(strstr(nn_last_error(), "epilogue") != NULL);
    p.epilogue = 64;
    CHECK(cpu_run(NN_KERNEL_GEMM_EPILOGUE, data, counts, 4, &p) == NN_ERR_BACKEND);
}

TEST(fusion_vulkan_gemm_epilogue) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    for (size_t i = 0; i < sizeof kGemmCases / sizeof kGemmCases[0]; i++) run_gemm_case(&kGemmCases[i], 90 + 5 * (unsigned)i, true);
    static const char *tiles[] = {"large", "medium", "small", "thin", "latency"};
    for (int t = 0; t < 5; t++) {
        setenv("NN_ENGINE_VULKAN_GEMM_TILES", tiles[t], 1);
        gemm_case g = {67, 130, 29, 0, 1, 2, 0, 0, 1, 0, NN_EPI_BIAS_COLS | NN_EPI_RELU};
        run_gemm_case(&g, 300 + (unsigned)t, true);
        gemm_case m = {67, 30, 29, 1, 0, 1, 0, 1, 1, 1, NN_EPI_MASK};
        run_gemm_case(&m, 310 + (unsigned)t, true);
        /* A summed batch with a long walk: gemm_latency.comp splits it and its
         * last workgroups add the partials, ReLU after the sum; with a bias
         * (read from the binding the split would use) it walks unsplit. */
        gemm_case s = {6, 25, 70, 0, 1, 40, 1, 0, 1, 0.5f, NN_EPI_RELU};
        run_gemm_case(&s, 320 + (unsigned)t, true);
        gemm_case sb = {6, 25, 70, 0, 1, 40, 1, 0, 1, 0, NN_EPI_BIAS_ROWS | NN_EPI_RELU};
        run_gemm_case(&sb, 330 + (unsigned)t, true);
    }
    unsetenv("NN_ENGINE_VULKAN_GEMM_TILES");
}

/* ---- max-pool backward masked by the pool output ---- */

static const nn_pool_params kPoolCases[] = {
    {1, 1, 5, 5, 2, 2, 0, 2, 2, 0, NN_LAYOUT_DENSE},
    {2, 3, 7, 9, 3, 2, 1, 4, 5, 0, NN_LAYOUT_DENSE},
    {1, 2, 6, 6, 3, 1, 1, 6, 6, 0, NN_LAYOUT_DENSE},
    {3, 6, 24, 24, 2, 2, 0, 12, 12, 0, NN_LAYOUT_DENSE},
};

/* x is a ReLU output (zeros and positives); the pool's y and argmax come from
 * the CPU forward kernel. */
TEST(fusion_cpu_maxpool_backward_masked_vs_reference) {
    for (size_t i = 0; i < sizeof kPoolCases / sizeof kPoolCases[0]; i++) {
        for (int acc = 0; acc < 2; acc++) {
            nn_pool_params p = kPoolCases[i];
            size_t in = (size_t)p.batch * p.channels * p.height * p.width;
            size_t out = (size_t)p.batch * p.channels * p.out_h * p.out_w;
            float *x = vkt_randoms(in, -1, 1, 7 + (unsigned)i);
            for (size_t j = 0; j < in; j++) x[j] = x[j] > 0 ? x[j] : 0.0f;
            float *y = calloc(out, sizeof *y), *argmax = calloc(out, sizeof *argmax);
            float *fwd[3] = {x, y, argmax};
            size_t fc[3] = {in, out, out};
            CHECK(cpu_run(NN_KERNEL_MAXPOOL_FORWARD, fwd, fc, 3, &p) == NN_OK);
            float *dy = vkt_randoms(out, -1, 1, 30 + (unsigned)i), *dx = vkt_randoms(in, -1, 1, 50 + (unsigned)i);
            double *want = malloc(in * sizeof *want);
            for (size_t j = 0; j < in; j++) want[j] = acc ? dx[j] : 0.0;
            int32_t *am = (int32_t *)argmax;
            size_t in_plane = (size_t)p.height * p.width, out_plane = (size_t)p.out_h * p.out_w;
            for (size_t q = 0; q < out; q++)
                if (y[q] > 0) want[(q / out_plane) * in_plane + (size_t)am[q]] += dy[q];
            p.accumulate = acc;
            float *bwd[4] = {dy, argmax, y, dx};
            size_t bc[4] = {out, out, out, in};
            CHECK(cpu_run(NN_KERNEL_MAXPOOL_BACKWARD_MASKED, bwd, bc, 4, &p) == NN_OK);
            for (size_t j = 0; j < in; j++)
                if (!(fabs(dx[j] - want[j]) <= 1e-6 * fmax(1.0, fabs(want[j])))) {
                    CHECK_MSG(0, "pool case %zu acc %d: dx[%zu] = %g, want %g", i, acc, j, dx[j], want[j]);
                    break;
                }
            free(x), free(y), free(argmax), free(dy), free(dx), free(want);
        }
    }
}

TEST(fusion_vulkan_maxpool_backward_masked) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    for (size_t i = 0; i < sizeof kPoolCases / sizeof kPoolCases[0]; i++) {
        nn_pool_params p = kPoolCases[i];
        size_t in = (size_t)p.batch * p.channels * p.height * p.width;
        size_t out = (size_t)p.batch * p.channels * p.out_h * p.out_w;
        float *x = vkt_randoms(in, -1, 1, 70 + (unsigned)i);
        for (size_t j = 0; j < in; j++) x[j] = x[j] > 0 ? x[j] : 0.0f;
        float *dy = vkt_randoms(out, -1, 1, 80 + (unsigned)i);
        vkt_pair fwd[3] = {vkt_pair_new(x, in, 12), vkt_pair_new(NULL, out, 0), vkt_pair_new(NULL, out, 4)};
        if (vkt_run(NN_KERNEL_MAXPOOL_FORWARD, fwd, 3, &p)) {
            for (int acc = 0; acc < 2; acc++) {
                p.accumulate = acc;
                float *dx0 = vkt_randoms(in, -1, 1, 90 + (unsigned)i);
                vkt_pair bwd[4] = {vkt_pair_new(dy, out, 0), fwd[2], fwd[1], vkt_pair_new(dx0, in, 8)};
                char what[80];
                snprintf(what, sizeof what, "maxpool_backward_masked case %zu accumulate %d", i, acc);
                if (vkt_run(NN_KERNEL_MAXPOOL_BACKWARD_MASKED, bwd, 4, &p)) vkt_compare_f32(&bwd[3], 1e-6, what);
                vkt_pair_free(&bwd[0]);
                vkt_pair_free(&bwd[3]);
                free(dx0);
            }
        }
        for (int j = 0; j < 3; j++) vkt_pair_free(&fwd[j]);
        free(x);
        free(dy);
    }
}

/* ---- softmax + cross-entropy, forward and gradient ---- */

static const int kSoftmaxShapes[][2] = {{1, 1}, {1, 10}, {7, 3}, {64, 10}, {300, 17}};

TEST(fusion_cpu_softmax_ce_fused_vs_double) {
    for (size_t s = 0; s < sizeof kSoftmaxShapes / sizeof kSoftmaxShapes[0]; s++) {
        int rows = kSoftmaxShapes[s][0], cols = kSoftmaxShapes[s][1];
        float *x = vkt_randoms((size_t)rows * cols, -8, 8, 11 + (unsigned)s);
        float *labels = malloc((size_t)rows * sizeof *labels);
        for (int r = 0; r < rows; r++) ((int32_t *)labels)[r] = (r * 7 + 3) % cols;
        float *g = calloc((size_t)rows * cols, sizeof *g), loss = 0;
        float *data[4] = {x, labels, g, &loss};
        size_t counts[4] = {(size_t)rows * cols, (size_t)rows, (size_t)rows * cols, 1};
        nn_softmax_params p = {rows, cols, 0};
        CHECK(cpu_run(NN_KERNEL_SOFTMAX_CE_FUSED, data, counts, 4, &p) == NN_OK);
        double total = 0.0;
        for (int r = 0; r < rows; r++) {
            const float *xr = x + (size_t)r * cols;
            double m = xr[0], sum = 0.0;
            for (int j = 1; j < cols; j++) m = fmax(m, xr[j]);
            for (int j = 0; j < cols; j++) sum += exp(xr[j] - m);
            int label = ((int32_t *)labels)[r];
            total += log(sum) + m - xr[label];
            for (int j = 0; j < cols; j++) {
                double want = (exp(xr[j] - m) / sum - (j == label)) / rows;
                CHECK_CLOSE(g[(size_t)r * cols + j], want, 1e-6);
            }
        }
        CHECK_CLOSE(loss, total / rows, 1e-5);
        free(x), free(labels), free(g);
    }
}

TEST(fusion_cpu_softmax_ce_fused_reports_bad_label) {
    float x[6] = {1, 2, 3, 4, 5, 6}, g[6], loss;
    int32_t labels[2] = {1, 3};
    float *data[4] = {x, (float *)labels, g, &loss};
    size_t counts[4] = {6, 2, 6, 1};
    nn_softmax_params p = {2, 3, 0};
    CHECK(cpu_run(NN_KERNEL_SOFTMAX_CE_FUSED, data, counts, 4, &p) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "label 3 at row 1") != NULL);
}

TEST(fusion_vulkan_softmax_ce_fused) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    for (size_t s = 0; s < sizeof kSoftmaxShapes / sizeof kSoftmaxShapes[0]; s++) {
        int rows = kSoftmaxShapes[s][0], cols = kSoftmaxShapes[s][1];
        float *x = vkt_randoms((size_t)rows * cols, -8, 8, 21 + (unsigned)s);
        int32_t *labels = malloc((size_t)rows * sizeof *labels);
        for (int r = 0; r < rows; r++) labels[r] = (r * 5 + 1) % cols;
        vkt_pair args[4] = {vkt_pair_new(x, (size_t)rows * cols, 4), vkt_pair_new(labels, (size_t)rows, 0),
                            vkt_pair_new(NULL, (size_t)rows * cols, 12), vkt_pair_new(NULL, 1, 0)};
        nn_softmax_params p = {rows, cols, 0};
        if (vkt_run(NN_KERNEL_SOFTMAX_CE_FUSED, args, 4, &p)) {
            vkt_compare_f32(&args[2], 1e-5, "softmax_ce_fused dlogits");
            vkt_compare_f32(&args[3], 1e-5, "softmax_ce_fused loss");
        }
        for (int i = 0; i < 4; i++) vkt_pair_free(&args[i]);
        free(x), free(labels);
    }
}

/* ---- SGD with the learning rate on the device ---- */

/* The device-lr kernel equals the push-constant kernel with the same rate. */
TEST(fusion_cpu_sgd_device_lr_matches_sgd_update) {
    const size_t n = 1001;
    for (int variant = 0; variant < 3; variant++) {
        nn_sgd_params p = {.n = (int64_t)n, .lr = 0.0f, .momentum = variant ? 0.9f : 0.0f,
                           .weight_decay = 0.01f, .clip_value = variant == 2 ? 0.3f : 0.0f,
                           .max_grad_norm = variant == 2 ? 2.0f : 0.0f, .nesterov = variant == 2};
        float *w1 = vkt_randoms(n, -1, 1, 3), *w2 = vkt_randoms(n, -1, 1, 3), *g = vkt_randoms(n, -2, 2, 4);
        float *v1 = vkt_randoms(n, -1, 1, 5), *v2 = vkt_randoms(n, -1, 1, 5);
        float scalars[2] = {0.037f, 9.5f}, norm = 9.5f;
        float *d1[5] = {w1, g, variant ? v1 : NULL, scalars, NULL};
        size_t c[5] = {n, n, n, 2, 0};
        CHECK(cpu_run(NN_KERNEL_SGD_UPDATE_DEVICE_LR, d1, c, 5, &p) == NN_OK);
        p.lr = 0.037f;
        float *d2[5] = {w2, g, variant ? v2 : NULL, &norm, NULL};
        size_t c2[5] = {n, n, n, 1, 0};
        CHECK(cpu_run(NN_KERNEL_SGD_UPDATE, d2, c2, 5, &p) == NN_OK);
        CHECK(memcmp(w1, w2, n * sizeof *w1) == 0);
        CHECK(memcmp(v1, v2, n * sizeof *v1) == 0);
        free(w1), free(w2), free(g), free(v1), free(v2);
    }
}

TEST(fusion_vulkan_sgd_device_lr) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    const size_t n = 777;
    float *w = vkt_randoms(n, -1, 1, 6), *g = vkt_randoms(n, -2, 2, 7), *v = vkt_randoms(n, -1, 1, 8);
    float scalars[2] = {0.05f, 4.0f};
    for (int variant = 0; variant < 2; variant++) {
        nn_sgd_params p = {.n = (int64_t)n, .lr = 123.0f /* ignored */, .momentum = variant ? 0.9f : 0.0f,
                           .weight_decay = 0.001f, .max_grad_norm = variant ? 1.0f : 0.0f, .nesterov = variant};
        vkt_pair args[5] = {vkt_pair_new(w, n, 4), vkt_pair_new(g, n, 0),
                            variant ? vkt_pair_new(v, n, 8) : vkt_pair_none(), vkt_pair_new(scalars, 2, 4),
                            vkt_pair_none()};
        if (vkt_run(NN_KERNEL_SGD_UPDATE_DEVICE_LR, args, 5, &p)) {
            vkt_compare_f32(&args[0], 1e-6, "sgd_update_device_lr param");
            if (variant) vkt_compare_f32(&args[2], 1e-6, "sgd_update_device_lr velocity");
        }
        for (int i = 0; i < 5; i++) vkt_pair_free(&args[i]);
    }
    free(w), free(g), free(v);
}

/* The fused kernel reports a bad label through the device flag, as the
 * unfused forward does: an error at the next read, naming row and label. */
TEST(fusion_vulkan_softmax_ce_fused_bad_label_reported_at_read) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    vkt_check_bad_label_reported(NN_KERNEL_SOFTMAX_CE_FUSED);
}
