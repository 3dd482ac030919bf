/* Per-group optimizer options (nn_optimizer_set_group_option): Adam with
 * different betas, eps and decay per group against a double-precision
 * reference, options changed between steps (as a scheduler cycling beta1
 * does), the refusals, and a recorded step that refuses to replay after
 * such a change. */
#include <math.h>
#include <string.h>

#include "nn_engine.h"
#include "test.h"

#define N 7

/* The reference of nn_optim.h's Adam (L2 decay) for one element, step t. */
static void adam_reference(double *w, double *m, double *v, double g, int t, double lr, double b1, double b2,
                           double eps, double decay, double *b1_power, double *b2_power) {
    g += decay * *w;
    *m = b1 * *m + (1 - b1) * g;
    *v = b2 * *v + (1 - b2) * g * g;
    /* PyTorch's bias corrections use the current betas' powers of the step */
    *b1_power = pow(b1, t), *b2_power = pow(b2, t);
    *w -= lr / (1 - *b1_power) * *m / (sqrt(*v) / sqrt(1 - *b2_power) + eps);
}

TEST(optimizer_group_options_match_a_double_reference) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1});
    int64_t shape[1] = {N};
    float w0[2][N], g[2][N];
    double w[2][N], m[2][N] = {{0}}, v[2][N] = {{0}};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < N; i++) {
            w0[k][i] = (float)sin(3.0 * i + k + 1.0);
            g[k][i] = (float)cos(2.0 * i + 0.3 * k) * 0.4f;
            w[k][i] = w0[k][i];
        }
    nn_tensor *p[2];
    for (int k = 0; k < 2; k++) {
        p[k] = nn_tensor_from_data(ctx, NN_F32, 1, shape, w0[k]);
        nn_tensor_set_requires_grad(p[k], true);
    }
    const nn_param_group groups[2] = {{&p[0], 1, 0.01f, 0.05f, false}, {&p[1], 1, 0.02f, 0.0f, false}};
    nn_optimizer *opt = nn_adam_new_groups(groups, 2, &(nn_adam_options){0.01f, 0.9f, 0.999f, 1e-8f, 0, false, false});
    CHECK_MSG(opt != NULL, "%s", nn_last_error());

    CHECK(nn_optimizer_option_count(opt) == 5);
    CHECK(!strcmp(nn_optimizer_option_name(opt, 0), "lr") && !strcmp(nn_optimizer_option_name(opt, 2), "beta1"));
    CHECK(nn_optimizer_option_name(opt, 5) == NULL && nn_optimizer_option_name(opt, -1) == NULL);
    float value = 0;
    CHECK(nn_optimizer_group_option(opt, 1, "beta2", &value) == NN_OK && value == 0.999f);
    CHECK(nn_optimizer_group_option(opt, 1, "lr", &value) == NN_OK && value == 0.02f);
    CHECK(nn_optimizer_group_option(opt, 0, "weight_decay", &value) == NN_OK && value == 0.05f);
    CHECK(nn_optimizer_set_group_option(opt, 1, "beta2", 0.95f) == NN_OK);
    CHECK(nn_optimizer_set_group_option(opt, 1, "eps", 1e-3f) == NN_OK);

    /* group 0's beta1 changes every step, as OneCycleLR cycles it */
    const double beta1s[4] = {0.95, 0.9, 0.85, 0.8};
    for (int t = 1; t <= 4; t++) {
        CHECK(nn_optimizer_set_group_option(opt, 0, "beta1", (float)beta1s[t - 1]) == NN_OK);
        nn_tensor *loss = nn_add(nn_sum(nn_mul(p[0], nn_tensor_from_data(ctx, NN_F32, 1, shape, g[0]))),
                                 nn_sum(nn_mul(p[1], nn_tensor_from_data(ctx, NN_F32, 1, shape, g[1]))));
        CHECK(nn_optimizer_zero_grad(opt) == NN_OK && nn_backward(loss) == NN_OK);
        CHECK(nn_optimizer_step(opt) == NN_OK);
        CHECK(nn_ctx_step_end(ctx) == NN_OK);
        for (int i = 0; i < N; i++) {
            double p1, p2;
            adam_reference(&w[0][i], &m[0][i], &v[0][i], g[0][i], t, 0.01, (float)beta1s[t - 1], 0.999f, 1e-8f,
                           0.05f, &p1, &p2);
            adam_reference(&w[1][i], &m[1][i], &v[1][i], g[1][i], t, 0.02f, 0.9f, 0.95f, 1e-3f, 0.0, &p1, &p2);
        }
        for (int k = 0; k < 2; k++) {
            float got[N];
            CHECK(nn_tensor_read(p[k], got, sizeof got) == NN_OK);
            for (int i = 0; i < N; i++)
                CHECK_MSG(fabs(got[i] - w[k][i]) <= 3e-6 * fmax(1.0, fabs(w[k][i])), "group %d step %d element %d: %g vs %g",
                          k, t, i, got[i], w[k][i]);
        }
    }

    /* refusals name the problem */
    CHECK(nn_optimizer_set_group_option(opt, 0, "beta1", 1.0f) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "beta1 must be in [0, 1)") != NULL);
    CHECK(nn_optimizer_set_group_option(opt, 0, "momentum", 0.5f) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "no per-group option 'momentum'") && strstr(nn_last_error(), "beta1, beta2, eps"));
    CHECK(nn_optimizer_set_group_option(opt, 2, "eps", 0.1f) == NN_ERR_ARGUMENT);
    CHECK(nn_optimizer_set_group_option(opt, 0, "weight_decay", -1.0f) == NN_ERR_ARGUMENT);
    CHECK(nn_optimizer_set_group_option(opt, 0, "eps", NAN) == NN_ERR_ARGUMENT);
    CHECK(nn_optimizer_set_group_option(opt, 0, NULL, 0.1f) == NN_ERR_ARGUMENT);
    CHECK(nn_optimizer_group_option(opt, 0, "eps", NULL) == NN_ERR_ARGUMENT);
    CHECK(nn_optimizer_group_option(NULL, 0, "eps", &value) == NN_ERR_ARGUMENT);
    CHECK(nn_optimizer_group_option(opt, 0, "beta1", &value) == NN_OK && value == 0.8f); /* unchanged */
    nn_optimizer_free(opt);
    for (int k = 0; k < 2; k++) nn_tensor_free(p[k]);
    nn_ctx_free(ctx);
}

