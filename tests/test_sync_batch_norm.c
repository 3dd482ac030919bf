/* SyncBatchNorm (nn_batch_norm_synced): two "processes" (threads, each with
 * its own CPU context) hold halves of one batch and reduce through a
 * barrier; each must get the full batch's BatchNorm: its half of y and of
 * x's gradient, its own half's weight and bias gradients, and the full
 * batch's running statistics. Checked against double-precision loops over
 * the whole batch, eagerly and in a captured step replayed on new data
 * (the reductions are host calls). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "nn_engine.h"
#include "test.h"

#define STEP_TRY(call)                     \
    do {                                   \
        nn_status st_ = (call);            \
        if (st_ != NN_OK) return st_;      \
    } while (0)

#define RANKS 2
#define B 3 /* per rank: odd */
#define C 5
#define L 7
#define PER (B * C * L)
#define STEPS 3 /* eager, recorded, replayed */

/* The reduction: each rank's values into its slot, then both summed in rank order. */
typedef struct barrier_reduce {
    pthread_barrier_t barrier;
    double slot[RANKS][2 * C + 1];
} barrier_reduce;

typedef struct rank_state {
    int rank;
    barrier_reduce *reduce;
    const float *x[STEPS], *g[STEPS]; /* this rank's half of each step's batch */
    float y[STEPS][PER], dx[STEPS][PER], dweight[STEPS][C], dbias[STEPS][C];
    float running_mean[C], running_var[C];
    int failed_line;
    char error[256];
} rank_state;

static nn_status reduce_over_threads(double *values, int64_t count, void *user) {
    rank_state *r = user;
    memcpy(r->reduce->slot[r->rank], values, sizeof(double) * (size_t)count);
    pthread_barrier_wait(&r->reduce->barrier);
    for (int64_t i = 0; i < count; i++) {
        values[i] = 0.0;
        for (int k = 0; k < RANKS; k++) values[i] += r->reduce->slot[k][i];
    }
    pthread_barrier_wait(&r->reduce->barrier); /* nobody refills a slot before both have read */
    return NN_OK;
}

typedef struct rank_model {
    nn_ctx *ctx;
    nn_batch_norm_sync *sync;
    nn_tensor *x, *g, *weight, *bias, *mean, *var, *y;
} rank_model;

/* One step: y = BN(x), loss = sum(y * g), backward; gradients zeroed first. */
static nn_status run_step(rank_model *m) {
    nn_tensor *params[3] = {m->x, m->weight, m->bias};
    for (int i = 0; i < 3; i++)
        if (nn_tensor_grad(params[i])) STEP_TRY(nn_tensor_fill(nn_tensor_grad(params[i]), 0.0f));
    nn_tensor *y = nn_batch_norm_synced(m->sync, m->x, m->mean, m->var, NULL, m->weight, m->bias, true, 0.1f, 1e-5f);
    nn_tensor *loss = y ? nn_sum(nn_mul(y, m->g)) : NULL;
    if (!loss) return nn_last_status();
    STEP_TRY(nn_backward(loss));
    STEP_TRY(nn_tensor_copy(m->y, y));
    return nn_ctx_step_end(m->ctx);
}

static nn_status read_step(rank_model *m, rank_state *r, int step) {
    STEP_TRY(nn_tensor_read(m->y, r->y[step], sizeof r->y[step]));
    STEP_TRY(nn_tensor_read(nn_tensor_grad(m->x), r->dx[step], sizeof r->dx[step]));
    STEP_TRY(nn_tensor_read(nn_tensor_grad(m->weight), r->dweight[step], sizeof r->dweight[step]));
    return nn_tensor_read(nn_tensor_grad(m->bias), r->dbias[step], sizeof r->dbias[step]);
}

#define TRY(call)                                                                   \
    do {                                                                            \
        if ((call) != NN_OK) {                                                      \
            r->failed_line = __LINE__;                                              \
            snprintf(r->error, sizeof r->error, "%s", nn_last_error());             \
            goto done;                                                              \
        }                                                                           \
    } while (0)

