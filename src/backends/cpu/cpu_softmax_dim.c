/* Softmax and log_softmax along one dimension (kernels.h's
 * nn_softmax_dim_params): one row per (outer, inner) pair, its elements
 * `inner` apart. Each row is shifted by its maximum before exp. */
#include <math.h>

#include "base/error.h"
#include "cpu_backend.h"

typedef struct softmax_dim_job {
    const nn_softmax_dim_params *p;
    const float *x, *dy; /* x: the input (forward) or the output y (backward) */
    float *out;
} softmax_dim_job;

static void forward_rows(void *arg, int64_t begin, int64_t end, int worker) {
    const softmax_dim_job *job = arg;
    const nn_softmax_dim_params *p = job->p;
    for (int64_t r = begin; r < end; r++) {
        const int64_t base = (r / p->inner) * p->size * p->inner + r % p->inner;
        const float *x = job->x + base;
        float *y = job->out + base;
        float max = x[0];
        for (int64_t j = 1; j < p->size; j++) max = x[j * p->inner] > max ? x[j * p->inner] : max;
        double sum = 0.0;
        for (int64_t j = 0; j < p->size; j++) sum += exp((double)(x[j * p->inner] - max));
        if (p->log) {
            const double shift = max + log(sum);
            for (int64_t j = 0; j < p->size; j++) y[j * p->inner] = (float)(x[j * p->inner] - shift);
        } else {
            for (int64_t j = 0; j < p->size; j++) y[j * p->inner] = (float)(exp((double)(x[j * p->inner] - max)) / sum);
        }
    }
}

static void backward_rows(void *arg, int64_t begin, int64_t end, int worker) {
    const softmax_dim_job *job = arg;
    const nn_softmax_dim_params *p = job->p;
    for (int64_t r = begin; r < end; r++) {
        const int64_t base = (r / p->inner) * p->size * p->inner + r % p->inner;
        const float *y = job->x + base, *dy = job->dy + base;
        float *dx = job->out + base;
        double total = 0.0; /* log_softmax: sum dy; softmax: sum dy y */
        for (int64_t j = 0; j < p->size; j++) total += p->log ? dy[j * p->inner] : (double)dy[j * p->inner] * y[j * p->inner];
        for (int64_t j = 0; j < p->size; j++) {
            const int64_t k = j * p->inner;
            const double g = p->log ? dy[k] - exp((double)y[k]) * total : y[k] * (dy[k] - total);
            dx[k] = (float)(p->accumulate ? dx[k] + g : g);
        }
    }
}

static nn_status run_rows(nn_thread_pool *pool, const nn_softmax_dim_params *p, softmax_dim_job *job,
                          void (*rows)(void *, int64_t, int64_t, int)) {
    if (p->outer < 0 || p->size <= 0 || p->inner <= 0)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu softmax_dim: outer=%d size=%d inner=%d", p->outer, p->size,
                            p->inner);
    nn_parallel_for(pool, (int64_t)p->outer * p->inner, NN_CPU_MIN_CHUNK / p->size + 1, rows, job);
    return NN_OK;
}

nn_status nn_cpu_softmax_dim_forward(nn_thread_pool *pool, const nn_softmax_dim_params *p, const float *x, float *y) {
    softmax_dim_job job = {.p = p, .x = x, .out = y};
    return run_rows(pool, p, &job, forward_rows);
}

nn_status nn_cpu_softmax_dim_backward(nn_thread_pool *pool, const nn_softmax_dim_params *p, const float *y,
                                      const float *dy, float *dx) {
    softmax_dim_job job = {.p = p, .x = y, .dy = dy, .out = dx};
    return run_rows(pool, p, &job, backward_rows);
}
