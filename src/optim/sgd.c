/* SGD (include/nn_optim.h) behind the optimizer interface: one kernel over
 * every parameter when they all live in the flat buffers (param_set.h),
 * else one per parameter; the learning rate and the squared global norm are
 * read on the device. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "optimizer.h"

typedef struct sgd {
    nn_optimizer base; /* first: an nn_optimizer * is an sgd * */
    nn_sgd_options options;
} sgd;

static const nn_optimizer_class kSgd;

/* The group's own options (nn_optimizer_set_group_option): momentum, as a
 * scheduler cycles it (OneCycleLR); SGD has one group. */
enum { MOMENTUM };
static const nn_optimizer_option_spec kOptions[] = {{"momentum", 0.0f, FLT_MAX, false}};

static sgd *as_sgd(const nn_optimizer *opt) { return opt && opt->cls == &kSgd ? (sgd *)opt : NULL; }

static nn_status check_options(const char *fn, const nn_sgd_options *o) {
    NN_TRY(nn_optimizer_check_lr(fn, o->lr));
    if (!(isfinite(o->momentum) && o->momentum >= 0.0f))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: momentum must be >= 0, got %g", fn, o->momentum);
    if (!(isfinite(o->weight_decay) && o->weight_decay >= 0.0f))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: weight_decay must be >= 0, got %g", fn, o->weight_decay);
    if (o->nesterov && o->momentum <= 0.0f)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: nesterov needs momentum > 0", fn);
    if (!(o->clip_value >= 0.0f) || isnan(o->clip_value))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: clip_value must be >= 0 (0 = off), got %g", fn, o->clip_value);
    if (!(o->max_grad_norm >= 0.0f) || isnan(o->max_grad_norm))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: max_grad_norm must be >= 0 (0 = off), got %g", fn,
                            o->max_grad_norm);
    return NN_OK;
}

/* The momentum buffers: the state SGD keeps with momentum. */
static nn_flat_state *velocity_of(sgd *s) { return s->base.state_count > 0 ? &s->base.states[0] : NULL; }

/* One run of one group's parameters. The kernel reads the rate from
 * scalars[0] and, with max_grad_norm (one group only), the squared norm
 * from scalars[1]: group 0 passes the param set's scalars, another group
 * its own rate. */
static nn_status update(nn_optimizer *opt, const nn_optimizer_run *run) {
    sgd *s = (sgd *)opt;
    const nn_sgd_options *o = &s->options;
    const nn_optimizer_group *g = &opt->groups[run->group];
    nn_sgd_params p = {
        .n = run->n, .lr = g->lr /* not read: the kernel takes scalars[0] */, .momentum = g->option[MOMENTUM],
        .weight_decay = g->weight_decay, .clip_value = o->clip_value, .max_grad_norm = o->max_grad_norm,
        .nesterov = o->nesterov,
    };
    nn_buffer_ref args[5] = {run->param, run->grad, velocity_of(s) ? run->state[0] : (nn_buffer_ref){0},
                             run->group == 0 ? nn_tensor_ref(opt->set.scalars) : run->lr, run->skip};
    return nn_ctx_run(opt->set.ctx, NN_KERNEL_SGD_UPDATE_DEVICE_LR, args, 5, &p);
}

static nn_status sgd_step(nn_optimizer *opt, bool flat) {
    if (((sgd *)opt)->options.max_grad_norm > 0.0f) NN_TRY(nn_param_set_grad_norm_sq(&opt->set, flat));
    return nn_optimizer_for_each_run(opt, flat, update);
}

/* Informational in a training state: a resumed run may change them. */
static int sgd_describe(const nn_optimizer *opt, nn_optimizer_option *out, int capacity) {
    const nn_sgd_options *o = &((const sgd *)opt)->options;
    const struct {
        const char *name;
        double value;
    } numbers[] = {{"lr", o->lr},
                   {"momentum", opt->groups[0].option[MOMENTUM]},
                   {"weight_decay", opt->groups[0].weight_decay},
                   {"clip_value", o->clip_value},
                   {"max_grad_norm", o->max_grad_norm}};
    int n = 0;
    for (size_t i = 0; i < sizeof numbers / sizeof numbers[0] && n < capacity; i++, n++) {
        out[n].name = numbers[i].name;
        snprintf(out[n].value, sizeof out[n].value, "%.9g", numbers[i].value);
    }
    if (n < capacity) {
        out[n].name = "nesterov";
        snprintf(out[n++].value, sizeof out[0].value, "%s", o->nesterov ? "true" : "false");
    }
    return n;
}

