/* The elementwise functions of shaders/unary_ops.h as operations, on the CPU
 * and on Vulkan: values against double-precision references written here
 * (not the table's expressions), gradients against the references'
 * derivatives (themselves checked against central differences), on an
 * awkward shape with values at the edges of the table's formulas. Every row
 * of the table must have a reference here. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn_engine.h"
#include "test.h"
#include "unary_ops.h"
#include "vulkan_harness.h"

static double sigmoid_ref(double x) { return 1.0 / (1.0 + exp(-x)); }
static double sigmoid_grad(double x) { return sigmoid_ref(x) * (1.0 - sigmoid_ref(x)); }
static double tanh_grad(double x) { return 1.0 - tanh(x) * tanh(x); }

typedef struct reference {
    const char *name;
    nn_tensor *(*op)(nn_tensor *);
    double (*value)(double);
    double (*derivative)(double);
} reference;

static const reference kReferences[] = {
    {"sigmoid", nn_sigmoid, sigmoid_ref, sigmoid_grad},
    {"tanh", nn_tanh, tanh, tanh_grad},
};
#define REFERENCES (int)(sizeof kReferences / sizeof kReferences[0])

static const char *const kRows[] = {
#define ROW_NAME(ID, name, Onnx, forward, backward) #name,
    NN_UNARY_OPS(ROW_NAME)
#undef ROW_NAME
};
#define ROWS (int)(sizeof kRows / sizeof kRows[0])

TEST(unary_every_row_has_a_reference) {
    CHECK_MSG(REFERENCES == ROWS, "%d references for %d rows", REFERENCES,
              ROWS);
    for (int i = 0; i < ROWS && i < REFERENCES; i++)
        CHECK_MSG(strcmp(kRows[i], kReferences[i].name) == 0, "row %d is %s, reference %d is %s", i, kRows[i], i,
                  kReferences[i].name);
}

/* The references' derivatives are right: central differences agree. */
TEST(unary_reference_derivatives_match_differences) {
    for (int r = 0; r < REFERENCES; r++)
        for (double x = -7.0; x <= 7.0; x += 0.37) {
            const double h = 1e-5, numeric = (kReferences[r].value(x + h) - kReferences[r].value(x - h)) / (2 * h);
            CHECK_MSG(fabs(numeric - kReferences[r].derivative(x)) < 1e-8, "%s'(%g) = %.12g, differences %.12g",
                      kReferences[r].name, x, kReferences[r].derivative(x), numeric);
        }
}

#define N 105 /* [3, 7, 5] */

static void check_on(const char *device) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .threads = 2, .seed = 1});
    CHECK_MSG(ctx, "%s: %s", device, nn_last_error());
    if (!ctx) return;
    static const float edges[] = {0.0f, 1e-4f, -1e-4f, 0.2499f, 0.2501f, -0.25f, 30.0f, -30.0f, 100.0f, -100.0f};
    float *x = vkt_randoms(N, -5.0f, 5.0f, 17), *w = vkt_randoms(N, -1.0f, 1.0f, 18);
    memcpy(x + 40, edges, sizeof edges);
    const int64_t shape[3] = {3, 7, 5};
    for (int r = 0; r < REFERENCES; r++) {
        const reference *ref = &kReferences[r];
        nn_tensor *xt = nn_tensor_from_data(ctx, NN_F32, 3, shape, x);
        nn_tensor *wt = nn_tensor_from_data(ctx, NN_F32, 3, shape, w);
        nn_tensor_set_requires_grad(xt, true);
        nn_tensor *y = ref->op(xt);
        nn_tensor *loss = nn_sum(nn_mul(y, wt));
        float got_y[N], got_dx[N];
        double want_y[N], want_dx[N];
        for (int i = 0; i < N; i++) {
            want_y[i] = ref->value(x[i]);
            want_dx[i] = ref->derivative(x[i]) * w[i];
        }
        CHECK_MSG(y && nn_tensor_ndim(y) == 3 && nn_tensor_dim(y, 2) == 5, "%s %s: shape", device, ref->name);
        CHECK_MSG(nn_tensor_read(y, got_y, sizeof got_y) == NN_OK, "%s", nn_last_error());
        vkt_check_near(got_y, want_y, N, 2e-6, "%s %s forward", device, ref->name);
        CHECK_MSG(nn_backward(loss) == NN_OK, "%s %s backward: %s", device, ref->name, nn_last_error());
        CHECK(nn_tensor_read(nn_tensor_grad(xt), got_dx, sizeof got_dx) == NN_OK);
        vkt_check_near(got_dx, want_dx, N, 4e-6, "%s %s backward", device, ref->name);

        /* A NaN passes through both ways. */
        nn_tensor *nan = nn_tensor_from_data(ctx, NN_F32, 1, (int64_t[]){1}, (float[]){NAN});
        float v = 0;
        CHECK(nn_tensor_read(ref->op(nan), &v, sizeof v) == NN_OK && isnan(v));
        nn_ctx_step_end(ctx);
        nn_tensor_free(xt);
        nn_tensor_free(wt);
        nn_tensor_free(nan);
    }
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
