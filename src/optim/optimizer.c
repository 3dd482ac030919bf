/* The optimizer interface (include/nn_optim.h): what is the same for every
 * optimizer, over its class's step. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optimizer.h"
#include "core/ctx_guard.h"

nn_status nn_optimizer_check_lr(const char *fn, float lr) {
    if (!(isfinite(lr) && lr >= 0.0f))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: lr must be finite and >= 0, got %g", fn, lr);
    return NN_OK;
}

nn_status nn_optimizer_check_weight_decay(const char *fn, float weight_decay) {
    if (!(isfinite(weight_decay) && weight_decay >= 0.0f))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: weight_decay must be finite and >= 0, got %g", fn, weight_decay);
    return NN_OK;
}

nn_status nn_optimizer_init(nn_optimizer *opt, const nn_optimizer_class *cls, const char *fn,
                            nn_tensor *const *params, int count, float lr) {
    const nn_param_group group = {.params = params, .count = count, .lr = lr};
    opt->cls = cls;
    opt->step_state = -1;
    if (!params) return nn_set_error(NN_ERR_ARGUMENT, "%s: need at least one parameter, got %d (params is NULL)", fn,
                                     count);
    return nn_optimizer_init_groups(opt, cls, fn, &group, 1);
}

static nn_status check_groups(const char *fn, const nn_param_group *groups, int count) {
    if (!groups || count < 1)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: need at least one parameter group, got %d%s", fn, count,
                            groups ? "" : " (groups is NULL)");
    for (int g = 0; g < count; g++) {
        if (!groups[g].params || groups[g].count < 1)
            return nn_set_error(NN_ERR_ARGUMENT, "%s: group %d needs at least one parameter, got %d", fn, g,
                                groups[g].count);
        if (!(isfinite(groups[g].lr) && groups[g].lr >= 0.0f))
            return nn_set_error(NN_ERR_ARGUMENT, "%s: group %d: lr must be finite and >= 0, got %g", fn, g,
                                groups[g].lr);
        if (!(isfinite(groups[g].weight_decay) && groups[g].weight_decay >= 0.0f))
            return nn_set_error(NN_ERR_ARGUMENT, "%s: group %d: weight_decay must be finite and >= 0, got %g", fn, g,
                                groups[g].weight_decay);
    }
    return NN_OK;
}

nn_status nn_optimizer_init_groups(nn_optimizer *opt, const nn_optimizer_class *cls, const char *fn,
                                   const nn_param_group *groups, int count) {
    opt->cls = cls;
    opt->step_state = -1;
    NN_TRY(check_groups(fn, groups, count));
    int total = 0;
    for (int g = 0; g < count; g++) total += groups[g].count;
    nn_tensor **params = calloc((size_t)total, sizeof *params);
    opt->group_of = calloc((size_t)total, sizeof *opt->group_of);
    opt->groups = calloc((size_t)count, sizeof *opt->groups);
    if (!params || !opt->group_of || !opt->groups) {
        free(params);
        return nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", fn);
    }
    for (int g = 0, i = 0; g < count; g++)
        for (int k = 0; k < groups[g].count; k++, i++) {
            params[i] = groups[g].params[k];
            opt->group_of[i] = g;
        }
    opt->lr = groups[0].lr;
    nn_status st = nn_optimizer_check_lr(fn, opt->lr);
    if (st == NN_OK) st = nn_param_set_init(&opt->set, fn, params, total, opt->lr);
    free(params);
    NN_TRY(st);
    opt->groups[0] = (nn_optimizer_group){groups[0].lr, groups[0].weight_decay, groups[0].lr, opt->set.lr, {0}};
    opt->group_count = 1;
    for (int g = 1; g < count; g++) NN_TRY(nn_optimizer_add_group(opt, groups[g].lr, groups[g].weight_decay));
    return NN_OK;
}

nn_status nn_optimizer_add_group(nn_optimizer *opt, float lr, float weight_decay) {
    nn_optimizer_group *grown = realloc(opt->groups, (size_t)(opt->group_count + 1) * sizeof *grown);
    if (!grown) return nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", opt->cls->name);
    opt->groups = grown;
    nn_optimizer_group *group = &opt->groups[opt->group_count++];
    *group = (nn_optimizer_group){lr, weight_decay, lr, NULL, {0}};
    memcpy(group->option, opt->groups[0].option, sizeof group->option);
    const int64_t one = 1;
    group->lr_tensor = nn_tensor_new(opt->set.ctx, NN_F32, 1, &one);
    if (!group->lr_tensor) return nn_last_status();
    return nn_tensor_write(group->lr_tensor, &lr, sizeof lr);
}

void nn_optimizer_assign_group(nn_optimizer *opt, int param, int group) { opt->group_of[param] = group; }

void nn_optimizer_init_options(nn_optimizer *opt, const float *values) {
    for (int g = 0; g < opt->group_count; g++)
        for (int i = 0; i < opt->cls->option_count; i++) opt->groups[g].option[i] = values[i];
}

nn_status nn_optimizer_add_step_state(nn_optimizer *opt) {
    if (opt->state_count == NN_OPTIMIZER_MAX_STATES)
        return nn_set_error(NN_ERR_STATE, "%s: more than %d state tensors per parameter", opt->cls->name,
                            NN_OPTIMIZER_MAX_STATES);
    nn_param_set *set = &opt->set;
    nn_flat_state *state = &opt->states[opt->state_count];
    *state = (nn_flat_state){0};
    const int64_t groups = opt->group_count, one = 1;
    state->views = calloc((size_t)set->count, sizeof *state->views);
    state->flat = state->views ? nn_tensor_new(set->ctx, NN_I32, 1, &groups) : NULL; /* zeros */
    nn_status st = state->flat ? NN_OK : state->views ? nn_last_status()
                                                      : nn_set_error(NN_ERR_MEMORY, "step state: out of host memory");
    /* Each parameter's 'step' is its group's counter. */
    for (int i = 0; i < set->count && st == NN_OK; i++) {
        state->views[i] = nn_tensor_view_at(state->flat, (size_t)opt->group_of[i] * sizeof(int32_t), 1, &one);
        if (!state->views[i]) st = nn_last_status();
    }
    if (st != NN_OK) {
        nn_param_set_state_free(set, state);
        return st;
    }
    opt->step_state = opt->state_count;
    opt->state_names[opt->state_count++] = "step";
    return NN_OK;
}

