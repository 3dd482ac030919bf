/* Dropout's mask from the counter-based hash (backends/dropout_philox.h),
 * the reference for the Vulkan shader: same hash, same comparison, same
 * single multiply, so both devices give bit-identical masks and outputs. */
#include "backends/dropout_philox.h"
#include "base/error.h"
#include "cpu_backend.h"

typedef struct dropout_job {
    const nn_dropout_params *p;
    uint32_t draw;
    const float *x;
    float *y, *mask;
} dropout_job;

static void dropout_range(void *arg, int64_t begin, int64_t end, int worker) {
    const dropout_job *job = arg;
    const nn_dropout_params *p = job->p;
    for (int64_t i = begin; i < end; i++) {
        uint32_t word = nn_philox_word((uint32_t)i, job->draw, p->seed_lo, p->seed_hi);
        float m = word >= p->threshold ? p->scale : 0.0f;
        job->mask[i] = m;
        job->y[i] = job->x[i] * m;
    }
}

nn_status nn_cpu_dropout_forward(nn_thread_pool *pool, const nn_dropout_params *p, const float *x,
                                 float *y, float *mask, const uint32_t *counter) {
    if (p->n < 0 || p->n > (int64_t)UINT32_MAX + 1)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu dropout_forward: n = %lld is outside the hash's 32-bit "
                                             "element index", (long long)p->n);
    dropout_job job = {p, counter[0], x, y, mask};
    nn_parallel_for(pool, p->n, NN_CPU_MIN_CHUNK / 4, dropout_range, &job);
    return NN_OK;
}
