/* The kernels of learning-rate schedules and weight averages: LR_SCHEDULE
 * (one rate from a device-side step counter, in double as PyTorch's
 * schedulers compute it: lr_schedule_rate.c) and EMA_UPDATE (kernels.h). */
#include <math.h>
#include <string.h>

#include "base/error.h"
#include "cpu_backend.h"
#include "nn_schedule.h"

nn_status nn_cpu_lr_schedule(const nn_lr_schedule_params *p, int32_t *counter, float *lr) {
    if (!nn_lr_schedule_params_valid(p))
        return nn_set_error(NN_ERR_ARGUMENT, "cpu lr_schedule: invalid kind %d, step_size %d, %d milestones, warmup "
                                             "%d or total %d", p->kind, p->step_size, p->milestone_count, p->warmup,
                            p->total);
    counter[0] += p->delta;
    const int64_t t = counter[0] > 0 ? counter[0] : 0;
    if (t >= p->start && t < p->until) lr[0] = (float)nn_lr_schedule_rate(p, t - p->start);
    return NN_OK;
}

typedef struct ema_job {
    const nn_ema_params *p;
    uint32_t *shadow, *value;
} ema_job;

static void ema_range(void *arg, int64_t begin, int64_t end, int worker) {
    const ema_job *job = arg;
    const nn_ema_params *p = job->p;
    if (p->mode == NN_EMA_COPY) {
        memcpy(job->shadow + begin, job->value + begin, sizeof(uint32_t) * (size_t)(end - begin));
    } else if (p->mode == NN_EMA_SWAP) {
        for (int64_t i = begin; i < end; i++) {
            uint32_t kept = job->shadow[i];
            job->shadow[i] = job->value[i];
            job->value[i] = kept;
        }
    } else {
        float *shadow = (float *)job->shadow;
        const float *value = (const float *)job->value;
        for (int64_t i = begin; i < end; i++) {
            float decayed = shadow[i] * p->decay, added = p->weight * value[i];
            shadow[i] = decayed + added;
        }
    }
}

nn_status nn_cpu_ema_update(nn_thread_pool *pool, const nn_ema_params *p, uint32_t *shadow, uint32_t *value) {
    if (p->n < 0 || p->mode < NN_EMA_AVERAGE || p->mode > NN_EMA_SWAP)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu ema_update: n=%lld mode=%d", (long long)p->n, p->mode);
    ema_job job = {p, shadow, value};
    nn_parallel_for(pool, p->n, NN_CPU_MIN_CHUNK, ema_range, &job);
    return NN_OK;
}
