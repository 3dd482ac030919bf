/* Step capture and replay (nn_capture.h) and the device-side training loop
 * (nn_device_loop.h): a replayed step gives bit for bit what the eager step
 * gives, on the CPU and on Vulkan, for batches gathered on the device by a
 * step counter and for inputs written by the host between replays; the
 * gathers, lookups and metric sums against host loops; misuse is refused. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h" /* nn_command's argument array, the kernel table */
#include "nn_engine.h"
#include "test.h"
#include "vulkan_harness.h"

#define IMAGES 101
#define SIDE 28
#define BATCH 13
#define STEPS 6

/* Images with a class-dependent bright square on noise. */
static void make_dataset(nn_dataset *ds) {
    memset(ds, 0, sizeof *ds);
    ds->count = IMAGES;
    ds->channels = 1;
    ds->height = ds->width = SIDE;
    ds->classes = 10;
    ds->pixels = malloc(IMAGES * SIDE * SIDE);
    ds->labels = malloc(sizeof(int32_t) * IMAGES);
    uint32_t state = 12345;
    for (int i = 0; i < IMAGES; i++) {
        int label = (i * 7) % 10;
        ds->labels[i] = label;
        uint8_t *img = ds->pixels + i * SIDE * SIDE;
        for (int p = 0; p < SIDE * SIDE; p++) {
            state = state * 1664525u + 1013904223u;
            img[p] = (uint8_t)(state >> 26);
        }
        int r0 = 2 + 2 * label;
        for (int r = r0; r < r0 + 5; r++)
            for (int c = r0; c < r0 + 5; c++) img[r * SIDE + c] = 200;
    }
}

static void free_dataset(nn_dataset *ds) {
    free(ds->pixels);
    free(ds->labels);
}

typedef struct trainer {
    nn_ctx *ctx;
    nn_module *net;
    nn_optimizer *opt;
    nn_device_dataset *data;
    nn_tensor *counter, *sums, *x, *y;
    bool host_fed; /* inputs written by the host instead of gathered */
} trainer;

static bool trainer_open(trainer *t, const char *device, const nn_dataset *ds, bool host_fed) {
    memset(t, 0, sizeof *t);
    t->host_fed = host_fed;
    t->ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .threads = 2, .seed = 5});
    CHECK_MSG(t->ctx, "%s: %s", device, nn_last_error());
    if (!t->ctx) return false;
    t->net = nn_lenet5(t->ctx, NN_INIT_KAIMING_UNIFORM);
    nn_tensor *params[16];
    int count = nn_module_param_count(t->net);
    for (int i = 0; i < count; i++) params[i] = nn_module_param(t->net, i);
    t->opt = nn_sgd_new(params, count, &(nn_sgd_options){.lr = 0.05f, .momentum = 0.9f, .weight_decay = 5e-4f});
    float mean = 0.3f, std = 0.4f;
    t->data = nn_device_dataset_new(t->ctx, ds, &mean, &std);
    int64_t order[IMAGES];
    nn_shuffle_indices(order, IMAGES, 3, 0);
    int64_t one[1] = {1}, two[1] = {2}, xs[4] = {BATCH, 1, SIDE, SIDE}, ys[1] = {BATCH};
    t->counter = nn_tensor_new(t->ctx, NN_I32, 1, one);
    t->sums = nn_tensor_new(t->ctx, NN_F32, 1, two);
    t->x = nn_tensor_new(t->ctx, NN_F32, 4, xs);
    t->y = nn_tensor_new(t->ctx, NN_I32, 1, ys);
    bool ok = t->net && t->opt && t->data && t->counter && t->sums && t->x && t->y &&
              nn_device_dataset_set_order(t->data, order, IMAGES) == NN_OK;
    CHECK_MSG(ok, "%s: %s", device, nn_last_error());
    return ok;
}

static void trainer_close(trainer *t) {
    nn_optimizer_free(t->opt);
    nn_module_free(t->net);
    nn_device_dataset_free(t->data);
    nn_ctx_free(t->ctx); /* frees the tensors and any capture */
}

/* The host's batch for step s: what the gather gives, written by the host. */
static bool write_host_batch(trainer *t, const nn_dataset *ds, int s) {
    static float x[BATCH * SIDE * SIDE];
    int32_t y[BATCH];
    int64_t order[IMAGES];
    nn_shuffle_indices(order, IMAGES, 3, 0);
    if (nn_dataset_gather(ds, order + s * BATCH, BATCH, 0.3f, 0.4f, x, y) != NN_OK) return false;
    return nn_tensor_write(t->x, x, sizeof x) == NN_OK && nn_tensor_write(t->y, y, sizeof y) == NN_OK;
}

