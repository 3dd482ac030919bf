/* The optimizer interface (include/nn_optim.h): what is the same for every
 * optimizer, over its class's step. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "optimizer.h"

nn_status nn_optimizer_check_lr(const char *fn, float lr) {
    if (!(isfinite(lr) && lr >= 0.0f))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: lr must be finite and >= 0, got %g", fn, lr);
    return NN_OK;
}

nn_status nn_optimizer_init(nn_optimizer *opt, const nn_optimizer_class *cls, const char *fn,
                            nn_tensor *const *params, int count, float lr) {
    opt->cls = cls;
    opt->lr = lr;
    NN_TRY(nn_optimizer_check_lr(fn, lr));
    return nn_param_set_init(&opt->set, fn, params, count, lr);
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

int nn_optimizer_describe(const nn_optimizer *opt, nn_optimizer_option *out, int capacity) {
    return opt->cls->describe ? opt->cls->describe(opt, out, capacity) : 0;
}

nn_status nn_optimizer_step(nn_optimizer *opt) {
    if (!opt) return nn_set_error(NN_ERR_ARGUMENT, "nn_optimizer_step: optimizer is NULL");
    NN_TRY(nn_param_set_adopt_grads(&opt->set));
    return opt->cls->step(opt, nn_param_set_is_flat(&opt->set));
}

nn_status nn_optimizer_zero_grad(nn_optimizer *opt) {
    if (!opt) return nn_set_error(NN_ERR_ARGUMENT, "nn_optimizer_zero_grad: optimizer is NULL");
    return nn_param_set_zero_grad(&opt->set);
}

/* The rate the update reads is the device's copy: written here (an upload
 * ordered with the kernels, no sync). */
nn_status nn_optimizer_set_lr(nn_optimizer *opt, float lr) {
    if (!opt) return nn_set_error(NN_ERR_ARGUMENT, "nn_optimizer_set_lr: optimizer is NULL");
    NN_TRY(nn_optimizer_check_lr("nn_optimizer_set_lr", lr));
    NN_TRY(nn_tensor_write(opt->set.lr, &lr, sizeof lr));
    opt->lr = lr;
    if (opt->cls->lr_changed) opt->cls->lr_changed(opt);
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

void nn_optimizer_free(nn_optimizer *opt) {
    if (!opt) return;
    if (opt->cls && opt->cls->release) opt->cls->release(opt);
    for (int i = 0; i < opt->state_count; i++) nn_param_set_state_free(&opt->set, &opt->states[i]);
    nn_param_set_free(&opt->set);
    free(opt);
}
