/* SGD as one kernel over every parameter (multi-tensor apply, issue 6).
 *
 * nn_sgd_new moves the parameters into one contiguous buffer (each
 * parameter tensor becomes a piece of it), and the gradients join a second
 * one the first time they exist (nn_grad_target makes them lazily, and a
 * parameter without a gradient must stay put, as in PyTorch). Then zero_grad
 * is one fill, the global norm one reduction and the update one kernel over
 * all elements. The learning rate lives on the device (scalars[0], the
 * squared norm in scalars[1]), so a recorded step replays with the rate last
 * written there (nn_sgd_set_lr, or a kernel writing nn_sgd_lr_tensor).
 *
 * A parameter that shares its storage with another tensor (a view, or one
 * already moved by another optimizer) is not moved; then, or while some
 * parameter has no gradient yet, the same kernel runs per parameter: the
 * same results, more launches. Nothing is read back in either path. */
#include <math.h>
#include <stdlib.h>

#include "core/internal.h"
#include "sgd_state.h"

struct nn_sgd {
    nn_sgd_options options;
    nn_ctx *ctx;
    int count;
    nn_tensor **params;
    int64_t *offsets;      /* element offset of each parameter in the flat buffers */
    int64_t total;         /* elements of all parameters */
    nn_tensor *flat_params, *flat_grads, *flat_velocity; /* [total]; velocity NULL without momentum */
    nn_tensor **velocity;  /* views of flat_velocity per parameter (NULL entries without momentum) */
    nn_tensor *scalars;    /* [2]: learning rate, squared global gradient norm */
    nn_tensor *lr;         /* scalars[0] as a tensor of its own (nn_sgd_lr_tensor) */
    nn_tensor *norm_sq;    /* scalars[1] */
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

static size_t byte_offset(const nn_sgd *opt, int i) { return (size_t)opt->offsets[i] * sizeof(float); }

/* Whether t lives at element `offset` of `flat`. */
static bool lives_in(const nn_tensor *t, const nn_tensor *flat, int64_t offset) {
    return t && t->storage == flat->storage && t->offset == flat->offset + (size_t)offset * sizeof(float);
}

/* Move a tensor into a flat buffer when it is its storage's only user. */
static nn_status move_if_alone(nn_tensor *t, nn_tensor *flat, size_t offset) {
    if (t->storage->refcount != 1 || t->offset != 0) return NN_OK;
    return nn_tensor_move_into(t, flat, offset);
}

/* Gradients made since the last call join flat_grads. */
static nn_status adopt_grads(nn_sgd *opt) {
    for (int i = 0; i < opt->count; i++) {
        nn_tensor *grad = opt->params[i]->grad;
        if (grad && !lives_in(grad, opt->flat_grads, opt->offsets[i]))
            NN_TRY(move_if_alone(grad, opt->flat_grads, byte_offset(opt, i)));
    }
    return NN_OK;
}

/* True when every parameter and gradient lives in the flat buffers, so one
 * kernel serves all of them. */
static bool all_flat(const nn_sgd *opt) {
    for (int i = 0; i < opt->count; i++)
        if (!lives_in(opt->params[i], opt->flat_params, opt->offsets[i]) ||
            !lives_in(opt->params[i]->grad, opt->flat_grads, opt->offsets[i]))
            return false;
    return true;
}

static nn_tensor *vector(nn_ctx *ctx, int64_t n) { return nn_tensor_new(ctx, NN_F32, 1, &n); }

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
    opt->offsets = calloc((size_t)count, sizeof *opt->offsets);
    if (!opt->params || !opt->velocity || !opt->offsets) {
        nn_sgd_free(opt);
        return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", fn);
    }
    for (int i = 0; i < count; i++) {
        opt->params[i] = nn_tensor_retain(params[i]);
        opt->count = i + 1;
        opt->offsets[i] = opt->total;
        opt->total += params[i]->numel;
    }
    nn_status status = NN_OK;
    opt->flat_params = vector(opt->ctx, opt->total);
    opt->flat_grads = opt->flat_params ? vector(opt->ctx, opt->total) : NULL;
    opt->scalars = opt->flat_grads ? vector(opt->ctx, 2) : NULL;
    if (!opt->scalars) status = nn_last_status();
    if (status == NN_OK && options->momentum > 0.0f) {
        opt->flat_velocity = vector(opt->ctx, opt->total);
        if (!opt->flat_velocity) status = nn_last_status();
        for (int i = 0; status == NN_OK && i < count; i++) {
            opt->velocity[i] = nn_tensor_view_at(opt->flat_velocity, byte_offset(opt, i), params[i]->ndim,
                                                 params[i]->shape);
            if (!opt->velocity[i]) status = nn_last_status();
        }
    }
    int64_t one = 1;
    if (status == NN_OK) {
        opt->lr = nn_tensor_view_at(opt->scalars, 0, 1, &one);
        opt->norm_sq = opt->lr ? nn_tensor_view_at(opt->scalars, sizeof(float), 1, &one) : NULL;
        if (!opt->norm_sq) status = nn_last_status();
    }
    if (status == NN_OK) status = nn_tensor_write(opt->lr, &options->lr, sizeof(float));
    for (int i = 0; status == NN_OK && i < count; i++)
        status = move_if_alone(opt->params[i], opt->flat_params, byte_offset(opt, i));
    if (status == NN_OK) status = adopt_grads(opt);
    if (status != NN_OK) {
        nn_sgd_free(opt);
        return NULL;
    }
    return opt;
}

