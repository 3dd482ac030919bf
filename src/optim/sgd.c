/* SGD: one update kernel per parameter, run on the parameters' device. The
 * global gradient norm, when clipping by norm, is summed on the device into
 * a one-element buffer that the update kernels read: nothing is read back. */
#include <math.h>
#include <stdlib.h>

#include "core/internal.h"
#include "sgd_state.h"

struct nn_sgd {
    nn_sgd_options options;
    nn_ctx *ctx;
    int count;
    nn_tensor **params;
    nn_tensor **velocity; /* NULL entries without momentum */
    nn_tensor *grad_norm_sq;
};

static nn_status check_options(const char *fn, const nn_sgd_options *o) {
    if (!(isfinite(o->lr) && o->lr >= 0.0f))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: lr must be finite and >= 0, got %g", fn, o->lr);
    if (!(isfinite(o->momentum) && o->momentum >= 0.0f))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: momentum must be >= 0, got %g", fn, o->momentum);
    if (!(isfinite(o->weight_decay) && o->weight_decay >= 0.0f))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: weight_decay must be >= 0, got %g", fn,
                            o->weight_decay);
    if (o->nesterov && o->momentum <= 0.0f)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: nesterov needs momentum > 0", fn);
    if (!(o->clip_value >= 0.0f) || isnan(o->clip_value))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: clip_value must be >= 0 (0 = off), got %g", fn,
                            o->clip_value);
    if (!(o->max_grad_norm >= 0.0f) || isnan(o->max_grad_norm))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: max_grad_norm must be >= 0 (0 = off), got %g", fn,
                            o->max_grad_norm);
    return NN_OK;
}

static nn_status check_params(const char *fn, nn_tensor *const *params, int count) {
    if (!params || count < 1)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: need at least one parameter, got %d%s", fn, count,
                            params ? "" : " (params is NULL)");
    for (int i = 0; i < count; i++) {
        nn_tensor *p = params[i];
        if (!p) return nn_set_error(NN_ERR_ARGUMENT, "%s: parameter %d is NULL", fn, i);
        if (p->dtype != NN_F32 || !p->requires_grad)
            return nn_set_error(NN_ERR_ARGUMENT, "%s: parameter %d must be float32 and require grad",
                                fn, i);
        if (p->ctx != params[0]->ctx)
            return nn_set_error(NN_ERR_STATE, "%s: parameters %d and 0 belong to different contexts",
                                fn, i);
        for (int j = 0; j < i; j++)
            if (params[j] == p)
                return nn_set_error(NN_ERR_ARGUMENT, "%s: parameter %d appears twice (also at %d)",
                                    fn, i, j);
    }
    return NN_OK;
}

nn_sgd *nn_sgd_new(nn_tensor *const *params, int count, const nn_sgd_options *options) {
    const char *fn = "nn_sgd_new";
    if (!options) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: options is NULL", fn);
    if (check_options(fn, options) || check_params(fn, params, count)) return NULL;
    nn_sgd *opt = calloc(1, sizeof *opt);
    if (!opt) return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", fn);
    opt->options = *options;
    opt->ctx = params[0]->ctx;
    opt->params = calloc((size_t)count, sizeof *opt->params);
    opt->velocity = calloc((size_t)count, sizeof *opt->velocity);
    if (!opt->params || !opt->velocity) {
        nn_sgd_free(opt);
        return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", fn);
    }
    for (int i = 0; i < count; i++) {
        opt->params[i] = nn_tensor_retain(params[i]);
        opt->count = i + 1;
        if (options->momentum > 0.0f) {
            opt->velocity[i] = nn_tensor_new(opt->ctx, NN_F32, params[i]->ndim, params[i]->shape);
            if (!opt->velocity[i]) {
                nn_sgd_free(opt);
                return NULL;
            }
        }
    }
    int64_t one = 1;
    opt->grad_norm_sq = nn_tensor_new(opt->ctx, NN_F32, 1, &one);
    if (!opt->grad_norm_sq) {
        nn_sgd_free(opt);
        return NULL;
    }
    return opt;
}

