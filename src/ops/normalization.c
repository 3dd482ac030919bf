/* Normalisation: BatchNorm, LayerNorm and GroupNorm as one operation on
 * the normalisation kernels (kernels.h's nn_norm_params): each normalises
 * groups of elements with their mean and biased variance, then applies a
 * per-channel (BatchNorm, GroupNorm) or per-element (LayerNorm) affine.
 * They differ in the layout of groups and channels and in their ONNX form.
 *
 * Inputs: x, weight, bias, running_mean, running_var (NULL when absent).
 * BatchNorm in training (or without running statistics) normalises with
 * the batch's statistics, saved for backward; in training with running
 * statistics it also updates them on the device (NORM_RUNNING_UPDATE,
 * after advancing num_batches_tracked with COUNTER_ADD), so a captured
 * step replays the update. In evaluation it is the affine of the running
 * statistics, whose backward treats them as constants. With a sync object
 * (nn_batch_norm_synced) the batch statistics and the data gradient's sums
 * are reduced over processes in between (batch_norm_sync.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/norm_layout.h"
#include "core/layout.h"
#include "io/onnx_graph.h"
#include "batch_norm_sync.h"
#include "ops.h"

enum { IN_X, IN_WEIGHT, IN_BIAS, IN_RUNNING_MEAN, IN_RUNNING_VAR, IN_COUNT };

typedef enum norm_kind { NORM_BATCH, NORM_LAYER, NORM_GROUP } norm_kind;

typedef struct norm_node {
    nn_norm_params layout;
    int32_t kind;           /* norm_kind */
    int32_t normalized_dims; /* LayerNorm: the trailing dimensions normalised */
    int32_t num_groups;     /* GroupNorm */
    bool batch_stats;       /* normalise with x's statistics (saved[0], saved[1]) */
    bool update_running;    /* BatchNorm in training with running statistics */
    float momentum;         /* < 0: the cumulative average (NN_BATCH_NORM_CUMULATIVE) */
    int64_t per_channel;    /* BatchNorm: elements per channel in the batch */
    nn_batch_norm_sync *sync; /* BatchNorm: statistics over several processes, or NULL */
} norm_node;

/* The node's saved tensors: the batch counter first when one was given
 * (nn_batch_norm_counted, at recording), then the batch mean and variance
 * (forward). 1 when the counter is there. */
static int counter_saved(const nn_node *node) { return node->saved_count > 0 && node->saved[0]->dtype == NN_I32; }

static nn_buffer_ref ref_or_none(const nn_tensor *t) { return t ? nn_tensor_ref(t) : (nn_buffer_ref){0}; }

/* The forward into `out` (the node's output, or a fused activation's),
 * with the apply's epilogue and residual when given. */
static nn_status norm_forward_into(nn_node *node, nn_tensor *out, const nn_pointwise_epilogue *epilogue,
                                   const nn_tensor *residual) {
    const norm_node *n = NN_NODE_PARAMS(node, norm_node);
    nn_tensor *x = node->inputs[IN_X];
    nn_ctx *ctx = x->ctx;
    nn_tensor *mean = node->inputs[IN_RUNNING_MEAN], *var = node->inputs[IN_RUNNING_VAR];
    int64_t running_count = n->per_channel; /* the batch's elements per channel, over every process */
    if (n->batch_stats) {
        const int64_t groups = n->layout.groups;
        mean = nn_node_save_new(node, NN_F32, 1, &groups);
        var = mean ? nn_node_save_new(node, NN_F32, 1, &groups) : NULL;
        if (!var) return nn_last_status();
        nn_buffer_ref stats[3] = {nn_tensor_ref(x), nn_tensor_ref(mean), nn_tensor_ref(var)};
        NN_TRY(nn_ctx_run(ctx, NN_KERNEL_NORM_STATS, stats, 3, &n->layout));
        if (n->sync) NN_TRY(nn_batch_norm_sync_statistics(n->sync, mean, var, n->per_channel, &running_count));
    }
    if (n->update_running) {
        nn_tensor *counter = counter_saved(node) ? node->saved[0] : NULL;
        if (counter) {
            nn_counter_params one = {.delta = 1};
            nn_buffer_ref advance[2] = {nn_tensor_ref(counter), {0}};
            NN_TRY(nn_ctx_run(ctx, NN_KERNEL_COUNTER_ADD, advance, 2, &one));
        }
        nn_norm_running_params r = {.count = running_count, .channels = n->layout.channels, .momentum = n->momentum};
        nn_buffer_ref update[5] = {nn_tensor_ref(mean), nn_tensor_ref(var),
                                   nn_tensor_ref(node->inputs[IN_RUNNING_MEAN]),
                                   nn_tensor_ref(node->inputs[IN_RUNNING_VAR]), ref_or_none(counter)};
        NN_TRY(nn_ctx_run(ctx, NN_KERNEL_NORM_RUNNING_UPDATE, update, 5, &r));
    }
    nn_norm_params p = n->layout;
    if (epilogue) p.epilogue = *epilogue;
    nn_buffer_ref apply[7] = {nn_tensor_ref(x), nn_tensor_ref(mean), nn_tensor_ref(var),
                              ref_or_none(node->inputs[IN_WEIGHT]), ref_or_none(node->inputs[IN_BIAS]),
                              nn_tensor_ref(out), ref_or_none(residual)};
    return nn_ctx_run(ctx, NN_KERNEL_NORM_APPLY, apply, 7, &p);
}

