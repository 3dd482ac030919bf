/* The optimizers beyond SGD from C: updates against double-precision
 * references written here, and training states that resume every one of
 * them bit for bit on the CPU (k steps, save, load into a fresh optimizer,
 * continue; the same as an uninterrupted run). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "io_test_util.h"
#include "nn_optim.h"
#include "test.h"

#define N 13 /* odd, prime */

static nn_optimizer *make_optimizer(const char *name, nn_tensor *const *params, int count) {
    if (!strcmp(name, "adam"))
        return nn_adam_new(params, count, &(nn_adam_options){0.01f, 0.9f, 0.999f, 1e-8f, 0.01f, false, false});
    if (!strcmp(name, "adamw"))
        return nn_adamw_new(params, count, &(nn_adam_options){0.01f, 0.8f, 0.99f, 1e-8f, 0.1f, true, false});
    if (!strcmp(name, "rmsprop"))
        return nn_rmsprop_new(params, count, &(nn_rmsprop_options){0.01f, 0.9f, 1e-8f, 1e-3f, 0.5f, true, false});
    if (!strcmp(name, "lion"))
        return nn_lion_new(params, count, &(nn_lion_options){1e-3f, 0.9f, 0.99f, 0.1f, false});
    return nn_muon_new(params, count,
                       &(nn_muon_options){0.02f, 0.95f, true, 5, 0.01f, 3e-3f, 0.9f, 0.95f, 1e-10f, 0.0f});
}

/* One step on a single tensor with a gradient set by hand, against the
 * formulas of nn_optim.h in double precision, three steps in a row. */
TEST(optimizers_match_double_references) {
    const char *names[] = {"adam", "adamw", "rmsprop", "lion"};
    for (int o = 0; o < 4; o++) {
        nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1});
        float w0[N], g[N];
        double w[N], s0[N] = {0}, s1[N] = {0}, s2[N] = {0};
        for (int i = 0; i < N; i++) {
            w0[i] = (float)sin(i + 1.0) * 0.7f;
            g[i] = (float)cos(3.0 * i + 0.5) * 0.3f;
            w[i] = w0[i];
        }
        int64_t shape[1] = {N};
        nn_tensor *p = nn_tensor_from_data(ctx, NN_F32, 1, shape, w0);
        nn_tensor_set_requires_grad(p, true);
        nn_optimizer *opt = make_optimizer(names[o], &p, 1);
        CHECK_MSG(opt != NULL, "%s", nn_last_error());
        CHECK(!strcmp(nn_optimizer_name(opt), names[o]));
        for (int t = 1; t <= 3; t++) {
            nn_tensor *loss = nn_sum(nn_mul(p, nn_tensor_from_data(ctx, NN_F32, 1, shape, g)));
            CHECK(nn_optimizer_zero_grad(opt) == NN_OK && nn_backward(loss) == NN_OK);
            CHECK(nn_optimizer_step(opt) == NN_OK);
            CHECK(nn_ctx_step_end(ctx) == NN_OK);
            for (int i = 0; i < N; i++) {
                double gi = g[i];
                if (o <= 1) { /* adam (L2 0.01) and adamw (decay 0.1, amsgrad, betas 0.8, 0.99) */
                    double b1 = o ? 0.8 : 0.9, b2 = o ? 0.99 : 0.999, lr = 0.01;
                    if (o) w[i] *= 1 - lr * 0.1;
                    else gi += 0.01 * w[i];
                    s0[i] = b1 * s0[i] + (1 - b1) * gi;
                    s1[i] = b2 * s1[i] + (1 - b2) * gi * gi;
                    double v = s1[i];
                    if (o) v = s2[i] = fmax(s2[i], s1[i]);
                    w[i] -= lr / (1 - pow(b1, t)) * s0[i] / (sqrt(v) / sqrt(1 - pow(b2, t)) + 1e-8);
                } else if (o == 2) { /* rmsprop: alpha 0.9, L2 1e-3, momentum 0.5, centered */
                    gi += 1e-3 * w[i];
                    s0[i] = 0.9 * s0[i] + 0.1 * gi * gi;
                    s2[i] = 0.9 * s2[i] + 0.1 * gi;
                    s1[i] = 0.5 * s1[i] + gi / (sqrt(s0[i] - s2[i] * s2[i]) + 1e-8);
                    w[i] -= 0.01 * s1[i];
                } else { /* lion: decay 0.1 */
                    w[i] *= 1 - 1e-3 * 0.1;
                    double c = 0.9 * s0[i] + 0.1 * gi;
                    w[i] -= 1e-3 * (c > 0 ? 1 : c < 0 ? -1 : 0);
                    s0[i] = 0.99 * s0[i] + 0.01 * gi;
                }
            }
            float got[N];
            CHECK(nn_tensor_read(p, got, sizeof got) == NN_OK);
            for (int i = 0; i < N; i++)
                CHECK_MSG(fabs(got[i] - w[i]) <= 2e-6 * fmax(1.0, fabs(w[i])), "%s step %d element %d: %g vs %g",
                          names[o], t, i, got[i], w[i]);
        }
        nn_optimizer_free(opt);
        nn_tensor_free(p);
        nn_ctx_free(ctx);
    }
}

