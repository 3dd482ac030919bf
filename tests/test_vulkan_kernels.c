/* Parity of every Vulkan kernel with the CPU backend (the reference), on
 * random inputs of awkward sizes: odd sizes, batch 1, every transpose flag,
 * accumulate on and off, views at non-zero offsets, every GEMM tile
 * configuration. Runs on whatever device Vulkan offers (lavapipe in CI). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "vulkan_harness.h"

#define NEED_VULKAN()                          \
    do {                                       \
        if (vkt_skipped() || !vkt_vulkan()) return; \
    } while (0)

/* ---- GEMM ---- */

static void gemm_case(int m, int n, int k, int ta, int tb, int batch, int summed, int pad, float alpha, float beta,
                      unsigned seed) {
    int lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
    int64_t sa = (int64_t)(ta ? k : m) * lda, sb = (int64_t)(tb ? n : k) * ldb, sc = (int64_t)m * ldc;
    int outputs = summed ? 1 : batch;
    size_t na = (size_t)sa * batch, nb = (size_t)sb * batch, nc = (size_t)sc * outputs;
    float *a = vkt_randoms(na, -1, 1, seed), *b = vkt_randoms(nb, -1, 1, seed + 1), *c = vkt_randoms(nc, -1, 1, seed + 2);
    vkt_pair args[3] = {vkt_pair_new(a, na, 16), vkt_pair_new(b, nb, 0), vkt_pair_new(c, nc, 32)};
    nn_gemm_params p = {.m = m, .n = n, .k = k, .trans_a = ta, .trans_b = tb, .lda = lda, .ldb = ldb, .ldc = ldc,
                        .batch = batch, .stride_a = sa, .stride_b = sb, .stride_c = summed ? 0 : sc,
                        .alpha = alpha, .beta = beta};
    char what[160];
    snprintf(what, sizeof what, "gemm m=%d n=%d k=%d ta=%d tb=%d batch=%d summed=%d pad=%d alpha=%g beta=%g", m, n,
             k, ta, tb, batch, summed, pad, alpha, beta);
    if (vkt_run(NN_KERNEL_GEMM, args, 3, &p)) vkt_compare_f32(&args[2], 2e-5 * sqrt(k * batch + 1.0), what);
    for (int i = 0; i < 3; i++) vkt_pair_free(&args[i]);
    free(a);
    free(b);
    free(c);
}

TEST(vulkan_gemm_every_tile_and_transpose) {
    NEED_VULKAN();
    static const char *tiles[] = {"large", "large16", "large-db", "128x64", "64x128", "medium", "small",
                                  "thin", "latency"};
    static const int shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {33, 17, 65}, {67, 130, 29}, {6, 25, 150}, {129, 3, 8}};
    unsigned seed = 1;
    for (int t = 0; t < (int)(sizeof tiles / sizeof tiles[0]); t++) {
        setenv("NN_ENGINE_VULKAN_GEMM_TILES", tiles[t], 1);
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int ta = 0; ta < 2; ta++)
                for (int tb = 0; tb < 2; tb++)
                    gemm_case(shapes[s][0], shapes[s][1], shapes[s][2], ta, tb, 1, 0, (int)(s % 2), 1.0f,
                              0.0f, seed++);
        if (nn_test_failures()) break;
    }
    unsetenv("NN_ENGINE_VULKAN_GEMM_TILES");
}

/* Sizes, offsets and leading dimensions that are multiples of 4 take the
 * vec4 loads; the last shapes have an odd side or offset and must not. */
TEST(vulkan_gemm_vec4_loads) {
    NEED_VULKAN();
    static const char *tiles[] = {"large", "large16", "128x64", "64x128", "medium", "small", "thin", "latency", ""};
    static const int shapes[][4] = {/* m, n, k, batch */ {64, 36, 20, 1}, {36, 132, 28, 1}, {132, 8, 200, 3},
                                    {4, 4, 4, 1}, {36, 40, 3, 1}, {37, 40, 8, 1}};
    unsigned seed = 300;
    for (int t = 0; t < (int)(sizeof tiles / sizeof tiles[0]); t++) {
        if (tiles[t][0]) setenv("NN_ENGINE_VULKAN_GEMM_TILES", tiles[t], 1);
        else unsetenv("NN_ENGINE_VULKAN_GEMM_TILES");
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int ta = 0; ta < 2; ta++)
                for (int tb = 0; tb < 2; tb++)
                    gemm_case(shapes[s][0], shapes[s][1], shapes[s][2], ta, tb, shapes[s][3], 0, (int)(s % 2) * 4,
                              1.0f, 0.5f, seed++);
        if (nn_test_failures()) break;
    }
    unsetenv("NN_ENGINE_VULKAN_GEMM_TILES");
}

