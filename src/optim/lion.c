/* Lion (include/nn_optim.h) behind the optimizer interface: the
 * LION_UPDATE kernel over each group's run of the flat buffers. */
#include <stdlib.h>

#include "optimizer.h"

/* Each group's own (nn_optimizer_set_group_option), in this order. */
enum { BETA1, BETA2 };
static const nn_optimizer_option_spec kOptions[] = {{"beta1", 0.0f, 1.0f, false}, {"beta2", 0.0f, 1.0f, false}};

typedef struct lion {
    nn_optimizer base; /* first: an nn_optimizer * is a lion * */
    nn_lion_options options;
} lion;

static nn_status check_options(const char *fn, const nn_lion_options *o) {
    if (!(o->beta1 >= 0.0f && o->beta1 <= 1.0f) || !(o->beta2 >= 0.0f && o->beta2 <= 1.0f))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: betas must be in [0, 1], got (%g, %g)", fn, o->beta1, o->beta2);
    return NN_OK;
}

static nn_status lion_update(nn_optimizer *opt, const nn_optimizer_run *run) {
    const lion *l = (const lion *)opt;
    const nn_optimizer_group *g = &opt->groups[run->group];
    const nn_lion_params p = {.n = run->n, .beta1 = g->option[BETA1], .beta2 = g->option[BETA2],
                              .weight_decay = g->weight_decay, .maximize = l->options.maximize};
    nn_buffer_ref args[5] = {run->param, run->grad, run->state[0], run->lr, run->skip};
    return nn_ctx_run(opt->set.ctx, NN_KERNEL_LION_UPDATE, args, 5, &p);
}

static nn_status lion_step(nn_optimizer *opt, bool flat) { return nn_optimizer_for_each_run(opt, flat, lion_update); }

/* Informational in a training state: group 0's settings. */
static int lion_describe(const nn_optimizer *opt, nn_optimizer_option *out, int capacity) {
    const nn_lion_options *o = &((const lion *)opt)->options;
    const nn_optimizer_number numbers[] = {{"lr", opt->lr},
                                           {"beta1", opt->groups[0].option[BETA1]},
                                           {"beta2", opt->groups[0].option[BETA2]},
                                           {"weight_decay", opt->groups[0].weight_decay},
                                           {"maximize", o->maximize}};
    return nn_optimizer_describe_numbers(out, capacity, numbers, sizeof numbers / sizeof numbers[0]);
}

static void lion_lr_changed(nn_optimizer *opt) { ((lion *)opt)->options.lr = opt->lr; }

static const nn_optimizer_class kLion = {.name = "lion",
                                         .step = lion_step,
                                         .describe = lion_describe,
                                         .lr_changed = lion_lr_changed,
                                         .option_specs = kOptions,
                                         .option_count = sizeof kOptions / sizeof kOptions[0]};

static nn_optimizer *make(const char *fn, const nn_param_group *groups, int count, const nn_lion_options *options) {
    if (!options) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: options is NULL", fn);
    if (check_options(fn, options)) return NULL;
    for (int g = 0; groups && g < count; g++)
        if (groups[g].adamw)
            return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: group %d is marked adamw, which only Muon takes", fn, g);
    lion *l = calloc(1, sizeof *l);
    if (!l) return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", fn);
    l->options = *options;
    nn_status st = nn_optimizer_init_groups(&l->base, &kLion, fn, groups, count);
    if (st == NN_OK) st = nn_optimizer_add_state(&l->base, "exp_avg");
    if (st != NN_OK) {
        nn_optimizer_free(&l->base);
        return NULL;
    }
    l->options.lr = l->base.lr;
    const float group_options[] = {[BETA1] = options->beta1, [BETA2] = options->beta2};
    nn_optimizer_init_options(&l->base, group_options);
    return &l->base;
}

nn_optimizer *nn_lion_new(nn_tensor *const *params, int count, const nn_lion_options *options) {
    const char *fn = "nn_lion_new";
    if (!options) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: options is NULL", fn);
    if (!params) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: need at least one parameter (params is NULL)", fn);
    const nn_param_group group = {params, count, options->lr, options->weight_decay, false};
    return make(fn, &group, 1, options);
}

nn_optimizer *nn_lion_new_groups(const nn_param_group *groups, int count, const nn_lion_options *options) {
    return make("nn_lion_new_groups", groups, count, options);
}
