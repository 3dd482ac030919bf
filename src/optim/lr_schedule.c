/* Learning-rate schedules on the device (include/nn_schedule.h): the
 * options checked and turned into LR_SCHEDULE's parameters once per
 * parameter group, then each step is that kernel over the counter and each
 * group's rate (a sequence: each part's, writing only in its range of
 * steps). The formulas are lr_schedule_rate.c's. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "optimizer.h"
#include "nn_schedule.h"

/* One schedule of a sequence (a plain schedule is a sequence of one): its
 * kernel parameters per group, and the option its momentum cycles. */
typedef struct schedule_part {
    nn_schedule_options options;
    nn_lr_schedule_params *groups; /* group_count entries */
    const char *momentum_option;   /* ONECYCLE with cycle_momentum: "beta1" or "momentum"; else NULL */
} schedule_part;

struct nn_schedule {
    nn_optimizer *opt;
    nn_tensor *counter;
    int part_count, group_count;
    schedule_part *parts;
    int64_t host_step; /* the counter as the host last moved it: the momentum's step */
};

static const char *const kKindNames[] = {"constant", "step", "multistep", "exponential", "cosine", "onecycle",
                                         "linear"};

const char *nn_schedule_kind_name(nn_schedule_kind kind) {
    return kind >= NN_SCHEDULE_CONSTANT && kind <= NN_SCHEDULE_LINEAR ? kKindNames[kind] : "unknown";
}

bool nn_schedule_kind_parse(const char *name, nn_schedule_kind *kind) {
    for (int k = 0; name && k <= NN_SCHEDULE_LINEAR; k++)
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
    if (o->kind < NN_SCHEDULE_CONSTANT || o->kind > NN_SCHEDULE_LINEAR)
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
            if (o->milestones[i] < 0 || o->milestones[i] > INT32_MAX || (i > 0 && o->milestones[i] < o->milestones[i - 1]))
                return nn_set_error(NN_ERR_ARGUMENT, "%s: milestones must not decrease, within [0, 2^31); milestone %d "
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
        /* A phase of no steps would divide by zero (torch's does too). */
        double end1 = o->pct_start * (double)o->total_steps - 1.0;
        double end2 = 2.0 * o->pct_start * (double)o->total_steps - 2.0;
        double last = (double)o->total_steps - 1.0;
        if (end1 == 0 || (o->three_phase ? end2 == last : end1 == last))
            return nn_set_error(NN_ERR_ARGUMENT, "%s: onecycle with total_steps %lld and pct_start %g has a phase "
                                                 "of no steps (pct_start * total_steps must not be 1, nor leave no "
                                                 "steps after it)", fn, (long long)o->total_steps, o->pct_start);
    }
    if (o->kind == NN_SCHEDULE_ONECYCLE && o->cycle_momentum) {
        if (o->base_momentum == 0) o->base_momentum = 0.85;
        if (o->max_momentum == 0) o->max_momentum = 0.95;
        if (!(o->base_momentum >= 0 && o->base_momentum < 1) || !(o->max_momentum >= 0 && o->max_momentum < 1))
            return nn_set_error(NN_ERR_ARGUMENT, "%s: base_momentum and max_momentum must be in [0, 1), got %g and %g",
                                fn, o->base_momentum, o->max_momentum);
    }
    if (o->kind == NN_SCHEDULE_LINEAR) {
        if (o->total_steps <= 0 || o->total_steps > INT32_MAX)
            return nn_set_error(NN_ERR_ARGUMENT, "%s: linear needs total_steps in [1, 2^31), got %lld", fn,
                                (long long)o->total_steps);
        if (!(o->start_factor > 0 && o->start_factor <= 1) || !(o->end_factor >= 0 && o->end_factor <= 1))
            return nn_set_error(NN_ERR_ARGUMENT, "%s: linear needs start_factor in (0, 1] and end_factor in [0, 1], "
                                                 "got %g and %g", fn, o->start_factor, o->end_factor);
    }
    return NN_OK;
}