static nn_status norm_forward(nn_node *node) { return norm_forward_into(node, node->output, NULL, NULL); }

bool nn_norm_takes_epilogue(const nn_node *node) {
    if (node->op != &nn_op_batch_norm && node->op != &nn_op_layer_norm && node->op != &nn_op_group_norm) return false;
    return NN_NODE_PARAMS(node, norm_node)->sync == NULL;
}

nn_norm_params nn_norm_params_of(const nn_node *norm) {
    const norm_node *n = NN_NODE_PARAMS(norm, norm_node);
    nn_norm_params p = n->layout;
    p.batch_stats = n->batch_stats;
    return p;
}

nn_status nn_norm_forward_with_epilogue(nn_node *node, nn_tensor *out, const nn_pointwise_epilogue *epilogue,
                                        const nn_tensor *residual) {
    NN_TRY(norm_forward_into(node, out, epilogue, residual));
    NN_TRY(nn_node_elide(node));
    /* Should the unwritten output be read after all, its recipe normalises
     * x again: the running statistics were updated once, here. */
    NN_NODE_PARAMS(node->output->recipe, norm_node)->update_running = false;
    return NN_OK;
}

/* BatchNorm with batch statistics whose x and affine gradients are both
 * wanted: one reduction serves the three. NORM_BACKWARD_SUMS without the
 * weight gives sum dy and sum dy xhat per channel, which are the bias's and
 * the weight's gradients; the pointwise pass weights them for dx
 * (sums_unweighted) and writes them to the affine gradients on the way: two
 * passes over x and dy instead of three (BACKWARD_DATA's two and
 * BACKWARD_AFFINE's). */
static nn_status batch_norm_backward_shared(nn_ctx *ctx, nn_norm_params p, nn_tensor *const *xs, nn_tensor *dy,
                                            nn_tensor *grad, int32_t acc, nn_tensor *const *grads,
                                            const int32_t *accs) {
    nn_tensor *x = xs[0], *mean = xs[1], *var = xs[2], *weight = xs[3], *bias = xs[4];
    const int64_t both = 2 * (int64_t)p.channels;
    nn_tensor *sums = nn_op_scratch(ctx, NN_F32, 1, &both);
    if (!sums) return nn_last_status();
    p.accumulate = 0;
    /* The sums are of dy (unweighted); the weight and bias serve an activation's mask. */
    p.sums_unweighted = 1;
    const bool masked = p.grad_mask != NN_NORM_MASK_NONE;
    nn_buffer_ref reduce[7] = {nn_tensor_ref(x),  nn_tensor_ref(mean), nn_tensor_ref(var),
                               masked ? ref_or_none(weight) : (nn_buffer_ref){0},
                               nn_tensor_ref(dy), nn_tensor_ref(sums), masked ? ref_or_none(bias) : (nn_buffer_ref){0}};
    nn_status st = nn_ctx_run(ctx, NN_KERNEL_NORM_BACKWARD_SUMS, reduce, 7, &p);
    if (st == NN_OK) {
        p.accumulate = acc;
        p.affine_accumulate = (accs[0] ? 1 : 0) | (accs[1] ? 2 : 0);
        nn_buffer_ref pointwise[10] = {nn_tensor_ref(x),    nn_tensor_ref(mean),   nn_tensor_ref(var),
                                       ref_or_none(weight), nn_tensor_ref(dy),     nn_tensor_ref(grad),
                                       nn_tensor_ref(sums), ref_or_none(grads[0]), ref_or_none(grads[1]),
                                       masked ? ref_or_none(bias) : (nn_buffer_ref){0}};
        st = nn_ctx_run(ctx, NN_KERNEL_NORM_BACKWARD_FROM_SUMS, pointwise, 10, &p);
    }
    nn_tensor_release(sums);
    return st;
}