TEST(vulkan_gemm_batches_alpha_beta) {
    NEED_VULKAN();
    unsigned seed = 100;
    for (int ta = 0; ta < 2; ta++) {
        for (int tb = 0; tb < 2; tb++) {
            gemm_case(9, 11, 13, ta, tb, 3, 0, 2, 0.5f, -1.5f, seed++);   /* batched, beta */
            gemm_case(6, 25, 37, ta, tb, 5, 1, 0, 1.0f, 1.0f, seed++);    /* summed batch (conv dW) */
            gemm_case(6, 25, 600, ta, tb, 7, 1, 0, 1.0f, 0.5f, seed++);   /* summed, split by products */
            gemm_case(17, 4, 70, ta, tb, 4, 1, 1, -2.0f, 0.0f, seed++);
            gemm_case(1, 1, 200, ta, tb, 1, 0, 0, 1.0f, 0.25f, seed++);   /* a dot product */
        }
    }
    /* Split-K (few output tiles, long k): partial sums added in a second pass. */
    for (int ta = 0; ta < 2; ta++) {
        gemm_case(1, 1, 5000, ta, 1, 1, 0, 0, 1.0f, 0.0f, seed++);
        gemm_case(33, 17, 2000, ta, 0, 1, 0, 1, 0.5f, 2.0f, seed++);
        gemm_case(5, 9, 37, ta, 1, 40, 1, 0, 1.0f, -1.0f, seed++); /* summed batch, k not a slice multiple */
        gemm_case(130, 70, 3000, ta, 1, 1, 0, 0, 1.0f, 0.0f, seed++);
    }
    /* Shapes of LeNet-5's training step at batch 64 (default tile choice). */
    gemm_case(6, 784, 25, 0, 0, 64, 0, 0, 1, 0, seed++);   /* c1 forward */
    gemm_case(6, 25, 784, 0, 1, 64, 1, 0, 1, 1, seed++);   /* c1 dW, summed */
    gemm_case(100, 16, 150, 1, 0, 64, 0, 0, 1, 0, seed++); /* c3 dcols */
    gemm_case(64, 120, 400, 0, 1, 1, 0, 0, 1, 0, seed++);  /* l1 forward */
    gemm_case(120, 400, 64, 1, 0, 1, 0, 0, 1, 1, seed++);  /* l1 dW */
    gemm_case(300, 260, 90, 0, 0, 1, 0, 0, 1, 0, seed++);  /* default choice: medium */
    gemm_case(1300, 1290, 17, 0, 1, 1, 0, 0, 1, 0, seed++); /* default choice: large */
}

TEST(vulkan_gemm_k0_and_alpha0_scale_c) {
    NEED_VULKAN();
    /* alpha = 0 must not multiply: A full of NaN leaves C = beta C. */
    float a[12], b[12], c[9];
    for (int i = 0; i < 12; i++) a[i] = NAN, b[i] = 1.0f;
    vkt_fill(c, 9, -1, 1, 7);
    vkt_pair args[3] = {vkt_pair_new(a, 12, 0), vkt_pair_new(b, 12, 0), vkt_pair_new(c, 9, 0)};
    nn_gemm_params p = {.m = 3, .n = 3, .k = 4, .lda = 4, .ldb = 3, .ldc = 3, .batch = 1, .alpha = 0.0f, .beta = 2.0f};
    if (vkt_run(NN_KERNEL_GEMM, args, 3, &p)) vkt_compare_f32(&args[2], 0, "alpha=0");
    p.k = 0;
    p.alpha = 1.0f;
    p.beta = 0.0f;
    if (vkt_run(NN_KERNEL_GEMM, args, 3, &p)) vkt_compare_f32(&args[2], 0, "k=0 beta=0");
    for (int i = 0; i < 3; i++) vkt_pair_free(&args[i]);
}

TEST(vulkan_gemm_rejects_bad_strides) {
    NEED_VULKAN();
    float x[16] = {0};
    vkt_pair args[3] = {vkt_pair_new(x, 16, 0), vkt_pair_new(x, 16, 0), vkt_pair_new(x, 16, 0)};
    nn_gemm_params p = {.m = 4, .n = 4, .k = 4, .lda = 3, .ldb = 4, .ldc = 4, .batch = 1, .alpha = 1};
    nn_buffer_ref g[3] = {{args[0].gpu, 0, 0}, {args[1].gpu, 0, 0}, {args[2].gpu, 0, 0}};
    CHECK(vkt_vulkan()->run(vkt_vulkan(), NN_KERNEL_GEMM, g, 3, &p) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "vulkan gemm") && strstr(nn_last_error(), "lda=3"));
    for (int i = 0; i < 3; i++) vkt_pair_free(&args[i]);
}

/* ---- convolution data movement ---- */

static const nn_conv_geometry kGeometries[] = {
    /* batch, C, H, W, kh, kw, sh, sw, ph, pw, out_h, out_w */
    {1, 1, 5, 5, 3, 3, 1, 1, 0, 0, 3, 3, 0, 1, 1},
    {2, 3, 7, 6, 3, 2, 2, 1, 1, 0, 4, 5, 0, 1, 1},
    {1, 2, 9, 9, 5, 5, 1, 1, 2, 2, 9, 9, 0, 1, 1},
    {3, 1, 28, 28, 5, 5, 1, 1, 2, 2, 28, 28, 0, 1, 1},
    {2, 2, 8, 7, 2, 2, 3, 3, 0, 1, 3, 3, 0, 1, 1},
    {1, 4, 11, 13, 3, 3, 2, 2, 1, 1, 6, 7, 0, 1, 1},
};