/* The kernel's parameters for a group whose base (ONECYCLE: peak) is `base`. */
static nn_lr_schedule_params params_of(const nn_schedule_options *o, double base) {
    nn_lr_schedule_params p = {
        .kind = o->kind, .base_lr = base, .gamma = o->gamma, .eta_min = o->eta_min, .until = INT32_MAX,
        .warmup_start = o->kind == NN_SCHEDULE_LINEAR ? o->start_factor : o->warmup_start,
        .end_factor = o->end_factor, .step_size = (int32_t)o->step_size, .warmup = (int32_t)o->warmup,
        .total = (int32_t)o->total_steps, .milestone_count = o->kind == NN_SCHEDULE_MULTISTEP ? o->milestone_count : 0,
        .anneal_linear = o->anneal_linear, .three_phase = o->three_phase,
    };
    for (int i = 0; i < p.milestone_count; i++) p.milestones[i] = (int32_t)o->milestones[i];
    if (o->kind == NN_SCHEDULE_ONECYCLE) { /* torch's group values, in its order of operations */
        p.max_lr = base;
        p.initial_lr = base / o->div_factor;
        p.min_lr = p.initial_lr / o->final_div_factor;
        p.phase_end1 = o->pct_start * (double)o->total_steps - 1.0;
        p.phase_end2 = 2.0 * o->pct_start * (double)o->total_steps - 2.0;
    }
    return p;
}

/* Each group's base: group_lrs, or its rate at creation (scaled so that
 * group 0's is base_lr when that is given); ONECYCLE's peak is max_lr. */
static nn_status group_bases(const nn_optimizer *opt, const nn_schedule_options *given, const nn_schedule_options *o,
                             double *bases) {
    const double first = opt->groups[0].lr;
    for (int g = 0; g < opt->group_count; g++) {
        if (given->group_lrs) {
            bases[g] = given->group_lrs[g];
            if (!(isfinite(bases[g]) && bases[g] >= (o->kind == NN_SCHEDULE_ONECYCLE ? DBL_MIN : 0)))
                return nn_set_error(NN_ERR_ARGUMENT, "nn_schedule_new: group_lrs[%d] must be finite and %s, got %g", g,
                                    o->kind == NN_SCHEDULE_ONECYCLE ? "> 0" : ">= 0", bases[g]);
        } else if (o->kind == NN_SCHEDULE_ONECYCLE) {
            bases[g] = o->max_lr;
        } else {
            bases[g] = g == 0 || first == 0 ? (g == 0 ? o->base_lr : opt->groups[g].lr)
                                            : opt->groups[g].lr * (o->base_lr / first);
        }
    }
    return NN_OK;
}

/* The option a cycling one-cycle moves: Adam's and Lion's beta1, SGD's and
 * RMSprop's momentum (NULL: the optimizer has neither). */
static const char *momentum_option(const nn_optimizer *opt) {
    for (int i = 0; i < opt->cls->option_count; i++)
        if (strcmp(opt->cls->option_specs[i].name, "beta1") == 0) return "beta1";
    for (int i = 0; i < opt->cls->option_count; i++)
        if (strcmp(opt->cls->option_specs[i].name, "momentum") == 0) return "momentum";
    return NULL;
}

static const schedule_part *part_at(const nn_schedule *s, int64_t step) {
    int k = 0;
    while (k + 1 < s->part_count && step >= s->parts[k + 1].groups[0].start) k++;
    return &s->parts[k];
}

/* The cycled momentum of the host's step into every group (the options are
 * host values the update kernels take). */
static nn_status set_momentum(nn_schedule *s) {
    const schedule_part *part = part_at(s, s->host_step);
    if (!part->momentum_option) return NN_OK;
    for (int g = 0; g < s->group_count; g++)
        NN_TRY(nn_optimizer_set_group_option(s->opt, g, part->momentum_option,
                                             (float)nn_schedule_momentum(s, g, s->host_step)));
    return NN_OK;
}