/* Whether the node's backward takes batch_norm_backward_shared: BatchNorm
 * with batch statistics over one process, x's gradient and an affine one
 * wanted. */
static bool backward_shares_sums(const nn_node *node) {
    const norm_node *n = NN_NODE_PARAMS(node, norm_node);
    const nn_tensor *weight = node->inputs[IN_WEIGHT], *bias = node->inputs[IN_BIAS];
    return n->batch_stats && !n->sync && nn_norm_channel_groups(&n->layout) && nn_wants_grad(node->inputs[IN_X]) &&
           (nn_wants_grad(weight) || nn_wants_grad(bias));
}

bool nn_norm_mask_claim(const nn_tensor *y, nn_norm_mask mask) {
    nn_node *node = y->grad_fn;
    /* A retained gradient of y must be y's own (masked), so none is handed on then. */
    if (!node || node->op != &nn_op_batch_norm || nn_tape_consumers(y) != 1 || y->grad_written ||
        y->retain_grad || !backward_shares_sums(node))
        return false;
    node->grad_mask = (int8_t)mask;
    return true;
}

static nn_status norm_backward(nn_node *node) {
    const norm_node *n = NN_NODE_PARAMS(node, norm_node);
    nn_tensor *x = node->inputs[IN_X], *weight = node->inputs[IN_WEIGHT], *bias = node->inputs[IN_BIAS];
    nn_tensor *dy = node->output->grad;
    nn_ctx *ctx = x->ctx;
    const int first = counter_saved(node);
    nn_tensor *mean = n->batch_stats ? node->saved[first] : node->inputs[IN_RUNNING_MEAN];
    nn_tensor *var = n->batch_stats ? node->saved[first + 1] : node->inputs[IN_RUNNING_VAR];
    nn_norm_params p = n->layout;
    p.batch_stats = n->batch_stats;
    nn_tensor *grad = NULL;
    int32_t acc = 0;
    if (nn_wants_grad(x)) NN_TRY(nn_grad_target(x, &grad, &acc));
    nn_tensor *affine[2] = {nn_wants_grad(weight) ? weight : NULL, nn_wants_grad(bias) ? bias : NULL};
    nn_tensor *grads[2] = {NULL, NULL};
    int32_t accs[2] = {0, 0};
    for (int k = 0; k < 2; k++)
        if (affine[k]) NN_TRY(nn_grad_target(affine[k], &grads[k], &accs[k]));
    /* One channel per group: the data gradient's sums (of dy and dy xhat
     * per group) are then the bias's and the weight's gradients. dy may be
     * an activation's output gradient, its mask left to these kernels. */
    if (backward_shares_sums(node)) {
        nn_tensor *const xs[5] = {x, mean, var, weight, bias};
        p.grad_mask = node->grad_mask;
        return batch_norm_backward_shared(ctx, p, xs, dy, grad, acc, grads, accs);
    }
    if (node->grad_mask != NN_NORM_MASK_NONE) /* nn_norm_mask_claim promised the shared path */
        return nn_set_error(NN_ERR_STATE, "nn_batch_norm backward: an activation left its mask to a backward "
                            "that cannot take it");
    if (grad) {
        p.accumulate = acc;
        nn_buffer_ref args[6] = {nn_tensor_ref(x),  nn_tensor_ref(mean), nn_tensor_ref(var),
                                 ref_or_none(weight), nn_tensor_ref(dy), nn_tensor_ref(grad)};
        if (n->sync && n->batch_stats)
            NN_TRY(nn_batch_norm_sync_backward_data(n->sync, &p, x, mean, var, weight, dy, grad));
        else
            NN_TRY(nn_ctx_run(ctx, NN_KERNEL_NORM_BACKWARD_DATA, args, 6, &p));
    }
    /* The weight's and the bias's gradients: one pass for both where they
     * add into their gradients alike (parameters' running sums), else one each. */
    const bool together = grads[0] && grads[1] && accs[0] == accs[1];
    for (int k = 0; k < 2; k++) {
        if (!grads[k] || (together && k == 1)) continue;
        p.accumulate = accs[k];
        nn_buffer_ref args[6] = {nn_tensor_ref(x), nn_tensor_ref(mean), nn_tensor_ref(var), nn_tensor_ref(dy),
                                 k == 0 ? nn_tensor_ref(grads[0]) : (nn_buffer_ref){0},
                                 k == 1 || together ? nn_tensor_ref(grads[1]) : (nn_buffer_ref){0}};
        NN_TRY(nn_ctx_run(ctx, NN_KERNEL_NORM_BACKWARD_AFFINE, args, 6, &p));
    }
    return NN_OK;
}

