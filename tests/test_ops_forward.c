/* Forward pass of every operation against the double-precision references in
 * reference.c, on random inputs of awkward sizes (1, 3, 7, 13, 17, 33, 65, ...:
 * never a multiple of a tile), batch 1, rectangular images, every transpose
 * combination and sizes large enough to cross the GEMM's cache blocks.
 *
 * Tolerances. Inputs are uniform in [-1, 1). A float32 dot product of K such
 * terms carries a rounding error of about u * sqrt(K) * |partial sums|
 * (u = 6e-8) whatever the summation order (blocked, BLAS, threads); we allow
 * ACC_ATOL * sqrt(K) absolute plus ACC_RTOL relative, a hundred times that
 * and still far below what a missing, doubled or misplaced term costs (~0.1).
 * Single-rounding ops (add, mul, scale, bias) must be within a few ulps;
 * max pooling, relu, views and copies must be exact. */
#include <stdlib.h>
#include <string.h>

#include "reference.h"

#define ACC_RTOL 1e-4
#define ACC_ATOL 1e-5 /* times sqrt(K) */
#define ULP_RTOL 1e-6

static double acc_atol(int64_t k) { return ACC_ATOL * sqrt((double)k); }

/* Check y's shape, then its values against want. */
static void expect_tensor(const char *what, const nn_tensor *y, int ndim, const int64_t *shape,
                          const double *want, double rtol, double atol) {
    if (!ref_check_shape(y, ndim, shape, what)) return;
    int64_t n = ref_numel(ndim, shape);
    double *got = ref_alloc_d(n);
    if (ref_read_tensor(y, got, n, what)) CHECK_ALL_CLOSE(what, got, want, n, rtol, atol);
    free(got);
}

/* Finish a test case: end the step (frees op results), free the inputs. */
static void finish(nn_ctx *ctx, nn_tensor **inputs, int count) {
    CHECK(nn_ctx_step_end(ctx) == NN_OK);
    CHECK(nn_ctx_step_tensor_count(ctx) == 0);
    for (int i = 0; i < count; i++) nn_tensor_free(inputs[i]);
    nn_ctx_free(ctx);
}

/* ---- matmul ---- */

static void check_matmul(int m, int n, int k, bool ta, bool tb, int threads, uint64_t seed) {
    char what[96];
    snprintf(what, sizeof what, "matmul m=%d n=%d k=%d ta=%d tb=%d", m, n, k, ta, tb);
    nn_ctx *ctx = ref_ctx(threads);
    if (!ctx) return;
    ref_rng r = ref_rng_new(seed);
    ref_data a = ref_data_uniform(&r, (int64_t)m * k, -1, 1);
    ref_data b = ref_data_uniform(&r, (int64_t)k * n, -1, 1);
    double *want = ref_alloc_d((int64_t)m * n);
    ref_matmul(a.d, b.d, want, m, n, k, ta, tb);

    int64_t sa[2] = {ta ? k : m, ta ? m : k}, sb[2] = {tb ? n : k, tb ? k : n};
    int64_t sc[2] = {m, n};
    nn_tensor *in[2] = {ref_tensor_f32(ctx, 2, sa, a.f), ref_tensor_f32(ctx, 2, sb, b.f)};
    if (in[0] && in[1])
        expect_tensor(what, nn_matmul(in[0], in[1], ta, tb), 2, sc, want, ACC_RTOL,
                      acc_atol(k));
    finish(ctx, in, 2);
    ref_data_free(&a);
    ref_data_free(&b);
    free(want);
}

static void check_matmul_sizes(const int (*sizes)[3], int count) {
    for (int i = 0; i < count; i++)
        for (int flags = 0; flags < 4; flags++)
            check_matmul(sizes[i][0], sizes[i][1], sizes[i][2], flags & 1, flags & 2,
                         1 + (flags + i) % 2, 100 + (uint64_t)(4 * i + flags));
}

TEST(fwd_matmul_small_awkward_all_transposes) {
    static const int sizes[][3] = {{1, 1, 1},  {1, 7, 3},   {3, 1, 13},  {7, 13, 17},
                                   {13, 7, 1}, {17, 33, 65}, {33, 65, 7}, {65, 17, 33}};
    check_matmul_sizes(sizes, (int)(sizeof sizes / sizeof sizes[0]));
}

