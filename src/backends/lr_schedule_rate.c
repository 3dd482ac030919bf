/* The learning-rate schedules' formulas in double (kernels.h,
 * include/nn_schedule.h): the CPU's LR_SCHEDULE kernel and the host values
 * a scheduler reports (nn_schedule_rate) both come from here;
 * shaders/lr_schedule.comp is the same in float. */
#include <math.h>

#include "kernels.h"
#include "nn_schedule.h"

bool nn_lr_schedule_params_valid(const nn_lr_schedule_params *p) {
    if (p->kind < NN_SCHEDULE_CONSTANT || p->kind > NN_SCHEDULE_LINEAR) return false;
    if (p->milestone_count < 0 || p->milestone_count > NN_LR_SCHEDULE_MAX_MILESTONES) return false;
    if (p->kind == NN_SCHEDULE_STEP && p->step_size <= 0) return false;
    if ((p->kind == NN_SCHEDULE_COSINE || p->kind == NN_SCHEDULE_ONECYCLE) && p->total <= p->warmup) return false;
    return p->kind != NN_SCHEDULE_LINEAR || p->total > 0;
}

/* gamma^n for a whole n >= 0 (0^0 = 1, as Python's 0.0 ** 0). */
static double power(double gamma, int64_t n) { return n == 0 ? 1.0 : pow(gamma, (double)n); }

/* torch's OneCycleLR anneal from start to end as pct goes from 0 to 1. */
static double anneal(const nn_lr_schedule_params *p, double start, double end, double pct) {
    if (p->anneal_linear) return (end - start) * pct + start;
    return end + (start - end) / 2.0 * (cos(M_PI * pct) + 1.0);
}

/* t past total is held at total, the last step torch accepts. */
double nn_one_cycle_value(const nn_lr_schedule_params *p, int64_t t, double a, double b, double c) {
    double step = (double)(t < p->total ? t : p->total);
    double end1 = p->phase_end1, end2 = p->phase_end2, last = (double)p->total - 1.0;
    if (step <= end1) return anneal(p, a, b, step / end1);
    if (!p->three_phase) return anneal(p, b, c, (step - end1) / (last - end1));
    if (step <= end2) return anneal(p, b, a, (step - end1) / (end2 - end1));
    return anneal(p, a, c, (step - end2) / (last - end2));
}

double nn_lr_schedule_rate(const nn_lr_schedule_params *p, int64_t t) {
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
    case NN_SCHEDULE_ONECYCLE: return nn_one_cycle_value(p, t, p->initial_lr, p->max_lr, p->min_lr);
    case NN_SCHEDULE_LINEAR: {
        double held = (double)(t < p->total ? t : p->total);
        return base * (p->warmup_start + (p->end_factor - p->warmup_start) * held / (double)p->total);
    }
    }
    return NAN;
}