static nn_buffer_ref slice(nn_buffer_ref ref, int64_t first, int64_t n) {
    ref.offset += (size_t)first * sizeof(float);
    ref.bytes = (size_t)n * sizeof(float);
    return ref;
}

nn_status nn_optimizer_advance_steps(nn_optimizer *opt, bool flat) {
    if (opt->step_state < 0) return NN_OK;
    nn_buffer_ref counters = nn_tensor_ref(opt->states[opt->step_state].flat);
    for (int g = 0; g < opt->group_count; g++) {
        bool has_grad = flat;
        for (int i = 0; i < opt->set.count && !has_grad; i++)
            has_grad = opt->group_of[i] == g && opt->set.params[i]->grad;
        if (!has_grad) continue;
        nn_counter_params p = {.delta = 1};
        nn_buffer_ref counter[2] = {slice(counters, g, 1), nn_loss_scaler_skip(opt)};
        NN_TRY(nn_ctx_run(opt->set.ctx, NN_KERNEL_COUNTER_ADD, counter, 2, &p));
    }
    return NN_OK;
}

static void run_refs(nn_optimizer *opt, nn_optimizer_run *run) {
    nn_optimizer_group *group = &opt->groups[run->group];
    run->lr = nn_tensor_ref(group->lr_tensor);
    run->step = opt->step_state >= 0 ? slice(nn_tensor_ref(opt->states[opt->step_state].flat), run->group, 1)
                                     : (nn_buffer_ref){0};
    run->skip = nn_loss_scaler_skip(opt);
}