/* One training step, entirely on the device. */
static bool step(trainer *t) {
    bool ok = true;
    if (!t->host_fed) {
        ok &= nn_device_dataset_gather(t->data, t->counter, 0, t->x, t->y) == NN_OK;
        ok &= nn_counter_add(t->counter, 1) == NN_OK;
    }
    nn_tensor *logits = nn_module_forward(t->net, t->x);
    nn_tensor *loss = logits ? nn_softmax_cross_entropy(logits, t->y) : NULL;
    ok &= loss && nn_accumulate_metrics(logits, t->y, loss, t->sums) == NN_OK;
    ok &= nn_optimizer_zero_grad(t->opt) == NN_OK && nn_backward(loss) == NN_OK && nn_optimizer_step(t->opt) == NN_OK;
    ok &= nn_ctx_step_end(t->ctx) == NN_OK;
    return ok;
}

/* Every parameter, concatenated, and the metric sums. */
static size_t read_state(trainer *t, float *out, float sums[2]) {
    size_t n = 0;
    for (int i = 0; i < nn_module_param_count(t->net); i++) {
        nn_tensor *p = nn_module_param(t->net, i);
        size_t count = (size_t)nn_tensor_numel(p);
        CHECK(nn_tensor_read(p, out + n, count * 4) == NN_OK);
        n += count;
    }
    CHECK(nn_tensor_read(t->sums, sums, 8) == NN_OK);
    return n;
}

#define MAX_PARAMS 50000

/* STEPS steps, eagerly or as one eager step, a captured one and replays. */
static size_t train(const char *device, bool capture, bool host_fed, float *weights, float sums[2]) {
    nn_dataset ds;
    make_dataset(&ds);
    trainer t;
    size_t n = 0;
    if (trainer_open(&t, device, &ds, host_fed)) {
        bool ok = true;
        nn_capture *cap = NULL;
        for (int s = 0; s < STEPS && ok; s++) {
            if (host_fed) ok &= write_host_batch(&t, &ds, s);
            if (!capture || s == 0) {
                ok &= step(&t);
            } else if (s == 1) {
                ok &= nn_capture_begin(t.ctx) == NN_OK && step(&t);
                cap = nn_capture_end(t.ctx);
                ok &= cap != NULL && nn_capture_command_count(cap) > 15; /* a whole step (19 on Vulkan, fused) */
            } else if (host_fed) {
                ok &= nn_replay(cap, 1) == NN_OK; /* new inputs before each */
            } else {
                ok &= nn_replay(cap, STEPS - 2) == NN_OK; /* the rest in one submit */
                break;
            }
            CHECK_MSG(ok, "%s step %d: %s", device, s, nn_last_error());
        }
        if (ok) n = read_state(&t, weights, sums);
        nn_capture_free(cap);
        trainer_close(&t);
    }
    free_dataset(&ds);
    return n;
}

static void check_replay_equals_eager(const char *device, bool host_fed) {
    static float eager[MAX_PARAMS], replayed[MAX_PARAMS];
    float eager_sums[2], replayed_sums[2];
    size_t n = train(device, false, host_fed, eager, eager_sums);
    size_t m = train(device, true, host_fed, replayed, replayed_sums);
    CHECK(n == 44426 && n == m); /* LeNet-5 */
    CHECK_MSG(n == m && memcmp(eager, replayed, n * 4) == 0, "%s: replayed weights differ from eager", device);
    CHECK_MSG(memcmp(eager_sums, replayed_sums, 8) == 0, "%s: sums %g %g vs %g %g", device, eager_sums[0],
              eager_sums[1], replayed_sums[0], replayed_sums[1]);
    /* The sums saw every step: STEPS * BATCH rows, a plausible loss. */
    CHECK(eager_sums[1] >= 0 && eager_sums[1] <= STEPS * BATCH);
    CHECK(eager_sums[0] > 0.5 * STEPS * BATCH && eager_sums[0] < 5.0 * STEPS * BATCH);
}

/* A captured command holds every argument and the parameters of the
 * kernel it launches. */
TEST(capture_commands_hold_every_kernels_arguments) {
    for (int k = 0; k < NN_KERNEL_COUNT; k++) {
        CHECK_MSG(nn_kernel_arg_count((nn_kernel)k) > 0 && nn_kernel_arg_count((nn_kernel)k) <= NN_COMMAND_MAX_ARGS,
                  "%s takes %d arguments; a captured command holds %d", nn_kernel_name((nn_kernel)k),
                  nn_kernel_arg_count((nn_kernel)k), NN_COMMAND_MAX_ARGS);
        CHECK_MSG(nn_kernel_params_size((nn_kernel)k) <= NN_COMMAND_MAX_PARAMS,
                  "%s takes %zu bytes of parameters; a captured command holds %d", nn_kernel_name((nn_kernel)k),
                  nn_kernel_params_size((nn_kernel)k), NN_COMMAND_MAX_PARAMS);
    }
}

