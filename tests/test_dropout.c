/* Dropout: masks bit-identical on CPU and Vulkan, the keep rate within a
 * binomial bound, backward = mask * scale * dy, the identity at p = 0 and in
 * evaluation mode, arguments outside [0, 1) refused, a fresh mask at every
 * draw (also when the same kernel runs again with the same parameters, as a
 * replayed step does) and the same masks again after nn_ctx_manual_seed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn_capture.h"
#include "nn_engine.h"
#include "test.h"
#include "vulkan_harness.h"

#define NEED_VULKAN()                               \
    do {                                            \
        if (vkt_skipped() || !vkt_vulkan()) return; \
    } while (0)

static nn_ctx *open_ctx(const char *device, uint64_t seed) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .threads = 2, .seed = seed});
    CHECK_MSG(ctx, "%s: %s", device, nn_last_error());
    return ctx;
}

/* `draws` dropout draws of x (n floats, shape [n]) into out[draw * n + i]. */
static bool draw_masks(nn_ctx *ctx, const float *x, int64_t n, float p, int draws, float *out) {
    nn_tensor *t = nn_tensor_from_data(ctx, NN_F32, 1, &n, x);
    bool ok = t != NULL;
    for (int d = 0; d < draws && ok; d++) {
        nn_tensor *y = nn_dropout(t, p, true);
        ok = y && nn_tensor_read(y, out + d * n, sizeof(float) * (size_t)n) == NN_OK;
        ok &= nn_ctx_step_end(ctx) == NN_OK;
    }
    CHECK_MSG(ok, "dropout draws: %s", nn_last_error());
    nn_tensor_free(t);
    return ok;
}

static int64_t count_differences(const float *a, const float *b, int64_t n) {
    int64_t d = 0;
    for (int64_t i = 0; i < n; i++) d += (a[i] == 0) != (b[i] == 0);
    return d;
}

TEST(dropout_cpu_and_vulkan_masks_bit_identical) {
    NEED_VULKAN();
    static const int64_t sizes[] = {1, 7, 3 * 7 * 11 * 13, 100003};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int64_t n = sizes[s];
        float *x = malloc(sizeof(float) * n), *cpu = malloc(sizeof(float) * n * 3),
              *gpu = malloc(sizeof(float) * n * 3);
        vkt_fill(x, (size_t)n, -2, 2, 40 + (unsigned)s);
        nn_ctx *c = open_ctx("cpu", 1234), *g = open_ctx("vulkan", 1234);
        if (c && g && draw_masks(c, x, n, 0.37f, 3, cpu) && draw_masks(g, x, n, 0.37f, 3, gpu)) {
            CHECK_MSG(memcmp(cpu, gpu, sizeof(float) * n * 3) == 0, "n=%lld: CPU and Vulkan outputs differ",
                      (long long)n);
            if (n > 1000) {
                CHECK_MSG(count_differences(cpu, cpu + n, n) > n / 10, "n=%lld: draws 1 and 2 share a mask",
                          (long long)n);
                CHECK_MSG(count_differences(cpu + n, cpu + 2 * n, n) > n / 10, "n=%lld: draws 2 and 3 share a mask",
                          (long long)n);
            }
        }
        nn_ctx_free(c);
        nn_ctx_free(g);
        free(x), free(cpu), free(gpu);
    }
}

/* The same kernel with the same parameters and buffers, run twice with the
 * counter's increment between (what replaying a captured step does): a new mask,
 * on both backends, and the same one on both. */
TEST(dropout_kernel_rerun_with_same_parameters_draws_fresh_mask) {
    NEED_VULKAN();
    enum { N = 4099 };
    float *x = malloc(sizeof(float) * N);
    vkt_fill(x, N, 0.5f, 1.5f, 7);
    uint32_t zero = 0;
    vkt_pair a[4] = {vkt_pair_new(x, N, 8), vkt_pair_new(NULL, N, 0), vkt_pair_new(NULL, N, 4),
                     vkt_pair_new(&zero, 1, 12)};
    nn_dropout_params p = {.n = N, .threshold = 0x80000000u, .scale = 2.0f, .seed_lo = 99, .seed_hi = 5};
    float first[2][N], second[2][N];
    nn_backend *b[2] = {vkt_cpu(), vkt_vulkan()};
    for (int pass = 0; pass < 2; pass++) {
        CHECK(vkt_run(NN_KERNEL_DROPOUT_FORWARD, a, 4, &p));
        for (int k = 0; k < 2; k++) {
            nn_buffer_ref y = {k ? a[1].gpu : a[1].cpu, a[1].offset, sizeof first[k]};
            CHECK(b[k]->read(b[k], y, pass ? second[k] : first[k], sizeof first[k]) == NN_OK);
        }
        nn_counter_params one = {.delta = 1};
        vkt_pair advance[2] = {a[3], vkt_pair_none()};
        CHECK(vkt_run(NN_KERNEL_COUNTER_ADD, advance, 2, &one));
    }
    vkt_compare_i32(&a[3], "draw counter after two advances");
    uint32_t counter = 0;
    CHECK(b[0]->read(b[0], (nn_buffer_ref){a[3].cpu, a[3].offset, 4}, &counter, 4) == NN_OK);
    CHECK(counter == 2);
    CHECK(memcmp(first[0], first[1], sizeof first[0]) == 0);
    CHECK(memcmp(second[0], second[1], sizeof second[0]) == 0);
    CHECK_MSG(count_differences(first[0], second[0], N) > N / 4, "the rerun drew the same mask");
    for (int i = 0; i < 4; i++) vkt_pair_free(&a[i]);
    free(x);
}

