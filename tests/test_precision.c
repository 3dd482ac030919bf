/* Products in reduced precision (nn_ctx_set_precision): the rounding of
 * operands to fp16 and bf16 against references computed another way (the
 * compiler's _Float16 conversion, double arithmetic), matmul on every
 * backend against double-precision sums of the rounded operands (so the
 * Vulkan fp32 kernels' rounding, and on a GPU with matrix cores the fp16
 * cooperative-matrix GEMM, are checked), convolution forward and backward
 * between the CPU and Vulkan, and the rule that a backward pass multiplies
 * in the precision its operation was recorded with. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_precision.h"
#include "nn_engine.h"
#include "test.h"
#include "vulkan_harness.h"

static uint64_t g_state = 0x9e3779b97f4a7c15ull;
static uint32_t next_u32(void) {
    g_state ^= g_state << 13, g_state ^= g_state >> 7, g_state ^= g_state << 17;
    return (uint32_t)(g_state >> 16);
}
static float uniform(float lo, float hi) { return lo + (hi - lo) * (float)(next_u32() % 1000003) / 1000003.0f; }

static bool same_float(float a, float b) { return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0; }

/* Floats over fp16's whole range and beyond: random exponents, random bits. */
static float awkward_float(void) {
    float x = ldexpf(1.0f + (float)(next_u32() & 0x7fffff) / 8388608.0f, (int)(next_u32() % 48) - 30);
    return next_u32() & 1 ? -x : x;
}

TEST(precision_rounds_to_fp16_as_the_float16_type) {
#ifdef __FLT16_MAX__
    const float special[] = {0.0f, -0.0f, 1.0f + 0x1p-11f, 1.0f + 0x3p-11f, 0x1p-25f, 0x3p-25f, 0x1p-24f, 0x1.8p-24f,
                             65504.0f, 65519.99f, 65520.0f, -65520.0f, 1e30f, INFINITY, -INFINITY, NAN, 6.1e-5f,
                             2047.5f, 2048.5f, 0.1f, -0.3f};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) {
        const float want = (float)(_Float16)special[i], got = nn_round_fp16(special[i]);
        CHECK_MSG(same_float(got, want), "fp16(%a) = %a, want %a", special[i], got, want);
    }
    int wrong = 0;
    for (int i = 0; i < 200000; i++) {
        const float x = awkward_float();
        if (!same_float(nn_round_fp16(x), (float)(_Float16)x) && wrong++ < 5)
            CHECK_MSG(false, "fp16(%a) = %a, want %a", x, nn_round_fp16(x), (float)(_Float16)x);
    }
#else
    printf("     (the compiler has no _Float16: fp16 rounding checked by the GEMM tests only)\n");
#endif
}

/* bf16 the long way: 8 significant bits by double arithmetic, ties to even. */
static float bf16_reference(float x) {
    if (!isfinite(x) || x == 0.0f) return x;
    int e;
    frexp((double)x, &e);
    const double step = ldexp(1.0, e - 8 > -133 ? e - 8 : -133);
    const double r = nearbyint((double)x / step) * step;
    return fabs(r) > 0x1.fep127 ? copysignf(INFINITY, x) : (float)r;
}

TEST(precision_rounds_to_bf16_as_double_arithmetic) {
    const float special[] = {1.0f + 0x1p-8f, 1.0f + 0x3p-8f, 0x1.fffffep127f, 0x1.fep127f, -0.0f, INFINITY, NAN, 3.0e-39f};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
        CHECK_MSG(same_float(nn_round_bf16(special[i]), bf16_reference(special[i])), "bf16(%a) = %a, want %a",
                  special[i], nn_round_bf16(special[i]), bf16_reference(special[i]));
    int wrong = 0;
    for (int i = 0; i < 200000; i++) {
        const float x = awkward_float();
        if (!same_float(nn_round_bf16(x), bf16_reference(x)) && wrong++ < 5)
            CHECK_MSG(false, "bf16(%a) = %a, want %a", x, nn_round_bf16(x), bf16_reference(x));
    }
}

