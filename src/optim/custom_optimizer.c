/* A user's optimizer (include/nn_custom.h) behind the optimizer interface:
 * the class is made per optimizer from the user's description (its name,
 * states and options), and its step hands each run to the user's update as
 * tensors over the run's part of the flat buffers. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/names.h"
#include "nn_custom.h"
#include "optimizer.h"

typedef struct custom_optimizer {
    nn_optimizer base; /* first: an nn_optimizer * is a custom_optimizer * */
    nn_optimizer_class cls;
    nn_custom_optimizer_desc desc;
    char name[64];
    char state_names[NN_CUSTOM_OPTIMIZER_MAX_STATES][48];
    char option_names[NN_CUSTOM_OPTIMIZER_MAX_OPTIONS][48];
    nn_optimizer_option_spec option_specs[NN_CUSTOM_OPTIMIZER_MAX_OPTIONS];
    int first_state; /* the index of the user's first state among the optimizer's */
} custom_optimizer;

/* A caller-owned view of `n` elements of t's storage from element `first`. */
static nn_tensor *view_of(nn_tensor *t, int64_t first, int64_t n, nn_status *st) {
    if (*st != NN_OK) return NULL;
    nn_tensor *v = nn_tensor_view_at(t, (size_t)first * sizeof(float), 1, &n);
    if (!v) *st = nn_last_status();
    return v;
}

static nn_status custom_run(nn_optimizer *opt, const nn_optimizer_run *run) {
    custom_optimizer *c = (custom_optimizer *)opt;
    const nn_param_set *set = &opt->set;
    const nn_optimizer_group *g = &opt->groups[run->group];
    nn_custom_update u = {.n = run->n, .group = run->group, .weight_decay = g->weight_decay, .options = g->option,
                          .user = c->desc.user, .lr = g->lr_tensor};
    nn_status st = NN_OK;
    const bool flat = run->param.buffer == nn_tensor_ref(set->flat_params).buffer;
    const int64_t first = set->offsets[run->first], one = 1;
    if (flat) {
        u.param = view_of(set->flat_params, first, run->n, &st);
        u.grad = view_of(set->flat_grads, first, run->n, &st);
    } else {
        u.param = view_of(set->params[run->first], 0, run->n, &st);
        u.grad = view_of(set->params[run->first]->grad, 0, run->n, &st);
    }
    for (int s = 0; s < c->desc.state_count; s++) {
        const nn_flat_state *state = &opt->states[c->first_state + s];
        u.state[s] = flat ? view_of(state->flat, first, run->n, &st) : view_of(state->views[run->first], 0, run->n, &st);
    }
    if (opt->step_state >= 0 && st == NN_OK) {
        u.step = nn_tensor_view_at(opt->states[opt->step_state].flat, (size_t)run->group * sizeof(int32_t), 1, &one);
        if (!u.step) st = nn_last_status();
    }
    nn_tensor *scaler = nn_loss_scaler_state(opt);
    if (scaler && st == NN_OK) { /* the state [4]'s second element: the overflow found */
        u.skip = nn_tensor_view_at(scaler, sizeof(float), 1, &one);
        if (!u.skip) st = nn_last_status();
    }
    if (st == NN_OK) st = c->desc.update(&u);
    /* nn_set_error formats apart first: nn_last_error() may be its argument */
    if (st != NN_OK && !strstr(nn_last_error(), c->name))
        st = nn_set_error(st, "optimizer %s: update: %s", c->name, nn_last_error());
    nn_tensor *views[] = {u.param, u.grad, u.state[0], u.state[1], u.state[2], u.step, u.skip};
    for (size_t i = 0; i < sizeof views / sizeof views[0]; i++) nn_tensor_free(views[i]);
    return st;
}

static nn_status custom_step(nn_optimizer *opt, bool flat) {
    if (opt->step_state >= 0) NN_TRY(nn_optimizer_advance_steps(opt, flat));
    return nn_optimizer_for_each_run(opt, flat, custom_run);
}

/* Informational in a training state: group 0's settings. */
static int custom_describe(const nn_optimizer *opt, nn_optimizer_option *out, int capacity) {
    const custom_optimizer *c = (const custom_optimizer *)opt;
    nn_optimizer_number numbers[2 + NN_CUSTOM_OPTIMIZER_MAX_OPTIONS] = {{"lr", opt->lr},
                                                                         {"weight_decay", opt->groups[0].weight_decay}};
    for (int i = 0; i < c->desc.option_count; i++)
        numbers[2 + i] = (nn_optimizer_number){c->option_names[i], opt->groups[0].option[i]};
    return nn_optimizer_describe_numbers(out, capacity, numbers, 2 + c->desc.option_count);
}