nn_status nn_optimizer_for_each_run(nn_optimizer *opt, bool flat,
                                    nn_status (*update)(nn_optimizer *opt, const nn_optimizer_run *run)) {
    nn_param_set *set = &opt->set;
    for (int i = 0; i < set->count;) {
        nn_optimizer_run run = {.group = opt->group_of[i], .first = i, .count = 1};
        if (flat) {
            while (i + run.count < set->count && opt->group_of[i + run.count] == run.group) run.count++;
            const int64_t first = set->offsets[i], last = i + run.count;
            run.n = (last < set->count ? set->offsets[last] : set->total) - first;
            run.param = slice(nn_tensor_ref(set->flat_params), first, run.n);
            run.grad = slice(nn_tensor_ref(set->flat_grads), first, run.n);
            for (int s = 0; s < opt->state_count; s++)
                if (s != opt->step_state) run.state[s] = slice(nn_tensor_ref(opt->states[s].flat), first, run.n);
        } else {
            nn_tensor *param = set->params[i];
            if (!param->grad) { /* never received one so far: skipped, as PyTorch does */
                i++;
                continue;
            }
            run.n = param->numel;
            run.param = nn_tensor_ref(param);
            run.grad = nn_tensor_ref(param->grad);
            for (int s = 0; s < opt->state_count; s++)
                if (s != opt->step_state) run.state[s] = nn_tensor_ref(opt->states[s].views[i]);
        }
        run_refs(opt, &run);
        NN_TRY(update(opt, &run));
        i += run.count;
    }
    return NN_OK;
}

nn_status nn_optimizer_add_state(nn_optimizer *opt, const char *name) {
    if (opt->state_count == NN_OPTIMIZER_MAX_STATES)
        return nn_set_error(NN_ERR_STATE, "%s: more than %d state tensors per parameter", opt->cls->name,
                            NN_OPTIMIZER_MAX_STATES);
    nn_flat_state *state = &opt->states[opt->state_count];
    nn_status st = nn_param_set_state_new(&opt->set, state);
    if (st != NN_OK) {
        nn_param_set_state_free(&opt->set, state);
        return st;
    }
    opt->state_names[opt->state_count++] = name;
    return NN_OK;
}

int nn_optimizer_describe_numbers(nn_optimizer_option *out, int capacity, const nn_optimizer_number *numbers,
                                  int count) {
    int n = 0;
    for (; n < count && n < capacity; n++) {
        out[n].name = numbers[n].name;
        snprintf(out[n].value, sizeof out[n].value, "%.9g", numbers[n].value);
    }
    return n;
}

int nn_optimizer_describe(const nn_optimizer *opt, nn_optimizer_option *out, int capacity) {
    return opt->cls->describe ? opt->cls->describe(opt, out, capacity) : 0;
}

nn_status nn_optimizer_prepare_grads(nn_optimizer *opt) {
    nn_status status = nn_param_set_adopt_grads(&opt->set);
    if (status == NN_OK && opt->grad_hook.before_update)
        status = opt->grad_hook.before_update(opt, opt->grad_hook.user);
    return status;
}

nn_status nn_optimizer_step(nn_optimizer *opt) {
    if (!opt) return nn_set_error(NN_ERR_ARGUMENT, "nn_optimizer_step: optimizer is NULL");
    NN_TRY(nn_ctx_enter(opt->set.ctx, "nn_optimizer_step"));
    /* nn_optimizer_unscale_grads prepared them already this step */
    nn_status status = nn_loss_scaler_unscaled(opt) ? NN_OK : nn_optimizer_prepare_grads(opt);
    if (status == NN_OK && opt->loss_scaler) status = nn_loss_scaler_before_update(opt);
    if (status == NN_OK) status = opt->cls->step(opt, nn_param_set_is_flat(&opt->set));
    if (status == NN_OK && opt->loss_scaler) status = nn_loss_scaler_after_update(opt);
    /* Written in place: a backward of a forward recorded before refuses them (autograd.c). */
    for (int i = 0; status == NN_OK && i < opt->set.count; i++) nn_tensor_written(opt->set.params[i]);
    nn_ctx_leave(opt->set.ctx);
    return status;
}