TEST(dropout_keep_rate_within_binomial_bound_and_scale_exact) {
    const int64_t n = 1 << 20;
    float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
    vkt_fill(x, (size_t)n, 0.25f, 4.0f, 3);
    static const float ps[] = {0.1f, 0.5f, 0.9f, 0.0f};
    nn_ctx *ctx = open_ctx("cpu", 42);
    for (size_t k = 0; ctx && k < sizeof ps / sizeof ps[0]; k++) {
        float p = ps[k], scale = (float)(1.0 / (1.0 - (double)p));
        if (!draw_masks(ctx, x, n, p, 1, y)) break;
        int64_t kept = 0, wrong = 0;
        for (int64_t i = 0; i < n; i++) {
            if (y[i] != 0) kept++;
            if (y[i] != 0 && y[i] != x[i] * scale) wrong++;
        }
        double mean = n * (1.0 - p), sd = sqrt(n * p * (1.0 - p));
        /* 6 standard deviations: a false alarm about once in 10^9 runs. */
        CHECK_MSG(fabs((double)kept - mean) <= 6 * sd + 0.5, "p=%g: kept %lld of %lld, want %.0f +- %.0f",
                  (double)p, (long long)kept, (long long)n, mean, 6 * sd);
        CHECK_MSG(wrong == 0, "p=%g: %lld kept elements are not x * %g", (double)p, (long long)wrong, (double)scale);
        if (p == 0.0f) CHECK_MSG(memcmp(x, y, sizeof(float) * n) == 0, "p=0 in training is not the identity");
    }
    nn_ctx_free(ctx);
    free(x), free(y);
}

static void check_backward(const char *device) {
    nn_ctx *ctx = open_ctx(device, 5);
    if (!ctx) return;
    int64_t shape[3] = {3, 5, 7}, n = 105;
    float xs[105], ws[105], y[105], dx[105];
    vkt_fill(xs, n, 0.5f, 1.5f, 11);
    vkt_fill(ws, n, -1, 1, 12);
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 3, shape, xs);
    nn_tensor *w = nn_tensor_from_data(ctx, NN_F32, 3, shape, ws);
    bool ok = x && w && nn_tensor_set_requires_grad(x, true) == NN_OK;
    nn_tensor *out = ok ? nn_dropout(x, 0.4f, true) : NULL;
    /* Twice through the same dropout output, so the gradient accumulates. */
    nn_tensor *loss = out ? nn_sum(nn_add(nn_mul(out, w), nn_mul(out, w))) : NULL;
    ok = loss && nn_backward(loss) == NN_OK && nn_tensor_read(out, y, sizeof y) == NN_OK &&
         nn_tensor_read(nn_tensor_grad(x), dx, sizeof dx) == NN_OK;
    CHECK_MSG(ok, "%s: %s", device, nn_last_error());
    float scale = (float)(1.0 / 0.6);
    for (int i = 0; ok && i < n; i++) {
        double want = y[i] != 0 ? 2.0 * (double)scale * ws[i] : 0.0;
        CHECK_CLOSE(dx[i], want, 1e-6);
    }
    nn_ctx_step_end(ctx);
    nn_tensor_free(x);
    nn_tensor_free(w);
    nn_ctx_free(ctx);
}

TEST(dropout_backward_is_mask_times_scale_times_dy_cpu) { check_backward("cpu"); }
TEST(dropout_backward_is_mask_times_scale_times_dy_vulkan) {
    NEED_VULKAN();
    check_backward("vulkan");
}

TEST(dropout_eval_mode_is_identity_and_layer_follows_module_mode) {
    nn_ctx *ctx = open_ctx("cpu", 9);
    if (!ctx) return;
    int64_t shape[2] = {4, 33};
    float xs[132], y[132];
    vkt_fill(xs, 132, -1, 1, 13);
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 2, shape, xs);
    nn_tensor *e = x ? nn_dropout(x, 0.5f, false) : NULL;
    CHECK(e && nn_tensor_read(e, y, sizeof y) == NN_OK && memcmp(xs, y, sizeof y) == 0);
    nn_module *seq = nn_sequential(ctx);
    CHECK(nn_sequential_append(seq, "drop", nn_dropout_layer(ctx, 0.5f)) == NN_OK);
    CHECK(nn_module_is_training(seq));
    nn_tensor *t = nn_module_forward(seq, x);
    int zeros = 0;
    CHECK(t && nn_tensor_read(t, y, sizeof y) == NN_OK);
    for (int i = 0; i < 132; i++) zeros += y[i] == 0;
    CHECK_MSG(zeros > 20 && zeros < 112, "training mode zeroed %d of 132", zeros);
    CHECK(nn_module_set_training(seq, false) == NN_OK && !nn_module_is_training(seq));
    nn_tensor *v = nn_module_forward(seq, x);
    CHECK(v && nn_tensor_read(v, y, sizeof y) == NN_OK && memcmp(xs, y, sizeof y) == 0);
    CHECK(strcmp(nn_module_kind(seq), "Sequential") == 0);
    nn_module_free(seq);
    nn_ctx_step_end(ctx);
    nn_tensor_free(x);
    nn_ctx_free(ctx);
}

