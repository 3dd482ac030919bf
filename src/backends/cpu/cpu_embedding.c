/* The EMBEDDING_* kernels on the CPU (kernels.h): the forward copies rows,
 * the backward walks the indices in order, each worker owning a range of
 * features, so every sum is added in the order Vulkan adds it. */
#include <math.h>
#include <string.h>

#include "base/error.h"
#include "cpu_backend.h"

static bool valid(const nn_embedding_params *p) { return p->count >= 0 && p->num > 0 && p->dim > 0; }

typedef struct embedding_job {
    const nn_embedding_params *p;
    const int32_t *indices;
    const float *src;
    float *dst;
} embedding_job;

static void forward_rows(void *arg, int64_t begin, int64_t end, int worker) {
    (void)worker;
    const embedding_job *job = arg;
    const int64_t dim = job->p->dim;
    for (int64_t i = begin; i < end; i++) {
        const int32_t row = job->indices[i];
        float *out = job->dst + i * dim;
        if (row < 0 || row >= job->p->num)
            for (int64_t f = 0; f < dim; f++) out[f] = NAN;
        else
            memcpy(out, job->src + (int64_t)row * dim, sizeof(float) * (size_t)dim);
    }
}

nn_status nn_cpu_embedding_forward(nn_thread_pool *pool, const nn_embedding_params *p, const int32_t *indices,
                                   const float *weight, float *out) {
    if (!valid(p)) return nn_set_error(NN_ERR_ARGUMENT, "cpu embedding_forward: invalid sizes");
    embedding_job job = {p, indices, weight, out};
    nn_parallel_for(pool, p->count, 1 + 4096 / p->dim, forward_rows, &job);
    for (int64_t i = 0; i < p->count; i++)
        if (indices[i] < 0 || indices[i] >= p->num)
            return nn_set_error(NN_ERR_ARGUMENT, "embedding: index %d at position %lld is outside [0, %d)",
                                (int)indices[i], (long long)i, (int)p->num);
    return NN_OK;
}

/* Features [begin, end) of every row: cleared (or kept, accumulating),
 * then each position's gradient added to its row in order. */
static void backward_features(void *arg, int64_t begin, int64_t end, int worker) {
    (void)worker;
    const embedding_job *job = arg;
    const nn_embedding_params *p = job->p;
    const int64_t dim = p->dim;
    if (!p->accumulate)
        for (int64_t r = 0; r < p->num; r++) memset(job->dst + r * dim + begin, 0, sizeof(float) * (size_t)(end - begin));
    for (int64_t i = 0; i < p->count; i++) {
        const int32_t row = job->indices[i];
        if (row < 0 || row >= p->num || row == p->padding_idx) continue;
        float *dw = job->dst + (int64_t)row * dim;
        const float *g = job->src + i * dim;
        for (int64_t f = begin; f < end; f++) dw[f] += g[f];
    }
}

nn_status nn_cpu_embedding_backward(nn_thread_pool *pool, const nn_embedding_params *p, const int32_t *indices,
                                    const float *dy, float *dweight) {
    if (!valid(p)) return nn_set_error(NN_ERR_ARGUMENT, "cpu embedding_backward: invalid sizes");
    embedding_job job = {p, indices, dy, dweight};
    nn_parallel_for(pool, p->dim, 16, backward_features, &job);
    return NN_OK;
}