nn_status nn_optimizer_zero_grad(nn_optimizer *opt) {
    if (!opt) return nn_set_error(NN_ERR_ARGUMENT, "nn_optimizer_zero_grad: optimizer is NULL");
    return nn_param_set_zero_grad(&opt->set);
}

static nn_status write_group_lr(nn_optimizer *opt, int g, float lr) {
    NN_TRY(nn_tensor_write(opt->groups[g].lr_tensor, &lr, sizeof lr));
    opt->groups[g].lr = lr;
    if (g == 0) {
        opt->lr = lr;
        if (opt->cls->lr_changed) opt->cls->lr_changed(opt);
    }
    return NN_OK;
}

/* The rate the update reads is the device's copy: written here (an upload
 * ordered with the kernels, no sync). */
nn_status nn_optimizer_set_lr(nn_optimizer *opt, float lr) {
    if (!opt) return nn_set_error(NN_ERR_ARGUMENT, "nn_optimizer_set_lr: optimizer is NULL");
    NN_TRY(nn_optimizer_check_lr("nn_optimizer_set_lr", lr));
    const float initial = opt->groups[0].initial_lr;
    for (int g = 1; g < opt->group_count && initial > 0.0f; g++)
        NN_TRY(write_group_lr(opt, g, opt->groups[g].initial_lr * (lr / initial)));
    return write_group_lr(opt, 0, lr);
}

static nn_status check_group(const char *fn, const nn_optimizer *opt, int group) {
    if (!opt) return nn_set_error(NN_ERR_ARGUMENT, "%s: optimizer is NULL", fn);
    if (group < 0 || group >= opt->group_count)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: group %d is not in [0, %d)", fn, group, opt->group_count);
    return NN_OK;
}

int nn_optimizer_group_count(const nn_optimizer *opt) { return opt ? opt->group_count : 0; }

nn_status nn_optimizer_set_group_lr(nn_optimizer *opt, int group, float lr) {
    NN_TRY(check_group("nn_optimizer_set_group_lr", opt, group));
    NN_TRY(nn_optimizer_check_lr("nn_optimizer_set_group_lr", lr));
    return write_group_lr(opt, group, lr);
}

float nn_optimizer_group_lr(const nn_optimizer *opt, int group) {
    return opt && group >= 0 && group < opt->group_count ? opt->groups[group].lr : 0.0f;
}

nn_tensor *nn_optimizer_group_lr_tensor(nn_optimizer *opt, int group) {
    if (check_group("nn_optimizer_group_lr_tensor", opt, group)) return NULL;
    return opt->groups[group].lr_tensor;
}

/* ---- a group's options by name: lr, weight_decay, then the class's ---- */

int nn_optimizer_option_count(const nn_optimizer *opt) { return opt ? 2 + opt->cls->option_count : 0; }

const char *nn_optimizer_option_name(const nn_optimizer *opt, int i) {
    if (!opt || i < 0 || i >= nn_optimizer_option_count(opt)) return NULL;
    return i == 0 ? "lr" : i == 1 ? "weight_decay" : opt->cls->option_specs[i - 2].name;
}

/* The option's index as nn_optimizer_option_name numbers them, or -1 with the error set. */
static int option_index(const char *fn, const nn_optimizer *opt, const char *name) {
    if (!name) return nn_set_error(NN_ERR_ARGUMENT, "%s: name is NULL", fn), -1;
    for (int i = 0; i < nn_optimizer_option_count(opt); i++)
        if (!strcmp(nn_optimizer_option_name(opt, i), name)) return i;
    char known[160] = "";
    for (int i = 0; i < nn_optimizer_option_count(opt); i++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
                 nn_optimizer_option_name(opt, i));
    nn_set_error(NN_ERR_ARGUMENT, "%s: %s has no per-group option '%s' (it has %s)", fn, opt->cls->name, name, known);
    return -1;
}