/* LR_SCHEDULE for every part and group: the first advances the counter by
 * delta, each writes its group's rate where its part is the one running. */
static nn_status run(nn_schedule *s, int32_t delta) {
    s->host_step += delta;
    for (int k = 0; k < s->part_count; k++)
        for (int g = 0; g < s->group_count; g++) {
            nn_lr_schedule_params p = s->parts[k].groups[g];
            p.delta = k == 0 && g == 0 ? delta : 0;
            nn_buffer_ref args[2] = {nn_tensor_ref(s->counter), nn_tensor_ref(s->opt->groups[g].lr_tensor)};
            NN_TRY(nn_ctx_run(s->counter->ctx, NN_KERNEL_LR_SCHEDULE, args, 2, &p));
        }
    return set_momentum(s);
}

/* A schedule of `parts` parts, each with room for a rate per group, and
 * its counter. */
static nn_schedule *schedule_alloc(nn_optimizer *opt, int parts, const char *fn) {
    nn_schedule *s = calloc(1, sizeof *s);
    if (!s) return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", fn);
    s->opt = opt;
    s->group_count = opt->group_count;
    s->parts = calloc((size_t)parts, sizeof *s->parts);
    bool complete = s->parts != NULL;
    if (complete) s->part_count = parts;
    for (int k = 0; complete && k < parts; k++) {
        s->parts[k].groups = calloc((size_t)s->group_count, sizeof *s->parts[k].groups);
        complete = s->parts[k].groups != NULL;
    }
    if (!complete) {
        nn_schedule_free(s);
        return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", fn);
    }
    s->counter = nn_tensor_new(opt->set.ctx, NN_I32, 1, (int64_t[]){1});
    if (!s->counter) {
        nn_schedule_free(s);
        return NULL;
    }
    return s;
}

nn_schedule *nn_schedule_new(nn_optimizer *opt, const nn_schedule_options *options) {
    if (!opt || !options)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_schedule_new: %s is NULL", !opt ? "optimizer" : "options");
    nn_schedule_options o = *options;
    if (check_options(&o, nn_optimizer_lr(opt)) != NN_OK) return NULL;
    const char *momentum = NULL;
    if (o.kind == NN_SCHEDULE_ONECYCLE && o.cycle_momentum && !(momentum = momentum_option(opt)))
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_schedule_new: onecycle's cycle_momentum needs an optimizer with a "
                                             "momentum or beta1; %s has neither", nn_optimizer_name(opt));
    double *bases = calloc((size_t)opt->group_count, sizeof *bases);
    if (!bases) return NN_FAIL_NULL(NN_ERR_MEMORY, "nn_schedule_new: out of host memory");
    nn_schedule *s = group_bases(opt, options, &o, bases) == NN_OK ? schedule_alloc(opt, 1, "nn_schedule_new") : NULL;
    if (s) {
        o.group_lrs = NULL; /* the caller's array is not kept */
        s->parts[0].options = o;
        s->parts[0].momentum_option = momentum;
        for (int g = 0; g < s->group_count; g++) s->parts[0].groups[g] = params_of(&o, bases[g]);
    }
    free(bases);
    if (s && nn_schedule_set_step(s, 0) != NN_OK) {
        nn_schedule_free(s);
        return NULL;
    }
    return s;
}