/* ||all gradients||^2 into scalars[1], on the device. */
static nn_status sum_grad_squares(nn_sgd *opt, bool flat) {
    nn_buffer_ref out = nn_tensor_ref(opt->norm_sq);
    if (flat) {
        nn_pointwise_params p = {.n = opt->total};
        nn_buffer_ref args[2] = {nn_tensor_ref(opt->flat_grads), out};
        return nn_ctx_run(opt->ctx, NN_KERNEL_SUM_SQUARES, args, 2, &p);
    }
    int32_t accumulate = 0;
    for (int i = 0; i < opt->count; i++) {
        nn_tensor *grad = opt->params[i]->grad;
        if (!grad) continue;
        nn_pointwise_params p = {.n = grad->numel, .accumulate = accumulate};
        nn_buffer_ref args[2] = {nn_tensor_ref(grad), out};
        NN_TRY(nn_ctx_run(opt->ctx, NN_KERNEL_SUM_SQUARES, args, 2, &p));
        accumulate = 1;
    }
    if (!accumulate) NN_TRY(nn_tensor_fill(opt->norm_sq, 0.0f));
    return NN_OK;
}

static nn_status update(nn_sgd *opt, nn_tensor *param, nn_tensor *grad, nn_tensor *velocity, int64_t n) {
    const nn_sgd_options *o = &opt->options;
    nn_sgd_params p = {
        .n = n, .lr = o->lr /* not read: the kernel takes scalars[0] */, .momentum = o->momentum,
        .weight_decay = o->weight_decay, .clip_value = o->clip_value,
        .max_grad_norm = o->max_grad_norm, .nesterov = o->nesterov,
    };
    nn_buffer_ref none = {NULL, 0, 0};
    nn_buffer_ref args[4] = {nn_tensor_ref(param), nn_tensor_ref(grad), velocity ? nn_tensor_ref(velocity) : none,
                             nn_tensor_ref(opt->scalars)};
    return nn_ctx_run(opt->ctx, NN_KERNEL_SGD_UPDATE_DEVICE_LR, args, 4, &p);
}

nn_status nn_sgd_step(nn_sgd *opt) {
    if (!opt) return nn_set_error(NN_ERR_ARGUMENT, "nn_sgd_step: optimizer is NULL");
    NN_TRY(adopt_grads(opt));
    bool flat = all_flat(opt);
    if (opt->options.max_grad_norm > 0.0f) NN_TRY(sum_grad_squares(opt, flat));
    if (flat) return update(opt, opt->flat_params, opt->flat_grads, opt->flat_velocity, opt->total);
    for (int i = 0; i < opt->count; i++) {
        nn_tensor *param = opt->params[i];
        if (!param->grad) continue; /* unused in every backward so far, as PyTorch skips it */
        NN_TRY(update(opt, param, param->grad, opt->velocity[i], param->numel));
    }
    return NN_OK;
}

nn_status nn_sgd_zero_grad(nn_sgd *opt) {
    if (!opt) return nn_set_error(NN_ERR_ARGUMENT, "nn_sgd_zero_grad: optimizer is NULL");
    NN_TRY(adopt_grads(opt));
    if (all_flat(opt)) return nn_tensor_fill(opt->flat_grads, 0.0f);
    for (int i = 0; i < opt->count; i++) NN_TRY(nn_tensor_zero_grad(opt->params[i]));
    return NN_OK;
}

nn_tensor *nn_sgd_lr_tensor(nn_sgd *opt) {
    if (!opt) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_sgd_lr_tensor: optimizer is NULL");
    return opt->lr;
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
NN_SGD_SETTER(nn_sgd_set_clip_value, clip_value)
NN_SGD_SETTER(nn_sgd_set_max_grad_norm, max_grad_norm)
#undef NN_SGD_SETTER

/* The rate the update kernel reads is the device's copy: written here (an
 * upload ordered with the kernels, no sync). */
nn_status nn_sgd_set_lr(nn_sgd *opt, float lr) {
    if (!opt) return nn_set_error(NN_ERR_ARGUMENT, "nn_sgd_set_lr: optimizer is NULL");
    nn_sgd_options changed = opt->options;
    changed.lr = lr;
    NN_TRY(check_options("nn_sgd_set_lr", &changed));
    NN_TRY(nn_tensor_write(opt->lr, &lr, sizeof lr));
    opt->options = changed;
    return NN_OK;
}

const nn_sgd_options *nn_sgd_get_options(const nn_sgd *opt) { return opt ? &opt->options : NULL; }

void nn_sgd_free(nn_sgd *opt) {
    if (!opt) return;
    for (int i = 0; i < opt->count; i++) {
        nn_tensor_release(opt->params[i]);
        if (opt->velocity[i]) nn_tensor_release(opt->velocity[i]);
    }
    /* The parameters and gradients keep the flat storage alive themselves. */
    nn_tensor *owned[] = {opt->flat_params, opt->flat_grads, opt->flat_velocity, opt->lr, opt->norm_sq,
                          opt->scalars};
    for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++)
        if (owned[i]) nn_tensor_free(owned[i]);
    free(opt->params);
    free(opt->velocity);
    free(opt->offsets);
    free(opt);
}

/* ---- state access for the training-state files (sgd_state.h) ---- */

int nn_sgd_state_count(const nn_sgd *opt) { return opt->count; }
nn_tensor *nn_sgd_state_param(const nn_sgd *opt, int i) { return opt->params[i]; }
nn_tensor *nn_sgd_state_velocity(const nn_sgd *opt, int i) { return opt->velocity[i]; }