/* ---- ONNX ---- */

/* A float constant of copies of `fill`, shaped dims. */
static const char *filled_constant(exporter *x, const op_io *io, const char *what, float fill, const int64_t *dims,
                                   int ndim) {
    int64_t count = 1;
    for (int i = 0; i < ndim; i++) count *= dims[i];
    float *data = malloc((size_t)count * sizeof *data);
    if (!data) return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", x->who);
    for (int64_t i = 0; i < count; i++) data[i] = fill;
    char name[96];
    snprintf(name, sizeof name, "%s_%s", io->name, what);
    const char *made = nn_onnx_add_constant(x, name, NN_ONNX_FLOAT, dims, ndim, data, (size_t)count * sizeof *data);
    free(data);
    return made;
}

/* BatchNormalization in its inference form, with the running statistics,
 * as torch exports a BatchNorm in eval mode. */
static nn_status batch_norm_onnx(exporter *x, op_io *io, const char *out) {
    const norm_node *n = NN_NODE_PARAMS(io->node, norm_node);
    if (!io->in[IN_RUNNING_MEAN])
        return nn_set_error(NN_ERR_ARGUMENT, "%s: nn_batch_norm without running statistics (track_running_stats "
                                             "off) has no ONNX inference form", x->who);
    NN_TRY(nn_onnx_only_input_carries_batch(x, io, IN_X));
    nn_onnx_reserve_name(x, "BatchNormalization", io);
    const int64_t channels = n->layout.channels;
    const char *scale = io->in[IN_WEIGHT] ? io->in[IN_WEIGHT]->name : filled_constant(x, io, "scale", 1.0f, &channels, 1);
    const char *shift = io->in[IN_BIAS] ? io->in[IN_BIAS]->name : filled_constant(x, io, "bias", 0.0f, &channels, 1);
    if (!scale || !shift) return nn_last_status();
    nn_onnx_node node;
    nn_onnx_node_begin(&node, "BatchNormalization", io->name);
    nn_onnx_node_input(&node, io->in[IN_X]->name);
    nn_onnx_node_input(&node, scale);
    nn_onnx_node_input(&node, shift);
    nn_onnx_node_input(&node, io->in[IN_RUNNING_MEAN]->name);
    nn_onnx_node_input(&node, io->in[IN_RUNNING_VAR]->name);
    nn_onnx_node_output(&node, out);
    nn_onnx_attr_float(&node, "epsilon", n->layout.eps);
    nn_onnx_attr_float(&node, "momentum", n->momentum >= 0.0f ? 1.0f - n->momentum : 0.9f);
    nn_onnx_node_end(&node, &x->graph);
    return NN_OK;
}