static void sgd_lr_changed(nn_optimizer *opt) { ((sgd *)opt)->options.lr = opt->lr; }

/* Momentum needs its buffers: made zero the first time a group gets
 * momentum (a first momentum step then equals torch's, whose buffer starts
 * as that step's gradient); nesterov needs momentum. */
static nn_status sgd_check_option(nn_optimizer *opt, int group, int option, float value) {
    (void)group;
    sgd *s = (sgd *)opt;
    if (option == MOMENTUM && value > 0.0f && !velocity_of(s)) NN_TRY(nn_optimizer_add_state(opt, "momentum_buffer"));
    if (option == MOMENTUM && value <= 0.0f && s->options.nesterov)
        return nn_set_error(NN_ERR_ARGUMENT, "nn_optimizer_set_group_option: nesterov needs momentum > 0, got %g",
                            value);
    return NN_OK;
}

static const nn_optimizer_class kSgd = {.name = "sgd",
                                        .step = sgd_step,
                                        .describe = sgd_describe,
                                        .lr_changed = sgd_lr_changed,
                                        .option_specs = kOptions,
                                        .option_count = 1,
                                        .check_option = sgd_check_option};

static nn_optimizer *make(const char *fn, const nn_param_group *groups, int count, const nn_sgd_options *options) {
    if (!options) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: options is NULL", fn);
    if (check_options(fn, options)) return NULL;
    if (count > 1 && options->max_grad_norm > 0.0f)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: max_grad_norm takes one group (%d given): clip the gradients "
                                             "before the step instead (Python: nn.utils.clip_grad_norm_)", fn, count);
    for (int g = 0; groups && g < count; g++)
        if (groups[g].adamw)
            return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: group %d is marked adamw, which only Muon takes", fn, g);
    sgd *s = calloc(1, sizeof *s);
    if (!s) return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", fn);
    s->options = *options;
    nn_status st = nn_optimizer_init_groups(&s->base, &kSgd, fn, groups, count);
    if (st == NN_OK && options->momentum > 0.0f) st = nn_optimizer_add_state(&s->base, "momentum_buffer");
    if (st != NN_OK) {
        nn_optimizer_free(&s->base);
        return NULL;
    }
    s->options.lr = s->base.lr;
    nn_optimizer_init_options(&s->base, &options->momentum);
    return &s->base;
}

nn_optimizer *nn_sgd_new(nn_tensor *const *params, int count, const nn_sgd_options *options) {
    const char *fn = "nn_sgd_new";
    if (!options) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: options is NULL", fn);
    if (!params) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: need at least one parameter, got %d (params is NULL)", fn,
                                     count);
    const nn_param_group group = {params, count, options->lr, options->weight_decay, false};
    return make(fn, &group, 1, options);
}

nn_optimizer *nn_sgd_new_groups(const nn_param_group *groups, int count, const nn_sgd_options *options) {
    return make("nn_sgd_new_groups", groups, count, options);
}

/* Setters validate the changed options as a whole before applying them. */
#define NN_SGD_SETTER(function, field)                                                             \
    nn_status function(nn_optimizer *opt, float value) {                                           \
        sgd *s = as_sgd(opt);                                                                      \
        if (!s)                                                                                    \
            return nn_set_error(NN_ERR_ARGUMENT, #function ": optimizer is %s", opt ? "not SGD" : "NULL"); \
        nn_sgd_options changed = s->options;                                                       \
        changed.field = value;                                                                     \
        NN_TRY(check_options(#function, &changed));                                                \
        if (changed.max_grad_norm > 0.0f && opt->group_count > 1)                                  \
            return nn_set_error(NN_ERR_ARGUMENT, #function ": max_grad_norm takes one group (%d here)", \
                                opt->group_count);                                                 \
        s->options = changed;                                                                      \
        return NN_OK;                                                                              \
    }
NN_SGD_SETTER(nn_sgd_set_clip_value, clip_value)
NN_SGD_SETTER(nn_sgd_set_max_grad_norm, max_grad_norm)
#undef NN_SGD_SETTER

const nn_sgd_options *nn_sgd_get_options(const nn_optimizer *opt) {
    sgd *s = as_sgd(opt);
    if (!s) return NULL;
    /* nn_optimizer_set_group_option may have changed them since */
    s->options.momentum = s->base.groups[0].option[MOMENTUM];
    s->options.weight_decay = s->base.groups[0].weight_decay;
    return &s->options;
}
