/* Training state: a run of 4 epochs equals 2 epochs, save, resume in a fresh
 * context, 2 epochs, bit for bit; and a bad or mismatched state is refused
 * with nothing changed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "io_test_util.h"
#include "nn_optim.h"
#include "optim/optimizer.h"
#include "test.h"

#define SAMPLES 37 /* batches of 8: the last one has 5 */
#define BATCH 8
#define FEATURES 3
#define CLASSES 7

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

typedef struct run {
    nn_ctx *ctx;
    nn_module *net;
    nn_optimizer *opt;
    bool scaled; /* the loss goes through dynamic loss scaling */
    float x[SAMPLES * FEATURES];
    int32_t y[SAMPLES];
} run;

static void run_open(run *r, uint64_t ctx_seed) {
    memset(r, 0, sizeof *r);
    nn_ctx_options o = {.device = "cpu", .threads = 1, .seed = ctx_seed};
    r->ctx = nn_ctx_new(&o);
    r->net = io_test_mlp(r->ctx);
    nn_tensor *params[4];
    for (int i = 0; i < 4; i++) params[i] = nn_module_param(r->net, i);
    nn_sgd_options so = {.lr = 0.1f, .momentum = 0.9f, .weight_decay = 1e-3f, .nesterov = true};
    r->opt = nn_sgd_new(params, 4, &so);
    uint64_t s = 123; /* the data set is fixed */
    for (int i = 0; i < SAMPLES * FEATURES; i++) r->x[i] = (float)(splitmix(&s) >> 40) / 16777216.0f - 0.5f;
    for (int i = 0; i < SAMPLES; i++) r->y[i] = (int32_t)(splitmix(&s) % CLASSES);
}

static void run_close(run *r) {
    nn_optimizer_free(r->opt);
    nn_module_free(r->net);
    nn_ctx_free(r->ctx);
}