nn_schedule *nn_schedule_sequential(nn_optimizer *opt, nn_schedule *const *parts, int count,
                                    const int64_t *milestones) {
    const char *fn = "nn_schedule_sequential";
    if (!opt || !parts || count < 1 || (count > 1 && !milestones))
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: %s", fn, !opt ? "optimizer is NULL" : !parts ? "parts is NULL" :
                                                      count < 1 ? "needs at least one part" : "milestones is NULL");
    for (int k = 0; k < count; k++) {
        if (!parts[k] || parts[k]->opt != opt)
            return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: part %d is %s", fn, k,
                                parts[k] ? "a schedule of another optimizer" : "NULL");
        if (parts[k]->part_count != 1)
            return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: part %d is a sequence itself (sequences do not nest)", fn, k);
        if (k > 0 && (milestones[k - 1] <= (k > 1 ? milestones[k - 2] : 0) || milestones[k - 1] > INT32_MAX))
            return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: milestones must increase within [1, 2^31); milestone %d is %lld",
                                fn, k - 1, (long long)milestones[k - 1]);
    }
    nn_schedule *s = schedule_alloc(opt, count, fn);
    if (!s) return NULL;
    for (int k = 0; k < count; k++) {
        s->parts[k].options = parts[k]->parts[0].options;
        s->parts[k].momentum_option = parts[k]->parts[0].momentum_option;
        for (int g = 0; g < s->group_count; g++) {
            nn_lr_schedule_params p = parts[k]->parts[0].groups[g];
            p.start = k == 0 ? 0 : (int32_t)milestones[k - 1];
            p.until = k + 1 < count ? (int32_t)milestones[k] : INT32_MAX;
            s->parts[k].groups[g] = p;
        }
    }
    if (nn_schedule_set_step(s, 0) != NN_OK) {
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
    NN_TRY(nn_counter_add(s->counter, 1));
    s->host_step++;
    return set_momentum(s);
}

nn_status nn_schedule_set_step(nn_schedule *s, int64_t step) {
    if (!s) return nn_set_error(NN_ERR_ARGUMENT, "nn_schedule_set_step: schedule is NULL");
    if (step < 0 || step > INT32_MAX)
        return nn_set_error(NN_ERR_ARGUMENT, "nn_schedule_set_step: step must be in [0, 2^31), got %lld",
                            (long long)step);
    int32_t value = (int32_t)step;
    NN_TRY(nn_tensor_write(s->counter, &value, sizeof value));
    s->host_step = step;
    return run(s, 0);
}

nn_status nn_schedule_get_step(nn_schedule *s, int64_t *step) {
    if (!s || !step) return nn_set_error(NN_ERR_ARGUMENT, "nn_schedule_get_step: %s is NULL", !s ? "schedule" : "step");
    int32_t value;
    NN_TRY(nn_tensor_read(s->counter, &value, sizeof value));
    *step = value;
    return NN_OK;
}

static bool check_rate_args(const char *fn, const nn_schedule *s, int group, int64_t step) {
    if (!s) return nn_set_error(NN_ERR_ARGUMENT, "%s: schedule is NULL", fn), false;
    if (group < 0 || group >= s->group_count)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: group %d is not in [0, %d)", fn, group, s->group_count), false;
    if (step < 0 || step > INT32_MAX)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: step must be in [0, 2^31), got %lld", fn, (long long)step), false;
    return true;
}

double nn_schedule_rate(const nn_schedule *s, int group, int64_t step) {
    if (!check_rate_args("nn_schedule_rate", s, group, step)) return NAN;
    const nn_lr_schedule_params *p = &part_at(s, step)->groups[group];
    return nn_lr_schedule_rate(p, step - p->start);
}

double nn_schedule_momentum(const nn_schedule *s, int group, int64_t step) {
    if (!check_rate_args("nn_schedule_momentum", s, group, step)) return NAN;
    const schedule_part *part = part_at(s, step);
    if (!part->momentum_option) return NAN;
    const nn_lr_schedule_params *p = &part->groups[group];
    const double base = part->options.base_momentum, max = part->options.max_momentum;
    return nn_one_cycle_value(p, step - p->start, max, base, max);
}

nn_tensor *nn_schedule_counter(nn_schedule *s) { return s ? s->counter : NULL; }

const nn_schedule_options *nn_schedule_get_options(const nn_schedule *s) {
    return s ? &s->parts[0].options : NULL;
}

void nn_schedule_free(nn_schedule *s) {
    if (!s) return;
    for (int k = 0; k < s->part_count; k++) free(s->parts[k].groups);
    free(s->parts);
    nn_tensor_free(s->counter);
    free(s);
}