static void *rank_main(void *arg) {
    rank_state *r = arg;
    const int64_t xs[3] = {B, C, L}, cs = C;
    const float ones[C] = {1, 1, 1, 1, 1}, weight[C] = {0.5f, -1.25f, 2.0f, 1.0f, 0.75f};
    const float bias[C] = {0.1f, -0.2f, 0.3f, 0.0f, 1.5f}, zeros[C] = {0};
    nn_capture *capture = NULL;
    rank_model m = {.ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1})};
    if (!m.ctx) {
        r->failed_line = __LINE__;
        return NULL;
    }
    m.sync = nn_batch_norm_sync_new(m.ctx, C, reduce_over_threads, r);
    m.x = nn_tensor_from_data(m.ctx, NN_F32, 3, xs, r->x[0]);
    m.g = nn_tensor_from_data(m.ctx, NN_F32, 3, xs, r->g[0]);
    m.y = nn_tensor_new(m.ctx, NN_F32, 3, xs);
    m.weight = nn_tensor_from_data(m.ctx, NN_F32, 1, &cs, weight);
    m.bias = nn_tensor_from_data(m.ctx, NN_F32, 1, &cs, bias);
    m.mean = nn_tensor_from_data(m.ctx, NN_F32, 1, &cs, zeros);
    m.var = nn_tensor_from_data(m.ctx, NN_F32, 1, &cs, ones);
    TRY(m.sync && m.x && m.g && m.y && m.weight && m.bias && m.mean && m.var ? NN_OK : nn_last_status());
    TRY(nn_tensor_set_requires_grad(m.x, true));
    TRY(nn_tensor_set_requires_grad(m.weight, true));
    TRY(nn_tensor_set_requires_grad(m.bias, true));
    TRY(run_step(&m));
    TRY(read_step(&m, r, 0));
    TRY(nn_tensor_write(m.x, r->x[1], sizeof(float) * PER));
    TRY(nn_tensor_write(m.g, r->g[1], sizeof(float) * PER));
    TRY(nn_capture_begin(m.ctx));
    TRY(run_step(&m));
    capture = nn_capture_end(m.ctx);
    TRY(capture ? NN_OK : nn_last_status());
    TRY(read_step(&m, r, 1));
    TRY(nn_tensor_write(m.x, r->x[2], sizeof(float) * PER));
    TRY(nn_tensor_write(m.g, r->g[2], sizeof(float) * PER));
    TRY(nn_replay(capture, 1));
    TRY(read_step(&m, r, 2));
    TRY(nn_tensor_read(m.mean, r->running_mean, sizeof r->running_mean));
    TRY(nn_tensor_read(m.var, r->running_var, sizeof r->running_var));
done:
    nn_capture_free(capture);
    nn_batch_norm_sync_free(m.sync);
    nn_ctx_free(m.ctx);
    return NULL;
}

/* Element (n, c, l) of the whole batch: rank n / B's (n % B, c, l). */
static double at(const float *whole[RANKS], int n, int c, int l) { return whole[n / B][((n % B) * C + c) * L + l]; }

