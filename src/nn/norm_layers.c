/* The normalisation layers, PyTorch's BatchNorm1d, BatchNorm2d, LayerNorm
 * and GroupNorm: modules over nn_batch_norm_counted, nn_layer_norm and
 * nn_group_norm, with PyTorch's state_dict names (weight, bias,
 * running_mean, running_var, num_batches_tracked). BatchNorm reads the
 * module's training flag (nn_module_set_training) as Dropout does, and
 * through its sync object, when set (nn_batchnorm_set_sync), takes its
 * batch statistics over several processes (SyncBatchNorm). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "module.h"

typedef struct norm_config {
    int min_ndim, max_ndim; /* BatchNorm's accepted input ranks */
    float eps, momentum;
    int groups;                           /* GroupNorm */
    int normalized_ndim;                  /* LayerNorm */
    int64_t normalized_shape[NN_MAX_DIMS]; /* LayerNorm */
    int channels;                         /* BatchNorm */
    nn_batch_norm_sync *sync;             /* BatchNorm: owned, or NULL */
} norm_config;

static void free_config(void *data) {
    norm_config *c = data;
    nn_batch_norm_sync_free(c->sync);
    free(c);
}

/* The module's own parameter or buffer `name`, or NULL. */
static nn_tensor *own(const nn_module *m, const char *name) {
    nn_tensor *t = nn_module_get_parameter(m, name);
    return t ? t : nn_module_get_buffer(m, name);
}

static nn_tensor *batch_norm_forward(nn_module *m, nn_tensor *x) {
    const norm_config *c = nn_module_data(m);
    if (x && (x->ndim < c->min_ndim || x->ndim > c->max_ndim)) {
        if (c->min_ndim == c->max_ndim)
            return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: expected %dD input (got %dD input)", m->kind, c->min_ndim, x->ndim);
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: expected %dD or %dD input (got %dD input)", m->kind, c->min_ndim,
                            c->max_ndim, x->ndim);
    }
    if (c->sync)
        return nn_batch_norm_synced(c->sync, x, own(m, "running_mean"), own(m, "running_var"),
                                    own(m, "num_batches_tracked"), own(m, "weight"), own(m, "bias"), m->training,
                                    c->momentum, c->eps);
    return nn_batch_norm_counted(x, own(m, "running_mean"), own(m, "running_var"), own(m, "num_batches_tracked"),
                                 own(m, "weight"), own(m, "bias"), m->training, c->momentum, c->eps);
}

static nn_tensor *layer_norm_forward(nn_module *m, nn_tensor *x) {
    const norm_config *c = nn_module_data(m);
    return nn_layer_norm(x, c->normalized_ndim, c->normalized_shape, own(m, "weight"), own(m, "bias"), c->eps);
}

static nn_tensor *group_norm_forward(nn_module *m, nn_tensor *x) {
    const norm_config *c = nn_module_data(m);
    return nn_group_norm(x, c->groups, own(m, "weight"), own(m, "bias"), c->eps);
}

/* A new tensor of `shape` filled with `value`, registered under `name` as
 * a parameter (trained) or a buffer. */
static nn_status add_filled(nn_module *m, const char *name, nn_dtype dtype, int ndim, const int64_t *shape,
                            float value, bool parameter) {
    nn_tensor *t = nn_tensor_new(m->ctx, dtype, ndim, shape);
    if (!t) return nn_last_status();
    nn_status s = value != 0.0f ? nn_tensor_fill(t, value) : NN_OK;
    if (s == NN_OK) s = parameter ? nn_module_register_parameter(m, name, t) : nn_module_register_buffer(m, name, t);
    nn_tensor_free(t); /* the module holds its own reference */
    return s;
}

/* The module of `kind` with its config, its affine parameters of `shape`
 * when affine (and only the weight without bias), and BatchNorm's buffers
 * of `channels` when running. NULL (the module freed) on failure. */
static nn_module *make(nn_ctx *ctx, const char *kind, nn_module_forward_fn forward, const norm_config *config,
                       int ndim, const int64_t *shape, bool weight, bool bias, int64_t running_channels) {
    norm_config *data = malloc(sizeof *data);
    if (!data) return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", kind);
    *data = *config;
    nn_module *m = nn_module_new(ctx, kind, forward, data, free_config);
    if (!m) return NULL;
    nn_status s = NN_OK;
    if (weight) s = add_filled(m, "weight", NN_F32, ndim, shape, 1.0f, true);
    if (s == NN_OK && bias) s = add_filled(m, "bias", NN_F32, ndim, shape, 0.0f, true);
    if (s == NN_OK && running_channels > 0) {
        const int64_t one = 1;
        s = add_filled(m, "running_mean", NN_F32, 1, &running_channels, 0.0f, false);
        if (s == NN_OK) s = add_filled(m, "running_var", NN_F32, 1, &running_channels, 1.0f, false);
        if (s == NN_OK) s = add_filled(m, "num_batches_tracked", NN_I32, 1, &one, 0.0f, false);
    }
    if (s != NN_OK) {
        nn_module_free(m);
        return NULL;
    }
    return m;
}

