/* CAST on the CPU (kernels.h): float32 <-> int32, element by element. The
 * float-to-int conversion is defined where C leaves it undefined (NaN,
 * values beyond int32's range), as Vulkan's cast.comp defines it too. */
#include <math.h>

#include "base/error.h"
#include "cpu_backend.h"

typedef struct cast_job {
    const nn_pointwise_params *p;
    const void *x;
    void *out;
} cast_job;

/* Truncated toward zero; NaN 0; saturated at INT32_MIN and INT32_MAX. */
static int32_t float_to_int(float v) {
    if (isnan(v)) return 0;
    if (v >= 2147483648.0f) return INT32_MAX;
    if (v <= -2147483648.0f) return INT32_MIN;
    return (int32_t)v;
}

static void cast_range(void *arg, int64_t begin, int64_t end, int worker) {
    const cast_job *job = arg;
    if (job->p->op == NN_CAST_FLOAT_TO_INT) {
        const float *restrict x = job->x;
        int32_t *restrict out = job->out;
        for (int64_t i = begin; i < end; i++) out[i] = float_to_int(x[i]);
    } else {
        const int32_t *restrict x = job->x;
        float *restrict out = job->out;
        for (int64_t i = begin; i < end; i++) out[i] = (float)x[i]; /* the default rounding: to nearest, ties to even */
    }
}

nn_status nn_cpu_cast(nn_thread_pool *pool, const nn_pointwise_params *p, const void *x, void *out) {
    if (p->n < 0) return nn_set_error(NN_ERR_ARGUMENT, "cpu cast: %lld elements", (long long)p->n);
    if (p->op < 0 || p->op >= NN_CAST_OP_COUNT)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu cast: unknown conversion %d (nn_cast_op)", p->op);
    cast_job job = {.p = p, .x = x, .out = out};
    nn_parallel_for(pool, p->n, NN_CPU_MIN_CHUNK, cast_range, &job);
    return NN_OK;
}