/* LayerNormalization (opset 17) over the trailing normalized_dims. */
static nn_status layer_norm_onnx(exporter *x, op_io *io, const char *out) {
    const norm_node *n = NN_NODE_PARAMS(io->node, norm_node);
    NN_TRY(nn_onnx_only_input_carries_batch(x, io, IN_X));
    nn_onnx_reserve_name(x, "LayerNormalization", io);
    const nn_tensor *t = io->node->inputs[IN_X];
    const int first = t->ndim - n->normalized_dims;
    const char *scale = io->in[IN_WEIGHT]
                            ? io->in[IN_WEIGHT]->name
                            : filled_constant(x, io, "scale", 1.0f, t->shape + first, n->normalized_dims);
    if (!scale) return nn_last_status();
    nn_onnx_node node;
    nn_onnx_node_begin(&node, "LayerNormalization", io->name);
    nn_onnx_node_input(&node, io->in[IN_X]->name);
    nn_onnx_node_input(&node, scale);
    if (io->in[IN_BIAS]) nn_onnx_node_input(&node, io->in[IN_BIAS]->name);
    nn_onnx_node_output(&node, out);
    nn_onnx_attr_int(&node, "axis", first);
    nn_onnx_attr_float(&node, "epsilon", n->layout.eps);
    nn_onnx_node_end(&node, &x->graph);
    return NN_OK;
}

/* GroupNormalization is opset 18: here x reshaped to [N, groups, -1],
 * InstanceNormalization (scale 1, bias 0) over each (n, group), reshaped
 * back, then times weight and plus bias, each reshaped to [C, 1, ...]. */
static nn_status group_norm_onnx(exporter *x, op_io *io, const char *out) {
    const norm_node *n = NN_NODE_PARAMS(io->node, norm_node);
    NN_TRY(nn_onnx_only_input_carries_batch(x, io, IN_X));
    nn_onnx_reserve_name(x, "GroupNorm", io);
    const nn_tensor *t = io->node->inputs[IN_X];
    const bool weight = io->in[IN_WEIGHT], bias = io->in[IN_BIAS];
    char grouped[96], normed[96], restored[96], weighted[96], wshape[96], bshape[96], step[112];
    const int64_t groups = n->num_groups;
    const char *ones = filled_constant(x, io, "ones", 1.0f, &groups, 1);
    const char *zeros = filled_constant(x, io, "zeros", 0.0f, &groups, 1);
    if (!ones || !zeros || !nn_onnx_fresh_value(x, io, "grouped", grouped, sizeof grouped) ||
        !nn_onnx_fresh_value(x, io, "normed", normed, sizeof normed))
        return nn_last_status();
    const int64_t grouped_dims[3] = {0, groups, -1}; /* 0: the batch dimension as it comes */
    snprintf(step, sizeof step, "%s_reshape", io->name);
    NN_TRY(nn_onnx_reshape_to(x, step, io->in[IN_X]->name, grouped_dims, 3, grouped));
    nn_onnx_node node;
    snprintf(step, sizeof step, "%s_instance_norm", io->name);
    nn_onnx_node_begin(&node, "InstanceNormalization", step);
    nn_onnx_node_input(&node, grouped);
    nn_onnx_node_input(&node, ones);
    nn_onnx_node_input(&node, zeros);
    nn_onnx_node_output(&node, normed);
    nn_onnx_attr_float(&node, "epsilon", n->layout.eps);
    nn_onnx_node_end(&node, &x->graph);
    int64_t dims[NN_MAX_DIMS];
    memcpy(dims, t->shape, (size_t)t->ndim * sizeof *dims);
    dims[0] = 0;
    const char *back = weight || bias ? nn_onnx_fresh_value(x, io, "restored", restored, sizeof restored) : out;
    if (!back) return nn_last_status();
    snprintf(step, sizeof step, "%s_reshape_back", io->name);
    NN_TRY(nn_onnx_reshape_to(x, step, normed, dims, t->ndim, back));
    /* The per-channel affine broadcast from the last dimension: [C, 1, ...]. */
    int64_t channel_dims[NN_MAX_DIMS];
    channel_dims[0] = -1;
    for (int i = 1; i < t->ndim - 1; i++) channel_dims[i] = 1;
    const char *current = back;
    if (weight) {
        const char *to = bias ? nn_onnx_fresh_value(x, io, "weighted", weighted, sizeof weighted) : out;
        if (!to || !nn_onnx_fresh_value(x, io, "weight_shaped", wshape, sizeof wshape)) return nn_last_status();
        snprintf(step, sizeof step, "%s_weight_reshape", io->name);
        NN_TRY(nn_onnx_reshape_to(x, step, io->in[IN_WEIGHT]->name, channel_dims, t->ndim - 1, wshape));
        snprintf(step, sizeof step, "%s_mul", io->name);
        nn_onnx_pair(x, "Mul", step, current, wshape, to);
        current = to;
    }
    if (bias) {
        if (!nn_onnx_fresh_value(x, io, "bias_shaped", bshape, sizeof bshape)) return nn_last_status();
        snprintf(step, sizeof step, "%s_bias_reshape", io->name);
        NN_TRY(nn_onnx_reshape_to(x, step, io->in[IN_BIAS]->name, channel_dims, t->ndim - 1, bshape));
        snprintf(step, sizeof step, "%s_add", io->name);
        nn_onnx_pair(x, "Add", step, current, bshape, out);
    }
    return NN_OK;
}