TEST(fwd_matmul_crosses_gemm_blocks_all_transposes) {
    /* The blocked GEMM packs KC = 256 deep slices, MC = 96..144 rows and
     * NC = 3072..4608 columns: cross each of them, with remainders. */
    static const int sizes[][3] = {{130, 70, 300}, {257, 129, 65}, {1, 513, 257},
                                   {150, 40, 520}, {7, 4700, 300}};
    check_matmul_sizes(sizes, (int)(sizeof sizes / sizeof sizes[0]));
}

TEST(fwd_matmul_shape_mismatch_is_an_error) {
    nn_ctx *ctx = ref_ctx(1);
    if (!ctx) return;
    int64_t sa[2] = {3, 4}, sb[2] = {5, 6};
    nn_tensor *in[2] = {nn_tensor_new(ctx, NN_F32, 2, sa), nn_tensor_new(ctx, NN_F32, 2, sb)};
    nn_clear_error();
    CHECK(nn_matmul(in[0], in[1], false, false) == NULL);
    CHECK(nn_last_status() == NN_ERR_SHAPE);
    CHECK(strlen(nn_last_error()) > 0);
    CHECK(nn_matmul(in[0], in[1], true, true) == NULL); /* [4,3] x [6,5] */
    CHECK(nn_matmul(in[0], in[0], false, true) != NULL); /* [3,4] x [4,3] is fine */
    finish(ctx, in, 2);
}

/* ---- add_bias and linear ---- */

static void check_add_bias(int ndim, const int64_t *shape, int threads, uint64_t seed) {
    char what[96];
    snprintf(what, sizeof what, "add_bias %dD [%lld, %lld, ...]", ndim, (long long)shape[0],
             (long long)shape[1]);
    nn_ctx *ctx = ref_ctx(threads);
    if (!ctx) return;
    ref_rng r = ref_rng_new(seed);
    int64_t n = ref_numel(ndim, shape), inner = ndim == 4 ? shape[2] * shape[3] : 1;
    int channels = (int)shape[1];
    ref_data x = ref_data_uniform(&r, n, -1, 1), b = ref_data_uniform(&r, channels, -1, 1);
    double *want = ref_alloc_d(n);
    ref_add_bias(x.d, b.d, want, shape[0], channels, inner);
    int64_t sb[1] = {channels};
    nn_tensor *in[2] = {ref_tensor_f32(ctx, ndim, shape, x.f), ref_tensor_f32(ctx, 1, sb, b.f)};
    if (in[0] && in[1])
        expect_tensor(what, nn_add_bias(in[0], in[1]), ndim, shape, want, ULP_RTOL, 1e-7);
    finish(ctx, in, 2);
    ref_data_free(&x);
    ref_data_free(&b);
    free(want);
}

TEST(fwd_add_bias_2d_and_4d) {
    static const int64_t shapes[][4] = {{1, 1, 0, 0},  {3, 7, 0, 0},   {65, 17, 0, 0},
                                        {1, 1, 1, 1},  {2, 3, 5, 7},   {1, 6, 24, 24},
                                        {3, 16, 1, 1}, {2, 13, 9, 11}};
    for (int i = 0; i < (int)(sizeof shapes / sizeof shapes[0]); i++)
        check_add_bias(shapes[i][2] ? 4 : 2, shapes[i], 1 + i % 2, 200 + (uint64_t)i);
}