TEST(dropout_rejects_p_outside_0_1) {
    nn_ctx *ctx = open_ctx("cpu", 1);
    if (!ctx) return;
    int64_t n = 5;
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 1, &n);
    static const float bad[] = {-0.1f, 1.0f, 1.5f, NAN};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(nn_dropout(x, bad[i], true) == NULL);
        CHECK(nn_last_status() == NN_ERR_ARGUMENT && strstr(nn_last_error(), "[0, 1)"));
        CHECK(nn_dropout(x, bad[i], false) == NULL);
        CHECK(nn_dropout_layer(ctx, bad[i]) == NULL && strstr(nn_last_error(), "[0, 1)"));
    }
    CHECK(nn_dropout(NULL, 0.5f, true) == NULL && nn_last_status() == NN_ERR_ARGUMENT);
    CHECK(nn_module_set_training(NULL, true) == NN_ERR_ARGUMENT);
    nn_tensor_free(x);
    nn_ctx_free(ctx);
}

TEST(dropout_masks_repeat_after_manual_seed) {
    enum { N = 2000 };
    float x[N], a[2 * N], b[2 * N];
    vkt_fill(x, N, 1, 2, 17);
    nn_ctx *ctx = open_ctx("cpu", 3);
    if (!ctx) return;
    CHECK(nn_ctx_manual_seed(ctx, 77) == NN_OK);
    draw_masks(ctx, x, N, 0.5f, 2, a);
    CHECK(nn_ctx_manual_seed(ctx, 77) == NN_OK);
    draw_masks(ctx, x, N, 0.5f, 2, b);
    CHECK_MSG(memcmp(a, b, sizeof a) == 0, "the masks after manual_seed(77) differ from the first time");
    CHECK(count_differences(a, a + N, N) > N / 4);
    CHECK(nn_ctx_manual_seed(ctx, 78) == NN_OK);
    draw_masks(ctx, x, N, 0.5f, 1, b);
    CHECK_MSG(count_differences(a, b, N) > N / 4, "another seed drew the same mask");
    nn_ctx_free(ctx);
}

/* A captured step with dropout: the recording run and each replay draw the
 * masks of eager draws 0, 1, 2 (same seed), on both devices. */
static void check_capture(const char *device) {
    enum { N = 3001 };
    float x[N], eager[3 * N], got[3 * N];
    vkt_fill(x, N, 1, 2, 23);
    nn_ctx *e = open_ctx(device, 606);
    bool ok = e && draw_masks(e, x, N, 0.25f, 3, eager);
    nn_ctx_free(e);
    nn_ctx *ctx = open_ctx(device, 606);
    if (!ctx || !ok) {
        nn_ctx_free(ctx);
        return;
    }
    int64_t n = N;
    nn_tensor *t = nn_tensor_from_data(ctx, NN_F32, 1, &n, x);
    ok = t && nn_capture_begin(ctx) == NN_OK;
    nn_tensor *y = ok ? nn_dropout(t, 0.25f, true) : NULL;
    ok = y && nn_tensor_persist(y) == NN_OK;
    nn_capture *step = nn_capture_end(ctx);
    ok = ok && step && nn_tensor_read(y, got, sizeof(float) * N) == NN_OK;
    for (int r = 1; ok && r < 3; r++)
        ok = nn_replay(step, 1) == NN_OK && nn_tensor_read(y, got + r * N, sizeof(float) * N) == NN_OK;
    CHECK_MSG(ok, "%s capture: %s", device, nn_last_error());
    if (ok) {
        CHECK_MSG(memcmp(got, eager, sizeof got) == 0, "%s: the recording run and replays differ from eager draws 0-2",
                  device);
        CHECK(count_differences(got + N, got + 2 * N, N) > N / 10);
    }
    nn_capture_free(step);
    nn_tensor_free(y);
    nn_tensor_free(t);
    nn_ctx_free(ctx);
}

TEST(dropout_captured_step_draws_fresh_masks_on_replay_cpu) { check_capture("cpu"); }
TEST(dropout_captured_step_draws_fresh_masks_on_replay_vulkan) {
    NEED_VULKAN();
    check_capture("vulkan");
}