TEST(precision_setting_refuses_values_outside_the_enum) {
    nn_ctx *ctx = nn_ctx_new(NULL);
    CHECK(nn_ctx_set_precision(ctx, (nn_precision)7) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "precision 7") != NULL);
    CHECK(nn_ctx_precision(ctx) == NN_PRECISION_FP32);
    CHECK(nn_ctx_set_precision(ctx, NN_PRECISION_BF16) == NN_OK && nn_ctx_precision(ctx) == NN_PRECISION_BF16);
    CHECK(!nn_ctx_matrix_cores(ctx, NN_PRECISION_FP16)); /* the CPU has none */
    CHECK(nn_precision_name(NN_PRECISION_FP16) && strcmp(nn_precision_name(NN_PRECISION_FP16), "fp16") == 0);
    nn_ctx_free(ctx);
}

static float round_as(float x, nn_precision precision) {
#ifdef __FLT16_MAX__
    if (precision == NN_PRECISION_FP16) return (float)(_Float16)x;
#endif
    if (precision == NN_PRECISION_FP16) return nn_round_fp16(x);
    return precision == NN_PRECISION_BF16 ? bf16_reference(x) : x;
}

/* The contexts a test runs on: the CPU with one and two threads, and Vulkan. */
static nn_ctx *open_device(int which) {
    if (which == 2) return vkt_skipped() ? NULL : nn_ctx_new(&(nn_ctx_options){.device = "vulkan"});
    return nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = which + 1});
}
static const char *device_label(int which) { return which == 2 ? "vulkan" : which ? "cpu/2" : "cpu/1"; }

typedef struct product_case {
    int m, n, k;
    bool ta, tb;
} product_case;

/* C = op(A) op(B) against double sums of the rounded operands; and the
 * rounding must show: the fp32 product differs from the rounded one. */
static void check_matmul(int which, const product_case *c, nn_precision precision) {
    nn_ctx *ctx = open_device(which);
    if (!ctx) {
        CHECK_MSG(which == 2 && vkt_skipped(), "%s: %s", device_label(which), nn_last_error());
        return;
    }
    const int rows_a = c->ta ? c->k : c->m, cols_a = c->ta ? c->m : c->k;
    const int rows_b = c->tb ? c->n : c->k, cols_b = c->tb ? c->k : c->n;
    float *a = malloc(sizeof(float) * rows_a * cols_a), *b = malloc(sizeof(float) * rows_b * cols_b);
    float *got = malloc(sizeof(float) * c->m * c->n), *plain = malloc(sizeof(float) * c->m * c->n);
    for (int i = 0; i < rows_a * cols_a; i++) a[i] = uniform(-2.0f, 2.0f);
    for (int i = 0; i < rows_b * cols_b; i++) b[i] = uniform(-2.0f, 2.0f);
    nn_tensor *ta = nn_tensor_from_data(ctx, NN_F32, 2, (int64_t[]){rows_a, cols_a}, a);
    nn_tensor *tb = nn_tensor_from_data(ctx, NN_F32, 2, (int64_t[]){rows_b, cols_b}, b);
    CHECK(nn_ctx_set_precision(ctx, precision) == NN_OK);
    nn_tensor *out = nn_matmul(ta, tb, c->ta, c->tb);
    CHECK(out && nn_tensor_read(out, got, sizeof(float) * c->m * c->n) == NN_OK);
    CHECK(nn_ctx_set_precision(ctx, NN_PRECISION_FP32) == NN_OK);
    nn_tensor *fp32 = nn_matmul(ta, tb, c->ta, c->tb);
    CHECK(fp32 && nn_tensor_read(fp32, plain, sizeof(float) * c->m * c->n) == NN_OK);
    /* The operands rounded once, as the product must round them. */
    float *ra = malloc(sizeof(float) * rows_a * cols_a), *rb = malloc(sizeof(float) * rows_b * cols_b);
    for (int i = 0; i < rows_a * cols_a; i++) ra[i] = round_as(a[i], precision);
    for (int i = 0; i < rows_b * cols_b; i++) rb[i] = round_as(b[i], precision);
    int wrong = 0;
    double largest_rounding = 0.0;
    for (int i = 0; i < c->m; i++)
        for (int j = 0; j < c->n; j++) {
            double sum = 0.0, magnitude = 0.0;
            for (int q = 0; q < c->k; q++) {
                const float x = c->ta ? ra[q * cols_a + i] : ra[i * cols_a + q];
                const float y = c->tb ? rb[j * cols_b + q] : rb[q * cols_b + j];
                sum += (double)x * y;
                magnitude += fabs((double)x * y);
            }
            const double tolerance = 2e-6 * magnitude + 1e-6, error = fabs(got[i * c->n + j] - sum);
            if (!(error <= tolerance) && wrong++ < 3)
                CHECK_MSG(false, "%s %s %dx%dx%d %c%c: C[%d][%d] = %.9g, want %.9g (+-%.2g)", device_label(which),
                          nn_precision_name(precision), c->m, c->n, c->k, c->ta ? 'T' : 'N', c->tb ? 'T' : 'N', i, j,
                          got[i * c->n + j], sum, tolerance);
            if (fabs(plain[i * c->n + j] - sum) > largest_rounding) largest_rounding = fabs(plain[i * c->n + j] - sum);
        }
    CHECK_MSG(largest_rounding > 1e-3, "%s %s: the fp32 product is within %.2g of the rounded one: no rounding?",
              device_label(which), nn_precision_name(precision), largest_rounding);
    free(a), free(b), free(ra), free(rb), free(got), free(plain);
    nn_ctx_free(ctx);
}

