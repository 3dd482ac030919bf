/* Dynamic loss scaling (nn_optimizer_enable_loss_scaling) on the CPU and
 * Vulkan: with a power-of-two scale the steps equal unscaled steps bit for
 * bit (SGD with momentum, Adam with its step count, RMSprop with momentum
 * and centering, Lion, Muon with its AdamW group); a step whose scaled
 * gradients overflow leaves the parameters and every state as they were
 * (the update kernels skip it on the device), is counted and halves the
 * scale; good steps double it at the interval. The CLI's test of
 * --precision fp16 runs it in a captured step. */
#include <string.h>

#include "nn_engine.h"
#include "test.h"
#include "vulkan_harness.h"

enum { IN = 5, OUT = 3, ROWS = 4 };
enum { SGD, ADAM, RMSPROP, LION, MUON, OPTIMIZERS };
static const char *const kNames[OPTIMIZERS] = {"sgd", "adam", "rmsprop", "lion", "muon"};

typedef struct run {
    nn_ctx *ctx;
    nn_tensor *w, *b, *x;
    nn_optimizer *opt;
} run;

static nn_optimizer *new_optimizer(int kind, nn_tensor *const *params) {
    switch (kind) {
    case ADAM: return nn_adam_new(params, 2, &(nn_adam_options){.lr = 0.01f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f});
    case RMSPROP:
        return nn_rmsprop_new(params, 2, &(nn_rmsprop_options){.lr = 0.01f, .alpha = 0.99f, .eps = 1e-8f,
                                                                .momentum = 0.9f, .centered = true});
    case LION: return nn_lion_new(params, 2, &(nn_lion_options){.lr = 0.01f, .beta1 = 0.9f, .beta2 = 0.99f});
    case MUON: return nn_muon_new(params, 2, &(nn_muon_options){.lr = 0.02f, .momentum = 0.95f, .ns_steps = 5});
    default: return nn_sgd_new(params, 2, &(nn_sgd_options){.lr = 0.05f, .momentum = 0.9f});
    }
}

static bool open_run(run *r, int device, int kind) {
    memset(r, 0, sizeof *r);
    r->ctx = nn_ctx_new(&(nn_ctx_options){.device = device ? "vulkan" : "cpu", .threads = 1});
    if (!r->ctx) return false;
    float w[OUT * IN], b[OUT], x[ROWS * IN];
    for (int i = 0; i < OUT * IN; i++) w[i] = 0.1f * (float)((i * 7) % 11) - 0.5f;
    for (int i = 0; i < OUT; i++) b[i] = 0.25f * (float)i;
    for (int i = 0; i < ROWS * IN; i++) x[i] = 0.3f * (float)((i * 5) % 13) - 1.7f;
    r->w = nn_tensor_from_data(r->ctx, NN_F32, 2, (int64_t[]){OUT, IN}, w);
    r->b = nn_tensor_from_data(r->ctx, NN_F32, 1, (int64_t[]){OUT}, b);
    r->x = nn_tensor_from_data(r->ctx, NN_F32, 2, (int64_t[]){ROWS, IN}, x);
    nn_tensor_set_requires_grad(r->w, true);
    nn_tensor_set_requires_grad(r->b, true);
    nn_tensor *params[2] = {r->w, r->b};
    r->opt = new_optimizer(kind, params);
    return r->opt != NULL;
}

static void close_run(run *r) {
    nn_optimizer_free(r->opt);
    nn_ctx_free(r->ctx);
}

/* One step of the loss sum((x w^T + b)^2) * factor, scaled when enabled. */
static nn_status step(run *r, bool scaled, float factor) {
    nn_status st = nn_optimizer_zero_grad(r->opt);
    nn_tensor *y = st == NN_OK ? nn_linear(r->x, r->w, r->b) : NULL;
    nn_tensor *loss = y ? nn_sum(nn_mul_scalar(nn_mul(y, y), factor)) : NULL;
    if (scaled && loss) loss = nn_optimizer_scale_loss(r->opt, loss);
    if (st == NN_OK) st = loss ? nn_backward(loss) : nn_last_status();
    if (st == NN_OK) st = nn_optimizer_step(r->opt);
    nn_status end = nn_ctx_step_end(r->ctx);
    return st == NN_OK ? end : st;
}

