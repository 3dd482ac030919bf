/* The elementwise functions of shaders/unary_ops.h as operations, on the CPU
 * and on Vulkan: values against double-precision references written here
 * (not the table's expressions), gradients against the references'
 * derivatives (themselves checked against central differences), on an
 * awkward shape with values at the edges of the table's formulas (0, the
 * kinks and clamp bounds, large magnitudes, NaN), with PyTorch's gradient
 * at the kinks. Every row of the table must have a reference here; rows
 * with parameters have one per parameter set worth telling apart. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn_engine.h"
#include "test.h"
#include "unary_ops.h"
#include "vulkan_harness.h"

/* ---- references: f(x; a, b) and f'(x; a, b) in double ---- */

static double sigmoid_ref(double x, double a, double b) { return 1.0 / (1.0 + exp(-x)); }
static double sigmoid_grad(double x, double a, double b) { return sigmoid_ref(x, a, b) * (1.0 - sigmoid_ref(x, a, b)); }
static double tanh_ref(double x, double a, double b) { return tanh(x); }
static double tanh_grad(double x, double a, double b) { return 1.0 - tanh(x) * tanh(x); }
static double neg_ref(double x, double a, double b) { return -x; }
static double neg_grad(double x, double a, double b) { return -1.0; }
static double exp_ref(double x, double a, double b) { return exp(x); }
static double log_ref(double x, double a, double b) { return log(x); }
static double log_grad(double x, double a, double b) { return 1.0 / x; }
static double sqrt_ref(double x, double a, double b) { return sqrt(x); }
static double sqrt_grad(double x, double a, double b) { return 0.5 / sqrt(x); }
static double abs_ref(double x, double a, double b) { return fabs(x); }
static double abs_grad(double x, double a, double b) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }
static double gelu_ref(double x, double a, double b) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }
static double gelu_grad(double x, double a, double b) {
    return 0.5 * (1.0 + erf(x / sqrt(2.0))) + x * exp(-0.5 * x * x) / sqrt(2.0 * M_PI);
}
static double gelu_tanh_inner(double x) { return sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x); }
static double gelu_tanh_ref(double x, double a, double b) { return 0.5 * x * (1.0 + tanh(gelu_tanh_inner(x))); }
static double gelu_tanh_grad(double x, double a, double b) {
    const double t = tanh(gelu_tanh_inner(x));
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * sqrt(2.0 / M_PI) * (1.0 + 3.0 * 0.044715 * x * x);
}
static double silu_ref(double x, double a, double b) { return x / (1.0 + exp(-x)); }
static double silu_grad(double x, double a, double b) {
    const double s = 1.0 / (1.0 + exp(-x));
    return s + x * s * (1.0 - s);
}
static double relu6_ref(double x, double a, double b) { return x < 0 ? 0.0 : x > 6 ? 6.0 : x; }
static double relu6_grad(double x, double a, double b) { return x > 0 && x < 6 ? 1.0 : 0.0; } /* hardtanh's */
static double hardswish_ref(double x, double a, double b) { return x * relu6_ref(x + 3.0, 0, 0) / 6.0; }
static double hardswish_grad(double x, double a, double b) { return x < -3 ? 0.0 : x < 3 ? (2.0 * x + 3.0) / 6.0 : 1.0; }
static double hardsigmoid_ref(double x, double a, double b) { return relu6_ref(x + 3.0, 0, 0) / 6.0; }
static double hardsigmoid_grad(double x, double a, double b) { return x > -3 && x < 3 ? 1.0 / 6.0 : 0.0; }
static double softsign_ref(double x, double a, double b) { return x / (1.0 + fabs(x)); }
static double softsign_grad(double x, double a, double b) { return 1.0 / ((1.0 + fabs(x)) * (1.0 + fabs(x))); }
static double leaky_relu_ref(double x, double a, double b) { return x > 0 ? x : a * x; }
static double leaky_relu_grad(double x, double a, double b) { return x > 0 ? 1.0 : a; }
static double elu_ref(double x, double a, double b) { return x > 0 ? x : a * (exp(x) - 1.0); }
static double elu_grad(double x, double a, double b) { return x > 0 ? 1.0 : a * exp(x); }
/* a: beta, b: threshold; log(1 + e^z) directly (no overflow below z = 700). */
static double softplus_ref(double x, double a, double b) { return a * x > b ? x : log(1.0 + exp(a * x)) / a; }
static double softplus_grad(double x, double a, double b) { return a * x > b ? 1.0 : exp(a * x) / (1.0 + exp(a * x)); }
static double clamp_ref(double x, double a, double b) { return fmin(fmax(x, a), b); }
static double clamp_grad(double x, double a, double b) { return x >= a && x <= b ? 1.0 : 0.0; }
static double pow_ref(double x, double a, double b) { return pow(x, a); }
static double pow_grad(double x, double a, double b) { return a == 0 ? 0.0 : a * pow(x, a - 1.0); }
static double add_ref(double x, double a, double b) { return x + a; }
static double one(double x, double a, double b) { return 1.0; }
static double mul_ref(double x, double a, double b) { return x * a; }
static double mul_grad(double x, double a, double b) { return a; }
static double rsub_ref(double x, double a, double b) { return a - x; }
static double rdiv_ref(double x, double a, double b) { return a / x; }
static double rdiv_grad(double x, double a, double b) { return -a / (x * x); }