const nn_op nn_op_batch_norm = {.name = "nn_batch_norm", .forward = norm_forward, .backward = norm_backward,
                                .to_onnx = batch_norm_onnx, .layouts = nn_layouts_pointwise};
const nn_op nn_op_layer_norm = {
    .name = "nn_layer_norm", .forward = norm_forward, .backward = norm_backward, .to_onnx = layer_norm_onnx};
const nn_op nn_op_group_norm = {
    .name = "nn_group_norm", .forward = norm_forward, .backward = norm_backward, .to_onnx = group_norm_onnx};

/* ---- the public functions: checks, layout, recording ---- */

/* t is NULL or a float32 tensor of x's context with the given shape. */
static nn_status check_optional(const char *op, const char *what, const nn_tensor *t, const nn_tensor *x, int ndim,
                                const int64_t *shape) {
    if (!t) return NN_OK;
    NN_TRY(nn_check_tensor(op, what, t, NN_F32));
    NN_TRY(nn_check_same_ctx(op, "x", x, what, t));
    bool same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++) same = t->shape[i] == shape[i];
    if (same) return NN_OK;
    char st[96], want[96];
    return nn_set_error(NN_ERR_SHAPE, "%s: %s has shape %s, expected %s", op, what,
                        nn_format_shape(t->ndim, t->shape, st, sizeof st), nn_format_shape(ndim, shape, want, sizeof want));
}

static nn_status check_eps(const char *op, float eps) {
    if (!(eps >= 0.0f) || isinf(eps)) return nn_set_error(NN_ERR_ARGUMENT, "%s: eps must be >= 0 and finite, got %g", op, (double)eps);
    return NN_OK;
}

static nn_tensor *record(const nn_op *op, nn_tensor *x, nn_tensor *weight, nn_tensor *bias, nn_tensor *running_mean,
                         nn_tensor *running_var, const norm_node *n) {
    if (nn_check_int32(op->name, "elements", x->numel) || nn_check_int32(op->name, "groups", n->layout.groups) ||
        nn_check_int32(op->name, "channels", n->layout.channels))
        return NULL;
    nn_tensor *inputs[IN_COUNT] = {x, weight, bias, running_mean, running_var};
    return nn_op_result(op, inputs, IN_COUNT, n, sizeof *n, x->ndim, x->shape);
}