/* The parameters and every state, as 32-bit words. */
static int snapshot(run *r, uint32_t *out) {
    int n = 0;
    bool ok = nn_tensor_read(r->w, out + n, sizeof(float) * OUT * IN) == NN_OK;
    n += OUT * IN;
    ok = ok && nn_tensor_read(r->b, out + n, sizeof(float) * OUT) == NN_OK;
    n += OUT;
    for (int s = 0; s < nn_optimizer_state_count(r->opt); s++)
        for (int p = 0; p < 2; p++) {
            nn_tensor *t = nn_optimizer_state(r->opt, p, s);
            const int64_t count = nn_tensor_numel(t);
            ok = ok && nn_tensor_read(t, out + n, sizeof(uint32_t) * (size_t)count) == NN_OK;
            n += (int)count;
        }
    return ok ? n : -1;
}

TEST(loss_scale_steps_equal_unscaled_ones_and_skip_overflows) {
    for (int device = 0; device < 2; device++) {
        if (device && vkt_skipped()) continue;
        for (int kind = 0; kind < OPTIMIZERS; kind++) {
            const char *what = kNames[kind];
            run plain, scaled;
            if (!open_run(&plain, device, kind) || !open_run(&scaled, device, kind)) {
                CHECK_MSG(false, "%s: %s", what, nn_last_error());
                return;
            }
            CHECK(nn_optimizer_enable_loss_scaling(scaled.opt, &(nn_loss_scale_options){.init_scale = 1024.0f,
                                                                                           .growth_interval = 2}) ==
                  NN_OK);
            for (int i = 0; i < 3; i++) {
                CHECK(step(&plain, false, 1.0f) == NN_OK);
                CHECK_MSG(step(&scaled, true, 1.0f) == NN_OK, "%s: %s", what, nn_last_error());
            }
            uint32_t a[256], b[256];
            const int n = snapshot(&plain, a);
            CHECK(snapshot(&scaled, b) == n && n > 0);
            CHECK_MSG(memcmp(a, b, sizeof(uint32_t) * (size_t)n) == 0, "%s on %s: scaled steps differ from plain ones",
                      what, device ? "vulkan" : "cpu");
            float scale;
            int64_t skipped;
            CHECK(nn_optimizer_loss_scale_stats(scaled.opt, &scale, &skipped) == NN_OK);
            CHECK_MSG(scale == 2048.0f && skipped == 0, "%s: scale %g after 3 good steps (interval 2), %lld skipped",
                      what, scale, (long long)skipped);
            /* A loss whose scaled gradients overflow: nothing moves, the step is counted, the scale halves. */
            CHECK(step(&scaled, true, 1e36f) == NN_OK);
            CHECK(snapshot(&scaled, b) == n);
            CHECK_MSG(memcmp(a, b, sizeof(uint32_t) * (size_t)n) == 0, "%s on %s: a skipped step changed the state",
                      what, device ? "vulkan" : "cpu");
            CHECK(nn_optimizer_loss_scale_stats(scaled.opt, &scale, &skipped) == NN_OK);
            CHECK_MSG(scale == 1024.0f && skipped == 1, "%s: scale %g, %lld skipped after an overflow", what, scale,
                      (long long)skipped);
            /* And the next good step matches the plain run's next one. */
            CHECK(step(&plain, false, 1.0f) == NN_OK && step(&scaled, true, 1.0f) == NN_OK);
            snapshot(&plain, a);
            snapshot(&scaled, b);
            CHECK_MSG(memcmp(a, b, sizeof(uint32_t) * (size_t)n) == 0, "%s on %s: the step after a skipped one "
                      "differs from the plain run's", what, device ? "vulkan" : "cpu");
            close_run(&plain);
            close_run(&scaled);
        }
    }
}