/* An update recorded with one beta1 holds it as a constant: after the
 * option changes the recording refuses to replay, naming why; a step
 * recorded after the change replays. */
TEST(recorded_step_refuses_to_replay_after_a_group_option_changed) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1});
    int64_t shape[1] = {N};
    float w0[N], g[N];
    for (int i = 0; i < N; i++) w0[i] = (float)i - 3.0f, g[i] = 0.25f * (float)(i % 3) - 0.2f;
    nn_tensor *p = nn_tensor_from_data(ctx, NN_F32, 1, shape, w0);
    nn_tensor *grad_weights = nn_tensor_from_data(ctx, NN_F32, 1, shape, g);
    nn_tensor_set_requires_grad(p, true);
    nn_optimizer *opt = nn_adamw_new(&p, 1, &(nn_adam_options){0.01f, 0.9f, 0.999f, 1e-8f, 0.01f, false, false});
    CHECK_MSG(opt != NULL, "%s", nn_last_error());
    for (int round = 0; round < 2; round++) {
        for (int phase = 0; phase < 2; phase++) { /* eager, then recorded */
            if (phase) CHECK(nn_capture_begin(ctx) == NN_OK);
            CHECK(nn_optimizer_zero_grad(opt) == NN_OK && nn_backward(nn_sum(nn_mul(p, grad_weights))) == NN_OK);
            CHECK(nn_optimizer_step(opt) == NN_OK);
            CHECK(nn_ctx_step_end(ctx) == NN_OK);
        }
        nn_capture *step = nn_capture_end(ctx);
        CHECK_MSG(step != NULL, "%s", nn_last_error());
        CHECK(nn_replay(step, 2) == NN_OK);
        CHECK(nn_optimizer_set_group_option(opt, 0, "lr", 0.02f) == NN_OK); /* on the device: replays */
        CHECK(nn_replay(step, 1) == NN_OK);
        CHECK(nn_optimizer_set_group_option(opt, 0, "beta1", 0.9f) == NN_OK); /* the same value: no change */
        CHECK(nn_replay(step, 1) == NN_OK);
        CHECK(nn_optimizer_set_group_option(opt, 0, "beta1", round ? 0.85f : 0.8f) == NN_OK);
        CHECK(nn_replay(step, 1) == NN_ERR_STATE);
        CHECK(strstr(nn_last_error(), "record the step again") != NULL);
        nn_capture_free(step);
        CHECK(nn_optimizer_set_group_option(opt, 0, "beta1", 0.9f) == NN_OK);
    }
    nn_optimizer_free(opt);
    nn_tensor_free(grad_weights);
    nn_tensor_free(p);
    nn_ctx_free(ctx);
}