TEST(vulkan_im2col_col2im) {
    NEED_VULKAN();
    for (size_t i = 0; i < sizeof kGeometries / sizeof kGeometries[0]; i++) {
        nn_conv_geometry g = kGeometries[i];
        size_t pixels = (size_t)g.batch * g.channels * g.height * g.width;
        size_t columns = (size_t)g.batch * g.channels * g.kernel_h * g.kernel_w * g.out_h * g.out_w;
        float *img = vkt_randoms(pixels, -1, 1, (unsigned)i), *col = vkt_randoms(columns, -1, 1, (unsigned)i + 50);
        vkt_pair im2col[2] = {vkt_pair_new(img, pixels, 4), vkt_pair_new(col, columns, 0)};
        char what[64];
        snprintf(what, sizeof what, "im2col geometry %zu", i);
        if (vkt_run(NN_KERNEL_IM2COL, im2col, 2, &g)) vkt_compare_f32(&im2col[1], 0, what);
        for (int acc = 0; acc < 2; acc++) {
            g.accumulate = acc;
            vkt_pair col2im[2] = {vkt_pair_new(col, columns, 0), vkt_pair_new(img, pixels, 8)};
            snprintf(what, sizeof what, "col2im geometry %zu accumulate %d", i, acc);
            if (vkt_run(NN_KERNEL_COL2IM, col2im, 2, &g)) vkt_compare_f32(&col2im[1], 1e-6, what);
            vkt_pair_free(&col2im[0]);
            vkt_pair_free(&col2im[1]);
        }
        vkt_pair_free(&im2col[0]);
        vkt_pair_free(&im2col[1]);
        free(img);
        free(col);
    }
}

/* ---- convolution kernels (no column matrix) ---- */

/* Forward (with and without bias and ReLU), the data gradient and the
 * weight gradient (overwrite and accumulate) against the CPU's column
 * route, on every geometry above plus LeNet-5's two layers at a batch whose
 * weight gradient is split, by the default choice (conv_latency.comp for
 * these sizes), the column route ("medium" tiles) and the latency kernel
 * forced; the column route also with the column matrix kept (the forward
 * fills it, the weight gradient reads it: both compared). */
static void conv_kernels_case(const nn_conv_geometry *geometry, int filters, unsigned seed, const char *route,
                              bool kept) {
    nn_conv_geometry g = *geometry;
    size_t nx = (size_t)g.batch * g.channels * g.height * g.width;
    size_t nw = (size_t)filters * g.channels * g.kernel_h * g.kernel_w;
    size_t ny = (size_t)g.batch * filters * g.out_h * g.out_w;
    float *x = vkt_randoms(nx, -1, 1, seed), *w = vkt_randoms(nw, -1, 1, seed + 1), *b = vkt_randoms((size_t)filters, -1, 1, seed + 2);
    float *y = vkt_randoms(ny, -1, 1, seed + 3), *dw = vkt_randoms(nw, -1, 1, seed + 4), *dx = vkt_randoms(nx, -1, 1, seed + 5);
    double k = (double)g.channels * g.kernel_h * g.kernel_w;
    size_t ncols = (size_t)g.batch * (size_t)k * g.out_h * g.out_w;
    float *cols = malloc((ncols ? ncols : 1) * sizeof *cols); /* what a kept column matrix holds */
    vkt_host_im2col(&g, x, cols);
    char what[160];
    for (int epi = 0; epi < 4; epi++) {
        nn_conv_params p = {.g = g, .filters = filters, .epilogue = (epi & 1 ? NN_EPI_BIAS_ROWS : 0) |
                                                                   (epi & 2 ? NN_EPI_RELU : 0)};
        vkt_pair args[5] = {vkt_pair_new(x, nx, 4), vkt_pair_new(w, nw, 0), vkt_pair_new(y, ny, 8),
                            epi & 1 ? vkt_pair_new(b, (size_t)filters, 0) : vkt_pair_none(),
                            kept ? vkt_pair_new(NULL, ncols, 4) : vkt_pair_none()};
        snprintf(what, sizeof what, "conv2d_forward %dx%dx%dx%d f%d k%dx%d s%d,%d p%d,%d epilogue %d (%s%s)",
                 g.batch, g.channels, g.height, g.width, filters, g.kernel_h, g.kernel_w, g.stride_h, g.stride_w,
                 g.pad_h, g.pad_w, p.epilogue, route, kept ? ", columns kept" : "");
        if (vkt_run(NN_KERNEL_CONV2D_FORWARD, args, 5, &p)) {
            vkt_compare_f32(&args[2], 2e-5 * sqrt(k + 1), what);
            if (kept) vkt_compare_f32(&args[4], 0, what);
        }
        for (int i = 0; i < 5; i++) vkt_pair_free(&args[i]);
    }
    for (int acc = 0; acc < 2; acc++) {
        nn_conv_params p = {.g = g, .filters = filters};
        p.g.accumulate = acc;
        vkt_pair data[3] = {vkt_pair_new(y, ny, 0), vkt_pair_new(w, nw, 4), vkt_pair_new(dx, nx, 8)};
        snprintf(what, sizeof what, "conv2d_backward_data geometry %dx%dx%dx%d f%d accumulate %d (%s)", g.batch,
                 g.channels, g.height, g.width, filters, acc, route);
        if (vkt_run(NN_KERNEL_CONV2D_BACKWARD_DATA, data, 3, &p))
            vkt_compare_f32(&data[2], 2e-5 * sqrt((double)filters * g.kernel_h * g.kernel_w + 1), what);
        vkt_pair weight[4] = {vkt_pair_new(y, ny, 4), vkt_pair_new(x, nx, 0), vkt_pair_new(dw, nw, 12),
                              kept ? vkt_pair_new(cols, ncols, 8) : vkt_pair_none()};
        snprintf(what, sizeof what, "conv2d_backward_weight geometry %dx%dx%dx%d f%d accumulate %d (%s%s)", g.batch,
                 g.channels, g.height, g.width, filters, acc, route, kept ? ", columns kept" : "");
        if (vkt_run(NN_KERNEL_CONV2D_BACKWARD_WEIGHT, weight, 4, &p))
            vkt_compare_f32(&weight[2], 2e-5 * sqrt((double)g.batch * g.out_h * g.out_w + 1), what);
        for (int i = 0; i < 3; i++) vkt_pair_free(&data[i]);
        for (int i = 0; i < 4; i++) vkt_pair_free(&weight[i]);
    }
    free(x), free(w), free(b), free(y), free(dw), free(dx), free(cols);
}

