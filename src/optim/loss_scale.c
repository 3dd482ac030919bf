/* Dynamic loss scaling (include/nn_optim.h: nn_optimizer_enable_loss_scaling):
 * a scale and its counters on the device, the LOSS_SCALE kernel's two modes
 * around each update, and the overflow flag handed to the update kernels,
 * which skip a step whose gradients are not finite (as PyTorch's fused
 * optimizers take found_inf). Everything is a kernel, so a captured step
 * carries it. */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "base/error.h"
#include "nn_ops.h"
#include "optimizer.h"

struct nn_loss_scaler {
    nn_tensor *state; /* [4]: scale, found, good steps, skipped steps */
    nn_tensor *scale; /* state[0] as a [1] tensor, for the loss's product */
    nn_loss_scale_options options;
    bool unscaled;    /* nn_optimizer_unscale_grads ran since the last step */
};

void nn_loss_scaler_free(nn_loss_scaler *s) {
    if (!s) return;
    nn_tensor_free(s->scale);
    nn_tensor_free(s->state);
    free(s);
}

nn_status nn_optimizer_enable_loss_scaling(nn_optimizer *opt, const nn_loss_scale_options *options) {
    if (!opt) return nn_set_error(NN_ERR_ARGUMENT, "nn_optimizer_enable_loss_scaling: optimizer is NULL");
    if (opt->loss_scaler)
        return nn_set_error(NN_ERR_STATE, "nn_optimizer_enable_loss_scaling: the optimizer scales its loss already");
    nn_loss_scale_options o = options ? *options : (nn_loss_scale_options){0};
    if (o.init_scale == 0.0f) o.init_scale = 65536.0f;
    if (o.growth_factor == 0.0f) o.growth_factor = 2.0f;
    if (o.backoff_factor == 0.0f) o.backoff_factor = 0.5f;
    if (o.growth_interval == 0) o.growth_interval = 2000;
    if (!(o.init_scale > 0.0f && o.init_scale < 3e38f) || !(o.growth_factor > 1.0f && o.growth_factor < 1e6f) ||
        !(o.backoff_factor > 0.0f && o.backoff_factor < 1.0f) || o.growth_interval < 1 || o.growth_interval > (1 << 24))
        return nn_set_error(NN_ERR_ARGUMENT,
                            "nn_optimizer_enable_loss_scaling: init_scale %g (> 0), growth_factor %g (> 1), "
                            "backoff_factor %g (in (0, 1)) or growth_interval %d (in [1, 2^24]) out of range",
                            o.init_scale, o.growth_factor, o.backoff_factor, o.growth_interval);
    nn_loss_scaler *s = calloc(1, sizeof *s);
    if (!s) return nn_set_error(NN_ERR_MEMORY, "nn_optimizer_enable_loss_scaling: out of host memory");
    s->options = o;
    const float initial[4] = {o.init_scale, 0.0f, 0.0f, 0.0f};
    s->state = nn_tensor_from_data(opt->set.ctx, NN_F32, 1, (int64_t[]){4}, initial);
    s->scale = s->state ? nn_tensor_view_at(s->state, 0, 1, (int64_t[]){1}) : NULL;
    if (!s->scale) {
        nn_loss_scaler_free(s);
        return nn_last_status();
    }
    opt->loss_scaler = s;
    return NN_OK;
}

nn_tensor *nn_loss_scaler_state(const nn_optimizer *opt) { return opt->loss_scaler ? opt->loss_scaler->state : NULL; }

/* A scale the updates can divide by (a normal float: its inverse is finite
 * too), and a count that is whole, >= 0 and below 2^24 (exact in a float):
 * a state with a scale of NaN, 0 or 1e-45 would skip every step after it. */
static bool usable_scale(float scale) { return isfinite(scale) && scale >= FLT_MIN && scale < 3e38f; }
static bool exact_count(double count) { return count >= 0.0 && count < 16777216.0 && count == floor(count); }

/* The state a training-state file gave: a usable scale, a found flag of 0
 * or 1, exact counts. */
nn_status nn_loss_scaler_check_state(const nn_optimizer *opt, const char *who, const char *path) {
    const nn_tensor *state = nn_loss_scaler_state(opt);
    if (!state) return NN_OK;
    float v[4];
    NN_TRY(nn_tensor_read(state, v, sizeof v));
    const bool found_ok = v[1] == 0.0f || v[1] == 1.0f;
    if (usable_scale(v[0]) && found_ok && exact_count(v[2]) && exact_count(v[3])) return NN_OK;
    return nn_set_error(NN_ERR_IO, "%s: %s: the loss scale's state (scale %g, overflow flag %g, %g good and %g "
                        "skipped steps) is not one a run leaves: the scale must be a finite normal number above 0, "
                        "the flag 0 or 1, the counts whole numbers from 0", who, path, v[0], v[1], v[2], v[3]);
}

nn_tensor *nn_optimizer_scale_loss(nn_optimizer *opt, nn_tensor *loss) {
    if (!opt || !loss) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_optimizer_scale_loss: %s is NULL", opt ? "loss" : "optimizer");
    if (!opt->loss_scaler)
        return NN_FAIL_NULL(NN_ERR_STATE, "nn_optimizer_scale_loss: loss scaling is not enabled "
                                          "(nn_optimizer_enable_loss_scaling)");
    return nn_mul(loss, opt->loss_scaler->scale);
}