/* One epoch; the order depends on (seed, epoch) alone, as the CLI's does. */
static void run_epoch(run *r, uint64_t seed, int64_t epoch, int64_t *step) {
    int order[SAMPLES];
    for (int i = 0; i < SAMPLES; i++) order[i] = i;
    uint64_t s = seed * 1000003u + (uint64_t)epoch;
    for (int i = SAMPLES - 1; i > 0; i--) {
        int j = (int)(splitmix(&s) % (uint64_t)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int start = 0; start < SAMPLES; start += BATCH) {
        int n = SAMPLES - start < BATCH ? SAMPLES - start : BATCH;
        float xb[BATCH * FEATURES];
        int32_t yb[BATCH];
        for (int k = 0; k < n; k++) {
            memcpy(xb + k * FEATURES, r->x + order[start + k] * FEATURES, sizeof(float) * FEATURES);
            yb[k] = r->y[order[start + k]];
        }
        int64_t xs[2] = {n, FEATURES}, ys[1] = {n};
        nn_tensor *x = nn_tensor_from_data(r->ctx, NN_F32, 2, xs, xb);
        nn_tensor *y = nn_tensor_from_data(r->ctx, NN_I32, 1, ys, yb);
        nn_tensor *loss = nn_softmax_cross_entropy(nn_module_forward(r->net, x), y);
        if (r->scaled) loss = nn_optimizer_scale_loss(r->opt, loss);
        CHECK(nn_optimizer_zero_grad(r->opt) == NN_OK);
        CHECK(nn_backward(loss) == NN_OK);
        CHECK(nn_optimizer_step(r->opt) == NN_OK);
        CHECK(nn_ctx_step_end(r->ctx) == NN_OK);
        nn_tensor_free(x);
        nn_tensor_free(y);
        (*step)++;
    }
}

static int same_velocity(const run *a, const run *b) {
    for (int i = 0; i < 4; i++) {
        float va[35], vb[35];
        nn_tensor *ta = nn_optimizer_state(a->opt, i, 0), *tb = nn_optimizer_state(b->opt, i, 0);
        size_t bytes = (size_t)nn_tensor_numel(ta) * sizeof(float);
        nn_tensor_read(ta, va, bytes);
        nn_tensor_read(tb, vb, bytes);
        if (memcmp(va, vb, bytes) != 0) return 0;
    }
    return 1;
}

TEST(train_state_resume_is_bit_exact) {
    const char *dir = io_test_dir();
    const char *path = io_test_path(dir, "state.safetensors");
    const uint64_t seed = 42;
    run full, first, resumed;
    run_open(&full, seed);
    int64_t step = 0;
    for (int64_t e = 0; e < 4; e++) run_epoch(&full, seed, e, &step);
    CHECK(step == 20);

    run_open(&first, seed);
    int64_t step1 = 0;
    for (int64_t e = 0; e < 2; e++) run_epoch(&first, seed, e, &step1);
    nn_rng_next_u32(&first.ctx->rng); /* the generator moved: it must be saved as it is */
    nn_train_progress p = {.epoch = 2, .step = step1, .seed = seed};
    CHECK_MSG(nn_save_train_state(path, first.net, first.opt, &p) == NN_OK, "%s", nn_last_error());

    /* A different context seed and fresh parameters: everything comes from the file. */
    run_open(&resumed, 999);
    nn_train_progress got = {0};
    CHECK_MSG(nn_load_train_state(path, resumed.net, resumed.opt, &got) == NN_OK, "%s", nn_last_error());
    CHECK(got.epoch == 2 && got.step == 10 && got.seed == seed);
    CHECK(resumed.ctx->rng.state == first.ctx->rng.state &&
          resumed.ctx->rng.increment == first.ctx->rng.increment);
    CHECK(io_test_same_params(first.net, resumed.net) && same_velocity(&first, &resumed));
    int64_t step2 = got.step;
    for (int64_t e = got.epoch; e < 4; e++) run_epoch(&resumed, got.seed, e, &step2);
    CHECK(step2 == step);
    CHECK_MSG(io_test_same_params(full.net, resumed.net), "resumed parameters differ from the 4-epoch run");
    CHECK(same_velocity(&full, &resumed));
    /* Without the resume the result is different (the check above can fail). */
    CHECK(!io_test_same_params(full.net, first.net));

    run_close(&full);
    run_close(&first);
    run_close(&resumed);
    io_test_rmdir(dir);
}

/* The scaler's state: scale, overflow flag, good steps, skipped steps. */
static void loss_scale_state(const run *r, float out[4]) {
    memset(out, 0, 4 * sizeof(float));
    CHECK(nn_tensor_read(nn_loss_scaler_state(r->opt), out, 4 * sizeof(float)) == NN_OK);
}

static void run_open_scaled(run *r, uint64_t ctx_seed) {
    run_open(r, ctx_seed);
    r->scaled = true;
    CHECK(nn_optimizer_enable_loss_scaling(r->opt, &(nn_loss_scale_options){.init_scale = 1024.0f,
                                                                             .growth_interval = 3}) == NN_OK);
}

TEST(train_state_keeps_the_dynamic_loss_scale) {
    const char *dir = io_test_dir();
    const char *path = io_test_path(dir, "scaled.safetensors");
    const char *unscaled_path = io_test_path(dir, "unscaled.safetensors");
    const uint64_t seed = 5;
    run full, first, resumed, plain, old;
    run_open_scaled(&full, seed);
    int64_t step = 0;
    for (int64_t e = 0; e < 2; e++) run_epoch(&full, seed, e, &step);
    run_open_scaled(&first, seed);
    int64_t step1 = 0;
    run_epoch(&first, seed, 0, &step1);
    float saved[4];
    loss_scale_state(&first, saved);
    CHECK_MSG(saved[0] == 2048.0f && saved[2] == 2.0f, "after 5 good steps at interval 3: scale %g, %g good steps",
              saved[0], saved[2]);
    nn_train_progress p = {.epoch = 1, .step = step1, .seed = seed};
    CHECK_MSG(nn_save_train_state(path, first.net, first.opt, &p) == NN_OK, "%s", nn_last_error());

    /* Resumed at the saved scale and count, it ends where the whole run does. */
    run_open_scaled(&resumed, 77);
    nn_train_progress got = {0};
    CHECK_MSG(nn_load_train_state(path, resumed.net, resumed.opt, &got) == NN_OK, "%s", nn_last_error());
    float loaded[4], whole[4], ended[4];
    loss_scale_state(&resumed, loaded);
    CHECK(memcmp(loaded, saved, sizeof saved) == 0);
    int64_t step2 = got.step;
    run_epoch(&resumed, seed, 1, &step2);
    loss_scale_state(&full, whole);
    loss_scale_state(&resumed, ended);
    CHECK_MSG(memcmp(whole, ended, sizeof whole) == 0, "scale %g and %g good steps resumed, %g and %g whole",
              ended[0], ended[2], whole[0], whole[2]);
    CHECK(io_test_same_params(full.net, resumed.net));

    /* A run that does not scale its loss refuses the file; one that does
     * resumes a file from a run without scaling at its initial scale. */
    run_open(&plain, 3);
    CHECK(nn_load_train_state(path, plain.net, plain.opt, &got) == NN_ERR_ARGUMENT);
    CHECK_MSG(strstr(nn_last_error(), "the file holds a dynamic loss scale (\"loss_scale.state\") but the run does "
                                      "not scale its loss"), "%s", nn_last_error());
    CHECK(nn_save_train_state(unscaled_path, plain.net, plain.opt, &p) == NN_OK);
    run_open_scaled(&old, 4);
    CHECK_MSG(nn_load_train_state(unscaled_path, old.net, old.opt, &got) == NN_OK, "%s", nn_last_error());
    loss_scale_state(&old, loaded);
    CHECK(loaded[0] == 1024.0f && loaded[2] == 0.0f);

    run_close(&full);
    run_close(&first);
    run_close(&resumed);
    run_close(&plain);
    run_close(&old);
    io_test_rmdir(dir);
}

TEST(train_state_refusals_change_nothing) {
    const char *dir = io_test_dir();
    const char *state = io_test_path(dir, "state.safetensors");
    const char *weights = io_test_path(dir, "weights.safetensors");
    run a, b;
    run_open(&a, 1);
    run_open(&b, 2);
    int64_t step = 0;
    run_epoch(&a, 7, 0, &step);
    nn_train_progress p = {.epoch = 1, .step = step, .seed = 7};
    CHECK(nn_save_train_state(state, a.net, a.opt, &p) == NN_OK);
    CHECK(nn_save_module(a.net, weights) == NN_OK);
    size_t count;
    float *before = io_test_snapshot(b.net, &count);
    nn_rng rng_before = b.ctx->rng;
    nn_train_progress got = {.epoch = -5};

    /* A weights-only file is not a training state. */
    CHECK(nn_load_train_state(weights, b.net, b.opt, &got) == NN_ERR_IO);
    CHECK_MSG(strstr(nn_last_error(), weights) && strstr(nn_last_error(), "not an nn-engine training state"),
              "%s", nn_last_error());
    /* A training state is not a plain weights file (it holds optimizer tensors). */
    CHECK(nn_load_module(b.net, state) == NN_ERR_ARGUMENT);
    CHECK_MSG(strstr(nn_last_error(), "this is a training state"), "%s", nn_last_error());

    /* Momentum in the file, none in the optimizer. */
    nn_tensor *params[4];
    for (int i = 0; i < 4; i++) params[i] = nn_module_param(b.net, i);
    nn_optimizer *plain = nn_sgd_new(params, 4, &(nn_sgd_options){.lr = 0.1f});
    CHECK(nn_load_train_state(state, b.net, plain, &got) == NN_ERR_ARGUMENT);
    CHECK_MSG(strstr(nn_last_error(), "the file holds momentum_buffer tensors but the optimizer keeps none"), "%s",
              nn_last_error());
    /* An optimizer over other tensors. */
    nn_optimizer *wrong = nn_sgd_new(params + 1, 3, &(nn_sgd_options){.lr = 0.1f, .momentum = 0.9f});
    CHECK(nn_load_train_state(state, b.net, wrong, &got) == NN_ERR_ARGUMENT);
    CHECK_MSG(strstr(nn_last_error(), "optimizer holds 3 parameters, the module 4"), "%s", nn_last_error());

    /* Bad metadata: a hand-edited epoch. The header keeps its length. */
    size_t size;
    uint8_t *bytes = io_test_read_bytes(state, &size);
    char *at = memmem(bytes, size, "\"epoch\":\"1\"", 11);
    CHECK(at != NULL);
    if (at) at[9] = 'x';
    const char *edited = io_test_path(dir, "edited.safetensors");
    CHECK(io_test_write_bytes(edited, bytes, size) == 0);
    CHECK(nn_load_train_state(edited, b.net, b.opt, &got) == NN_ERR_IO);
    CHECK_MSG(strstr(nn_last_error(), "metadata \"epoch\" = \"x\" is not an integer"), "%s", nn_last_error());
    /* Another optimizer's state: the name hand-edited, the header keeps its length. */
    if (at) at[9] = '1';
    char *named = memmem(bytes, size, "\"optimizer\":\"sgd\"", 17);
    CHECK(named != NULL);
    if (named) named[15] = 'x';
    CHECK(io_test_write_bytes(edited, bytes, size) == 0);
    CHECK(nn_load_train_state(edited, b.net, b.opt, &got) == NN_ERR_ARGUMENT);
    CHECK_MSG(strstr(nn_last_error(), "a training state of optimizer \"sgx\" cannot resume \"sgd\""), "%s",
              nn_last_error());
    if (named) named[15] = 'g';
    /* Truncated by one byte. */
    CHECK(io_test_write_bytes(edited, bytes, size - 1) == 0);
    CHECK(nn_load_train_state(edited, b.net, b.opt, &got) == NN_ERR_IO);
    CHECK_MSG(strstr(nn_last_error(), "truncated file"), "%s", nn_last_error());

    size_t n;
    float *after = io_test_snapshot(b.net, &n);
    CHECK(memcmp(before, after, count * sizeof *after) == 0);
    CHECK(b.ctx->rng.state == rng_before.state && got.epoch == -5);
    CHECK(nn_save_train_state(state, b.net, plain, NULL) == NN_ERR_ARGUMENT);

    /* The state of a plain-SGD run round-trips too (no momentum tensors). */
    CHECK(nn_save_train_state(state, b.net, plain, &p) == NN_OK);
    CHECK(nn_load_train_state(state, a.net, a.opt, &got) == NN_ERR_ARGUMENT); /* a has momentum */
    CHECK_MSG(strstr(nn_last_error(), "the optimizer keeps momentum_buffer tensors but the file has none"), "%s",
              nn_last_error());
    CHECK_MSG(nn_load_train_state(state, b.net, plain, &got) == NN_OK, "%s", nn_last_error());
    CHECK(got.epoch == 1 && got.seed == 7);

    free(bytes);
    free(before);
    free(after);
    nn_optimizer_free(plain);
    nn_optimizer_free(wrong);
    run_close(&a);
    run_close(&b);
    io_test_rmdir(dir);
}

/* A state of another model is named as such by the library (the CLI names
 * the model from the run's flags; a state without them, as the C and Python
 * APIs write, still gets this), before any optimizer state is blamed. */
TEST(train_state_of_another_model_is_named) {
    const char *dir = io_test_dir();
    char path[512];
    snprintf(path, sizeof path, "%s", io_test_path(dir, "other-model.safetensors"));
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1, .seed = 3});
    nn_module *mlp = io_test_mlp(ctx), *lenet = nn_lenet5(ctx, NN_INIT_KAIMING_UNIFORM);
    nn_tensor *a[4], *b[10];
    for (int i = 0; i < 4; i++) a[i] = nn_module_param(mlp, i);
    for (int i = 0; i < 10; i++) b[i] = nn_module_param(lenet, i);
    nn_optimizer *opt_a = nn_sgd_new(a, 4, &(nn_sgd_options){.lr = 0.1f, .momentum = 0.9f});
    nn_optimizer *opt_b = nn_sgd_new(b, 10, &(nn_sgd_options){.lr = 0.1f, .momentum = 0.9f});
    const nn_train_progress p = {.epoch = 1, .step = 3, .seed = 3};
    CHECK_MSG(nn_save_train_state(path, mlp, opt_a, &p) == NN_OK, "%s", nn_last_error());
    nn_train_progress back;
    CHECK(nn_load_train_state(path, lenet, opt_b, &back) == NN_ERR_ARGUMENT);
    CHECK_MSG(strstr(nn_last_error(), "the file holds another model's state: it has no \"c1.weight\""), "%s",
              nn_last_error());
    nn_optimizer_free(opt_a), nn_optimizer_free(opt_b);
    nn_module_free(mlp), nn_module_free(lenet);
    nn_ctx_free(ctx);
}
