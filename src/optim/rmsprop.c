/* RMSprop (include/nn_optim.h) behind the optimizer interface: the
 * RMSPROP_UPDATE kernel over each group's run of the flat buffers. */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "optimizer.h"

/* Each group's own (nn_optimizer_set_group_option), in this order. */
enum { ALPHA, EPS, MOMENTUM };
static const nn_optimizer_option_spec kOptions[] = {
    {"alpha", 0.0f, 1.0f, false}, {"eps", 0.0f, FLT_MAX, false}, {"momentum", 0.0f, FLT_MAX, false}};

typedef struct rmsprop {
    nn_optimizer base; /* first: an nn_optimizer * is an rmsprop * */
    nn_rmsprop_options options;
    int momentum_state, grad_avg_state; /* their state indices, -1 when not kept */
} rmsprop;

static nn_status check_options(const char *fn, const nn_rmsprop_options *o) {
    if (!(o->alpha >= 0.0f && o->alpha <= 1.0f))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: alpha must be in [0, 1], got %g", fn, o->alpha);
    if (!(isfinite(o->eps) && o->eps >= 0.0f))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: eps must be finite and >= 0, got %g", fn, o->eps);
    if (!(isfinite(o->momentum) && o->momentum >= 0.0f))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: momentum must be finite and >= 0, got %g", fn, o->momentum);
    return NN_OK;
}

static nn_buffer_ref state_or_none(const nn_optimizer_run *run, int state) {
    return state >= 0 ? run->state[state] : (nn_buffer_ref){0};
}

static nn_status rmsprop_update(nn_optimizer *opt, const nn_optimizer_run *run) {
    const rmsprop *r = (const rmsprop *)opt;
    const nn_optimizer_group *g = &opt->groups[run->group];
    const nn_rmsprop_params p = {.n = run->n, .alpha = g->option[ALPHA], .eps = g->option[EPS],
                                 .weight_decay = g->weight_decay, .momentum = g->option[MOMENTUM],
                                 .centered = r->options.centered, .maximize = r->options.maximize};
    nn_buffer_ref args[7] = {run->param, run->grad, run->state[0], state_or_none(run, r->momentum_state),
                             state_or_none(run, r->grad_avg_state), run->lr, run->skip};
    return nn_ctx_run(opt->set.ctx, NN_KERNEL_RMSPROP_UPDATE, args, 7, &p);
}

static nn_status rmsprop_step(nn_optimizer *opt, bool flat) {
    return nn_optimizer_for_each_run(opt, flat, rmsprop_update);
}

/* Informational in a training state: group 0's settings. */
static int rmsprop_describe(const nn_optimizer *opt, nn_optimizer_option *out, int capacity) {
    const nn_rmsprop_options *o = &((const rmsprop *)opt)->options;
    const float *g = opt->groups[0].option;
    const nn_optimizer_number numbers[] = {
        {"lr", opt->lr},           {"alpha", g[ALPHA]},       {"eps", g[EPS]},
        {"weight_decay", opt->groups[0].weight_decay}, {"momentum", g[MOMENTUM]},
        {"centered", o->centered}, {"maximize", o->maximize}};
    return nn_optimizer_describe_numbers(out, capacity, numbers, sizeof numbers / sizeof numbers[0]);
}

static void rmsprop_lr_changed(nn_optimizer *opt) { ((rmsprop *)opt)->options.lr = opt->lr; }

static nn_status add_state(rmsprop *r, const char *name, int *index) {
    const int next = r->base.state_count;
    NN_TRY(nn_optimizer_add_state(&r->base, name));
    *index = next;
    return NN_OK;
}

/* Momentum needs its buffers: made zero the first time a group gets
 * momentum (torch's start). */
static nn_status rmsprop_check_option(nn_optimizer *opt, int group, int option, float value) {
    (void)group;
    rmsprop *r = (rmsprop *)opt;
    if (option == MOMENTUM && value > 0.0f && r->momentum_state < 0)
        return add_state(r, "momentum_buffer", &r->momentum_state);
    return NN_OK;
}

static const nn_optimizer_class kRmsprop = {.name = "rmsprop",
                                            .step = rmsprop_step,
                                            .describe = rmsprop_describe,
                                            .lr_changed = rmsprop_lr_changed,
                                            .option_specs = kOptions,
                                            .option_count = sizeof kOptions / sizeof kOptions[0],
                                            .check_option = rmsprop_check_option};

static nn_optimizer *make(const char *fn, const nn_param_group *groups, int count, const nn_rmsprop_options *options) {
    if (!options) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: options is NULL", fn);
    if (check_options(fn, options)) return NULL;
    for (int g = 0; groups && g < count; g++)
        if (groups[g].adamw)
            return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: group %d is marked adamw, which only Muon takes", fn, g);
    rmsprop *r = calloc(1, sizeof *r);
    if (!r) return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", fn);
    r->options = *options;
    r->momentum_state = r->grad_avg_state = -1;
    int square_avg;
    nn_status st = nn_optimizer_init_groups(&r->base, &kRmsprop, fn, groups, count);
    if (st == NN_OK) st = add_state(r, "square_avg", &square_avg);
    if (st == NN_OK && options->momentum > 0.0f) st = add_state(r, "momentum_buffer", &r->momentum_state);
    if (st == NN_OK && options->centered) st = add_state(r, "grad_avg", &r->grad_avg_state);
    if (st != NN_OK) {
        nn_optimizer_free(&r->base);
        return NULL;
    }
    r->options.lr = r->base.lr;
    const float group_options[] = {[ALPHA] = options->alpha, [EPS] = options->eps, [MOMENTUM] = options->momentum};
    nn_optimizer_init_options(&r->base, group_options);
    return &r->base;
}

nn_optimizer *nn_rmsprop_new(nn_tensor *const *params, int count, const nn_rmsprop_options *options) {
    const char *fn = "nn_rmsprop_new";
    if (!options) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: options is NULL", fn);
    if (!params) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: need at least one parameter (params is NULL)", fn);
    const nn_param_group group = {params, count, options->lr, options->weight_decay, false};
    return make(fn, &group, 1, options);
}

nn_optimizer *nn_rmsprop_new_groups(const nn_param_group *groups, int count, const nn_rmsprop_options *options) {
    return make("nn_rmsprop_new_groups", groups, count, options);
}