/* ---- the public functions, with the parameters as floats ---- */

static nn_tensor *sigmoid_op(nn_tensor *x, float a, float b) { return nn_sigmoid(x); }
static nn_tensor *tanh_op(nn_tensor *x, float a, float b) { return nn_tanh(x); }
static nn_tensor *neg_op(nn_tensor *x, float a, float b) { return nn_neg(x); }
static nn_tensor *exp_op(nn_tensor *x, float a, float b) { return nn_exp(x); }
static nn_tensor *log_op(nn_tensor *x, float a, float b) { return nn_log(x); }
static nn_tensor *sqrt_op(nn_tensor *x, float a, float b) { return nn_sqrt(x); }
static nn_tensor *abs_op(nn_tensor *x, float a, float b) { return nn_abs(x); }
static nn_tensor *gelu_op(nn_tensor *x, float a, float b) { return nn_gelu(x, false); }
static nn_tensor *gelu_tanh_op(nn_tensor *x, float a, float b) { return nn_gelu(x, true); }
static nn_tensor *silu_op(nn_tensor *x, float a, float b) { return nn_silu(x); }
static nn_tensor *relu6_op(nn_tensor *x, float a, float b) { return nn_relu6(x); }
static nn_tensor *hardswish_op(nn_tensor *x, float a, float b) { return nn_hardswish(x); }
static nn_tensor *hardsigmoid_op(nn_tensor *x, float a, float b) { return nn_hardsigmoid(x); }
static nn_tensor *softsign_op(nn_tensor *x, float a, float b) { return nn_softsign(x); }
static nn_tensor *leaky_relu_op(nn_tensor *x, float a, float b) { return nn_leaky_relu(x, a); }
static nn_tensor *elu_op(nn_tensor *x, float a, float b) { return nn_elu(x, a); }
static nn_tensor *softplus_op(nn_tensor *x, float a, float b) { return nn_softplus(x, a, b); }
static nn_tensor *clamp_op(nn_tensor *x, float a, float b) { return nn_clamp(x, a, b); }
static nn_tensor *pow_op(nn_tensor *x, float a, float b) { return nn_pow_scalar(x, a); }
static nn_tensor *add_op(nn_tensor *x, float a, float b) { return nn_add_scalar(x, a); }
static nn_tensor *mul_op(nn_tensor *x, float a, float b) { return nn_mul_scalar(x, a); }
static nn_tensor *rsub_op(nn_tensor *x, float a, float b) { return nn_rsub_scalar(x, a); }
static nn_tensor *rdiv_op(nn_tensor *x, float a, float b) { return nn_rdiv_scalar(x, a); }

typedef double (*real_fn)(double x, double a, double b);

typedef struct reference {
    const char *row; /* its row's name in unary_ops.h */
    nn_tensor *(*op)(nn_tensor *x, float a, float b);
    real_fn value, derivative;
    float a, b; /* the parameters, as unary_ops.h's alpha and beta */
} reference;

