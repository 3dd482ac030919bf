/* LeNet-5 learns a small synthetic task: four classes of 28x28 images (a
 * horizontal bar near the top or the bottom, a vertical bar near the left or
 * the right), each jittered in position and covered in noise. Training must
 * drive the loss below a bound and classify fresh images; the same seed must
 * give the same losses bit for bit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn_engine.h"
#include "test.h"

#define SIDE 28
#define CLASSES 4  /* classes in the task; LeNet-5 still has 10 outputs */
#define OUTPUTS 10
#define BATCH 32
#define STEPS 300

static uint64_t next_random(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static float uniform01(uint64_t *s) { return (float)(next_random(s) >> 40) / (float)(1 << 24); }

static void make_batch(uint64_t *rng, int count, float *images, int32_t *labels) {
    for (int n = 0; n < count; n++) {
        int label = (int)(next_random(rng) % CLASSES);
        int offset = 4 + (int)(next_random(rng) % 5); /* 4..8 px from the edge */
        int start = 3 + (int)(next_random(rng) % 6), length = 14 + (int)(next_random(rng) % 6);
        float *img = images + (size_t)n * SIDE * SIDE;
        for (int i = 0; i < SIDE * SIDE; i++) img[i] = 0.3f * uniform01(rng);
        for (int t = 0; t < 3; t++) {
            for (int along = start; along < start + length; along++) {
                int line = (label == 0 || label == 2) ? offset + t : SIDE - 1 - offset - t;
                int row = label < 2 ? line : along, col = label < 2 ? along : line;
                img[row * SIDE + col] = 0.7f + 0.3f * uniform01(rng);
            }
        }
        labels[n] = label;
    }
}

/* Trains and returns the final accuracy on 256 fresh images; losses[STEPS]. */
static double train(int threads, float *losses) {
    nn_ctx_options o = {.device = "cpu", .threads = threads, .seed = 2024};
    nn_ctx *ctx = nn_ctx_new(&o);
    nn_module *net = nn_lenet5(ctx, NN_INIT_KAIMING_UNIFORM);
    int count = nn_module_param_count(net);
    nn_tensor *params[16];
    for (int i = 0; i < count; i++) params[i] = nn_module_param(net, i);
    nn_optimizer *opt = nn_sgd_new(params, count, &(nn_sgd_options){.lr = 0.05f, .momentum = 0.9f});
    CHECK(net && opt);
    uint64_t rng = 0x9E3779B97F4A7C15ULL;
    static float images[256 * SIDE * SIDE];
    int32_t labels[256];
    int64_t x_shape[4] = {BATCH, 1, SIDE, SIDE}, y_shape[1] = {BATCH};
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 4, x_shape);
    nn_tensor *y = nn_tensor_new(ctx, NN_I32, 1, y_shape);
    int failures_before = nn_test_failures();
    for (int step = 0; step < STEPS && opt; step++) {
        make_batch(&rng, BATCH, images, labels);
        nn_tensor_write(x, images, sizeof(float) * BATCH * SIDE * SIDE);
        nn_tensor_write(y, labels, sizeof(int32_t) * BATCH);
        nn_tensor *loss = nn_softmax_cross_entropy(nn_module_forward(net, x), y);
        CHECK(nn_optimizer_zero_grad(opt) == NN_OK);
        CHECK(nn_backward(loss) == NN_OK);
        CHECK(nn_optimizer_step(opt) == NN_OK);
        nn_tensor_read(loss, &losses[step], sizeof(float));
        if (getenv("NN_TEST_VERBOSE") && step % 20 == 0) printf("    step %d loss %.5f\n", step, losses[step]);
        CHECK(nn_ctx_step_end(ctx) == NN_OK);
        if (nn_test_failures() > failures_before) break; /* one report, not 300 */
    }
    /* Held-out accuracy, in eval (no-grad) mode. */
    make_batch(&rng, 256, images, labels);
    int64_t eval_shape[4] = {256, 1, SIDE, SIDE};
    nn_tensor *eval_x = nn_tensor_from_data(ctx, NN_F32, 4, eval_shape, images);
    nn_ctx_set_grad_enabled(ctx, false);
    nn_tensor *logits = nn_module_forward(net, eval_x);
    CHECK(logits && !nn_tensor_requires_grad(logits));
    static float out[256 * OUTPUTS];
    CHECK(nn_tensor_read(logits, out, sizeof out) == NN_OK);
    int correct = 0;
    for (int n = 0; n < 256; n++) {
        int best = 0;
        for (int c = 1; c < OUTPUTS; c++)
            if (out[n * OUTPUTS + c] > out[n * OUTPUTS + best]) best = c;
        correct += best == labels[n];
    }
    nn_ctx_step_end(ctx);
    nn_tensor_free(eval_x);
    nn_tensor_free(x);
    nn_tensor_free(y);
    nn_optimizer_free(opt);
    nn_module_free(net);
    nn_ctx_free(ctx);
    return correct / 256.0;
}

