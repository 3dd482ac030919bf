/* Adam and AdamW (include/nn_optim.h) behind the optimizer interface: the
 * ADAM_UPDATE kernel over each group's run of the flat buffers, after a
 * COUNTER_ADD of the group's step count (so a captured step replays with
 * the bias corrections of each replayed step). */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "optimizer.h"

typedef struct adam {
    nn_optimizer base; /* first: an nn_optimizer * is an adam * */
    nn_adam_options options;
    bool decoupled; /* AdamW */
} adam;

enum { EXP_AVG, EXP_AVG_SQ, STEP, MAX_EXP_AVG_SQ };

/* Each group's own (nn_optimizer_set_group_option), in this order. */
enum { BETA1, BETA2, EPS };
static const nn_optimizer_option_spec kOptions[] = {
    {"beta1", 0.0f, 1.0f, true}, {"beta2", 0.0f, 1.0f, true}, {"eps", 0.0f, FLT_MAX, false}};

static nn_status check_options(const char *fn, const nn_adam_options *o) {
    if (!(o->beta1 >= 0.0f && o->beta1 < 1.0f) || !(o->beta2 >= 0.0f && o->beta2 < 1.0f))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: betas must be in [0, 1), got (%g, %g)", fn, o->beta1, o->beta2);
    if (!(isfinite(o->eps) && o->eps >= 0.0f))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: eps must be finite and >= 0, got %g", fn, o->eps);
    return NN_OK;
}

static nn_status adam_update(nn_optimizer *opt, const nn_optimizer_run *run) {
    const adam *a = (const adam *)opt;
    const nn_optimizer_group *g = &opt->groups[run->group];
    const nn_adam_params p = {.n = run->n, .beta1 = g->option[BETA1], .beta2 = g->option[BETA2],
                              .eps = g->option[EPS], .weight_decay = g->weight_decay,
                              .decoupled = a->decoupled, .amsgrad = a->options.amsgrad,
                              .maximize = a->options.maximize};
    nn_buffer_ref args[8] = {run->param, run->grad, run->state[EXP_AVG], run->state[EXP_AVG_SQ],
                             a->options.amsgrad ? run->state[MAX_EXP_AVG_SQ] : (nn_buffer_ref){0}, run->lr,
                             run->step, run->skip};
    return nn_ctx_run(opt->set.ctx, NN_KERNEL_ADAM_UPDATE, args, 8, &p);
}

static nn_status adam_step(nn_optimizer *opt, bool flat) {
    NN_TRY(nn_optimizer_advance_steps(opt, flat));
    return nn_optimizer_for_each_run(opt, flat, adam_update);
}

/* Informational in a training state: group 0's settings. */
static int adam_describe(const nn_optimizer *opt, nn_optimizer_option *out, int capacity) {
    const nn_adam_options *o = &((const adam *)opt)->options;
    const float *g = opt->groups[0].option;
    const nn_optimizer_number numbers[] = {
        {"lr", opt->lr},     {"beta1", g[BETA1]},     {"beta2", g[BETA2]},
        {"eps", g[EPS]},     {"weight_decay", opt->groups[0].weight_decay},
        {"amsgrad", o->amsgrad}, {"maximize", o->maximize}};
    return nn_optimizer_describe_numbers(out, capacity, numbers, sizeof numbers / sizeof numbers[0]);
}

static void adam_lr_changed(nn_optimizer *opt) { ((adam *)opt)->options.lr = opt->lr; }

#define OPTIONS .option_specs = kOptions, .option_count = sizeof kOptions / sizeof kOptions[0]
static const nn_optimizer_class kAdam = {
    .name = "adam", .step = adam_step, .describe = adam_describe, .lr_changed = adam_lr_changed, OPTIONS};
static const nn_optimizer_class kAdamW = {
    .name = "adamw", .step = adam_step, .describe = adam_describe, .lr_changed = adam_lr_changed, OPTIONS};
#undef OPTIONS

static nn_optimizer *make(const char *fn, bool decoupled, const nn_param_group *groups, int count,
                          const nn_adam_options *options) {
    if (!options) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: options is NULL", fn);
    if (check_options(fn, options)) return NULL;
    for (int g = 0; groups && g < count; g++)
        if (groups[g].adamw)
            return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: group %d is marked adamw, which only Muon takes", fn, g);
    adam *a = calloc(1, sizeof *a);
    if (!a) return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", fn);
    a->options = *options;
    a->decoupled = decoupled;
    nn_status st = nn_optimizer_init_groups(&a->base, decoupled ? &kAdamW : &kAdam, fn, groups, count);
    if (st == NN_OK) st = nn_optimizer_add_state(&a->base, "exp_avg");
    if (st == NN_OK) st = nn_optimizer_add_state(&a->base, "exp_avg_sq");
    if (st == NN_OK) st = nn_optimizer_add_step_state(&a->base);
    if (st == NN_OK && options->amsgrad) st = nn_optimizer_add_state(&a->base, "max_exp_avg_sq");
    if (st != NN_OK) {
        nn_optimizer_free(&a->base);
        return NULL;
    }
    a->options.lr = a->base.lr;
    const float group_options[] = {[BETA1] = options->beta1, [BETA2] = options->beta2, [EPS] = options->eps};
    nn_optimizer_init_options(&a->base, group_options);
    return &a->base;
}

/* One group from the options' rate and decay. */
static nn_optimizer *make_single(const char *fn, bool decoupled, nn_tensor *const *params, int count,
                                 const nn_adam_options *options) {
    if (!options) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: options is NULL", fn);
    if (!params) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: need at least one parameter (params is NULL)", fn);
    const nn_param_group group = {params, count, options->lr, options->weight_decay, false};
    return make(fn, decoupled, &group, 1, options);
}

nn_optimizer *nn_adam_new(nn_tensor *const *params, int count, const nn_adam_options *options) {
    return make_single("nn_adam_new", false, params, count, options);
}

nn_optimizer *nn_adamw_new(nn_tensor *const *params, int count, const nn_adam_options *options) {
    return make_single("nn_adamw_new", true, params, count, options);
}

nn_optimizer *nn_adam_new_groups(const nn_param_group *groups, int count, const nn_adam_options *options) {
    return make("nn_adam_new_groups", false, groups, count, options);
}

nn_optimizer *nn_adamw_new_groups(const nn_param_group *groups, int count, const nn_adam_options *options) {
    return make("nn_adamw_new_groups", true, groups, count, options);
}