static const reference kReferences[] = {
    {"sigmoid", sigmoid_op, sigmoid_ref, sigmoid_grad, 0, 0},
    {"tanh", tanh_op, tanh_ref, tanh_grad, 0, 0},
    {"neg", neg_op, neg_ref, neg_grad, 0, 0},
    {"exp", exp_op, exp_ref, exp_ref, 0, 0},
    {"log", log_op, log_ref, log_grad, 0, 0},
    {"sqrt", sqrt_op, sqrt_ref, sqrt_grad, 0, 0},
    {"abs", abs_op, abs_ref, abs_grad, 0, 0},
    {"gelu", gelu_op, gelu_ref, gelu_grad, 0, 0},
    {"gelu_tanh", gelu_tanh_op, gelu_tanh_ref, gelu_tanh_grad, 0, 0},
    {"silu", silu_op, silu_ref, silu_grad, 0, 0},
    {"relu6", relu6_op, relu6_ref, relu6_grad, 0, 0},
    {"hardswish", hardswish_op, hardswish_ref, hardswish_grad, 0, 0},
    {"hardsigmoid", hardsigmoid_op, hardsigmoid_ref, hardsigmoid_grad, 0, 0},
    {"softsign", softsign_op, softsign_ref, softsign_grad, 0, 0},
    {"leaky_relu", leaky_relu_op, leaky_relu_ref, leaky_relu_grad, 0.01f, 0},
    {"leaky_relu", leaky_relu_op, leaky_relu_ref, leaky_relu_grad, -1.5f, 0},
    {"elu", elu_op, elu_ref, elu_grad, 1.0f, 0},
    {"elu", elu_op, elu_ref, elu_grad, 0.7f, 0},
    {"softplus", softplus_op, softplus_ref, softplus_grad, 1.0f, 20.0f},
    {"softplus", softplus_op, softplus_ref, softplus_grad, 2.0f, 3.0f},
    {"softplus", softplus_op, softplus_ref, softplus_grad, 0.5f, -1.0f},
    {"clamp", clamp_op, clamp_ref, clamp_grad, -0.5f, 1.25f},
    {"clamp", clamp_op, clamp_ref, clamp_grad, -INFINITY, 0.75f},
    {"clamp", clamp_op, clamp_ref, clamp_grad, -1.0f, INFINITY},
    {"clamp", clamp_op, clamp_ref, clamp_grad, 1.5f, -1.0f}, /* min > max: max everywhere */
    {"pow_scalar", pow_op, pow_ref, pow_grad, 2.0f, 0},
    {"pow_scalar", pow_op, pow_ref, pow_grad, 3.0f, 0},
    {"pow_scalar", pow_op, pow_ref, pow_grad, -1.0f, 0},
    {"pow_scalar", pow_op, pow_ref, pow_grad, 0.5f, 0},
    {"pow_scalar", pow_op, pow_ref, pow_grad, 2.5f, 0},
    {"pow_scalar", pow_op, pow_ref, pow_grad, -2.0f, 0},
    {"pow_scalar", pow_op, pow_ref, pow_grad, 1.0f, 0},
    {"pow_scalar", pow_op, pow_ref, pow_grad, 0.0f, 0},
    {"add_scalar", add_op, add_ref, one, 1.5f, 0},
    {"mul_scalar", mul_op, mul_ref, mul_grad, -2.5f, 0},
    {"rsub_scalar", rsub_op, rsub_ref, neg_grad, 3.0f, 0},
    {"rdiv_scalar", rdiv_op, rdiv_ref, rdiv_grad, 2.0f, 0},
};
#define REFERENCES (int)(sizeof kReferences / sizeof kReferences[0])

static const char *const kRows[] = {
#define ROW_NAME(ID, name, Onnx, forward, backward, export, public) #name,
    NN_UNARY_OPS(ROW_NAME)
#undef ROW_NAME
};
#define ROWS (int)(sizeof kRows / sizeof kRows[0])

TEST(unary_every_row_has_a_reference) {
    for (int i = 0; i < ROWS; i++) {
        bool found = false;
        for (int r = 0; r < REFERENCES && !found; r++) found = strcmp(kRows[i], kReferences[r].row) == 0;
        CHECK_MSG(found, "row %s of unary_ops.h has no reference in tests/test_unary_ops.c", kRows[i]);
    }
    for (int r = 0; r < REFERENCES; r++) {
        bool found = false;
        for (int i = 0; i < ROWS && !found; i++) found = strcmp(kRows[i], kReferences[r].row) == 0;
        CHECK_MSG(found, "reference %d names %s, which is not a row", r, kReferences[r].row);
    }
}