TEST(vulkan_conv2d_kernels) {
    NEED_VULKAN();
    static const char *routes[] = {"", "medium", "latency"};
    static const nn_conv_geometry lenet[] = {
        {37, 1, 28, 28, 5, 5, 1, 1, 0, 0, 24, 24, 0, 1, 1}, /* c1 at an odd batch: the weight gradient is split */
        {37, 6, 12, 12, 5, 5, 1, 1, 0, 0, 8, 8, 0, 1, 1},   /* c2 */
        /* one image, k = 400: the latency forward is split over k, its
         * bias and ReLU applied by the split's last workgroup */
        {1, 16, 8, 8, 5, 5, 1, 1, 0, 0, 4, 4, 0, 1, 1},
    };
    unsigned seed = 900;
    for (int r = 0; r < 3; r++) {
        if (routes[r][0]) setenv("NN_ENGINE_VULKAN_GEMM_TILES", routes[r], 1);
        else unsetenv("NN_ENGINE_VULKAN_GEMM_TILES");
        const char *name = routes[r][0] ? routes[r] : "default";
        for (size_t i = 0; i < sizeof kGeometries / sizeof kGeometries[0]; i++) {
            conv_kernels_case(&kGeometries[i], 3 + (int)i, seed++, name, false);
            if (r == 1) conv_kernels_case(&kGeometries[i], 3 + (int)i, seed++, name, true);
        }
        conv_kernels_case(&lenet[0], 6, seed++, name, false);
        conv_kernels_case(&lenet[1], 16, seed++, name, false);
        conv_kernels_case(&lenet[2], 8, seed++, name, false);
        if (nn_test_failures()) break;
    }
    unsetenv("NN_ENGINE_VULKAN_GEMM_TILES");
}

/* ---- max pooling ---- */