nn_tensor *nn_optimizer_loss_scale_tensor(nn_optimizer *opt) {
    if (!opt || !opt->loss_scaler)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_optimizer_loss_scale_tensor: %s",
                            opt ? "loss scaling is not enabled" : "optimizer is NULL");
    return opt->loss_scaler->scale;
}

nn_status nn_optimizer_loss_scale_stats(nn_optimizer *opt, float *scale, int64_t *skipped) {
    if (!opt || !opt->loss_scaler)
        return nn_set_error(NN_ERR_ARGUMENT, "nn_optimizer_loss_scale_stats: %s",
                            opt ? "loss scaling is not enabled" : "optimizer is NULL");
    float state[4];
    NN_TRY(nn_tensor_read(opt->loss_scaler->state, state, sizeof state));
    if (scale) *scale = state[0];
    if (skipped) *skipped = (int64_t)state[3];
    return NN_OK;
}

nn_buffer_ref nn_loss_scaler_skip(const nn_optimizer *opt) {
    if (!opt->loss_scaler) return (nn_buffer_ref){0};
    nn_buffer_ref found = nn_tensor_ref(opt->loss_scaler->state);
    found.offset += sizeof(float);
    found.bytes = sizeof(float);
    return found;
}

static nn_status run(nn_optimizer *opt, int mode, nn_tensor *x, int64_t n) {
    const nn_loss_scale_params p = {.n = n, .mode = mode, .growth_interval = opt->loss_scaler->options.growth_interval,
                                    .growth_factor = opt->loss_scaler->options.growth_factor,
                                    .backoff_factor = opt->loss_scaler->options.backoff_factor};
    nn_buffer_ref args[2] = {nn_optional_ref(x), nn_tensor_ref(opt->loss_scaler->state)};
    return nn_ctx_run(opt->set.ctx, NN_KERNEL_LOSS_SCALE, args, 2, &p);
}

/* The gradients divided by the scale, flagging one that is not finite: one
 * kernel over the flat buffer, or one per gradient where a parameter lives
 * elsewhere (shared with another tensor) or has none yet (frozen: skipped,
 * as its update is). */
static nn_status unscale(nn_optimizer *opt) {
    if (nn_param_set_is_flat(&opt->set)) return run(opt, NN_LOSS_SCALE_UNSCALE, opt->set.flat_grads, opt->set.total);
    for (int i = 0; i < opt->set.count; i++) {
        nn_tensor *grad = opt->set.params[i]->grad;
        if (grad) NN_TRY(run(opt, NN_LOSS_SCALE_UNSCALE, grad, grad->numel));
    }
    return NN_OK;
}

bool nn_loss_scaler_unscaled(const nn_optimizer *opt) { return opt->loss_scaler && opt->loss_scaler->unscaled; }

nn_status nn_loss_scaler_before_update(nn_optimizer *opt) {
    return nn_loss_scaler_unscaled(opt) ? NN_OK : unscale(opt);
}

nn_status nn_loss_scaler_after_update(nn_optimizer *opt) {
    opt->loss_scaler->unscaled = false;
    return run(opt, NN_LOSS_SCALE_UPDATE, NULL, 0);
}

nn_status nn_optimizer_unscale_grads(nn_optimizer *opt) {
    const char *fn = "nn_optimizer_unscale_grads";
    if (!opt || !opt->loss_scaler)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: %s", fn, opt ? "loss scaling is not enabled" : "optimizer is NULL");
    if (opt->loss_scaler->unscaled)
        return nn_set_error(NN_ERR_STATE, "%s: the gradients were unscaled already since the last step", fn);
    NN_TRY(nn_ctx_enter(opt->set.ctx, fn));
    nn_status status = nn_optimizer_prepare_grads(opt);
    if (status == NN_OK) status = unscale(opt);
    if (status == NN_OK) opt->loss_scaler->unscaled = true;
    nn_ctx_leave(opt->set.ctx);
    return status;
}

nn_status nn_optimizer_loss_scale_state(nn_optimizer *opt, nn_loss_scale_state *state) {
    if (!opt || !opt->loss_scaler || !state)
        return nn_set_error(NN_ERR_ARGUMENT, "nn_optimizer_loss_scale_state: %s",
                            !opt ? "optimizer is NULL" : !state ? "state is NULL" : "loss scaling is not enabled");
    float v[4];
    NN_TRY(nn_tensor_read(opt->loss_scaler->state, v, sizeof v));
    *state = (nn_loss_scale_state){v[0], (int64_t)v[2], (int64_t)v[3]};
    return NN_OK;
}

nn_status nn_optimizer_set_loss_scale_state(nn_optimizer *opt, const nn_loss_scale_state *state) {
    const char *fn = "nn_optimizer_set_loss_scale_state";
    if (!opt || !opt->loss_scaler || !state)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: %s", fn,
                            !opt ? "optimizer is NULL" : !state ? "state is NULL" : "loss scaling is not enabled");
    if (!usable_scale(state->scale) || !exact_count((double)state->good_steps) ||
        !exact_count((double)state->skipped_steps))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: the scale must be a finite normal float above 0 and the counts in "
                                             "[0, 2^24); got scale %g, %lld good and %lld skipped steps", fn,
                            state->scale, (long long)state->good_steps, (long long)state->skipped_steps);
    float v[4];
    NN_TRY(nn_tensor_read(opt->loss_scaler->state, v, sizeof v)); /* keeps this step's overflow flag */
    v[0] = state->scale, v[2] = (float)state->good_steps, v[3] = (float)state->skipped_steps;
    return nn_tensor_write(opt->loss_scaler->state, v, sizeof v);
}