TEST(capture_replay_equals_eager_cpu_device_data) { check_replay_equals_eager("cpu", false); }
TEST(capture_replay_equals_eager_cpu_host_inputs) { check_replay_equals_eager("cpu", true); }

TEST(capture_replay_equals_eager_vulkan_device_data) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    check_replay_equals_eager("vulkan", false);
}

TEST(capture_replay_equals_eager_vulkan_host_inputs) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    check_replay_equals_eager("vulkan", true);
}

/* The gathered batch equals the host's gather; positions past the order give
 * zeros; the counter moves by the step. */
static void check_gather(const char *device) {
    nn_dataset ds;
    make_dataset(&ds);
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .threads = 2});
    float mean = 0.25f, std = 0.5f;
    nn_device_dataset *dd = ctx ? nn_device_dataset_new(ctx, &ds, &mean, &std) : NULL;
    CHECK_MSG(dd, "%s: %s", device, nn_last_error());
    if (dd) {
        int64_t order[IMAGES];
        nn_shuffle_indices(order, IMAGES, 9, 2);
        CHECK(nn_device_dataset_set_order(dd, order, 60) == NN_OK); /* a partial order */
        int64_t one[1] = {1}, xs[4] = {BATCH, 1, SIDE, SIDE}, ys[1] = {BATCH};
        nn_tensor *counter = nn_tensor_new(ctx, NN_I32, 1, one);
        nn_tensor *x = nn_tensor_new(ctx, NN_F32, 4, xs), *y = nn_tensor_new(ctx, NN_I32, 1, ys);
        static float got[BATCH * SIDE * SIDE], want[BATCH * SIDE * SIDE];
        int32_t got_y[BATCH], want_y[BATCH];
        for (int s = 0; s < 5; s++) {
            CHECK(nn_device_dataset_gather(dd, counter, 2, x, y) == NN_OK);
            CHECK(nn_counter_add(counter, 1) == NN_OK);
            CHECK(nn_tensor_read(x, got, sizeof got) == NN_OK && nn_tensor_read(y, got_y, sizeof got_y) == NN_OK);
            for (int i = 0; i < BATCH; i++) {
                int64_t position = 2 + (int64_t)s * BATCH + i;
                if (position < 60) {
                    nn_dataset_gather(&ds, &order[position], 1, mean, std, want + i * SIDE * SIDE, &want_y[i]);
                } else {
                    memset(want + i * SIDE * SIDE, 0, sizeof(float) * SIDE * SIDE);
                    want_y[i] = 0;
                }
            }
            double worst = 0;
            for (int j = 0; j < BATCH * SIDE * SIDE; j++) worst = fmax(worst, fabs(got[j] - want[j]));
            CHECK_MSG(worst < 1e-5, "%s step %d: gathered pixels differ by %g", device, s, worst);
            CHECK_MSG(memcmp(got_y, want_y, sizeof got_y) == 0, "%s step %d: gathered labels differ", device, s);
        }
        int32_t c = -1;
        CHECK(nn_tensor_read(counter, &c, 4) == NN_OK && c == 5);
        /* A learning-rate table looked up by the counter. */
        float table[7] = {0.5f, 0.25f, 0.125f, 1.f, 2.f, 3.f, 4.f}, lr = 0;
        int64_t seven[1] = {7};
        nn_tensor *t = nn_tensor_from_data(ctx, NN_F32, 1, seven, table), *out = nn_tensor_new(ctx, NN_F32, 1, one);
        CHECK(nn_table_lookup(t, counter, 1, out) == NN_OK && nn_tensor_read(out, &lr, 4) == NN_OK);
        CHECK_MSG(lr == 4.f, "%s: lookup gave %g", device, lr);
        CHECK(nn_table_lookup(t, counter, 2, out) == NN_OK && nn_tensor_read(out, &lr, 4) == NN_OK && lr == 0.f);
        /* Bad arguments are refused with a message. */
        int64_t bad[1] = {IMAGES};
        CHECK(nn_device_dataset_set_order(dd, bad, 1) == NN_ERR_ARGUMENT);
        CHECK(nn_device_dataset_gather(dd, x, 0, x, y) == NN_ERR_DTYPE);
        CHECK(nn_table_lookup(t, counter, 0, y) == NN_ERR_DTYPE);
    }
    nn_device_dataset_free(dd);
    nn_ctx_free(ctx);
    free_dataset(&ds);
}