TEST(vulkan_maxpool_forward_backward) {
    NEED_VULKAN();
    static const nn_pool_params cases[] = {
        /* batch, C, H, W, kernel, stride, pad, out_h, out_w, accumulate, layout */
        {1, 1, 5, 5, 2, 2, 0, 2, 2, 0, NN_LAYOUT_DENSE},   {2, 3, 7, 9, 3, 2, 1, 4, 5, 0, NN_LAYOUT_DENSE},
        {1, 2, 6, 6, 3, 1, 1, 6, 6, 0, NN_LAYOUT_DENSE},   {2, 1, 5, 5, 2, 3, 0, 2, 2, 0, NN_LAYOUT_DENSE},
        {3, 6, 28, 28, 2, 2, 0, 14, 14, 0, NN_LAYOUT_DENSE}, {1, 1, 1, 1, 1, 1, 0, 1, 1, 0, NN_LAYOUT_DENSE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        nn_pool_params p = cases[i];
        size_t in = (size_t)p.batch * p.channels * p.height * p.width;
        size_t out = (size_t)p.batch * p.channels * p.out_h * p.out_w;
        float *x = vkt_randoms(in, -4, 4, (unsigned)i);
        /* Ties (rounded values) and a NaN, which must win its windows. */
        for (size_t j = 0; j < in; j++) x[j] = roundf(x[j]);
        if (in > 7) x[7] = NAN;
        float *dy = vkt_randoms(out, -1, 1, (unsigned)i + 9);
        vkt_pair fwd[3] = {vkt_pair_new(x, in, 12), vkt_pair_new(NULL, out, 0), vkt_pair_new(NULL, out, 4)};
        char what[64];
        snprintf(what, sizeof what, "maxpool case %zu", i);
        if (vkt_run(NN_KERNEL_MAXPOOL_FORWARD, fwd, 3, &p)) {
            vkt_compare_f32(&fwd[1], 0, what);
            vkt_compare_i32(&fwd[2], what);
        }
        for (int acc = 0; acc < 2; acc++) {
            p.accumulate = acc;
            float *dx0 = vkt_randoms(in, -1, 1, (unsigned)i + 20);
            vkt_pair bwd[3] = {vkt_pair_new(dy, out, 0), fwd[2], vkt_pair_new(dx0, in, 0)};
            snprintf(what, sizeof what, "maxpool backward case %zu accumulate %d", i, acc);
            if (vkt_run(NN_KERNEL_MAXPOOL_BACKWARD, bwd, 3, &p)) vkt_compare_f32(&bwd[2], 1e-6, what);
            vkt_pair_free(&bwd[0]);
            vkt_pair_free(&bwd[2]);
            free(dx0);
        }
        for (int j = 0; j < 3; j++) vkt_pair_free(&fwd[j]);
        free(x);
        free(dy);
    }
}

/* ---- bias ---- */

TEST(vulkan_bias_add_and_grad) {
    NEED_VULKAN();
    static const int64_t shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {2, 6, 784}, {64, 120, 1}, {1, 300, 3},
                                        /* several chunks per channel, added by the last workgroup */
                                        {64, 6, 576}, {300, 7, 13}, {5000, 3, 1}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        nn_bias_params p = {.outer = shapes[i][0], .channels = (int32_t)shapes[i][1], .inner = shapes[i][2]};
        size_t n = (size_t)(p.outer * p.channels * p.inner);
        float *y = vkt_randoms(n, -1, 1, (unsigned)i), *b = vkt_randoms((size_t)p.channels, -1, 1, (unsigned)i + 3);
        vkt_pair add[2] = {vkt_pair_new(y, n, 8), vkt_pair_new(b, (size_t)p.channels, 0)};
        char what[64];
        snprintf(what, sizeof what, "bias_add shape %zu", i);
        if (vkt_run(NN_KERNEL_BIAS_ADD, add, 2, &p)) vkt_compare_f32(&add[0], 0, what);
        for (int acc = 0; acc < 2; acc++) {
            p.accumulate = acc;
            vkt_pair grad[2] = {vkt_pair_new(y, n, 0), vkt_pair_new(b, (size_t)p.channels, 4)};
            snprintf(what, sizeof what, "bias_grad shape %zu accumulate %d", i, acc);
            if (vkt_run(NN_KERNEL_BIAS_GRAD, grad, 2, &p)) vkt_compare_f32(&grad[1], 1e-5, what);
            vkt_pair_free(&grad[0]);
            vkt_pair_free(&grad[1]);
        }
        vkt_pair_free(&add[0]);
        vkt_pair_free(&add[1]);
        free(y);
        free(b);
    }
}

/* ---- pointwise ---- */

TEST(vulkan_relu_elementwise_broadcast) {
    NEED_VULKAN();
    static const int64_t sizes[] = {1, 5, 1000, 70001};
    for (size_t s = 0; s < 4; s++) {
        size_t n = (size_t)sizes[s];
        float *a = vkt_randoms(n, -2, 2, (unsigned)s), *b = vkt_randoms(n, -2, 2, (unsigned)s + 1);
        float *o = vkt_randoms(n, -2, 2, (unsigned)s + 2);
        if (n > 3) a[3] = NAN;
        char what[80];
        nn_pointwise_params p = {.n = (int64_t)n, .alpha = -0.75f};
        vkt_pair relu[2] = {vkt_pair_new(a, n, 4), vkt_pair_new(NULL, n, 0)};
        snprintf(what, sizeof what, "relu_forward n=%zu", n);
        if (vkt_run(NN_KERNEL_RELU_FORWARD, relu, 2, &p)) vkt_compare_f32(&relu[1], 0, what);
        for (int acc = 0; acc < 2; acc++) {
            p.accumulate = acc;
            vkt_pair back[3] = {relu[1], vkt_pair_new(b, n, 0), vkt_pair_new(o, n, 8)};
            snprintf(what, sizeof what, "relu_backward n=%zu accumulate %d", n, acc);
            if (vkt_run(NN_KERNEL_RELU_BACKWARD, back, 3, &p)) vkt_compare_f32(&back[2], 0, what);
            vkt_pair_free(&back[1]);
            vkt_pair_free(&back[2]);
            for (int op = 0; op < 3; op++) {
                p.op = op;
                vkt_pair ew[3] = {vkt_pair_new(a, n, 0), op == NN_EW_SCALE ? vkt_pair_none() : vkt_pair_new(b, n, 4),
                                  vkt_pair_new(o, n, 0)};
                snprintf(what, sizeof what, "elementwise op %d n=%zu accumulate %d", op, n, acc);
                if (vkt_run(NN_KERNEL_ELEMENTWISE, ew, 3, &p)) vkt_compare_f32(&ew[2], 1e-7, what);
                for (int j = 0; j < 3; j++) vkt_pair_free(&ew[j]);
            }
            vkt_pair bc[2] = {vkt_pair_new(b, 1, 4), vkt_pair_new(o, n, 0)};
            snprintf(what, sizeof what, "broadcast_scalar n=%zu accumulate %d", n, acc);
            if (vkt_run(NN_KERNEL_BROADCAST_SCALAR, bc, 2, &p)) vkt_compare_f32(&bc[1], 1e-7, what);
            vkt_pair_free(&bc[0]);
            vkt_pair_free(&bc[1]);
        }
        vkt_pair_free(&relu[0]);
        vkt_pair_free(&relu[1]);
        free(a);
        free(b);
        free(o);
    }
}

