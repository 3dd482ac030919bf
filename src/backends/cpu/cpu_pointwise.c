/* Elementwise kernels, bias, ReLU and full reductions. Reductions sum in
 * double per worker over fixed ranges and combine the partials in order, so
 * a result depends only on the thread count, never on timing. */
#include <stdlib.h>

#include "base/error.h"
#include "cpu_backend.h"

typedef struct pointwise_job {
    const nn_pointwise_params *p;
    const float *a, *b;
    float *out;
    double *partials; /* one per worker, for reductions */
} pointwise_job;

/* Every loop reads its pointers from locals marked restrict: through the job
 * struct, each store could alias the pointer fields and the compiler would
 * reload them every iteration instead of vectorizing. */
static void elementwise_range(void *arg, int64_t begin, int64_t end, int worker) {
    const pointwise_job *job = arg;
    const float *restrict a = job->a, *restrict b = job->b;
    float *restrict out = job->out;
    const float alpha = job->p->alpha;
    /* The accumulate choice stays outside the loops: inside, it keeps them
     * from vectorizing. */
    const int acc = job->p->accumulate;
    switch (job->p->op) {
    case NN_EW_ADD:
        if (acc) for (int64_t i = begin; i < end; i++) out[i] += a[i] + b[i];
        else for (int64_t i = begin; i < end; i++) out[i] = a[i] + b[i];
        break;
    case NN_EW_MUL:
        if (acc) for (int64_t i = begin; i < end; i++) out[i] += a[i] * b[i];
        else for (int64_t i = begin; i < end; i++) out[i] = a[i] * b[i];
        break;
    case NN_EW_SCALE:
        if (acc) for (int64_t i = begin; i < end; i++) out[i] += alpha * a[i];
        else for (int64_t i = begin; i < end; i++) out[i] = alpha * a[i];
        break;
    }
}

nn_status nn_cpu_elementwise(nn_thread_pool *pool, const nn_pointwise_params *p, const float *a,
                             const float *b, float *out) {
    if (p->op != NN_EW_ADD && p->op != NN_EW_MUL && p->op != NN_EW_SCALE)
        return nn_set_error(NN_ERR_BACKEND, "cpu elementwise: unknown op %d", p->op);
    pointwise_job job = {.p = p, .a = a, .b = b, .out = out};
    nn_parallel_for(pool, p->n, NN_CPU_MIN_CHUNK, elementwise_range, &job);
    return NN_OK;
}

static void relu_forward_range(void *arg, int64_t begin, int64_t end, int worker) {
    const pointwise_job *job = arg;
    const float *restrict x = job->a;
    float *restrict y = job->out;
    /* A NaN passes through (as in PyTorch), so a diverging run shows it. */
    for (int64_t i = begin; i < end; i++) y[i] = (x[i] > 0.0f || x[i] != x[i]) ? x[i] : 0.0f;
}

nn_status nn_cpu_relu_forward(nn_thread_pool *pool, const nn_pointwise_params *p, const float *x,
                              float *y) {
    pointwise_job job = {.p = p, .a = x, .out = y};
    nn_parallel_for(pool, p->n, NN_CPU_MIN_CHUNK, relu_forward_range, &job);
    return NN_OK;
}

/* The gradient flows where the output is positive (y = relu(x) > 0 iff x > 0). */
static void relu_backward_range(void *arg, int64_t begin, int64_t end, int worker) {
    const pointwise_job *job = arg;
    const float *restrict y = job->a, *restrict dy = job->b;
    float *restrict dx = job->out;
    /* Branch-free selects: the mask is close to random, a branch would
     * mispredict on every other element. */
    if (job->p->accumulate) {
        for (int64_t i = begin; i < end; i++) dx[i] += y[i] > 0.0f ? dy[i] : 0.0f;
    } else {
        for (int64_t i = begin; i < end; i++) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
    }
}

nn_status nn_cpu_relu_backward(nn_thread_pool *pool, const nn_pointwise_params *p, const float *y,
                               const float *dy, float *dx) {
    pointwise_job job = {.p = p, .a = y, .b = dy, .out = dx};
    nn_parallel_for(pool, p->n, NN_CPU_MIN_CHUNK, relu_backward_range, &job);
    return NN_OK;
}

static void broadcast_range(void *arg, int64_t begin, int64_t end, int worker) {
    const pointwise_job *job = arg;
    const float value = job->p->alpha * job->a[0];
    float *restrict out = job->out;
    if (job->p->accumulate) {
        for (int64_t i = begin; i < end; i++) out[i] += value;
    } else {
        for (int64_t i = begin; i < end; i++) out[i] = value;
    }
}