/* ||all gradients||^2 into opt->grad_norm_sq, on the device. */
static nn_status sum_grad_squares(nn_sgd *opt) {
    int32_t accumulate = 0;
    for (int i = 0; i < opt->count; i++) {
        nn_tensor *grad = opt->params[i]->grad;
        if (!grad) continue;
        nn_pointwise_params p = {.n = grad->numel, .accumulate = accumulate};
        nn_buffer_ref args[2] = {nn_tensor_ref(grad), nn_tensor_ref(opt->grad_norm_sq)};
        NN_TRY(nn_ctx_run(opt->ctx, NN_KERNEL_SUM_SQUARES, args, 2, &p));
        accumulate = 1;
    }
    if (!accumulate) NN_TRY(nn_tensor_fill(opt->grad_norm_sq, 0.0f));
    return NN_OK;
}

nn_status nn_sgd_step(nn_sgd *opt) {
    if (!opt) return nn_set_error(NN_ERR_ARGUMENT, "nn_sgd_step: optimizer is NULL");
    const nn_sgd_options *o = &opt->options;
    if (o->max_grad_norm > 0.0f) NN_TRY(sum_grad_squares(opt));
    for (int i = 0; i < opt->count; i++) {
        nn_tensor *param = opt->params[i];
        if (!param->grad) continue; /* unused in every backward so far, as PyTorch skips it */
        nn_sgd_params p = {
            .n = param->numel, .lr = o->lr, .momentum = o->momentum,
            .weight_decay = o->weight_decay, .clip_value = o->clip_value,
            .max_grad_norm = o->max_grad_norm, .nesterov = o->nesterov,
        };
        nn_buffer_ref none = {NULL, 0, 0};
        nn_buffer_ref args[4] = {
            nn_tensor_ref(param), nn_tensor_ref(param->grad),
            opt->velocity[i] ? nn_tensor_ref(opt->velocity[i]) : none,
            o->max_grad_norm > 0.0f ? nn_tensor_ref(opt->grad_norm_sq) : none,
        };
        NN_TRY(nn_ctx_run(opt->ctx, NN_KERNEL_SGD_UPDATE, args, 4, &p));
    }
    return NN_OK;
}

nn_status nn_sgd_zero_grad(nn_sgd *opt) {
    if (!opt) return nn_set_error(NN_ERR_ARGUMENT, "nn_sgd_zero_grad: optimizer is NULL");
    for (int i = 0; i < opt->count; i++) NN_TRY(nn_tensor_zero_grad(opt->params[i]));
    return NN_OK;
}

/* Setters validate the changed options as a whole before applying them. */
static nn_status apply_options(const char *fn, nn_sgd *opt, const nn_sgd_options *changed) {
    NN_TRY(check_options(fn, changed));
    opt->options = *changed;
    return NN_OK;
}

#define NN_SGD_SETTER(function, field)                                                 \
    nn_status function(nn_sgd *opt, float value) {                                     \
        if (!opt) return nn_set_error(NN_ERR_ARGUMENT, #function ": optimizer is NULL"); \
        nn_sgd_options changed = opt->options;                                         \
        changed.field = value;                                                         \
        return apply_options(#function, opt, &changed);                                \
    }
NN_SGD_SETTER(nn_sgd_set_lr, lr)
NN_SGD_SETTER(nn_sgd_set_clip_value, clip_value)
NN_SGD_SETTER(nn_sgd_set_max_grad_norm, max_grad_norm)
#undef NN_SGD_SETTER

const nn_sgd_options *nn_sgd_get_options(const nn_sgd *opt) { return opt ? &opt->options : NULL; }

void nn_sgd_free(nn_sgd *opt) {
    if (!opt) return;
    for (int i = 0; i < opt->count; i++) {
        nn_tensor_release(opt->params[i]);
        nn_tensor_free(opt->velocity[i]);
    }
    nn_tensor_free(opt->grad_norm_sq);
    free(opt->params);
    free(opt->velocity);
    free(opt);
}

/* ---- state access for the training-state files (sgd_state.h) ---- */

int nn_sgd_state_count(const nn_sgd *opt) { return opt->count; }
nn_tensor *nn_sgd_state_param(const nn_sgd *opt, int i) { return opt->params[i]; }
nn_tensor *nn_sgd_state_velocity(const nn_sgd *opt, int i) { return opt->velocity[i]; }