static nn_tensor *batch_norm(const char *op, nn_batch_norm_sync *sync, nn_tensor *x, nn_tensor *running_mean,
                             nn_tensor *running_var, nn_tensor *num_batches_tracked, nn_tensor *weight,
                             nn_tensor *bias, bool training, float momentum, float eps) {
    if (nn_check_tensor(op, "x", x, NN_F32)) return NULL;
    char sx[96];
    nn_format_shape(x->ndim, x->shape, sx, sizeof sx);
    if (x->ndim < 2)
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: x must be [N, C] or [N, C, ...], got %s", op, sx);
    const int64_t channels = x->shape[1];
    if (check_optional(op, "weight", weight, x, 1, &channels) || check_optional(op, "bias", bias, x, 1, &channels) ||
        check_optional(op, "running_mean", running_mean, x, 1, &channels) ||
        check_optional(op, "running_var", running_var, x, 1, &channels) || check_eps(op, eps))
        return NULL;
    if (sync && (nn_batch_norm_sync_ctx(sync) != x->ctx || nn_batch_norm_sync_channels(sync) != channels))
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: the sync object is for %d channels%s, x %s has %lld", op,
                            nn_batch_norm_sync_channels(sync),
                            nn_batch_norm_sync_ctx(sync) != x->ctx ? " of another context" : "", sx,
                            (long long)channels);
    if (!running_mean != !running_var)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: running_mean and running_var are given together or not at all", op);
    if (num_batches_tracked && (nn_check_counter(op, num_batches_tracked) || nn_check_same_ctx(op, "x", x, "num_batches_tracked", num_batches_tracked)))
        return NULL;
    const bool cumulative = momentum < 0.0f;
    if (!(momentum <= 1.0f) || (cumulative && momentum != NN_BATCH_NORM_CUMULATIVE))
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: momentum must be in [0, 1] (or NN_BATCH_NORM_CUMULATIVE), got %g", op,
                            (double)momentum);
    const bool batch_stats = training || !running_mean;
    const bool update_running = training && running_mean;
    if (cumulative && update_running && !num_batches_tracked)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: the cumulative average (momentum NN_BATCH_NORM_CUMULATIVE) needs "
                                             "num_batches_tracked", op);
    const int64_t per_channel = x->numel / (channels > 0 ? channels : 1);
    if (channels < 1 || per_channel < 1)
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: x %s has no elements to normalise", op, sx);
    if (training && per_channel == 1)
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: expected more than 1 value per channel when training, got input size %s",
                            op, sx);
    norm_node n = {.kind = NORM_BATCH, .batch_stats = batch_stats, .update_running = update_running,
                   .momentum = momentum, .per_channel = per_channel, .sync = batch_stats ? sync : NULL};
    n.layout = (nn_norm_params){.outer = x->shape[0], .inner = per_channel / x->shape[0], .groups = (int32_t)channels,
                                .channels = (int32_t)channels, .eps = eps};
    n.layout.channel_inner = n.layout.inner;
    if (x->layout == NN_LAYOUT_CHANNELS_LAST) { /* [N * H * W, C]: the channels are the rows' elements */
        n.layout.outer = per_channel;
        n.layout.inner = n.layout.channel_inner = 1;
    }
    nn_tensor *y = record(&nn_op_batch_norm, x, weight, bias, running_mean, running_var, &n);
    if (!y) return NULL;
    if (update_running && num_batches_tracked && nn_node_save(y->producer, num_batches_tracked) != NN_OK) return NULL;
    /* The running statistics are leaves the node updates in place: reading
     * one runs the pending operations first (nn_tensor_materialize), so the
     * node may wait for the flush, and fuse with what follows it. */
    if (update_running) {
        running_mean->pending_writer = running_var->pending_writer = y->producer;
        if (num_batches_tracked) num_batches_tracked->pending_writer = y->producer;
    }
    return y;
}

nn_tensor *nn_batch_norm_counted(nn_tensor *x, nn_tensor *running_mean, nn_tensor *running_var,
                                 nn_tensor *num_batches_tracked, nn_tensor *weight, nn_tensor *bias, bool training,
                                 float momentum, float eps) {
    return batch_norm("nn_batch_norm", NULL, x, running_mean, running_var, num_batches_tracked, weight, bias, training,
                      momentum, eps);
}

