/* Learning-rate schedules on the device (include/nn_schedule.h): the
 * options checked and turned into LR_SCHEDULE's parameters once, then each
 * step is that one kernel over the counter and the optimizer's rate. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "optimizer.h"
#include "nn_schedule.h"

struct nn_schedule {
    nn_optimizer *opt;
    nn_tensor *counter;
    nn_schedule_options options;
    nn_lr_schedule_params params;
};

static const char *const kKindNames[] = {"constant", "step", "multistep", "exponential", "cosine", "onecycle"};

const char *nn_schedule_kind_name(nn_schedule_kind kind) {
    return kind >= NN_SCHEDULE_CONSTANT && kind <= NN_SCHEDULE_ONECYCLE ? kKindNames[kind] : "unknown";
}

bool nn_schedule_kind_parse(const char *name, nn_schedule_kind *kind) {
    for (int k = 0; name && k <= NN_SCHEDULE_ONECYCLE; k++)
        if (strcmp(name, kKindNames[k]) == 0) {
            *kind = (nn_schedule_kind)k;
            return true;
        }
    return false;
}

static bool finite_at_least(double v, double lo) { return isfinite(v) && v >= lo; }

/* The options' defaults filled in and every value the kind reads checked. */
static nn_status check_options(nn_schedule_options *o, double optimizer_lr) {
    const char *fn = "nn_schedule_new";
    if (o->kind < NN_SCHEDULE_CONSTANT || o->kind > NN_SCHEDULE_ONECYCLE)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: kind %d is not an nn_schedule_kind", fn, (int)o->kind);
    const char *kind = nn_schedule_kind_name(o->kind);
    if (o->base_lr == 0) o->base_lr = optimizer_lr;
    if (!finite_at_least(o->base_lr, 0))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: base_lr must be finite and >= 0, got %g", fn, o->base_lr);
    bool uses_gamma = o->kind == NN_SCHEDULE_STEP || o->kind == NN_SCHEDULE_MULTISTEP ||
                      o->kind == NN_SCHEDULE_EXPONENTIAL;
    if (uses_gamma && !finite_at_least(o->gamma, 0))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: %s needs gamma finite and >= 0, got %g", fn, kind, o->gamma);
    if (o->kind == NN_SCHEDULE_STEP && (o->step_size <= 0 || o->step_size > INT32_MAX))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: step needs step_size in [1, 2^31), got %lld", fn,
                            (long long)o->step_size);
    if (o->kind == NN_SCHEDULE_MULTISTEP) {
        if (o->milestone_count < 1 || o->milestone_count > NN_SCHEDULE_MAX_MILESTONES)
            return nn_set_error(NN_ERR_ARGUMENT, "%s: multistep needs 1 to %d milestones, got %d", fn,
                                NN_SCHEDULE_MAX_MILESTONES, o->milestone_count);
        for (int i = 0; i < o->milestone_count; i++)
            if (o->milestones[i] < 0 || o->milestones[i] > INT32_MAX || (i > 0 && o->milestones[i] <= o->milestones[i - 1]))
                return nn_set_error(NN_ERR_ARGUMENT, "%s: milestones must increase within [0, 2^31); milestone %d "
                                                     "is %lld", fn, i, (long long)o->milestones[i]);
    }
    if (o->kind == NN_SCHEDULE_COSINE) {
        if (o->warmup < 0 || o->total_steps <= o->warmup || o->total_steps > INT32_MAX)
            return nn_set_error(NN_ERR_ARGUMENT, "%s: cosine needs 0 <= warmup < total_steps < 2^31, got warmup %lld "
                                                 "and total_steps %lld", fn, (long long)o->warmup,
                                (long long)o->total_steps);
        if (!(o->warmup_start >= 0 && o->warmup_start <= 1))
            return nn_set_error(NN_ERR_ARGUMENT, "%s: warmup_start must be in [0, 1], got %g", fn, o->warmup_start);
        if (!finite_at_least(o->eta_min, 0))
            return nn_set_error(NN_ERR_ARGUMENT, "%s: eta_min must be finite and >= 0, got %g", fn, o->eta_min);
    }
    if (o->kind == NN_SCHEDULE_ONECYCLE) {
        if (o->pct_start == 0) o->pct_start = 0.3;
        if (o->div_factor == 0) o->div_factor = 25.0;
        if (o->final_div_factor == 0) o->final_div_factor = 1e4;
        if (o->total_steps <= 0 || o->total_steps > INT32_MAX)
            return nn_set_error(NN_ERR_ARGUMENT, "%s: onecycle needs total_steps in [1, 2^31), got %lld", fn,
                                (long long)o->total_steps);
        if (!(o->max_lr > 0) || !isfinite(o->max_lr))
            return nn_set_error(NN_ERR_ARGUMENT, "%s: onecycle needs max_lr > 0, got %g", fn, o->max_lr);
        if (!(o->pct_start > 0 && o->pct_start <= 1))
            return nn_set_error(NN_ERR_ARGUMENT, "%s: pct_start must be in (0, 1], got %g", fn, o->pct_start);
        if (!(o->div_factor > 0) || !(o->final_div_factor > 0) || !isfinite(o->div_factor) ||
            !isfinite(o->final_div_factor))
            return nn_set_error(NN_ERR_ARGUMENT, "%s: div_factor and final_div_factor must be > 0, got %g and %g", fn,
                                o->div_factor, o->final_div_factor);
        /* A phase of no steps would divide by zero (torch does too). */
        double end1 = o->pct_start * (double)o->total_steps - 1.0;
        double end2 = 2.0 * o->pct_start * (double)o->total_steps - 2.0;
        double last = (double)o->total_steps - 1.0;
        if (end1 <= 0 || end1 >= last || (o->three_phase && (end2 <= end1 || end2 >= last)))
            return nn_set_error(NN_ERR_ARGUMENT, "%s: onecycle with total_steps %lld and pct_start %g has a phase "
                                                 "of no steps (pct_start * total_steps must exceed 1 and leave "
                                                 "steps after it)", fn, (long long)o->total_steps, o->pct_start);
    }
    return NN_OK;
}