TEST(sync_batch_norm_two_ranks_equal_one_batch) {
    static float data[STEPS][2][RANKS][PER]; /* step, x or g, rank */
    unsigned s = 12345u;
    for (int t = 0; t < STEPS; t++)
        for (int k = 0; k < RANKS; k++)
            for (int i = 0; i < PER; i++)
                for (int which = 0; which < 2; which++) {
                    s = s * 1664525u + 1013904223u;
                    const float u = (float)((s >> 8) % 100001) / 100000.0f;
                    /* x: per channel offset (3 c) and a rank-dependent spread, so halves differ */
                    data[t][which][k][i] = which == 0 ? 3.0f * (float)((i / L) % C) + (1.0f + (float)k) * (u - 0.3f)
                                                      : 2.0f * u - 1.0f;
                }
    static rank_state ranks[RANKS];
    barrier_reduce reduce;
    pthread_barrier_init(&reduce.barrier, NULL, RANKS);
    pthread_t threads[RANKS];
    for (int k = 0; k < RANKS; k++) {
        memset(&ranks[k], 0, sizeof ranks[k]);
        ranks[k].rank = k;
        ranks[k].reduce = &reduce;
        for (int t = 0; t < STEPS; t++) ranks[k].x[t] = data[t][0][k], ranks[k].g[t] = data[t][1][k];
        pthread_create(&threads[k], NULL, rank_main, &ranks[k]);
    }
    for (int k = 0; k < RANKS; k++) pthread_join(threads[k], NULL);
    pthread_barrier_destroy(&reduce.barrier);
    for (int k = 0; k < RANKS; k++)
        CHECK_MSG(!ranks[k].failed_line, "rank %d failed at line %d: %s", k, ranks[k].failed_line, ranks[k].error);
    if (nn_test_failures()) return;

    const double w[C] = {0.5, -1.25, 2.0, 1.0, 0.75}, b[C] = {0.1, -0.2, 0.3, 0.0, 1.5};
    const int M = RANKS * B * L; /* elements per channel in the whole batch */
    double running_mean[C] = {0}, running_var[C] = {1, 1, 1, 1, 1};
    for (int t = 0; t < STEPS; t++) {
        const float *x[RANKS] = {data[t][0][0], data[t][0][1]}, *g[RANKS] = {data[t][1][0], data[t][1][1]};
        for (int c = 0; c < C; c++) {
            double mean = 0, var = 0, mean_g = 0, mean_gx = 0;
            for (int n = 0; n < RANKS * B; n++)
                for (int l = 0; l < L; l++) mean += at(x, n, c, l) / M;
            for (int n = 0; n < RANKS * B; n++)
                for (int l = 0; l < L; l++) var += (at(x, n, c, l) - mean) * (at(x, n, c, l) - mean) / M;
            const double rstd = 1.0 / sqrt(var + 1e-5);
            for (int n = 0; n < RANKS * B; n++)
                for (int l = 0; l < L; l++) {
                    mean_g += at(g, n, c, l) / M;
                    mean_gx += at(g, n, c, l) * (at(x, n, c, l) - mean) * rstd / M;
                }
            double dweight[RANKS] = {0}, dbias[RANKS] = {0};
            for (int n = 0; n < RANKS * B; n++)
                for (int l = 0; l < L; l++) {
                    const double xhat = (at(x, n, c, l) - mean) * rstd, gi = at(g, n, c, l);
                    const int k = n / B, i = ((n % B) * C + c) * L + l;
                    CHECK_CLOSE(ranks[k].y[t][i], xhat * w[c] + b[c], 1e-5);
                    CHECK_CLOSE(ranks[k].dx[t][i], w[c] * rstd * (gi - mean_g - xhat * mean_gx), 1e-5);
                    dweight[k] += gi * xhat;
                    dbias[k] += gi;
                }
            for (int k = 0; k < RANKS; k++) {
                CHECK_CLOSE(ranks[k].dweight[t][c], dweight[k], 1e-5);
                CHECK_CLOSE(ranks[k].dbias[t][c], dbias[k], 1e-5);
            }
            running_mean[c] = 0.9 * running_mean[c] + 0.1 * mean;
            running_var[c] = 0.9 * running_var[c] + 0.1 * var * M / (M - 1);
        }
        if (nn_test_failures()) {
            nn_test_fail(__FILE__, __LINE__, "step %d (%s) differs from the whole batch's", t,
                         t == 0 ? "eager" : t == 1 ? "recorded" : "replayed");
            return;
        }
    }
    for (int k = 0; k < RANKS; k++)
        for (int c = 0; c < C; c++) {
            CHECK_CLOSE(ranks[k].running_mean[c], running_mean[c], 1e-5);
            CHECK_CLOSE(ranks[k].running_var[c], running_var[c], 1e-5);
        }
}

TEST(sync_batch_norm_refuses_bad_arguments) {
    nn_ctx *ctx = nn_ctx_new(NULL);
    CHECK(nn_batch_norm_sync_new(ctx, 0, reduce_over_threads, NULL) == NULL);
    CHECK(strstr(nn_last_error(), "nn_batch_norm_sync_new") && strstr(nn_last_error(), "channels 0"));
    CHECK(nn_batch_norm_sync_new(ctx, 3, NULL, NULL) == NULL);
    CHECK(strstr(nn_last_error(), "reduce NULL"));
    nn_batch_norm_sync *sync = nn_batch_norm_sync_new(ctx, 3, reduce_over_threads, NULL);
    CHECK(sync != NULL);
    const int64_t shape[2] = {4, 5};
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 2, shape);
    CHECK(nn_batch_norm_synced(NULL, x, NULL, NULL, NULL, NULL, NULL, true, 0.1f, 1e-5f) == NULL);
    CHECK(strstr(nn_last_error(), "nn_batch_norm_synced: sync is NULL"));
    CHECK(nn_batch_norm_synced(sync, x, NULL, NULL, NULL, NULL, NULL, true, 0.1f, 1e-5f) == NULL);
    CHECK(strstr(nn_last_error(), "3 channels") && strstr(nn_last_error(), "[4, 5]"));
    nn_module *bn = nn_batchnorm1d(ctx, 5, 1e-5f, 0.1f, true, true);
    CHECK(nn_batchnorm_channels(bn) == 5);
    CHECK(nn_batchnorm_set_sync(bn, sync) == NN_ERR_ARGUMENT); /* frees sync */
    CHECK(strstr(nn_last_error(), "nn_batchnorm_set_sync") && strstr(nn_last_error(), "3 channels"));
    nn_module *ln = nn_layernorm(ctx, 1, &shape[1], 1e-5f, true, true);
    CHECK(nn_batchnorm_channels(ln) == 0);
    CHECK(nn_batchnorm_set_sync(ln, NULL) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "LayerNorm"));
    nn_module_free(ln);
    nn_module_free(bn);
    nn_tensor_free(x);
    nn_ctx_free(ctx);
}