nn_status nn_cpu_broadcast_scalar(nn_thread_pool *pool, const nn_pointwise_params *p,
                                  const float *s, float *out) {
    pointwise_job job = {.p = p, .a = s, .out = out};
    nn_parallel_for(pool, p->n, NN_CPU_MIN_CHUNK, broadcast_range, &job);
    return NN_OK;
}

static void sum_range(void *arg, int64_t begin, int64_t end, int worker) {
    pointwise_job *job = arg;
    const float *restrict x = job->a;
    double total = 0.0;
    for (int64_t i = begin; i < end; i++) total += x[i];
    job->partials[worker] = total;
}

static void sum_squares_range(void *arg, int64_t begin, int64_t end, int worker) {
    pointwise_job *job = arg;
    const float *restrict x = job->a;
    double total = 0.0;
    for (int64_t i = begin; i < end; i++) total += (double)x[i] * x[i];
    job->partials[worker] = total;
}

static nn_status reduce(nn_thread_pool *pool, const nn_pointwise_params *p, const float *x,
                        nn_parallel_fn fn, double *result) {
    int workers = nn_thread_pool_size(pool);
    double *partials = calloc((size_t)workers, sizeof *partials);
    if (!partials) return nn_set_error(NN_ERR_MEMORY, "cpu reduce: out of host memory");
    pointwise_job job = {.p = p, .a = x, .partials = partials};
    nn_parallel_for(pool, p->n, NN_CPU_MIN_CHUNK, fn, &job);
    double total = 0.0;
    for (int w = 0; w < workers; w++) total += partials[w];
    free(partials);
    *result = total;
    return NN_OK;
}

nn_status nn_cpu_reduce_sum(nn_thread_pool *pool, const nn_pointwise_params *p, const float *x,
                            float *out) {
    double total = 0.0;
    NN_TRY(reduce(pool, p, x, sum_range, &total));
    out[0] = (p->accumulate ? out[0] : 0.0f) + (float)(p->alpha * total);
    return NN_OK;
}

nn_status nn_cpu_sum_squares(nn_thread_pool *pool, const nn_pointwise_params *p, const float *x,
                             float *out) {
    double total = 0.0;
    NN_TRY(reduce(pool, p, x, sum_squares_range, &total));
    out[0] = (p->accumulate ? out[0] : 0.0f) + (float)total;
    return NN_OK;
}

typedef struct bias_job {
    const nn_bias_params *p;
    const float *src;
    float *dst;
} bias_job;

/* One task per (outer, channel) row of `inner` contiguous elements. */
static void bias_add_rows(void *arg, int64_t begin, int64_t end, int worker) {
    const bias_job *job = arg;
    const int64_t inner = job->p->inner, channels = job->p->channels;
    for (int64_t row = begin; row < end; row++) {
        const float b = job->src[row % channels];
        float *restrict y = job->dst + row * inner;
        for (int64_t i = 0; i < inner; i++) y[i] += b;
    }
}

nn_status nn_cpu_bias_add(nn_thread_pool *pool, const nn_bias_params *p, float *y,
                          const float *bias) {
    bias_job job = {p, bias, y};
    int64_t rows = p->outer * p->channels;
    int64_t min_rows = NN_CPU_MIN_CHUNK / (p->inner > 0 ? p->inner : 1) + 1;
    nn_parallel_for(pool, rows, min_rows, bias_add_rows, &job);
    return NN_OK;
}

static void bias_grad_channels(void *arg, int64_t begin, int64_t end, int worker) {
    const bias_job *job = arg;
    const nn_bias_params p = *job->p;
    for (int64_t c = begin; c < end; c++) {
        double total = 0.0;
        for (int64_t o = 0; o < p.outer; o++) {
            const float *restrict dy = job->src + (o * p.channels + c) * p.inner;
            float partial = 0.0f; /* a float run per row vectorizes; rows add in double */
            for (int64_t i = 0; i < p.inner; i++) partial += dy[i];
            total += partial;
        }
        job->dst[c] = (p.accumulate ? job->dst[c] : 0.0f) + (float)total;
    }
}

nn_status nn_cpu_bias_grad(nn_thread_pool *pool, const nn_bias_params *p, const float *dy,
                           float *dbias) {
    bias_job job = {p, dy, dbias};
    int64_t per_channel = p->outer * p->inner;
    int64_t min_channels = NN_CPU_MIN_CHUNK / (per_channel > 0 ? per_channel : 1) + 1;
    nn_parallel_for(pool, p->channels, min_channels, bias_grad_channels, &job);
    return NN_OK;
}