static nn_lr_schedule_params params_of(const nn_schedule_options *o) {
    nn_lr_schedule_params p = {
        .kind = o->kind, .base_lr = o->base_lr, .gamma = o->gamma, .eta_min = o->eta_min,
        .warmup_start = o->warmup_start, .step_size = (int32_t)o->step_size, .warmup = (int32_t)o->warmup,
        .total = (int32_t)o->total_steps, .milestone_count = o->kind == NN_SCHEDULE_MULTISTEP ? o->milestone_count : 0,
        .anneal_linear = o->anneal_linear, .three_phase = o->three_phase,
    };
    for (int i = 0; i < p.milestone_count; i++) p.milestones[i] = (int32_t)o->milestones[i];
    if (o->kind == NN_SCHEDULE_ONECYCLE) { /* torch's group values, in its order of operations */
        p.max_lr = o->max_lr;
        p.initial_lr = o->max_lr / o->div_factor;
        p.min_lr = p.initial_lr / o->final_div_factor;
        p.phase_end1 = o->pct_start * (double)o->total_steps - 1.0;
        p.phase_end2 = 2.0 * o->pct_start * (double)o->total_steps - 2.0;
    }
    return p;
}

/* LR_SCHEDULE once: counter += delta, then the rate of the counter's step. */
static nn_status run(nn_schedule *s, int32_t delta) {
    nn_lr_schedule_params p = s->params;
    p.delta = delta;
    nn_buffer_ref args[2] = {nn_tensor_ref(s->counter), nn_tensor_ref(nn_optimizer_lr_tensor(s->opt))};
    return nn_ctx_run(s->counter->ctx, NN_KERNEL_LR_SCHEDULE, args, 2, &p);
}

nn_schedule *nn_schedule_new(nn_optimizer *opt, const nn_schedule_options *options) {
    if (!opt || !options)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_schedule_new: %s is NULL", !opt ? "optimizer" : "options");
    nn_schedule_options o = *options;
    if (check_options(&o, nn_optimizer_lr(opt)) != NN_OK) return NULL;
    nn_tensor *lr = nn_optimizer_lr_tensor(opt);
    nn_schedule *s = calloc(1, sizeof *s);
    if (!s) return NN_FAIL_NULL(NN_ERR_MEMORY, "nn_schedule_new: out of host memory");
    s->opt = opt;
    s->options = o;
    s->params = params_of(&o);
    s->counter = nn_tensor_new(lr->ctx, NN_I32, 1, (int64_t[]){1});
    if (!s->counter || nn_schedule_set_step(s, 0) != NN_OK) {
        nn_schedule_free(s);
        return NULL;
    }
    return s;
}

nn_status nn_schedule_step(nn_schedule *s) {
    if (!s) return nn_set_error(NN_ERR_ARGUMENT, "nn_schedule_step: schedule is NULL");
    return run(s, 1);
}

nn_status nn_schedule_apply(nn_schedule *s) {
    if (!s) return nn_set_error(NN_ERR_ARGUMENT, "nn_schedule_apply: schedule is NULL");
    return run(s, 0);
}

nn_status nn_schedule_advance(nn_schedule *s) {
    if (!s) return nn_set_error(NN_ERR_ARGUMENT, "nn_schedule_advance: schedule is NULL");
    return nn_counter_add(s->counter, 1);
}

nn_status nn_schedule_set_step(nn_schedule *s, int64_t step) {
    if (!s) return nn_set_error(NN_ERR_ARGUMENT, "nn_schedule_set_step: schedule is NULL");
    if (step < 0 || step > INT32_MAX)
        return nn_set_error(NN_ERR_ARGUMENT, "nn_schedule_set_step: step must be in [0, 2^31), got %lld",
                            (long long)step);
    int32_t value = (int32_t)step;
    NN_TRY(nn_tensor_write(s->counter, &value, sizeof value));
    return run(s, 0);
}

nn_status nn_schedule_get_step(nn_schedule *s, int64_t *step) {
    if (!s || !step) return nn_set_error(NN_ERR_ARGUMENT, "nn_schedule_get_step: %s is NULL", !s ? "schedule" : "step");
    int32_t value;
    NN_TRY(nn_tensor_read(s->counter, &value, sizeof value));
    *step = value;
    return NN_OK;
}

nn_tensor *nn_schedule_counter(nn_schedule *s) { return s ? s->counter : NULL; }

const nn_schedule_options *nn_schedule_get_options(const nn_schedule *s) { return s ? &s->options : NULL; }

void nn_schedule_free(nn_schedule *s) {
    if (!s) return;
    nn_tensor_free(s->counter);
    free(s);
}