static void check_linear(int n, int in_f, int out_f, bool bias, int threads, uint64_t seed) {
    char what[96];
    snprintf(what, sizeof what, "linear n=%d in=%d out=%d bias=%d", n, in_f, out_f, bias);
    nn_ctx *ctx = ref_ctx(threads);
    if (!ctx) return;
    ref_rng r = ref_rng_new(seed);
    ref_data x = ref_data_uniform(&r, (int64_t)n * in_f, -1, 1);
    ref_data w = ref_data_uniform(&r, (int64_t)out_f * in_f, -1, 1);
    ref_data b = ref_data_uniform(&r, out_f, -1, 1);
    double *want = ref_alloc_d((int64_t)n * out_f);
    ref_linear(x.d, w.d, bias ? b.d : NULL, want, n, in_f, out_f);
    int64_t sx[2] = {n, in_f}, sw[2] = {out_f, in_f}, sb[1] = {out_f}, sy[2] = {n, out_f};
    nn_tensor *in[3] = {ref_tensor_f32(ctx, 2, sx, x.f), ref_tensor_f32(ctx, 2, sw, w.f),
                        bias ? ref_tensor_f32(ctx, 1, sb, b.f) : NULL};
    if (in[0] && in[1])
        expect_tensor(what, nn_linear(in[0], in[1], in[2]), 2, sy, want, ACC_RTOL,
                      acc_atol(in_f + 1));
    finish(ctx, in, 3);
    ref_data_free(&x);
    ref_data_free(&w);
    ref_data_free(&b);
    free(want);
}

TEST(fwd_linear_with_and_without_bias) {
    static const int sizes[][3] = {{1, 1, 1},   {1, 256, 120}, {3, 84, 10},
                                   {64, 13, 7}, {17, 33, 65},  {130, 300, 70}};
    for (int i = 0; i < (int)(sizeof sizes / sizeof sizes[0]); i++)
        for (int bias = 0; bias < 2; bias++)
            check_linear(sizes[i][0], sizes[i][1], sizes[i][2], bias, 1 + (i + bias) % 2,
                         300 + (uint64_t)(2 * i + bias));
}

/* ---- conv2d ---- */

typedef struct conv_case {
    ref_conv g;
    bool bias;
} conv_case;

static void check_conv(const conv_case *cc, int threads, uint64_t seed) {
    const ref_conv *g = &cc->g;
    char what[160];
    snprintf(what, sizeof what,
             "conv2d x[%d,%d,%d,%d] w[%d,%d,%d,%d] stride %d,%d pad %d,%d bias=%d", g->n, g->c,
             g->h, g->w, g->oc, g->c, g->kh, g->kw, g->sh, g->sw, g->ph, g->pw, cc->bias);
    nn_ctx *ctx = ref_ctx(threads);
    if (!ctx) return;
    ref_rng r = ref_rng_new(seed);
    int64_t sx[4] = {g->n, g->c, g->h, g->w}, sw[4] = {g->oc, g->c, g->kh, g->kw};
    int64_t sb[1] = {g->oc}, sy[4] = {g->n, g->oc, ref_conv_oh(g), ref_conv_ow(g)};
    ref_data x = ref_data_uniform(&r, ref_numel(4, sx), -1, 1);
    ref_data w = ref_data_uniform(&r, ref_numel(4, sw), -1, 1);
    ref_data b = ref_data_uniform(&r, g->oc, -1, 1);
    double *want = ref_alloc_d(ref_numel(4, sy));
    ref_conv2d(x.d, w.d, cc->bias ? b.d : NULL, want, g);

    nn_tensor *in[3] = {ref_tensor_f32(ctx, 4, sx, x.f), ref_tensor_f32(ctx, 4, sw, w.f),
                        cc->bias ? ref_tensor_f32(ctx, 1, sb, b.f) : NULL};
    if (in[0] && in[1]) {
        nn_tensor *y;
        if (g->sh == g->sw && g->ph == g->pw) {
            y = nn_conv2d(in[0], in[1], in[2], g->sh, g->ph);
        } else {
            nn_conv2d_params p = {.stride_h = g->sh, .stride_w = g->sw, .pad_h = g->ph,
                                  .pad_w = g->pw};
            y = nn_conv2d_ex(in[0], in[1], in[2], &p);
        }
        expect_tensor(what, y, 4, sy, want, ACC_RTOL, acc_atol(g->c * g->kh * g->kw + 1));
    }
    finish(ctx, in, 3);
    ref_data_free(&x);
    ref_data_free(&w);
    ref_data_free(&b);
    free(want);
}

static void check_conv_cases(const conv_case *cases, int count, uint64_t seed) {
    for (int i = 0; i < count; i++) check_conv(&cases[i], 1 + i % 2, seed + (uint64_t)i);
}