static nn_status check_norm_args(const char *fn, nn_ctx *ctx, const char *what, int64_t count, float eps) {
    if (!ctx) return nn_set_error(NN_ERR_ARGUMENT, "%s: ctx is NULL", fn);
    if (count < 1 || count > INT32_MAX) return nn_set_error(NN_ERR_ARGUMENT, "%s: %s must be >= 1, got %lld", fn, what, (long long)count);
    if (!(eps >= 0.0f) || isinf(eps)) return nn_set_error(NN_ERR_ARGUMENT, "%s: eps must be >= 0 and finite, got %g", fn, (double)eps);
    return NN_OK;
}

static nn_module *batch_norm_layer(const char *fn, const char *kind, int min_ndim, int max_ndim, nn_ctx *ctx,
                                   int channels, float eps, float momentum, bool affine, bool track_running_stats) {
    if (check_norm_args(fn, ctx, "channels", channels, eps)) return NULL;
    if (!(momentum >= 0.0f && momentum <= 1.0f) && momentum != NN_BATCH_NORM_CUMULATIVE)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: momentum must be in [0, 1] or NN_BATCH_NORM_CUMULATIVE, got %g", fn,
                            (double)momentum);
    norm_config c = {.min_ndim = min_ndim, .max_ndim = max_ndim, .eps = eps, .momentum = momentum,
                     .channels = channels};
    const int64_t shape = channels;
    return make(ctx, kind, batch_norm_forward, &c, 1, &shape, affine, affine, track_running_stats ? channels : 0);
}

nn_module *nn_batchnorm1d(nn_ctx *ctx, int channels, float eps, float momentum, bool affine, bool track_running_stats) {
    return batch_norm_layer("nn_batchnorm1d", "BatchNorm1d", 2, 3, ctx, channels, eps, momentum, affine,
                            track_running_stats);
}

nn_module *nn_batchnorm2d(nn_ctx *ctx, int channels, float eps, float momentum, bool affine, bool track_running_stats) {
    return batch_norm_layer("nn_batchnorm2d", "BatchNorm2d", 4, 4, ctx, channels, eps, momentum, affine,
                            track_running_stats);
}

int nn_batchnorm_channels(const nn_module *m) {
    return m && m->forward == batch_norm_forward ? ((const norm_config *)nn_module_data(m))->channels : 0;
}

nn_status nn_batchnorm_set_sync(nn_module *m, nn_batch_norm_sync *sync) {
    const char *fn = "nn_batchnorm_set_sync";
    if (!nn_batchnorm_channels(m)) {
        nn_batch_norm_sync_free(sync);
        return nn_set_error(NN_ERR_ARGUMENT, "%s: module is %s, not a BatchNorm1d or BatchNorm2d", fn,
                            m ? m->kind : "NULL");
    }
    norm_config *c = nn_module_data(m);
    const int channels = c->channels;
    const bool other_ctx = sync && nn_batch_norm_sync_ctx(sync) != m->ctx;
    if (other_ctx || (sync && nn_batch_norm_sync_channels(sync) != channels)) {
        const int sync_channels = nn_batch_norm_sync_channels(sync);
        nn_batch_norm_sync_free(sync);
        return nn_set_error(NN_ERR_ARGUMENT, "%s: the sync object is for %d channels%s, the %s has %d", fn,
                            sync_channels, other_ctx ? " of another context" : "", m->kind, channels);
    }
    nn_batch_norm_sync_free(c->sync);
    c->sync = sync;
    return NN_OK;
}

nn_module *nn_layernorm(nn_ctx *ctx, int ndim, const int64_t *shape, float eps, bool affine, bool bias) {
    const char *fn = "nn_layernorm";
    if (check_norm_args(fn, ctx, "ndim", ndim, eps)) return NULL;
    if (!shape || ndim > NN_MAX_DIMS)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: normalized_shape must have 1 to %d dimensions, got %d%s", fn,
                            NN_MAX_DIMS, ndim, shape ? "" : " (shape is NULL)");
    norm_config c = {.eps = eps, .normalized_ndim = ndim};
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 1)
            return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: normalized_shape[%d] must be >= 1, got %lld", fn, i,
                                (long long)shape[i]);
        c.normalized_shape[i] = shape[i];
    }
    return make(ctx, "LayerNorm", layer_norm_forward, &c, ndim, shape, affine, affine && bias, 0);
}

nn_module *nn_groupnorm(nn_ctx *ctx, int groups, int channels, float eps, bool affine) {
    const char *fn = "nn_groupnorm";
    if (check_norm_args(fn, ctx, "channels", channels, eps) || check_norm_args(fn, ctx, "num_groups", groups, eps))
        return NULL;
    if (channels % groups != 0)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: num_channels %d must be divisible by num_groups %d", fn, channels,
                            groups);
    norm_config c = {.eps = eps, .groups = groups};
    const int64_t shape = channels;
    return make(ctx, "GroupNorm", group_norm_forward, &c, 1, &shape, affine, affine, 0);
}