nn_tensor *nn_batch_norm_synced(nn_batch_norm_sync *sync, nn_tensor *x, nn_tensor *running_mean,
                                nn_tensor *running_var, nn_tensor *num_batches_tracked, nn_tensor *weight,
                                nn_tensor *bias, bool training, float momentum, float eps) {
    if (!sync) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_batch_norm_synced: sync is NULL");
    return batch_norm("nn_batch_norm_synced", sync, x, running_mean, running_var, num_batches_tracked, weight, bias,
                      training, momentum, eps);
}

nn_tensor *nn_batch_norm(nn_tensor *x, nn_tensor *running_mean, nn_tensor *running_var, nn_tensor *weight,
                         nn_tensor *bias, bool training, float momentum, float eps) {
    if (momentum < 0.0f)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_batch_norm: momentum must be in [0, 1], got %g (the cumulative "
                                             "average needs nn_batch_norm_counted)", (double)momentum);
    return nn_batch_norm_counted(x, running_mean, running_var, NULL, weight, bias, training, momentum, eps);
}

nn_tensor *nn_layer_norm(nn_tensor *x, int normalized_ndim, const int64_t *normalized_shape, nn_tensor *weight,
                         nn_tensor *bias, float eps) {
    const char *op = "nn_layer_norm";
    if (nn_check_tensor(op, "x", x, NN_F32) || check_eps(op, eps)) return NULL;
    char sx[96];
    nn_format_shape(x->ndim, x->shape, sx, sizeof sx);
    if (!normalized_shape || normalized_ndim < 1 || normalized_ndim > x->ndim)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: normalized_shape must name 1 to %d trailing dimensions of x %s, got %d",
                            op, x->ndim, sx, normalized_ndim);
    const int first = x->ndim - normalized_ndim;
    int64_t features = 1;
    for (int i = 0; i < normalized_ndim; i++) {
        if (normalized_shape[i] != x->shape[first + i]) {
            char sn[96];
            return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: normalized_shape %s is not the trailing dimensions of x %s", op,
                                nn_format_shape(normalized_ndim, normalized_shape, sn, sizeof sn), sx);
        }
        features *= normalized_shape[i];
    }
    if (check_optional(op, "weight", weight, x, normalized_ndim, normalized_shape) ||
        check_optional(op, "bias", bias, x, normalized_ndim, normalized_shape))
        return NULL;
    if (features < 1 || x->numel < 1) return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: x %s has no elements to normalise", op, sx);
    norm_node n = {.kind = NORM_LAYER, .normalized_dims = normalized_ndim, .batch_stats = true};
    n.layout = (nn_norm_params){.outer = 1, .inner = features, .groups = (int32_t)(x->numel / features),
                                .channels = (int32_t)features, .channel_inner = 1, .eps = eps};
    return record(&nn_op_layer_norm, x, weight, bias, NULL, NULL, &n);
}

nn_tensor *nn_group_norm(nn_tensor *x, int num_groups, nn_tensor *weight, nn_tensor *bias, float eps) {
    const char *op = "nn_group_norm";
    if (nn_check_tensor(op, "x", x, NN_F32) || check_eps(op, eps)) return NULL;
    char sx[96];
    nn_format_shape(x->ndim, x->shape, sx, sizeof sx);
    if (x->ndim < 2) return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: x must be [N, C, ...], got %s", op, sx);
    const int64_t channels = x->shape[1];
    if (num_groups < 1 || channels % num_groups != 0)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: num_groups %d must be >= 1 and divide the %lld channels of x %s", op,
                            num_groups, (long long)channels, sx);
    if (check_optional(op, "weight", weight, x, 1, &channels) || check_optional(op, "bias", bias, x, 1, &channels))
        return NULL;
    if (x->numel < 1) return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: x %s has no elements to normalise", op, sx);
    const int64_t spatial = x->numel / (x->shape[0] * channels);
    norm_node n = {.kind = NORM_GROUP, .num_groups = num_groups, .batch_stats = true};
    n.layout = (nn_norm_params){.outer = 1, .inner = channels / num_groups * spatial,
                                .groups = (int32_t)(x->shape[0] * num_groups), .channels = (int32_t)channels,
                                .channel_inner = spatial, .eps = eps};
    return record(&nn_op_group_norm, x, weight, bias, NULL, NULL, &n);
}