TEST(fwd_conv2d_square_stride_padding) {
    static const conv_case cases[] = {
        /* n  c  h   w  oc kh kw sh sw ph pw   bias */
        {{1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, true},   /* 1x1 image, 1x1 kernel */
        {{1, 1, 5, 5, 1, 1, 1, 1, 1, 0, 0}, false},
        {{2, 3, 7, 7, 4, 3, 3, 1, 1, 0, 0}, true},
        {{2, 3, 7, 7, 4, 3, 3, 1, 1, 1, 1}, false},
        {{1, 2, 7, 7, 3, 3, 3, 1, 1, 2, 2}, true},   /* padding 2 with a 3x3 kernel */
        {{1, 2, 13, 13, 3, 5, 5, 2, 2, 2, 2}, true},
        {{2, 3, 8, 8, 5, 3, 3, 3, 3, 0, 0}, true},   /* stride 3 leaves a remainder */
        {{1, 4, 17, 17, 7, 3, 3, 2, 2, 1, 1}, false},
        {{1, 3, 3, 3, 2, 5, 5, 1, 1, 2, 2}, true},   /* kernel larger than the image */
        {{3, 1, 28, 28, 6, 5, 5, 1, 1, 0, 0}, true}, /* LeNet c1 */
        {{2, 6, 12, 12, 16, 5, 5, 1, 1, 0, 0}, true}, /* LeNet c2 */
        {{1, 1, 9, 9, 1, 5, 5, 3, 3, 1, 1}, false},
    };
    check_conv_cases(cases, (int)(sizeof cases / sizeof cases[0]), 400);
}

TEST(fwd_conv2d_rectangular) {
    static const conv_case cases[] = {
        {{2, 3, 17, 11, 5, 3, 3, 3, 3, 1, 1}, true},  /* rectangular image */
        {{1, 2, 5, 13, 3, 1, 5, 1, 1, 0, 2}, true},   /* rectangular kernel */
        {{1, 3, 9, 13, 2, 3, 5, 1, 2, 2, 1}, true},   /* stride_h != stride_w, pad_h != pad_w */
        {{2, 2, 10, 7, 3, 5, 3, 3, 1, 0, 2}, false},
        {{1, 1, 7, 16, 4, 3, 3, 2, 3, 1, 0}, true},
        {{1, 5, 1, 33, 2, 1, 3, 1, 2, 0, 1}, true},   /* a single row */
    };
    check_conv_cases(cases, (int)(sizeof cases / sizeof cases[0]), 500);
}

TEST(fwd_conv2d_crosses_gemm_blocks) {
    static const conv_case cases[] = {
        {{2, 16, 33, 33, 32, 3, 3, 1, 1, 1, 1}, true}, /* K=144, N=2178 columns */
        {{1, 65, 9, 9, 70, 3, 3, 1, 1, 0, 0}, true},   /* K=585 */
        {{1, 3, 70, 70, 8, 3, 3, 1, 1, 1, 1}, true},   /* 4900 columns */
    };
    check_conv_cases(cases, (int)(sizeof cases / sizeof cases[0]), 600);
}

/* ---- maxpool2d ---- */

typedef struct pool_case {
    ref_pool g;
    float lo, hi; /* input range */
} pool_case;

static void check_pool(const pool_case *pc, int threads, uint64_t seed) {
    const ref_pool *g = &pc->g;
    char what[128];
    snprintf(what, sizeof what, "maxpool2d x[%d,%d,%d,%d] k%d s%d p%d", g->n, g->c, g->h, g->w,
             g->k, g->s, g->p);
    nn_ctx *ctx = ref_ctx(threads);
    if (!ctx) return;
    ref_rng r = ref_rng_new(seed);
    int64_t sx[4] = {g->n, g->c, g->h, g->w}, sy[4] = {g->n, g->c, ref_pool_oh(g), ref_pool_ow(g)};
    ref_data x = ref_data_uniform(&r, ref_numel(4, sx), pc->lo, pc->hi);
    double *want = ref_alloc_d(ref_numel(4, sy));
    ref_maxpool2d(x.d, want, NULL, g);
    nn_tensor *in[1] = {ref_tensor_f32(ctx, 4, sx, x.f)};
    if (in[0]) {
        nn_tensor *y = g->p == 0 && (seed & 1) ? nn_maxpool2d(in[0], g->k, g->s)
                                               : nn_maxpool2d_ex(in[0], g->k, g->s, g->p);
        expect_tensor(what, y, 4, sy, want, 0, 0); /* a max is exact */
    }
    finish(ctx, in, 1);
    ref_data_free(&x);
    free(want);
}

TEST(fwd_maxpool2d_kernels_strides_padding) {
    static const pool_case cases[] = {
        {{2, 3, 8, 8, 2, 2, 0}, -1, 1},
        {{1, 2, 7, 7, 2, 2, 0}, -1, 1},    /* odd size: last row and column dropped */
        {{2, 3, 9, 11, 3, 2, 0}, -1, 1},   /* overlapping windows */
        {{1, 2, 9, 9, 3, 2, 1}, -1, 1},
        {{2, 1, 7, 5, 2, 1, 0}, -1, 1},    /* stride 1 */
        {{1, 3, 13, 13, 3, 3, 1}, -1, 1},
        {{1, 1, 1, 1, 1, 1, 0}, -1, 1},    /* identity */
        {{3, 6, 24, 24, 2, 2, 0}, -1, 1},  /* LeNet pool 1 */
        {{2, 4, 5, 9, 2, 2, 1}, -1, 1},    /* even kernel with padding */
        {{2, 2, 7, 9, 3, 2, 1}, -3, -1},   /* all negative: padding must not win */
        {{1, 3, 6, 5, 3, 1, 1}, -3, -1},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++)
        check_pool(&cases[i], 1 + i % 2, 700 + (uint64_t)i);
}

/* ---- views ---- */

static void check_view(const char *what, nn_tensor *x, const float *data, nn_tensor *y,
                       int ndim, const int64_t *shape) {
    int64_t n = nn_tensor_numel(x);
    double *want = ref_alloc_d(n);
    ref_f2d(data, want, n);
    expect_tensor(what, y, ndim, shape, want, 0, 0);
    free(want);
}

TEST(fwd_reshape_with_inferred_dimension) {
    nn_ctx *ctx = ref_ctx(2);
    if (!ctx) return;
    ref_rng r = ref_rng_new(800);
    int64_t sx[3] = {2, 3, 4};
    ref_data x = ref_data_uniform(&r, 24, -1, 1);
    nn_tensor *in[1] = {ref_tensor_f32(ctx, 3, sx, x.f)};
    static const struct {
        int ndim;
        int64_t ask[4], want[4];
    } cases[] = {
        {2, {-1, 4}, {6, 4}},       {2, {4, -1}, {4, 6}},       {1, {-1}, {24}},
        {4, {2, -1, 2, 2}, {2, 3, 2, 2}}, {3, {1, 24, -1}, {1, 24, 1}}, {2, {24, 1}, {24, 1}},
    };
    for (int i = 0; in[0] && i < (int)(sizeof cases / sizeof cases[0]); i++) {
        char what[64];
        snprintf(what, sizeof what, "reshape case %d", i);
        check_view(what, in[0], x.f, nn_reshape(in[0], cases[i].ndim, cases[i].ask),
                   cases[i].ndim, cases[i].want);
    }
    /* Impossible requests fail with a message. */
    static const int64_t bad[][2] = {{-1, -1}, {5, -1}, {7, 4}, {0, -1}, {-2, 12}};
    for (int i = 0; in[0] && i < (int)(sizeof bad / sizeof bad[0]); i++) {
        nn_clear_error();
        CHECK_MSG(nn_reshape(in[0], 2, bad[i]) == NULL, "reshape to {%lld, %lld} accepted",
                  (long long)bad[i][0], (long long)bad[i][1]);
        CHECK(strlen(nn_last_error()) > 0);
    }
    finish(ctx, in, 1);
    ref_data_free(&x);
}

TEST(fwd_flatten) {
    static const struct {
        int ndim;
        int64_t shape[4], want[2];
    } cases[] = {
        {4, {2, 3, 4, 5}, {2, 60}}, {4, {1, 1, 28, 28}, {1, 784}}, {3, {5, 2, 3}, {5, 6}},
        {2, {3, 7}, {3, 7}},        {4, {7, 1, 1, 1}, {7, 1}},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        nn_ctx *ctx = ref_ctx(1 + i % 2);
        if (!ctx) return;
        ref_rng r = ref_rng_new(900 + (uint64_t)i);
        ref_data x = ref_data_uniform(&r, ref_numel(cases[i].ndim, cases[i].shape), -1, 1);
        nn_tensor *in[1] = {ref_tensor_f32(ctx, cases[i].ndim, cases[i].shape, x.f)};
        char what[64];
        snprintf(what, sizeof what, "flatten case %d", i);
        if (in[0]) check_view(what, in[0], x.f, nn_flatten(in[0]), 2, cases[i].want);
        finish(ctx, in, 1);
        ref_data_free(&x);
    }
}

/* ---- pointwise, softmax, loss, reductions ---- */

/* Shapes shared by the pointwise tests: 1 element up to more than a thread's chunk. */
static const struct {
    int ndim;
    int64_t shape[4];
} pointwise_shapes[] = {
    {1, {1}}, {1, {7}}, {2, {13, 17}}, {4, {2, 3, 5, 7}}, {1, {4099}}, {2, {65, 1025}},
};
#define POINTWISE_COUNT ((int)(sizeof pointwise_shapes / sizeof pointwise_shapes[0]))

typedef enum { PW_RELU, PW_ADD, PW_MUL, PW_SCALE } pointwise_op;

static void check_pointwise(pointwise_op op, int shape_index, int threads, uint64_t seed) {
    static const char *names[] = {"relu", "add", "mul", "scale"};
    int ndim = pointwise_shapes[shape_index].ndim;
    const int64_t *shape = pointwise_shapes[shape_index].shape;
    int64_t n = ref_numel(ndim, shape);
    char what[64];
    snprintf(what, sizeof what, "%s of %lld elements", names[op], (long long)n);
    nn_ctx *ctx = ref_ctx(threads);
    if (!ctx) return;
    ref_rng r = ref_rng_new(seed);
    ref_data a = ref_data_uniform(&r, n, -2, 2), b = ref_data_uniform(&r, n, -2, 2);
    if (op == PW_RELU) { /* exact zeros and negative zeros too */
        a.f[0] = 0.0f;
        if (n > 1) a.f[1] = -0.0f;
        ref_data_sync(&a);
    }
    const float factor = -0.7f;
    double *want = ref_alloc_d(n);
    nn_tensor *in[2] = {ref_tensor_f32(ctx, ndim, shape, a.f), ref_tensor_f32(ctx, ndim, shape, b.f)};
    nn_tensor *y = NULL;
    if (in[0] && in[1]) switch (op) {
        case PW_RELU: ref_relu(a.d, want, n); y = nn_relu(in[0]); break;
        case PW_ADD: ref_add(a.d, b.d, want, n); y = nn_add(in[0], in[1]); break;
        case PW_MUL: ref_mul(a.d, b.d, want, n); y = nn_mul(in[0], in[1]); break;
        case PW_SCALE: ref_scale(a.d, factor, want, n); y = nn_scale(in[0], factor); break;
        }
    /* One correctly rounded float32 operation per element (relu: exact). */
    if (in[0] && in[1]) expect_tensor(what, y, ndim, shape, want, op == PW_RELU ? 0 : ULP_RTOL, 0);
    finish(ctx, in, 2);
    ref_data_free(&a);
    ref_data_free(&b);
    free(want);
}

TEST(fwd_relu_add_mul_scale) {
    for (int op = PW_RELU; op <= PW_SCALE; op++)
        for (int s = 0; s < POINTWISE_COUNT; s++)
            check_pointwise((pointwise_op)op, s, 1 + (op + s) % 2, 1000 + (uint64_t)(10 * op + s));
}

TEST(fwd_elementwise_shape_mismatch_is_an_error) {
    nn_ctx *ctx = ref_ctx(1);
    if (!ctx) return;
    int64_t s1[2] = {3, 4}, s2[2] = {4, 3};
    nn_tensor *in[2] = {nn_tensor_new(ctx, NN_F32, 2, s1), nn_tensor_new(ctx, NN_F32, 2, s2)};
    nn_clear_error();
    CHECK(nn_add(in[0], in[1]) == NULL);
    CHECK(nn_last_status() == NN_ERR_SHAPE);
    CHECK(nn_mul(in[0], in[1]) == NULL);
    CHECK(strlen(nn_last_error()) > 0);
    finish(ctx, in, 2);
}

static void check_softmax(int ndim, const int64_t *shape, float offset, int threads,
                          uint64_t seed) {
    int64_t n = ref_numel(ndim, shape), cols = shape[ndim - 1];
    char what[96];
    snprintf(what, sizeof what, "softmax of %lld rows x %lld cols, offset %g",
             (long long)(n / cols), (long long)cols, offset);
    nn_ctx *ctx = ref_ctx(threads);
    if (!ctx) return;
    ref_rng r = ref_rng_new(seed);
    ref_data x = ref_data_uniform(&r, n, offset - 8, offset + 8);
    double *want = ref_alloc_d(n);
    ref_softmax(x.d, want, n / cols, (int)cols);
    nn_tensor *in[1] = {ref_tensor_f32(ctx, ndim, shape, x.f)};
    /* exp and one normalising sum per row: a few ulps relative. */
    if (in[0]) expect_tensor(what, nn_softmax(in[0]), ndim, shape, want, 1e-5, 1e-9);
    finish(ctx, in, 1);
    ref_data_free(&x);
    free(want);
}

TEST(fwd_softmax_last_dim_and_stability) {
    static const struct {
        int ndim;
        int64_t shape[4];
        float offset; /* large offsets overflow a softmax without the max shift */
    } cases[] = {
        {2, {1, 1}, 0},        {2, {3, 7}, 0},    {2, {5, 33}, 0},   {3, {2, 3, 17}, 0},
        {4, {2, 2, 3, 5}, 0},  {2, {4, 1000}, 0}, {2, {6, 10}, 100}, {2, {3, 13}, -100},
        {2, {64, 10}, 0},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++)
        check_softmax(cases[i].ndim, cases[i].shape, cases[i].offset, 1 + i % 2,
                      1100 + (uint64_t)i);
}

static void check_softmax_ce(int rows, int cols, float spread, int threads, uint64_t seed) {
    char what[96];
    snprintf(what, sizeof what, "softmax_ce %d x %d, logits in +-%g", rows, cols, spread);
    nn_ctx *ctx = ref_ctx(threads);
    if (!ctx) return;
    ref_rng r = ref_rng_new(seed);
    ref_data x = ref_data_uniform(&r, (int64_t)rows * cols, -spread, spread);
    int32_t *labels = calloc((size_t)rows, sizeof *labels);
    ref_fill_labels(&r, labels, rows, cols);
    double want = ref_softmax_ce(x.d, labels, rows, cols);
    int64_t sx[2] = {rows, cols}, sl[1] = {rows};
    nn_tensor *in[2] = {ref_tensor_f32(ctx, 2, sx, x.f), ref_tensor_i32(ctx, 1, sl, labels)};
    if (in[0] && in[1]) {
        nn_tensor *y = nn_softmax_cross_entropy(in[0], in[1]);
        CHECK_MSG(y && nn_tensor_numel(y) == 1, "%s: want a one-element tensor", what);
        /* log-sum-exp per row, then a mean over rows. */
        if (y && nn_tensor_numel(y) == 1) {
            int64_t shape[NN_MAX_DIMS];
            int nd = nn_tensor_shape(y, shape);
            expect_tensor(what, y, nd, shape, &want, 1e-5, 1e-6);
        }
    }
    finish(ctx, in, 2);
    ref_data_free(&x);
    free(labels);
}

TEST(fwd_softmax_cross_entropy) {
    static const struct {
        int rows, cols;
        float spread;
    } cases[] = {
        {1, 1, 1}, {1, 10, 3}, {3, 7, 2}, {17, 10, 5}, {64, 10, 1}, {5, 1000, 4},
        {8, 10, 80}, /* softmax underflows to exactly 0 for some classes: log must not */
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++)
        check_softmax_ce(cases[i].rows, cases[i].cols, cases[i].spread, 1 + i % 2,
                         1200 + (uint64_t)i);
}

TEST(fwd_softmax_cross_entropy_rejects_bad_labels) {
    nn_ctx *ctx = ref_ctx(1);
    if (!ctx) return;
    int64_t sx[2] = {2, 3}, sl[1] = {2}, sl3[1] = {3};
    int32_t labels[3] = {0, 1, 2};
    nn_tensor *in[4] = {nn_tensor_new(ctx, NN_F32, 2, sx), ref_tensor_i32(ctx, 1, sl, labels),
                        ref_tensor_i32(ctx, 1, sl3, labels), nn_tensor_new(ctx, NN_F32, 1, sl)};
    nn_clear_error();
    CHECK(nn_softmax_cross_entropy(in[0], in[2]) == NULL); /* 3 labels for 2 rows */
    CHECK(nn_last_status() == NN_ERR_SHAPE);
    CHECK(nn_softmax_cross_entropy(in[0], in[3]) == NULL); /* float labels */
    CHECK(nn_last_status() == NN_ERR_DTYPE);
    CHECK(nn_softmax_cross_entropy(in[0], in[1]) != NULL);
    finish(ctx, in, 4);
}

/* Values k / 1024 with |k| <= 1024: every partial sum of a few thousand of
 * them is exact in float32, so a sum in any order must be exact. */
static void fill_dyadic(ref_rng *r, ref_data *a) {
    for (int64_t i = 0; i < a->n; i++) a->f[i] = (float)(ref_rng_below(r, 2049) - 1024) / 1024.0f;
    ref_data_sync(a);
}

TEST(fwd_sum_and_mean) {
    static const int64_t sizes[] = {1, 7, 13 * 17, 1000, 4099, 65537};
    for (int i = 0; i < (int)(sizeof sizes / sizeof sizes[0]); i++) {
        nn_ctx *ctx = ref_ctx(1 + i % 2);
        if (!ctx) return;
        ref_rng r = ref_rng_new(1300 + (uint64_t)i);
        ref_data x = ref_data_new(sizes[i]);
        fill_dyadic(&r, &x);
        nn_tensor *in[1] = {ref_tensor_f32(ctx, 1, &sizes[i], x.f)};
        double sum = ref_sum(x.d, x.n), mean = ref_mean(x.d, x.n), got = 0;
        char what[64];
        snprintf(what, sizeof what, "sum of %lld", (long long)x.n);
        if (in[0] && ref_read_tensor(nn_sum(in[0]), &got, 1, what))
            CHECK_MSG(got == sum, "%s = %.9g, want %.9g (exact)", what, got, sum);
        snprintf(what, sizeof what, "mean of %lld", (long long)x.n);
        if (in[0] && ref_read_tensor(nn_mean(in[0]), &got, 1, what))
            CHECK_ALL_CLOSE(what, &got, &mean, 1, ULP_RTOL, 1e-9);
        finish(ctx, in, 1);
        ref_data_free(&x);
    }
}

TEST(fwd_sum_of_uniform_floats) {
    /* Not exactly representable: allow summation-order rounding. */
    static const int64_t sizes[] = {33, 4099, 100003};
    for (int i = 0; i < (int)(sizeof sizes / sizeof sizes[0]); i++) {
        nn_ctx *ctx = ref_ctx(2 - i % 2);
        if (!ctx) return;
        ref_rng r = ref_rng_new(1400 + (uint64_t)i);
        ref_data x = ref_data_uniform(&r, sizes[i], 0, 1); /* positive: no cancellation */
        nn_tensor *in[1] = {ref_tensor_f32(ctx, 1, &sizes[i], x.f)};
        double want = ref_sum(x.d, x.n), got = 0;
        char what[64];
        snprintf(what, sizeof what, "sum of %lld in [0,1)", (long long)x.n);
        /* Naive float32 summation of n positive terms: relative error about
         * u * sqrt(n) at random, u * n at worst (6e-3 for 1e5). */
        if (in[0] && ref_read_tensor(nn_sum(in[0]), &got, 1, what))
            CHECK_ALL_CLOSE(what, &got, &want, 1, 1e-3, 0);
        finish(ctx, in, 1);
        ref_data_free(&x);
    }
}
