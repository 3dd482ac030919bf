/* The kernels of learning-rate schedules and weight averages: LR_SCHEDULE
 * (one rate from a device-side step counter, in double as PyTorch's
 * schedulers compute it) and EMA_UPDATE (kernels.h). */
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "cpu_backend.h"
#include "nn_schedule.h"

/* gamma^n for a whole n >= 0 (0^0 = 1, as Python's 0.0 ** 0). */
static double power(double gamma, int64_t n) { return n == 0 ? 1.0 : pow(gamma, (double)n); }

/* torch's OneCycleLR anneal from start to end as pct goes from 0 to 1. */
static double anneal(const nn_lr_schedule_params *p, double start, double end, double pct) {
    if (p->anneal_linear) return (end - start) * pct + start;
    return end + (start - end) / 2.0 * (cos(M_PI * pct) + 1.0);
}

/* OneCycleLR.get_lr at step t (t past total is held at total, the last
 * step torch accepts). */
static double one_cycle(const nn_lr_schedule_params *p, int64_t t) {
    double step = (double)(t < p->total ? t : p->total);
    double initial = p->initial_lr, max = p->max_lr, min = p->min_lr;
    double end1 = p->phase_end1, end2 = p->phase_end2, last = (double)p->total - 1.0;
    if (step <= end1) return anneal(p, initial, max, step / end1);
    if (!p->three_phase) return anneal(p, max, min, (step - end1) / (last - end1));
    if (step <= end2) return anneal(p, max, initial, (step - end1) / (end2 - end1));
    return anneal(p, initial, min, (step - end2) / (last - end2));
}

static double scheduled_rate(const nn_lr_schedule_params *p, int64_t t) {
    const double base = p->base_lr;
    switch ((nn_schedule_kind)p->kind) {
    case NN_SCHEDULE_CONSTANT: return base;
    case NN_SCHEDULE_STEP: return base * power(p->gamma, t / p->step_size);
    case NN_SCHEDULE_MULTISTEP: {
        int passed = 0;
        for (int i = 0; i < p->milestone_count; i++) passed += t >= p->milestones[i];
        return base * power(p->gamma, passed);
    }
    case NN_SCHEDULE_EXPONENTIAL: return base * power(p->gamma, t);
    case NN_SCHEDULE_COSINE: {
        if (t < p->warmup) /* LinearLR's closed form, end factor 1 */
            return base * (p->warmup_start + (1.0 - p->warmup_start) * (double)t / (double)p->warmup);
        double eta = p->eta_min;
        return eta + (base - eta) * (1.0 + cos(M_PI * (double)(t - p->warmup) / (double)(p->total - p->warmup))) / 2;
    }
    case NN_SCHEDULE_ONECYCLE: return one_cycle(p, t);
    }
    return NAN;
}

nn_status nn_cpu_lr_schedule(const nn_lr_schedule_params *p, int32_t *counter, float *lr) {
    if (p->kind < NN_SCHEDULE_CONSTANT || p->kind > NN_SCHEDULE_ONECYCLE)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu lr_schedule: unknown kind %d", p->kind);
    if ((p->kind == NN_SCHEDULE_STEP && p->step_size <= 0) || p->milestone_count < 0 ||
        p->milestone_count > NN_LR_SCHEDULE_MAX_MILESTONES ||
        ((p->kind == NN_SCHEDULE_COSINE || p->kind == NN_SCHEDULE_ONECYCLE) && p->total <= p->warmup))
        return nn_set_error(NN_ERR_ARGUMENT, "cpu lr_schedule: invalid step_size %d, %d milestones, warmup %d "
                                             "or total %d", p->step_size, p->milestone_count, p->warmup, p->total);
    counter[0] += p->delta;
    int64_t t = counter[0] > 0 ? counter[0] : 0;
    lr[0] = (float)scheduled_rate(p, t);
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