nn_status nn_optimizer_group_option(const nn_optimizer *opt, int group, const char *name, float *value) {
    const char *fn = "nn_optimizer_group_option";
    NN_TRY(check_group(fn, opt, group));
    if (!value) return nn_set_error(NN_ERR_ARGUMENT, "%s: value is NULL", fn);
    const int i = option_index(fn, opt, name);
    if (i < 0) return nn_last_status();
    const nn_optimizer_group *g = &opt->groups[group];
    *value = i == 0 ? g->lr : i == 1 ? g->weight_decay : g->option[i - 2];
    return NN_OK;
}

nn_status nn_optimizer_set_group_option(nn_optimizer *opt, int group, const char *name, float value) {
    const char *fn = "nn_optimizer_set_group_option";
    NN_TRY(check_group(fn, opt, group));
    const int i = option_index(fn, opt, name);
    if (i < 0) return nn_last_status();
    if (i == 0) return nn_optimizer_set_group_lr(opt, group, value);
    nn_optimizer_group *g = &opt->groups[group];
    if (i == 1) {
        NN_TRY(nn_optimizer_check_weight_decay(fn, value));
        if (g->weight_decay != value) nn_ctx_constants_changed(opt->set.ctx);
        g->weight_decay = value;
        return NN_OK;
    }
    const nn_optimizer_option_spec *spec = &opt->cls->option_specs[i - 2];
    if (!(value >= spec->low && (spec->high_open ? value < spec->high : value <= spec->high)))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: %s's %s must be in [%g, %g%c, got %g", fn, opt->cls->name,
                            spec->name, spec->low, spec->high, spec->high_open ? ')' : ']', value);
    if (opt->cls->check_option) NN_TRY(opt->cls->check_option(opt, group, i - 2, value));
    if (g->option[i - 2] != value) nn_ctx_constants_changed(opt->set.ctx);
    g->option[i - 2] = value;
    return NN_OK;
}

float nn_optimizer_lr(const nn_optimizer *opt) { return opt ? opt->lr : 0.0f; }

nn_tensor *nn_optimizer_lr_tensor(nn_optimizer *opt) {
    if (!opt) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_optimizer_lr_tensor: optimizer is NULL");
    return opt->set.lr;
}

const char *nn_optimizer_name(const nn_optimizer *opt) { return opt ? opt->cls->name : ""; }
int nn_optimizer_param_count(const nn_optimizer *opt) { return opt ? opt->set.count : 0; }

nn_tensor *nn_optimizer_param(const nn_optimizer *opt, int i) {
    return opt && i >= 0 && i < opt->set.count ? opt->set.params[i] : NULL;
}

int nn_optimizer_state_count(const nn_optimizer *opt) { return opt ? opt->state_count : 0; }

const char *nn_optimizer_state_name(const nn_optimizer *opt, int state) {
    return opt && state >= 0 && state < opt->state_count ? opt->state_names[state] : NULL;
}

nn_tensor *nn_optimizer_state(const nn_optimizer *opt, int param, int state) {
    if (!opt || param < 0 || param >= opt->set.count || state < 0 || state >= opt->state_count) return NULL;
    return opt->states[state].views[param];
}

nn_status nn_optimizer_set_grad_hook(nn_optimizer *opt, const nn_grad_hook *hook) {
    if (opt->grad_hook.before_update)
        return nn_set_error(NN_ERR_STATE, "%s optimizer: already has a gradient hook (data parallelism is set once)",
                            opt->cls->name);
    opt->grad_hook = *hook;
    return NN_OK;
}

void nn_optimizer_free(nn_optimizer *opt) {
    if (!opt) return;
    if (opt->grad_hook.release) opt->grad_hook.release(opt->grad_hook.user);
    nn_loss_scaler_free(opt->loss_scaler);
    if (opt->cls && opt->cls->release) opt->cls->release(opt);
    for (int i = 0; i < opt->state_count; i++) nn_param_set_state_free(&opt->set, &opt->states[i]);
    for (int g = 1; g < opt->group_count; g++)
        if (opt->groups[g].lr_tensor) nn_tensor_free(opt->groups[g].lr_tensor);
    free(opt->groups);
    free(opt->group_of);
    nn_param_set_free(&opt->set);
    free(opt);
}