/* SGD over two groups (its own rate, decay and momentum each, group 1's
 * momentum changed after two steps) against the formulas of nn_optim.h in
 * double; the refusals that groups bring. */
TEST(sgd_groups_match_a_double_reference) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1});
    int64_t shape[1] = {N};
    float w0[2][N], g[2][N];
    double w[2][N], v[2][N] = {{0}};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < N; i++) {
            w0[k][i] = (float)cos(2.0 * i + k) * 1.3f;
            g[k][i] = (float)sin(5.0 * i + 0.7 * k) * 0.6f;
            w[k][i] = w0[k][i];
        }
    nn_tensor *p[2];
    for (int k = 0; k < 2; k++) {
        p[k] = nn_tensor_from_data(ctx, NN_F32, 1, shape, w0[k]);
        nn_tensor_set_requires_grad(p[k], true);
    }
    const nn_param_group groups[2] = {{&p[0], 1, 0.05f, 0.01f, false}, {&p[1], 1, 0.2f, 0.0f, false}};
    const nn_sgd_options options = {.lr = 0.05f, .momentum = 0.9f, .nesterov = true};
    nn_optimizer *opt = nn_sgd_new_groups(groups, 2, &options);
    CHECK_MSG(opt != NULL, "%s", nn_last_error());
    CHECK(nn_optimizer_set_group_option(opt, 1, "momentum", 0.5f) == NN_OK);
    const double lr[2] = {0.05f, 0.2f}, decay[2] = {0.01f, 0.0};
    for (int t = 1; t <= 4; t++) {
        if (t == 3) CHECK(nn_optimizer_set_group_option(opt, 1, "momentum", 0.7f) == NN_OK);
        const double momentum[2] = {0.9f, t >= 3 ? 0.7f : 0.5f};
        nn_tensor *loss = nn_add(nn_sum(nn_mul(p[0], nn_tensor_from_data(ctx, NN_F32, 1, shape, g[0]))),
                                 nn_sum(nn_mul(p[1], nn_tensor_from_data(ctx, NN_F32, 1, shape, g[1]))));
        CHECK(nn_optimizer_zero_grad(opt) == NN_OK && nn_backward(loss) == NN_OK);
        CHECK(nn_optimizer_step(opt) == NN_OK);
        CHECK(nn_ctx_step_end(ctx) == NN_OK);
        for (int k = 0; k < 2; k++) {
            float got[N];
            CHECK(nn_tensor_read(p[k], got, sizeof got) == NN_OK);
            for (int i = 0; i < N; i++) {
                double grad = g[k][i] + decay[k] * w[k][i];
                v[k][i] = momentum[k] * v[k][i] + grad;
                w[k][i] -= lr[k] * (grad + momentum[k] * v[k][i]); /* nesterov */
                CHECK_MSG(fabs(got[i] - w[k][i]) <= 3e-6 * fmax(1.0, fabs(w[k][i])), "group %d step %d element %d: "
                          "%g vs %g", k, t, i, got[i], w[k][i]);
            }
        }
    }
    CHECK(nn_sgd_set_max_grad_norm(opt, 1.0f) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "max_grad_norm takes one group") != NULL);
    CHECK(nn_optimizer_set_group_option(opt, 0, "momentum", 0.0f) == NN_ERR_ARGUMENT); /* nesterov needs some */
    nn_optimizer_free(opt);

    const nn_sgd_options clipped = {.lr = 0.1f, .max_grad_norm = 1.0f};
    CHECK(nn_sgd_new_groups(groups, 2, &clipped) == NULL && strstr(nn_last_error(), "max_grad_norm takes one group"));
    nn_optimizer *plain = nn_sgd_new_groups(groups, 2, &(nn_sgd_options){.lr = 0.1f});
    CHECK_MSG(plain != NULL, "%s", nn_last_error());
    /* Momentum given later makes the buffers, zero: the first step's buffer is its gradient, as torch's. */
    CHECK(nn_optimizer_state_count(plain) == 0);
    CHECK(nn_optimizer_set_group_option(plain, 1, "momentum", 0.9f) == NN_OK);
    CHECK(nn_optimizer_state_count(plain) == 1 && !strcmp(nn_optimizer_state_name(plain, 0), "momentum_buffer"));
    for (int t = 0; t < 2; t++) {
        for (int k = 0; k < 2; k++) CHECK(nn_tensor_zero_grad(p[k]) == NN_OK);
        nn_tensor *loss = nn_add(nn_sum(nn_mul(p[0], p[0])), nn_sum(nn_mul(p[1], p[1])));
        CHECK(nn_backward(loss) == NN_OK && nn_optimizer_step(plain) == NN_OK);
        float got[N], velocity[N];
        CHECK(nn_tensor_read(p[1], got, sizeof got) == NN_OK);
        CHECK(nn_tensor_read(nn_optimizer_state(plain, 1, 0), velocity, sizeof velocity) == NN_OK);
        for (int i = 0; i < N; i++) {
            const double grad = 2.0 * w[1][i];
            v[1][i] = (t == 0 ? 0.0 : 0.9 * v[1][i]) + grad;
            w[1][i] -= 0.2 * v[1][i]; /* group 1's rate */
            CHECK_MSG(fabs(velocity[i] - v[1][i]) <= 3e-6 * fmax(1.0, fabs(v[1][i])) &&
                          fabs(got[i] - w[1][i]) <= 3e-6 * fmax(1.0, fabs(w[1][i])),
                      "step %d element %d: weight %g vs %g, buffer %g vs %g", t, i, got[i], w[1][i], velocity[i],
                      v[1][i]);
        }
        CHECK(nn_ctx_step_end(ctx) == NN_OK);
    }
    nn_optimizer_free(plain);
    for (int k = 0; k < 2; k++) nn_tensor_free(p[k]);
    nn_ctx_free(ctx);
}