TEST(training_lenet5_learns_synthetic_task) {
    static float losses[STEPS], again[STEPS];
    double accuracy = train(2, losses);
    /* LeNet-5 has 10 outputs; at initialisation all are about equally likely. */
    CHECK_MSG(fabs(losses[0] - logf((float)OUTPUTS)) < 0.3, "first loss %g is far from ln 10", losses[0]);
    double tail = 0.0;
    for (int i = STEPS - 20; i < STEPS; i++) tail += losses[i] / 20.0;
    CHECK_MSG(tail < 0.1, "mean loss over the last 20 steps is %g, want < 0.1", tail);
    CHECK_MSG(accuracy >= 0.97, "held-out accuracy %.3f, want >= 0.97", accuracy);

    /* Reproducible: the same seed and thread count give the same losses. */
    train(2, again);
    CHECK_MSG(memcmp(losses, again, sizeof losses) == 0, "a second run with the same seed differs");
}

/* Thread counts split the GEMMs and reductions differently, so results may
 * differ in the last bits, never more: one LeNet-5 step's loss and gradients
 * with 1, 2 and 3 threads agree to float32 accuracy. */
TEST(training_thread_counts_agree) {
    static float images[48 * SIDE * SIDE];
    int32_t labels[48];
    uint64_t rng = 77;
    make_batch(&rng, 48, images, labels);
    float reference_loss = 0.0f;
    float *reference_grads[16] = {0};
    for (int threads = 1; threads <= 3; threads++) {
        nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = threads, .seed = 9});
        nn_module *net = nn_lenet5(ctx, NN_INIT_KAIMING_UNIFORM);
        int64_t x_shape[4] = {48, 1, SIDE, SIDE}, y_shape[1] = {48};
        nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 4, x_shape, images);
        nn_tensor *y = nn_tensor_from_data(ctx, NN_I32, 1, y_shape, labels);
        nn_tensor *loss = nn_softmax_cross_entropy(nn_module_forward(net, x), y);
        float loss_value = 0.0f;
        CHECK(nn_backward(loss) == NN_OK);
        nn_tensor_read(loss, &loss_value, sizeof loss_value);
        if (threads == 1) reference_loss = loss_value;
        else CHECK_CLOSE(loss_value, reference_loss, 1e-6);
        for (int i = 0; i < nn_module_param_count(net); i++) {
            nn_tensor *grad = nn_tensor_grad(nn_module_param(net, i));
            int64_t n = nn_tensor_numel(grad);
            float *values = malloc(sizeof(float) * (size_t)n);
            nn_tensor_read(grad, values, sizeof(float) * (size_t)n);
            if (threads == 1) {
                reference_grads[i] = values;
                continue;
            }
            double max_ref = 0.0, max_diff = 0.0;
            for (int64_t j = 0; j < n; j++) {
                max_ref = fmax(max_ref, fabs(reference_grads[i][j]));
                max_diff = fmax(max_diff, fabs(values[j] - reference_grads[i][j]));
            }
            CHECK_MSG(max_diff <= 1e-5 * max_ref, "%s with %d threads: max diff %g (max |grad| %g)",
                      nn_module_param_name(net, i), threads, max_diff, max_ref);
            free(values);
        }
        nn_ctx_step_end(ctx);
        nn_tensor_free(x);
        nn_tensor_free(y);
        nn_module_free(net);
        nn_ctx_free(ctx);
    }
    for (int i = 0; i < 16; i++) free(reference_grads[i]);
}