TEST(vulkan_reduce_sum_and_squares) {
    NEED_VULKAN();
    static const int64_t sizes[] = {1, 255, 4097, 300001, 2000003};
    for (size_t s = 0; s < 5; s++) {
        size_t n = (size_t)sizes[s];
        float *x = vkt_randoms(n, -1, 3, (unsigned)s);
        float out0 = 0.5f;
        for (int acc = 0; acc < 2; acc++) {
            nn_pointwise_params p = {.n = (int64_t)n, .accumulate = acc, .alpha = 0.5f};
            char what[80];
            for (int sq = 0; sq < 2; sq++) {
                vkt_pair args[2] = {vkt_pair_new(x, n, 4), vkt_pair_new(&out0, 1, 0)};
                nn_kernel k = sq ? NN_KERNEL_SUM_SQUARES : NN_KERNEL_REDUCE_SUM;
                snprintf(what, sizeof what, "%s n=%zu accumulate %d", nn_kernel_name(k), n, acc);
                if (vkt_run(k, args, 2, &p)) vkt_compare_f32(&args[1], 2e-6, what);
                vkt_pair_free(&args[0]);
                vkt_pair_free(&args[1]);
            }
        }
        free(x);
    }
}

/* ---- softmax ---- */

TEST(vulkan_softmax_forward_backward) {
    NEED_VULKAN();
    static const int shapes[][2] = {{1, 1}, {1, 10}, {64, 10}, {5, 1000}, {300, 7}};
    for (size_t s = 0; s < 5; s++) {
        nn_softmax_params p = {.rows = shapes[s][0], .cols = shapes[s][1]};
        size_t n = (size_t)p.rows * p.cols;
        float *x = vkt_randoms(n, -8, 8, (unsigned)s), *dy = vkt_randoms(n, -1, 1, (unsigned)s + 1);
        x[0] += 1000.0f; /* large logits must not overflow */
        float *dx0 = vkt_randoms(n, -1, 1, (unsigned)s + 2);
        vkt_pair fwd[2] = {vkt_pair_new(x, n, 4), vkt_pair_new(NULL, n, 0)};
        char what[80];
        snprintf(what, sizeof what, "softmax_forward %dx%d", p.rows, p.cols);
        if (vkt_run(NN_KERNEL_SOFTMAX_FORWARD, fwd, 2, &p)) vkt_compare_f32(&fwd[1], 1e-6, what);
        for (int acc = 0; acc < 2; acc++) {
            p.accumulate = acc;
            vkt_pair bwd[3] = {fwd[1], vkt_pair_new(dy, n, 0), vkt_pair_new(dx0, n, 4)};
            snprintf(what, sizeof what, "softmax_backward %dx%d accumulate %d", p.rows, p.cols, acc);
            if (vkt_run(NN_KERNEL_SOFTMAX_BACKWARD, bwd, 3, &p)) vkt_compare_f32(&bwd[2], 1e-5, what);
            vkt_pair_free(&bwd[1]);
            vkt_pair_free(&bwd[2]);
        }
        vkt_pair_free(&fwd[0]);
        vkt_pair_free(&fwd[1]);
        free(x);
        free(dy);
        free(dx0);
    }
}