TEST(loss_scale_refuses_bad_use) {
    run r;
    if (!open_run(&r, 0, SGD)) return;
    CHECK(nn_optimizer_scale_loss(r.opt, r.w) == NULL && nn_last_status() == NN_ERR_STATE);
    CHECK(nn_optimizer_loss_scale_stats(r.opt, NULL, NULL) == NN_ERR_ARGUMENT);
    CHECK(nn_optimizer_enable_loss_scaling(r.opt, &(nn_loss_scale_options){.backoff_factor = 1.5f}) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "backoff_factor 1.5") != NULL);
    CHECK(nn_optimizer_enable_loss_scaling(r.opt, NULL) == NN_OK);
    CHECK(nn_optimizer_enable_loss_scaling(r.opt, NULL) == NN_ERR_STATE);
    float scale;
    CHECK(nn_optimizer_loss_scale_stats(r.opt, &scale, NULL) == NN_OK && scale == 65536.0f);
    close_run(&r);
}

/* unscale_grads divides the gradients now (the true gradients, to clip or
 * read), the step then does not again and equals a plain step; a second
 * unscale before the step is refused; the state reads and writes whole. */
TEST(loss_scale_unscales_before_the_step_and_keeps_its_state) {
    for (int device = 0; device < 2; device++) {
        if (device && vkt_skipped()) continue;
        run plain, scaled;
        if (!open_run(&plain, device, ADAM) || !open_run(&scaled, device, ADAM)) {
            CHECK_MSG(false, "%s", nn_last_error());
            return;
        }
        CHECK(nn_optimizer_enable_loss_scaling(scaled.opt, &(nn_loss_scale_options){.init_scale = 512.0f}) == NN_OK);
        for (int i = 0; i < 2; i++) {
            CHECK(step(&plain, false, 1.0f) == NN_OK);
            CHECK(nn_optimizer_zero_grad(scaled.opt) == NN_OK);
            nn_tensor *y = nn_linear(scaled.x, scaled.w, scaled.b);
            CHECK(nn_backward(nn_optimizer_scale_loss(scaled.opt, nn_sum(nn_mul(y, y)))) == NN_OK);
            CHECK(nn_optimizer_unscale_grads(scaled.opt) == NN_OK);
            CHECK(nn_optimizer_unscale_grads(scaled.opt) == NN_ERR_STATE && strstr(nn_last_error(), "already"));
            float plain_grad[OUT * IN], scaled_grad[OUT * IN];
            CHECK(nn_tensor_read(nn_tensor_grad(plain.w), plain_grad, sizeof plain_grad) == NN_OK);
            CHECK(nn_tensor_read(nn_tensor_grad(scaled.w), scaled_grad, sizeof scaled_grad) == NN_OK);
            CHECK_MSG(memcmp(plain_grad, scaled_grad, sizeof plain_grad) == 0, "step %d: unscaled gradients differ", i);
            CHECK(nn_optimizer_step(scaled.opt) == NN_OK && nn_ctx_step_end(scaled.ctx) == NN_OK);
        }
        uint32_t a[256], b[256];
        const int n = snapshot(&plain, a);
        CHECK(snapshot(&scaled, b) == n && memcmp(a, b, sizeof(uint32_t) * (size_t)n) == 0);
        nn_loss_scale_state state;
        CHECK(nn_optimizer_loss_scale_state(scaled.opt, &state) == NN_OK);
        CHECK(state.scale == 512.0f && state.good_steps == 2 && state.skipped_steps == 0);
        CHECK(nn_optimizer_set_loss_scale_state(scaled.opt, &(nn_loss_scale_state){8.0f, 5, 3}) == NN_OK);
        CHECK(nn_optimizer_loss_scale_state(scaled.opt, &state) == NN_OK);
        CHECK(state.scale == 8.0f && state.good_steps == 5 && state.skipped_steps == 3);
        CHECK(nn_optimizer_set_loss_scale_state(scaled.opt, &(nn_loss_scale_state){0.0f, 0, 0}) == NN_ERR_ARGUMENT &&
              strstr(nn_last_error(), "scale"));
        CHECK(nn_optimizer_unscale_grads(plain.opt) == NN_ERR_ARGUMENT && strstr(nn_last_error(), "not enabled"));
        close_run(&plain);
        close_run(&scaled);
    }
}
