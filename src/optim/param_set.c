/* The flat buffers every optimizer keeps its parameters in (param_set.h). */
#include <stdio.h>
#include <stdlib.h>

#include "param_set.h"
#include "core/context_mismatch.h"

static nn_status check_params(const char *fn, nn_tensor *const *params, int count) {
    if (!params || count < 1)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: need at least one parameter, got %d%s", fn, count,
                            params ? "" : " (params is NULL)");
    for (int i = 0; i < count; i++) {
        nn_tensor *p = params[i];
        if (!p) return nn_set_error(NN_ERR_ARGUMENT, "%s: parameter %d is NULL", fn, i);
        if (p->dtype != NN_F32 || !p->requires_grad)
            return nn_set_error(NN_ERR_ARGUMENT, "%s: parameter %d must be float32 and require grad", fn, i);
        if (p->ctx != params[0]->ctx) {
            char name[32];
            snprintf(name, sizeof name, "parameter %d", i);
            return nn_error_other_context(NN_ERR_STATE, fn, "parameter 0", params[0]->ctx, name, p->ctx);
        }
        for (int j = 0; j < i; j++)
            if (params[j] == p)
                return nn_set_error(NN_ERR_ARGUMENT, "%s: parameter %d appears twice (also at %d)", fn, i, j);
    }
    return NN_OK;
}

static size_t byte_offset(const nn_param_set *s, int i) { return (size_t)s->offsets[i] * sizeof(float); }

/* Whether t lives at element `offset` of `flat`. */
static bool lives_in(const nn_tensor *t, const nn_tensor *flat, int64_t offset) {
    return t && t->storage == flat->storage && t->offset == flat->offset + (size_t)offset * sizeof(float);
}

/* Move a tensor into a flat buffer when it is its storage's only user. */
static nn_status move_if_alone(nn_tensor *t, nn_tensor *flat, size_t offset) {
    if (t->storage->refcount != 1 || t->offset != 0) return NN_OK;
    return nn_tensor_move_into(t, flat, offset);
}

static nn_tensor *vector(nn_ctx *ctx, int64_t n) { return nn_tensor_new(ctx, NN_F32, 1, &n); }

nn_status nn_param_set_init(nn_param_set *s, const char *fn, nn_tensor *const *params, int count, float lr) {
    *s = (nn_param_set){0};
    NN_TRY(check_params(fn, params, count));
    s->ctx = params[0]->ctx;
    s->params = calloc((size_t)count, sizeof *s->params);
    s->offsets = calloc((size_t)count, sizeof *s->offsets);
    if (!s->params || !s->offsets) return nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", fn);
    for (int i = 0; i < count; i++) {
        s->params[i] = nn_tensor_retain(params[i]);
        s->count = i + 1;
        s->offsets[i] = s->total;
        s->total += params[i]->numel;
    }
    s->flat_params = vector(s->ctx, s->total);
    s->flat_grads = s->flat_params ? vector(s->ctx, s->total) : NULL;
    s->scalars = s->flat_grads ? vector(s->ctx, 2) : NULL;
    if (!s->scalars) return nn_last_status();
    const int64_t one = 1;
    s->lr = nn_tensor_view_at(s->scalars, 0, 1, &one);
    s->norm_sq = s->lr ? nn_tensor_view_at(s->scalars, sizeof(float), 1, &one) : NULL;
    if (!s->norm_sq) return nn_last_status();
    NN_TRY(nn_tensor_write(s->lr, &lr, sizeof lr));
    for (int i = 0; i < count; i++) NN_TRY(move_if_alone(s->params[i], s->flat_params, byte_offset(s, i)));
    return nn_param_set_adopt_grads(s);
}

void nn_param_set_free(nn_param_set *s) {
    for (int i = 0; i < s->count; i++) nn_tensor_release(s->params[i]);
    /* The parameters and gradients keep the flat storage alive themselves. */
    nn_tensor *owned[] = {s->flat_params, s->flat_grads, s->lr, s->norm_sq, s->scalars};
    for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++)
        if (owned[i]) nn_tensor_free(owned[i]);
    free(s->params);
    free(s->offsets);
    *s = (nn_param_set){0};
}

nn_status nn_param_set_state_new(nn_param_set *s, nn_flat_state *out) {
    *out = (nn_flat_state){0};
    out->views = calloc((size_t)s->count, sizeof *out->views);
    if (!out->views) return nn_set_error(NN_ERR_MEMORY, "optimizer state: out of host memory");
    out->flat = vector(s->ctx, s->total); /* zeros */
    if (!out->flat) return nn_last_status();
    for (int i = 0; i < s->count; i++) {
        out->views[i] = nn_tensor_view_at(out->flat, byte_offset(s, i), s->params[i]->ndim, s->params[i]->shape);
        if (!out->views[i]) return nn_last_status();
    }
    return NN_OK;
}

void nn_param_set_state_free(nn_param_set *s, nn_flat_state *state) {
    for (int i = 0; state->views && i < s->count; i++)
        if (state->views[i]) nn_tensor_release(state->views[i]);
    if (state->flat) nn_tensor_free(state->flat);
    free(state->views);
    *state = (nn_flat_state){0};
}

nn_status nn_param_set_adopt_grads(nn_param_set *s) {
    for (int i = 0; i < s->count; i++) {
        nn_tensor *grad = s->params[i]->grad;
        if (grad && !lives_in(grad, s->flat_grads, s->offsets[i]))
            NN_TRY(move_if_alone(grad, s->flat_grads, byte_offset(s, i)));
    }
    return NN_OK;
}

bool nn_param_set_is_flat(const nn_param_set *s) {
    for (int i = 0; i < s->count; i++)
        if (!lives_in(s->params[i], s->flat_params, s->offsets[i]) ||
            !lives_in(s->params[i]->grad, s->flat_grads, s->offsets[i]))
            return false;
    return true;
}

nn_status nn_param_set_zero_grad(nn_param_set *s) {
    NN_TRY(nn_param_set_adopt_grads(s));
    if (nn_param_set_is_flat(s)) return nn_tensor_fill(s->flat_grads, 0.0f);
    for (int i = 0; i < s->count; i++) NN_TRY(nn_tensor_zero_grad(s->params[i]));
    return NN_OK;
}

nn_status nn_param_set_grad_norm_sq(nn_param_set *s, bool flat) {
    nn_buffer_ref out = nn_tensor_ref(s->norm_sq);
    if (flat) {
        nn_pointwise_params p = {.n = s->total};
        nn_buffer_ref args[2] = {nn_tensor_ref(s->flat_grads), out};
        return nn_ctx_run(s->ctx, NN_KERNEL_SUM_SQUARES, args, 2, &p);
    }
    int32_t accumulate = 0;
    for (int i = 0; i < s->count; i++) {
        nn_tensor *grad = s->params[i]->grad;
        if (!grad) continue;
        nn_pointwise_params p = {.n = grad->numel, .accumulate = accumulate};
        nn_buffer_ref args[2] = {nn_tensor_ref(grad), out};
        NN_TRY(nn_ctx_run(s->ctx, NN_KERNEL_SUM_SQUARES, args, 2, &p));
        accumulate = 1;
    }
    if (!accumulate) NN_TRY(nn_tensor_fill(s->norm_sq, 0.0f));
    return NN_OK;
}