TEST(device_dataset_gather_cpu) { check_gather("cpu"); }

TEST(device_dataset_gather_vulkan) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    check_gather("vulkan");
}

/* Loss and accuracy sums against a host count, ties going to the first. */
static void check_metrics(const char *device) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .threads = 2});
    enum { ROWS = 37, COLS = 7 };
    float logits[ROWS * COLS];
    int32_t labels[ROWS];
    uint32_t state = 99;
    for (int i = 0; i < ROWS * COLS; i++) {
        state = state * 1664525u + 1013904223u;
        logits[i] = (float)(state >> 29); /* few values: many ties */
    }
    int want = 0;
    for (int r = 0; r < ROWS; r++) {
        labels[r] = r % COLS;
        int best = 0;
        for (int c = 1; c < COLS; c++)
            if (logits[r * COLS + c] > logits[r * COLS + best]) best = c;
        want += best == labels[r];
    }
    int64_t ls[2] = {ROWS, COLS}, ys[1] = {ROWS}, one[1] = {1}, two[1] = {2};
    float loss_value = 0.75f;
    nn_tensor *l = nn_tensor_from_data(ctx, NN_F32, 2, ls, logits), *y = nn_tensor_from_data(ctx, NN_I32, 1, ys, labels);
    nn_tensor *loss = nn_tensor_from_data(ctx, NN_F32, 1, one, &loss_value), *sums = nn_tensor_new(ctx, NN_F32, 1, two);
    CHECK(nn_accumulate_metrics(l, y, loss, sums) == NN_OK && nn_accumulate_metrics(l, y, loss, sums) == NN_OK);
    float got[2];
    CHECK(nn_tensor_read(sums, got, 8) == NN_OK);
    CHECK_MSG(got[1] == 2 * want && fabsf(got[0] - 2 * 0.75f * ROWS) < 1e-4, "%s: sums %g %g, want %g %d", device,
              got[0], got[1], 2 * 0.75 * ROWS, 2 * want);
    CHECK(nn_accumulate_metrics(l, y, sums, sums) == NN_ERR_SHAPE);
    nn_ctx_free(ctx);
}

TEST(metrics_accumulate_cpu) { check_metrics("cpu"); }

TEST(metrics_accumulate_vulkan) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    check_metrics("vulkan");
}

/* Misuse: reads inside a capture, nested captures, empty captures, bad
 * replay counts; and a capture outliving tensors it uses. */
TEST(capture_misuse_is_refused) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1});
    int64_t shape[1] = {5};
    float data[5] = {1, -2, 3, -4, 5}, out[5];
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 1, shape, data);
    CHECK(nn_capture_end(ctx) == NULL && strstr(nn_last_error(), "no capture is recording"));
    CHECK(nn_capture_begin(ctx) == NN_OK);
    CHECK(nn_capture_begin(ctx) == NN_ERR_STATE);
    CHECK(nn_capture_end(ctx) == NULL && strstr(nn_last_error(), "nothing was recorded"));
    /* A read while recording fails, and so does the capture. */
    CHECK(nn_capture_begin(ctx) == NN_OK);
    nn_tensor *y = nn_relu(x);
    CHECK(y && nn_tensor_read(y, out, sizeof out) == NN_ERR_STATE);
    CHECK(strstr(nn_last_error(), "read after nn_replay"));
    CHECK(nn_capture_end(ctx) == NULL && strstr(nn_last_error(), "cannot be replayed"));
    CHECK(nn_replay(NULL, 1) == NN_ERR_ARGUMENT);
    /* A capture keeps the memory of tensors freed after it was recorded. */
    nn_tensor *z = nn_tensor_from_data(ctx, NN_F32, 1, shape, data);
    CHECK(nn_capture_begin(ctx) == NN_OK);
    nn_tensor *r = nn_relu(z);
    CHECK(r && nn_tensor_persist(r) == NN_OK);
    nn_capture *cap = nn_capture_end(ctx);
    CHECK(cap && nn_capture_command_count(cap) == 1);
    CHECK(nn_replay(cap, 0) == NN_ERR_ARGUMENT);
    nn_tensor_free(z);
    CHECK(nn_replay(cap, 3) == NN_OK); /* reads z's memory, still reserved (ASan would see otherwise) */
    CHECK(nn_tensor_read(r, out, sizeof out) == NN_OK && out[1] == 0 && out[4] == 5);
    nn_tensor_free(r);
    nn_capture_free(cap);
    nn_ctx_free(ctx); /* frees x and y */
}
