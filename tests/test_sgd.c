/* SGD against a double-precision transcription of torch.optim.SGD (plus the
 * seed's clamp and a global-norm clip), over several steps so momentum and
 * Nesterov state matter. Gradients are made exact: loss = sum(p * w) gives
 * d loss / d p = w. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn_engine.h"
#include "test.h"

#define N_A 7
#define N_B 5
#define STEPS 4

static double rand_uniform(uint64_t *state) {
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* One reference step over both parameter tensors seen as one vector. */
static void reference_step(const nn_sgd_options *o, double *p, double *v, const double *g_in, int n) {
    double norm_sq = 0.0, scale = 1.0;
    for (int i = 0; i < n; i++) norm_sq += g_in[i] * g_in[i];
    if (o->max_grad_norm > 0.0f) {
        double factor = o->max_grad_norm / (sqrt(norm_sq) + 1e-6);
        if (factor < 1.0) scale = factor;
    }
    for (int i = 0; i < n; i++) {
        double g = g_in[i] * scale;
        if (o->clip_value > 0.0f) g = fmin(fmax(g, -o->clip_value), o->clip_value);
        g += o->weight_decay * p[i];
        if (o->momentum > 0.0f) {
            v[i] = o->momentum * v[i] + g;
            g = o->nesterov ? g + o->momentum * v[i] : v[i];
        }
        p[i] -= o->lr * g;
    }
}

static void run_case(const nn_sgd_options *o, int threads) {
    nn_ctx_options co = {.device = "cpu", .threads = threads, .seed = 1};
    nn_ctx *ctx = nn_ctx_new(&co);
    uint64_t rng = 12345;
    double p_ref[N_A + N_B], v_ref[N_A + N_B] = {0}, g_ref[N_A + N_B];
    float p_init[N_A + N_B];
    for (int i = 0; i < N_A + N_B; i++) p_init[i] = (float)rand_uniform(&rng), p_ref[i] = p_init[i];
    int64_t sa[2] = {1, N_A}, sb[1] = {N_B};
    nn_tensor *pa = nn_tensor_from_data(ctx, NN_F32, 2, sa, p_init);
    nn_tensor *pb = nn_tensor_from_data(ctx, NN_F32, 1, sb, p_init + N_A);
    nn_tensor_set_requires_grad(pa, true);
    nn_tensor_set_requires_grad(pb, true);
    nn_tensor *params[2] = {pa, pb};
    nn_optimizer *opt = nn_sgd_new(params, 2, o);
    CHECK(opt != NULL);
    for (int step = 0; step < STEPS && opt; step++) {
        float w[N_A + N_B];
        for (int i = 0; i < N_A + N_B; i++) {
            /* Some large gradients so that clamping and norm clipping bite. */
            w[i] = (float)(rand_uniform(&rng) * (i % 3 == 0 ? 4.0 : 1.0));
            g_ref[i] = w[i];
        }
        nn_tensor *wa = nn_tensor_from_data(ctx, NN_F32, 2, sa, w);
        nn_tensor *wb = nn_tensor_from_data(ctx, NN_F32, 1, sb, w + N_A);
        nn_tensor *loss = nn_add(nn_sum(nn_mul(pa, wa)), nn_sum(nn_mul(pb, wb)));
        CHECK(nn_optimizer_zero_grad(opt) == NN_OK);
        CHECK(nn_backward(loss) == NN_OK);
        CHECK(nn_optimizer_step(opt) == NN_OK);
        reference_step(o, p_ref, v_ref, g_ref, N_A + N_B);
        float got[N_A + N_B];
        nn_tensor_read(pa, got, sizeof(float) * N_A);
        nn_tensor_read(pb, got + N_A, sizeof(float) * N_B);
        for (int i = 0; i < N_A + N_B; i++) CHECK_CLOSE(got[i], p_ref[i], 1e-5);
        /* The interface's named state is the momentum buffer, laid out as the parameters are. */
        CHECK(nn_optimizer_state_count(opt) == (o->momentum > 0.0f ? 1 : 0));
        if (nn_optimizer_state_count(opt) == 1) {
            CHECK(strcmp(nn_optimizer_state_name(opt, 0), "momentum_buffer") == 0);
            float v[N_A + N_B];
            CHECK(nn_tensor_read(nn_optimizer_state(opt, 0, 0), v, sizeof(float) * N_A) == NN_OK);
            CHECK(nn_tensor_read(nn_optimizer_state(opt, 1, 0), v + N_A, sizeof(float) * N_B) == NN_OK);
            CHECK(nn_tensor_ndim(nn_optimizer_state(opt, 0, 0)) == 2 && nn_tensor_ndim(nn_optimizer_state(opt, 1, 0)) == 1);
            for (int i = 0; i < N_A + N_B; i++) CHECK_CLOSE(v[i], v_ref[i], 1e-5);
        }
        nn_ctx_step_end(ctx);
        nn_tensor_free(wa);
        nn_tensor_free(wb);
    }
    nn_optimizer_free(opt);
    nn_tensor_free(pa);
    nn_tensor_free(pb);
    nn_ctx_free(ctx);
}

TEST(sgd_plain) { run_case(&(nn_sgd_options){.lr = 0.1f}, 1); }
TEST(sgd_momentum) { run_case(&(nn_sgd_options){.lr = 0.05f, .momentum = 0.9f}, 2); }
TEST(sgd_nesterov_weight_decay) {
    run_case(&(nn_sgd_options){.lr = 0.05f, .momentum = 0.8f, .nesterov = true, .weight_decay = 0.01f}, 1);
}
TEST(sgd_clip_value) { run_case(&(nn_sgd_options){.lr = 0.1f, .momentum = 0.5f, .clip_value = 0.5f}, 2); }
TEST(sgd_max_grad_norm) { run_case(&(nn_sgd_options){.lr = 0.1f, .max_grad_norm = 1.0f}, 1); }
TEST(sgd_everything) {
    run_case(&(nn_sgd_options){.lr = 0.03f, .momentum = 0.9f, .nesterov = true, .weight_decay = 5e-4f,
                               .clip_value = 1.5f, .max_grad_norm = 2.0f},
             2);
}

/* A parameter that took no part in the loss has no gradient and stays put. */
TEST(sgd_skips_parameters_without_grad) {
    nn_ctx *ctx = nn_ctx_new(NULL);
    int64_t shape[1] = {3};
    float ones[3] = {1, 1, 1};
    nn_tensor *used = nn_tensor_from_data(ctx, NN_F32, 1, shape, ones);
    nn_tensor *unused = nn_tensor_from_data(ctx, NN_F32, 1, shape, ones);
    nn_tensor_set_requires_grad(used, true);
    nn_tensor_set_requires_grad(unused, true);
    nn_tensor *params[2] = {used, unused};
    nn_optimizer *opt = nn_sgd_new(params, 2, &(nn_sgd_options){.lr = 0.5f, .momentum = 0.9f});
    CHECK(nn_backward(nn_sum(used)) == NN_OK);
    CHECK(nn_optimizer_step(opt) == NN_OK);
    float a[3], b[3];
    nn_tensor_read(used, a, sizeof a);
    nn_tensor_read(unused, b, sizeof b);
    for (int i = 0; i < 3; i++) {
        CHECK_CLOSE(a[i], 0.5, 1e-7);
        CHECK_CLOSE(b[i], 1.0, 0.0);
    }
    CHECK(nn_tensor_grad(unused) == NULL);
    nn_ctx_step_end(ctx);
    nn_optimizer_free(opt);
    nn_tensor_free(used);
    nn_tensor_free(unused);
    nn_ctx_free(ctx);
}