TEST(vulkan_softmax_cross_entropy) {
    NEED_VULKAN();
    static const int shapes[][2] = {{1, 10}, {64, 10}, {300, 7}, {3, 1000}, {1, 1}};
    for (size_t s = 0; s < 5; s++) {
        nn_softmax_params p = {.rows = shapes[s][0], .cols = shapes[s][1]};
        size_t n = (size_t)p.rows * p.cols;
        float *x = vkt_randoms(n, -6, 6, (unsigned)s), *dx0 = vkt_randoms(n, -1, 1, (unsigned)s + 1);
        int32_t *labels = malloc((size_t)p.rows * sizeof *labels);
        for (int r = 0; r < p.rows; r++) labels[r] = (r * 7 + 3) % p.cols;
        float dloss = 0.7f;
        vkt_pair fwd[4] = {vkt_pair_new(x, n, 4), vkt_pair_new(labels, (size_t)p.rows, 8), vkt_pair_new(NULL, n, 0),
                           vkt_pair_new(NULL, 1, 4)};
        char what[80];
        snprintf(what, sizeof what, "softmax_ce_forward %dx%d", p.rows, p.cols);
        if (vkt_run(NN_KERNEL_SOFTMAX_CE_FORWARD, fwd, 4, &p)) {
            vkt_compare_f32(&fwd[2], 1e-6, what);
            vkt_compare_f32(&fwd[3], 1e-5, what);
        }
        for (int acc = 0; acc < 2; acc++) {
            p.accumulate = acc;
            vkt_pair bwd[4] = {fwd[2], fwd[1], vkt_pair_new(&dloss, 1, 0), vkt_pair_new(dx0, n, 0)};
            snprintf(what, sizeof what, "softmax_ce_backward %dx%d accumulate %d", p.rows, p.cols, acc);
            if (vkt_run(NN_KERNEL_SOFTMAX_CE_BACKWARD, bwd, 4, &p)) vkt_compare_f32(&bwd[3], 1e-6, what);
            vkt_pair_free(&bwd[2]);
            vkt_pair_free(&bwd[3]);
        }
        for (int j = 0; j < 4; j++) vkt_pair_free(&fwd[j]);
        free(x);
        free(dx0);
        free(labels);
    }
}

/* A label outside [0, cols): the CPU fails at once; the GPU finds it in the
 * kernel and reports row and label at the next read or sync, once. */
TEST(vulkan_softmax_cross_entropy_bad_label_reported_at_read) {
    NEED_VULKAN();
    vkt_check_bad_label_reported(NN_KERNEL_SOFTMAX_CE_FORWARD);
}

/* ---- SGD ---- */

TEST(vulkan_sgd_update) {
    NEED_VULKAN();
    static const struct { float momentum, wd, clip, max_norm; int nesterov, velocity, norm; } cases[] = {
        {0, 0, 0, 0, 0, 0, 0},     {0.9f, 0, 0, 0, 0, 1, 0},   {0.9f, 1e-3f, 0, 0, 1, 1, 0},
        {0, 5e-4f, 0.05f, 0, 0, 0, 0}, {0.5f, 0, 0, 1.5f, 0, 1, 1}, {0, 0, 0, 1e6f, 0, 0, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int s = 0; s < 2; s++) {
            size_t n = s ? 1001 : 1;
            float *w = vkt_randoms(n, -1, 1, (unsigned)c), *g = vkt_randoms(n, -0.2f, 0.2f, (unsigned)c + 1);
            float *v = vkt_randoms(n, -0.1f, 0.1f, (unsigned)c + 2), norm_sq = 9.0f;
            nn_sgd_params p = {.n = (int64_t)n, .lr = 0.05f, .momentum = cases[c].momentum,
                               .weight_decay = cases[c].wd, .clip_value = cases[c].clip,
                               .max_grad_norm = cases[c].max_norm, .nesterov = cases[c].nesterov};
            vkt_pair a[5] = {vkt_pair_new(w, n, 4), vkt_pair_new(g, n, 0),
                             cases[c].velocity ? vkt_pair_new(v, n, 8) : vkt_pair_none(),
                             cases[c].norm ? vkt_pair_new(&norm_sq, 1, 0) : vkt_pair_none(), vkt_pair_none()};
            char what[64];
            snprintf(what, sizeof what, "sgd case %zu n=%zu", c, n);
            if (vkt_run(NN_KERNEL_SGD_UPDATE, a, 5, &p)) {
                vkt_compare_f32(&a[0], 1e-6, what);
                if (cases[c].velocity) vkt_compare_f32(&a[2], 1e-6, what);
            }
            for (int j = 0; j < 5; j++) vkt_pair_free(&a[j]);
            free(w);
            free(g);
            free(v);
        }
    }
}

/* ---- buffers and the command stream ---- */