/* A name of the user's, copied into `to` (letters, digits, '_'). */
static nn_status copy_name(const char *fn, const char *what, const char *name, char *to, size_t size) {
    if (!name || !*name || strlen(name) >= size)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: %s must be 1 to %zu characters", fn, what, size - 1);
    const char bad = nn_name_bad_char(name);
    if (bad)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: %s '%s' has '%c'; use letters, digits and '_'", fn, what, name, bad);
    snprintf(to, size, "%s", name);
    return NN_OK;
}

static nn_status describe_class(const char *fn, custom_optimizer *c, const nn_custom_optimizer_desc *d) {
    if (!d->update) return nn_set_error(NN_ERR_ARGUMENT, "%s: desc.update is NULL", fn);
    if (d->state_count < 0 || d->state_count > NN_CUSTOM_OPTIMIZER_MAX_STATES ||
        d->option_count < 0 || d->option_count > NN_CUSTOM_OPTIMIZER_MAX_OPTIONS)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: %d states and %d options; at most %d and %d", fn, d->state_count,
                            d->option_count, NN_CUSTOM_OPTIMIZER_MAX_STATES, NN_CUSTOM_OPTIMIZER_MAX_OPTIONS);
    NN_TRY(copy_name(fn, "name", d->name, c->name, sizeof c->name));
    for (int s = 0; s < d->state_count; s++) {
        NN_TRY(copy_name(fn, "a state's name", d->states[s], c->state_names[s], sizeof c->state_names[s]));
        if (strcmp(c->state_names[s], "step") == 0)
            return nn_set_error(NN_ERR_ARGUMENT, "%s: state name 'step' is the step count's (desc.step_count)", fn);
        for (int t = 0; t < s; t++)
            if (strcmp(c->state_names[s], c->state_names[t]) == 0)
                return nn_set_error(NN_ERR_ARGUMENT, "%s: state '%s' is named twice", fn, c->state_names[s]);
    }
    for (int o = 0; o < d->option_count; o++) {
        NN_TRY(copy_name(fn, "an option's name", d->options[o], c->option_names[o], sizeof c->option_names[o]));
        if (strcmp(c->option_names[o], "lr") == 0 || strcmp(c->option_names[o], "weight_decay") == 0)
            return nn_set_error(NN_ERR_ARGUMENT, "%s: option '%s' is every optimizer's already", fn,
                                c->option_names[o]);
        if (!isfinite(d->option_values[o]))
            return nn_set_error(NN_ERR_ARGUMENT, "%s: option '%s' is %g; options are finite", fn, c->option_names[o],
                                d->option_values[o]);
        c->option_specs[o] = (nn_optimizer_option_spec){c->option_names[o], -FLT_MAX, FLT_MAX, false};
    }
    c->desc = *d;
    c->cls = (nn_optimizer_class){.name = c->name, .step = custom_step, .describe = custom_describe,
                                  .option_specs = c->option_specs, .option_count = d->option_count};
    return NN_OK;
}

nn_optimizer *nn_custom_optimizer_new(const nn_custom_optimizer_desc *desc, const nn_param_group *groups,
                                      int count) {
    const char *fn = "nn_custom_optimizer_new";
    if (!desc) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: desc is NULL", fn);
    for (int g = 0; groups && g < count; g++)
        if (groups[g].adamw)
            return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: group %d is marked adamw, which only Muon takes", fn, g);
    custom_optimizer *c = calloc(1, sizeof *c);
    if (!c) return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", fn);
    nn_status st = describe_class(fn, c, desc);
    if (st != NN_OK) {
        free(c);
        return NULL;
    }
    st = nn_optimizer_init_groups(&c->base, &c->cls, fn, groups, count);
    if (st == NN_OK && desc->step_count) st = nn_optimizer_add_step_state(&c->base);
    c->first_state = c->base.state_count;
    for (int s = 0; s < desc->state_count && st == NN_OK; s++) st = nn_optimizer_add_state(&c->base, c->state_names[s]);
    if (st != NN_OK) {
        nn_optimizer_free(&c->base);
        return NULL;
    }
    nn_optimizer_init_options(&c->base, desc->option_values);
    return &c->base;
}