TEST(precision_matmul_every_backend_against_double_sums) {
    /* Small (latency-bound kernels on Vulkan), odd sizes, every transpose,
     * and products large enough for the tiled kernels (and matrix cores). */
    const product_case cases[] = {{37, 53, 131, false, false}, {19, 7, 300, true, false}, {64, 33, 65, false, true},
                                  {5, 129, 17, true, true},    {260, 300, 1000, false, false},
                                  {257, 131, 520, true, true}, {300, 260, 999, false, true}};
    for (int which = 0; which < 3; which++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            check_matmul(which, &cases[i], NN_PRECISION_FP16);
            check_matmul(which, &cases[i], NN_PRECISION_BF16);
        }
}

/* A convolution's output and its three gradients (x, weight, bias) for
 * sum(conv(x) * r), recorded at `forward` and back-propagated after the
 * setting became `backward`. */
typedef struct conv_results {
    float y[2 * 6 * 9 * 11], dx[2 * 5 * 11 * 13], dw[6 * 5 * 3 * 3], db[6];
} conv_results;

static bool run_conv(int which, nn_precision forward, nn_precision backward, conv_results *out) {
    nn_ctx *ctx = open_device(which);
    if (!ctx) return false;
    g_state = 12345;
    float x[2 * 5 * 11 * 13], w[6 * 5 * 3 * 3], bias[6], r[2 * 6 * 9 * 11];
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++) x[i] = uniform(-1.5f, 1.5f);
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) w[i] = uniform(-0.7f, 0.7f);
    for (size_t i = 0; i < sizeof bias / sizeof bias[0]; i++) bias[i] = uniform(-0.5f, 0.5f);
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) r[i] = uniform(-1.0f, 1.0f);
    nn_tensor *tx = nn_tensor_from_data(ctx, NN_F32, 4, (int64_t[]){2, 5, 11, 13}, x);
    nn_tensor *tw = nn_tensor_from_data(ctx, NN_F32, 4, (int64_t[]){6, 5, 3, 3}, w);
    nn_tensor *tb = nn_tensor_from_data(ctx, NN_F32, 1, (int64_t[]){6}, bias);
    nn_tensor *tr = nn_tensor_from_data(ctx, NN_F32, 4, (int64_t[]){2, 6, 9, 11}, r);
    nn_tensor_set_requires_grad(tx, true), nn_tensor_set_requires_grad(tw, true), nn_tensor_set_requires_grad(tb, true);
    CHECK(nn_ctx_set_precision(ctx, forward) == NN_OK);
    nn_tensor *y = nn_conv2d(tx, tw, tb, 1, 0);
    nn_tensor *loss = y ? nn_sum(nn_mul(y, tr)) : NULL;
    CHECK(nn_ctx_set_precision(ctx, backward) == NN_OK);
    bool ok = loss && nn_backward(loss) == NN_OK && nn_tensor_read(y, out->y, sizeof out->y) == NN_OK &&
              nn_tensor_read(nn_tensor_grad(tx), out->dx, sizeof out->dx) == NN_OK &&
              nn_tensor_read(nn_tensor_grad(tw), out->dw, sizeof out->dw) == NN_OK &&
              nn_tensor_read(nn_tensor_grad(tb), out->db, sizeof out->db) == NN_OK;
    CHECK_MSG(ok, "%s conv2d: %s", device_label(which), nn_last_error());
    nn_ctx_free(ctx);
    return ok;
}