typedef struct run {
    nn_ctx *ctx;
    nn_module *net;
    nn_optimizer *opt;
} run;

static void run_open(run *r, const char *name, uint64_t seed) {
    r->ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1, .seed = seed});
    r->net = io_test_mlp(r->ctx);
    nn_tensor *params[4];
    for (int i = 0; i < 4; i++) params[i] = nn_module_param(r->net, i);
    r->opt = make_optimizer(name, params, 4);
}

static void run_steps(run *r, int first, int count) {
    for (int s = first; s < first + count; s++) {
        float xb[5 * 3];
        int32_t yb[5];
        for (int i = 0; i < 15; i++) xb[i] = (float)sin(7.0 * s + i);
        for (int i = 0; i < 5; i++) yb[i] = (s + 3 * i) % 7;
        int64_t xs[2] = {5, 3}, ys[1] = {5};
        nn_tensor *x = nn_tensor_from_data(r->ctx, NN_F32, 2, xs, xb);
        nn_tensor *y = nn_tensor_from_data(r->ctx, NN_I32, 1, ys, yb);
        nn_tensor *loss = nn_softmax_cross_entropy(nn_module_forward(r->net, x), y);
        CHECK(nn_optimizer_zero_grad(r->opt) == NN_OK && nn_backward(loss) == NN_OK);
        CHECK(nn_optimizer_step(r->opt) == NN_OK && nn_ctx_step_end(r->ctx) == NN_OK);
        nn_tensor_free(x);
        nn_tensor_free(y);
    }
}

static void run_close(run *r) {
    nn_optimizer_free(r->opt);
    nn_module_free(r->net);
    nn_ctx_free(r->ctx);
}

TEST(optimizers_resume_bit_exact) {
    const char *names[] = {"adam", "adamw", "rmsprop", "lion", "muon"};
    for (int o = 0; o < 5; o++) {
        const char *dir = io_test_dir();
        const char *path = io_test_path(dir, "state.safetensors");
        run full, first, resumed;
        run_open(&full, names[o], 1);
        run_steps(&full, 0, 9);
        run_open(&first, names[o], 1);
        run_steps(&first, 0, 4);
        nn_train_progress p = {.epoch = 1, .step = 4, .seed = 1};
        CHECK_MSG(nn_save_train_state(path, first.net, first.opt, &p) == NN_OK, "%s", nn_last_error());
        run_open(&resumed, names[o], 77); /* other initial weights: all comes from the file */
        nn_train_progress got = {0};
        CHECK_MSG(nn_load_train_state(path, resumed.net, resumed.opt, &got) == NN_OK, "%s: %s", names[o],
                  nn_last_error());
        run_steps(&resumed, 4, 5);
        CHECK_MSG(io_test_same_params(full.net, resumed.net), "%s: resumed parameters differ", names[o]);
        run_steps(&first, 4, 1); /* without the resume the result differs: the check can fail */
        CHECK(!io_test_same_params(full.net, first.net));
        run_close(&full);
        run_close(&first);
        run_close(&resumed);
        io_test_rmdir(dir);
    }
}