/* NaN equals NaN; float infinities equal the references' out-of-range values. */
static bool near(float got, double want, double tol) {
    const float rounded = (float)want;
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
    if (got == rounded) return true;
    return fabs(got - want) <= tol * fmax(1.0, fabs(want));
}

/* The references' derivatives are right: central differences agree (away
 * from kinks, which the grid misses; outside a function's domain both are NaN). */
TEST(unary_reference_derivatives_match_differences) {
    for (int r = 0; r < REFERENCES; r++) {
        const reference *ref = &kReferences[r];
        for (double x = -7.0; x <= 7.0; x += 0.37) {
            const double h = 1e-5, d = ref->derivative(x, ref->a, ref->b);
            if (isnan(ref->value(x, ref->a, ref->b))) continue;
            const double numeric = (ref->value(x + h, ref->a, ref->b) - ref->value(x - h, ref->a, ref->b)) / (2 * h);
            CHECK_MSG(fabs(numeric - d) < 1e-6 * fmax(1.0, fabs(d)),
                      "%s(a=%g, b=%g)'(%g) = %.12g, differences %.12g", ref->row, ref->a, ref->b, x, d, numeric);
        }
    }
}

#define N 105 /* [3, 7, 5] */

static void check_reference(nn_ctx *ctx, const char *device, const reference *ref, const float *x, const float *w) {
    const int64_t shape[3] = {3, 7, 5};
    nn_tensor *xt = nn_tensor_from_data(ctx, NN_F32, 3, shape, x);
    nn_tensor *wt = nn_tensor_from_data(ctx, NN_F32, 3, shape, w);
    nn_tensor_set_requires_grad(xt, true);
    nn_tensor *y = ref->op(xt, ref->a, ref->b);
    nn_tensor *loss = nn_sum(nn_mul(y, wt));
    float got_y[N], got_dx[N];
    CHECK_MSG(y && nn_tensor_ndim(y) == 3 && nn_tensor_dim(y, 2) == 5, "%s %s: shape (%s)", device, ref->row,
              nn_last_error());
    CHECK_MSG(nn_tensor_read(y, got_y, sizeof got_y) == NN_OK, "%s", nn_last_error());
    CHECK_MSG(nn_backward(loss) == NN_OK, "%s %s backward: %s", device, ref->row, nn_last_error());
    CHECK(nn_tensor_read(nn_tensor_grad(xt), got_dx, sizeof got_dx) == NN_OK);
    int bad_y = 0, bad_dx = 0;
    for (int i = 0; i < N; i++) {
        const double want_y = ref->value(x[i], ref->a, ref->b), want_dx = ref->derivative(x[i], ref->a, ref->b) * w[i];
        if (!near(got_y[i], want_y, 2e-6) && bad_y++ == 0)
            CHECK_MSG(0, "%s %s(a=%g, b=%g) forward at x = %.9g: %.9g, want %.9g", device, ref->row, ref->a, ref->b,
                      x[i], got_y[i], want_y);
        if (!near(got_dx[i], want_dx, 4e-6) && bad_dx++ == 0)
            CHECK_MSG(0, "%s %s(a=%g, b=%g) backward at x = %.9g: %.9g, want %.9g", device, ref->row, ref->a,
                      ref->b, x[i], got_dx[i], want_dx);
    }

    /* A NaN passes through (x ** 0 is 1, as in PyTorch). */
    nn_tensor *nan = nn_tensor_from_data(ctx, NN_F32, 1, (int64_t[]){1}, (float[]){NAN});
    float v = 0;
    const bool power_zero = strcmp(ref->row, "pow_scalar") == 0 && ref->a == 0.0f;
    CHECK(nn_tensor_read(ref->op(nan, ref->a, ref->b), &v, sizeof v) == NN_OK);
    CHECK_MSG(power_zero ? v == 1.0f : isnan(v), "%s %s(a=%g, b=%g) of NaN: %g", device, ref->row, ref->a, ref->b, v);
    nn_ctx_step_end(ctx);
    nn_tensor_free(xt);
    nn_tensor_free(wt);
    nn_tensor_free(nan);
}