static double largest_difference(const float *a, const float *b, size_t n, double *scale) {
    double d = 0.0;
    *scale = 1.0;
    for (size_t i = 0; i < n; i++) {
        if (fabs(a[i] - b[i]) > d) d = fabs(a[i] - b[i]);
        if (fabs(b[i]) > *scale) *scale = fabs(b[i]);
    }
    return d;
}

#define COMPARE_FIELD(got, want, field, tol, what)                                                        \
    do {                                                                                                  \
        double scale_, d_ = largest_difference((got)->field, (want)->field,                               \
                                               sizeof (got)->field / sizeof(float), &scale_);           \
        CHECK_MSG(d_ <= (tol) * scale_, "%s: %s differs by %.3g (scale %.3g)", what, #field, d_, scale_); \
    } while (0)

TEST(precision_conv2d_backward_uses_the_recorded_precision_everywhere) {
    static conv_results rounded, rounded_then_fp32, fp32, other;
    for (nn_precision precision = NN_PRECISION_FP16; precision <= NN_PRECISION_BF16; precision++) {
        if (!run_conv(0, precision, precision, &rounded) || !run_conv(0, precision, NN_PRECISION_FP32, &rounded_then_fp32) ||
            !run_conv(0, NN_PRECISION_FP32, NN_PRECISION_FP32, &fp32))
            return;
        /* Setting fp32 after the forward changes nothing: the node keeps its precision. */
        CHECK(memcmp(&rounded, &rounded_then_fp32, sizeof rounded) == 0);
        double scale, d = largest_difference(rounded.dw, fp32.dw, sizeof rounded.dw / sizeof(float), &scale);
        CHECK_MSG(d > 1e-4 * scale, "%s weight gradient equals fp32's within %.3g: no rounding?",
                  nn_precision_name(precision), d);
        /* Two CPU threads and Vulkan compute the same rounded products. */
        for (int which = 1; which < 3; which++) {
            if (!run_conv(which, precision, precision, &other)) {
                CHECK_MSG(which == 2 && vkt_skipped(), "%s: %s", device_label(which), nn_last_error());
                continue;
            }
            COMPARE_FIELD(&other, &rounded, y, 1e-5, device_label(which));
            COMPARE_FIELD(&other, &rounded, dx, 1e-5, device_label(which));
            COMPARE_FIELD(&other, &rounded, dw, 1e-5, device_label(which));
            COMPARE_FIELD(&other, &rounded, db, 1e-5, device_label(which));
        }
    }
}