TEST(vulkan_write_read_fill_copy) {
    NEED_VULKAN();
    nn_backend *gpu = vkt_vulkan();
    /* Larger than a frame's staging area (16 MiB): written and read in pieces. */
    size_t n = 5u << 20;
    float *x = vkt_randoms(n, -1, 1, 1), *y = malloc(n * sizeof *y);
    nn_buffer *b = gpu->alloc(gpu, n * 4);
    CHECK(b && gpu->write(gpu, (nn_buffer_ref){b, 0, 0}, x, n * 4) == NN_OK);
    CHECK(gpu->read(gpu, (nn_buffer_ref){b, 0, 0}, y, n * 4) == NN_OK);
    CHECK(memcmp(x, y, n * 4) == 0);
    /* fill a middle range, then an overlapping copy inside one buffer (memmove). */
    CHECK(gpu->fill(gpu, (nn_buffer_ref){b, 400, 0}, -2.5f, 1000) == NN_OK);
    CHECK(gpu->copy(gpu, (nn_buffer_ref){b, 800, 0}, (nn_buffer_ref){b, 0, 0}, 4000) == NN_OK);
    CHECK(gpu->read(gpu, (nn_buffer_ref){b, 0, 0}, y, 8000) == NN_OK);
    float want[2000];
    memcpy(want, x, sizeof want);
    for (int i = 100; i < 1100; i++) want[i] = -2.5f;
    float moved[1000];
    memcpy(moved, want, sizeof moved);
    memcpy(want + 200, moved, sizeof moved);
    CHECK(memcmp(want, y, sizeof want) == 0);
    /* Errors name the problem instead of touching memory outside the buffer. */
    CHECK(gpu->read(gpu, (nn_buffer_ref){b, n * 4 - 4, 0}, y, 8) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "outside the buffer") != NULL);
    gpu->free(gpu, b);
    free(x);
    free(y);
}

/* The fill kernel (what the backend's fill runs) writes its bits exactly,
 * a NaN with a payload and a negative zero included, over an awkward count
 * at an offset, and nothing past it; the CPU's the same. */
TEST(vulkan_fill_kernel_writes_exact_words) {
    NEED_VULKAN();
    const size_t n = 1031;
    float *before = vkt_randoms(n + 7, -1, 1, 17);
    const uint32_t patterns[3] = {0x7fc01234u, 0x80000000u, 0x3f800001u};
    for (int k = 0; k < 3; k++) {
        vkt_pair out = vkt_pair_new(before, n + 7, 12);
        nn_fill_params f = {.count = (int64_t)n, .bits = patterns[k]}; /* the 7 words after stay */
        if (vkt_run(NN_KERNEL_FILL, &out, 1, &f)) {
            vkt_compare_i32(&out, "fill: the words, and the seven after them");
            uint32_t *got = malloc((n + 7) * 4);
            nn_backend *gpu = vkt_vulkan();
            CHECK(gpu->read(gpu, (nn_buffer_ref){out.gpu, out.offset, 0}, got, (n + 7) * 4) == NN_OK);
            int bad = 0;
            for (size_t i = 0; i < n; i++) bad += got[i] != patterns[k];
            CHECK_MSG(bad == 0, "pattern %#x: %d of %zu words differ", patterns[k], bad, n);
            CHECK(memcmp(got + n, before + n, 7 * 4) == 0);
            free(got);
        }
        vkt_pair_free(&out);
    }
    /* A count past the buffer's end is refused by name. */
    nn_backend *gpu = vkt_vulkan();
    nn_buffer *small = gpu->alloc(gpu, 64);
    nn_fill_params f = {.count = 17, .bits = 0};
    CHECK(gpu->run(gpu, NN_KERNEL_FILL, &(nn_buffer_ref){small, 0, 0}, 1, &f) == NN_ERR_ARGUMENT);
    CHECK_MSG(strstr(nn_last_error(), "run past the buffer") != NULL, "%s", nn_last_error());
    gpu->free(gpu, small);
    free(before);
}

TEST(vulkan_many_kernels_before_one_read) {
    NEED_VULKAN();
    /* 1500 dependent kernels span several frames (256 commands each) and a
     * staging switch; the result must see every one of them in order. */
    nn_backend *gpu = vkt_vulkan();
    size_t n = 777;
    float *x = vkt_randoms(n, -1, 1, 5), *y = malloc(n * sizeof *y);
    nn_buffer *acc = gpu->alloc(gpu, n * 4), *one = gpu->alloc(gpu, n * 4);
    CHECK(gpu->write(gpu, (nn_buffer_ref){acc, 0, 0}, x, n * 4) == NN_OK);
    CHECK(gpu->fill(gpu, (nn_buffer_ref){one, 0, 0}, 1.0f, n) == NN_OK);
    nn_pointwise_params p = {.n = (int64_t)n, .op = NN_EW_ADD, .accumulate = 0};
    nn_buffer_ref args[3] = {{acc, 0, 0}, {one, 0, 0}, {acc, 0, 0}};
    for (int i = 0; i < 1500; i++) CHECK(gpu->run(gpu, NN_KERNEL_ELEMENTWISE, args, 3, &p) == NN_OK);
    CHECK(gpu->read(gpu, (nn_buffer_ref){acc, 0, 0}, y, n * 4) == NN_OK);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        float want = x[i];
        for (int k = 0; k < 1500; k++) want += 1.0f;
        bad += y[i] != want;
    }
    CHECK_MSG(bad == 0, "%d of %zu wrong after 1500 chained adds", bad, n);
    gpu->free(gpu, acc);
    gpu->free(gpu, one);
    free(x);
    free(y);
}