static void check_on(const char *device) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .threads = 2, .seed = 1});
    CHECK_MSG(ctx, "%s: %s", device, nn_last_error());
    if (!ctx) return;
    /* 0, tiny, tanh's series switch, the kinks (0, +-3, 6), the clamp
     * bounds and softplus's thresholds (x = 1.5 at beta 2, -2 at beta 0.5),
     * large magnitudes (exp overflows past 88). */
    static const float edges[] = {0.0f, 1e-4f, -1e-4f, 0.2499f, 0.2501f, -0.25f, 30.0f, -30.0f, 100.0f, -100.0f,
                                  3.0f, -3.0f,  6.0f,   -0.5f,   1.25f,   0.75f, -1.0f, 1.5f,   -2.0f, 88.0f};
    float *x = vkt_randoms(N, -5.0f, 5.0f, 17), *w = vkt_randoms(N, -1.0f, 1.0f, 18);
    memcpy(x + 40, edges, sizeof edges);
    for (int r = 0; r < REFERENCES; r++) check_reference(ctx, device, &kReferences[r], x, w);
    CHECK_MSG(!nn_sigmoid(NULL) && strstr(nn_last_error(), "nn_sigmoid"), "NULL input: %s", nn_last_error());
    free(x);
    free(w);
    nn_ctx_free(ctx);
}

TEST(unary_functions_and_gradients_cpu) { check_on("cpu"); }

TEST(unary_functions_and_gradients_vulkan) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    check_on("vulkan");
}

/* Bad parameters are refused at the call, naming the function, the argument and the value. */
#define CHECK_REFUSED(call, fn, arg, value)                                                                    \
    do {                                                                                                     \
        nn_tensor *got_ = (call);                                                                            \
        const char *msg_ = nn_last_error();                                                                  \
        CHECK_MSG(!got_ && strstr(msg_, fn) && strstr(msg_, arg) && strstr(msg_, value), "%s: %s", #call,    \
                  msg_);                                                                                     \
    } while (0)

TEST(unary_parameters_are_checked) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1, .seed = 1});
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 2, (int64_t[]){2, 3});
    CHECK_REFUSED(nn_leaky_relu(x, NAN), "nn_leaky_relu", "negative_slope", "nan");
    CHECK_REFUSED(nn_elu(x, INFINITY), "nn_elu", "alpha", "inf");
    CHECK_REFUSED(nn_softplus(x, -1.0f, 20.0f), "nn_softplus", "beta", "-1");
    CHECK_REFUSED(nn_softplus(x, 0.0f, 20.0f), "nn_softplus", "beta", "0");
    CHECK_REFUSED(nn_softplus(x, 1.0f, NAN), "nn_softplus", "threshold", "nan");
    CHECK_REFUSED(nn_clamp(x, NAN, 1.0f), "nn_clamp", "min", "nan");
    CHECK_REFUSED(nn_clamp(x, 0.0f, NAN), "nn_clamp", "max", "nan");
    CHECK_REFUSED(nn_pow_scalar(x, INFINITY), "nn_pow_scalar", "exponent", "inf");
    CHECK_REFUSED(nn_add_scalar(x, NAN), "nn_add_scalar", "s", "nan");
    CHECK_REFUSED(nn_mul_scalar(x, NAN), "nn_mul_scalar", "s", "nan");
    CHECK_REFUSED(nn_rsub_scalar(x, NAN), "nn_rsub_scalar", "s", "nan");
    CHECK_REFUSED(nn_rdiv_scalar(x, NAN), "nn_rdiv_scalar", "s", "nan");
    CHECK_REFUSED(nn_gelu(NULL, true), "nn_gelu", "x", "NULL");
    CHECK_REFUSED(nn_clamp(NULL, 0.0f, 1.0f), "nn_clamp", "x", "NULL");
    CHECK_REFUSED(nn_exp(NULL), "nn_exp", "x", "NULL");
    /* An absent side of clamp is an infinity, not an error. */
    nn_tensor *y = nn_clamp(x, -INFINITY, INFINITY);
    CHECK_MSG(y, "%s", nn_last_error());
    nn_ctx_step_end(ctx);
    nn_tensor_free(x);
    nn_ctx_free(ctx);
}