/* RMSprop's and Lion's own per-group options by name, and their refusals
 * (their updates against torch: tests/python/test_save_and_optimizer_state.py). */
TEST(rmsprop_and_lion_group_options) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1});
    const int64_t shape[1] = {N};
    nn_tensor *p = nn_tensor_new(ctx, NN_F32, 1, shape);
    nn_tensor_set_requires_grad(p, true);
    nn_optimizer *rms = nn_rmsprop_new(&p, 1, &(nn_rmsprop_options){.lr = 0.01f, .alpha = 0.99f, .eps = 1e-8f});
    CHECK_MSG(rms != NULL, "%s", nn_last_error());
    float value = 0;
    CHECK(nn_optimizer_option_count(rms) == 5 && !strcmp(nn_optimizer_option_name(rms, 4), "momentum"));
    CHECK(nn_optimizer_set_group_option(rms, 0, "alpha", 0.9f) == NN_OK);
    CHECK(nn_optimizer_group_option(rms, 0, "alpha", &value) == NN_OK && value == 0.9f);
    CHECK(nn_optimizer_set_group_option(rms, 0, "alpha", 1.5f) == NN_ERR_ARGUMENT);
    CHECK(nn_optimizer_state_count(rms) == 1);
    CHECK(nn_optimizer_set_group_option(rms, 0, "momentum", 0.5f) == NN_OK); /* makes the buffers */
    CHECK(nn_optimizer_state_count(rms) == 2 && !strcmp(nn_optimizer_state_name(rms, 1), "momentum_buffer"));
    nn_optimizer_free(rms);
    nn_optimizer *lion = nn_lion_new(&p, 1, &(nn_lion_options){.lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.99f});
    CHECK_MSG(lion != NULL, "%s", nn_last_error());
    CHECK(nn_optimizer_set_group_option(lion, 0, "beta1", 0.85f) == NN_OK);
    CHECK(nn_optimizer_group_option(lion, 0, "beta1", &value) == NN_OK && value == 0.85f);
    CHECK(nn_optimizer_set_group_option(lion, 0, "beta2", -0.1f) == NN_ERR_ARGUMENT);
    CHECK(nn_optimizer_set_group_option(lion, 0, "eps", 0.1f) == NN_ERR_ARGUMENT);
    nn_optimizer_free(lion);
    nn_tensor_free(p);
    nn_ctx_free(ctx);
}
