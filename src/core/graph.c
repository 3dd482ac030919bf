/* Recording operations as nodes, and running them (core/graph.h): the
 * pending list, its flush through the fusion pass, and the recipes of
 * outputs that fused kernels left unwritten. */
#include <stdlib.h>
#include <string.h>

#include "fusion.h"
#include "graph.h"
#include "layout.h"

void nn_node_retain(nn_node *node) { node->refs++; }

void nn_node_release(nn_node *node) {
    if (!node || --node->refs > 0) return;
    if (node->output && node->output->grad_fn == node) node->output->grad_fn = NULL;
    if (node->output && node->output->producer == node) node->output->producer = NULL;
    nn_tensor_release(node->output);
    for (int i = 0; i < node->input_count; i++) nn_tensor_release(node->inputs[i]);
    for (int i = 0; i < node->saved_count; i++) nn_tensor_release(node->saved[i]);
    if (node->segment) nn_segment_forget(node->segment, node);
    free(node);
}

nn_status nn_node_list_push(nn_node ***list, int64_t *count, int64_t *capacity, nn_node *node, const char *what) {
    if (*count == *capacity) {
        int64_t grown_capacity = *capacity ? *capacity * 2 : 64;
        nn_node **grown = realloc(*list, (size_t)grown_capacity * sizeof *grown);
        if (!grown) return nn_set_error(NN_ERR_MEMORY, "%s: out of host memory for %s", node->op->name, what);
        *list = grown;
        *capacity = grown_capacity;
    }
    nn_node_retain(node);
    (*list)[(*count)++] = node;
    return NN_OK;
}

static nn_status pending_push(nn_ctx *ctx, nn_node *node) {
    NN_TRY(nn_node_list_push(&ctx->pending, &ctx->pending_count, &ctx->pending_capacity, node, "the pending list"));
    node->output->producer = node;
    return NN_OK;
}

static nn_tensor *record_entered(nn_ctx *ctx, const nn_op *op, nn_tensor *const *inputs, int input_count, const void *params,
                        size_t params_size, nn_dtype dtype, int ndim, const int64_t *shape);

/* The inputs in the layouts op reads them (conversions recorded first:
 * results of the step, as any operation's) and the output's layout. */
static nn_status layouts_for(nn_ctx *ctx, const nn_op *op, nn_tensor *const *inputs, int count, const void *params,
                             int ndim, const int64_t *shape, nn_tensor **read, nn_layout *output) {
    nn_layout wanted[NN_NODE_MAX_TENSORS] = {NN_LAYOUT_DENSE};
    *output = op->layouts ? nn_layout_for_shape(ndim, shape, op->layouts(inputs, count, params, ndim, shape, wanted))
                          : NN_LAYOUT_DENSE;
    for (int i = 0; i < count; i++) {
        read[i] = inputs[i];
        if (!inputs[i]) continue;
        const nn_layout want = nn_layout_for_shape(inputs[i]->ndim, inputs[i]->shape, wanted[i]);
        if (inputs[i]->layout == want) continue;
        const nn_to_layout_node p = {want};
        read[i] = record_entered(ctx, &nn_op_to_layout, &inputs[i], 1, &p, sizeof p, inputs[i]->dtype,
                                 inputs[i]->ndim, inputs[i]->shape);
        if (!read[i]) return nn_last_status();
    }
    return NN_OK;
}

static nn_tensor *record_entered(nn_ctx *ctx, const nn_op *op, nn_tensor *const *given, int input_count, const void *params,
                        size_t params_size, nn_dtype dtype, int ndim, const int64_t *shape) {
    if (input_count > NN_NODE_MAX_TENSORS || params_size > NN_NODE_MAX_PARAMS)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: more inputs or parameters than a node holds", op->name);
    nn_tensor *inputs[NN_NODE_MAX_TENSORS];
    nn_layout layout;
    /* Conversions made before a failure stay results of the step, freed with it. */
    if (layouts_for(ctx, op, given, input_count, params, ndim, shape, inputs, &layout) != NN_OK) return NULL;
    nn_node *node = calloc(1, sizeof *node);
    if (!node) return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", op->name);
    node->op = op;
    node->refs = 1;
    node->precision = ctx->precision;
    node->tape_index = -1;
    if (params_size) memcpy(node->params, params, params_size);
    for (int i = 0; i < input_count; i++) {
        node->inputs[i] = nn_tensor_retain(inputs[i]);
        node->input_versions[i] = nn_tensor_version(inputs[i]);
    }
    node->input_count = input_count;
    node->output = nn_tensor_deferred(ctx, dtype, ndim, shape);
    if (node->output) node->output->layout = layout;
    nn_status st = node->output ? NN_OK : nn_last_status();
    if (node->output) nn_tensor_retain(node->output); /* the node's; the step holds the other */
    if (st == NN_OK && op->backward && nn_autograd_needed(ctx, inputs, input_count)) st = nn_tape_push(node);
    if (st == NN_OK) st = pending_push(ctx, node);
    nn_tensor *out = node->output;
    nn_node_release(node); /* the tape and the pending list hold it */
    if (st != NN_OK) {
        nn_tensor_free(out);
        return NULL;
    }
    return out;
}

nn_tensor *nn_op_record(const nn_op *op, nn_tensor *const *inputs, int input_count, const void *params,
                        size_t params_size, nn_dtype dtype, int ndim, const int64_t *shape) {
    nn_ctx *ctx = NULL;
    for (int i = 0; i < input_count && !ctx; i++)
        if (inputs[i]) ctx = inputs[i]->ctx;
    if (!ctx) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: no input", op->name);
    if (nn_ctx_enter(ctx, op->name) != NN_OK) return NULL;
    nn_tensor *out = record_entered(ctx, op, inputs, input_count, params, params_size, dtype, ndim, shape);
    nn_ctx_leave(ctx);
    return out;
}

nn_tensor *nn_node_save_new(nn_node *node, nn_dtype dtype, int ndim, const int64_t *shape) {
    nn_tensor *t = nn_tensor_alloc(node->output->ctx, dtype, ndim, shape, false);
    if (!t) return NULL;
    if (node->saved_count == NN_NODE_MAX_TENSORS) {
        nn_tensor_release(t);
        return NN_FAIL_NULL(NN_ERR_STATE, "%s: more saved tensors than a node holds", node->op->name);
    }
    node->saved[node->saved_count++] = t;
    return t;
}

nn_status nn_node_save(nn_node *node, nn_tensor *t) {
    if (node->saved_count == NN_NODE_MAX_TENSORS)
        return nn_set_error(NN_ERR_STATE, "%s: more saved tensors than a node holds", node->op->name);
    node->saved[node->saved_count++] = nn_tensor_retain(t);
    return NN_OK;
}

void nn_node_forget_writes(nn_node *node) {
    for (int i = 0; i < node->input_count; i++)
        if (node->inputs[i] && node->inputs[i]->pending_writer == node) node->inputs[i]->pending_writer = NULL;
    for (int i = 0; i < node->saved_count; i++)
        if (node->saved[i]->pending_writer == node) node->saved[i]->pending_writer = NULL;
}

nn_status nn_node_launch(nn_node *node) {
    nn_tensor *out = node->output;
    if (out->recipe) { /* computed here after all: the recipe is not needed */
        nn_node_release(out->recipe);
        out->recipe = NULL;
    }
    nn_status st;
    if (node->op->view) {
        st = nn_tensor_share_storage(out, node->inputs[0], 0);
    } else {
        st = nn_tensor_attach_storage(out);
        out->ctx->launch_precision = node->precision;
        if (st == NN_OK) st = node->op->forward(node);
    }
    node->launched = true;
    return st;
}

nn_status nn_node_elide(nn_node *node) {
    nn_tensor *out = node->output;
    nn_node *recipe = calloc(1, sizeof *recipe);
    if (!recipe) return nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", node->op->name);
    recipe->op = node->op;
    recipe->refs = 1;
    recipe->tape_index = -1;
    memcpy(recipe->params, node->params, sizeof recipe->params);
    for (int i = 0; i < node->input_count; i++) recipe->inputs[i] = nn_tensor_retain(node->inputs[i]);
    memcpy(recipe->input_versions, node->input_versions, sizeof recipe->input_versions);
    recipe->input_count = node->input_count;
    out->recipe = recipe; /* its output stays NULL: the tensor owns the recipe, not the other way round */
    node->launched = true;
    return NN_OK;
}

/* Run t's recipe into t: its inputs first (they may be unwritten too). */
static nn_status run_recipe(nn_tensor *t) {
    nn_node *recipe = t->recipe;
    t->recipe = NULL;
    recipe->output = nn_tensor_retain(t);
    nn_status st = NN_OK;
    for (int i = 0; i < recipe->input_count && st == NN_OK; i++)
        if (recipe->inputs[i] && !recipe->inputs[i]->storage) st = nn_tensor_materialize(recipe->inputs[i]);
    if (st == NN_OK) st = nn_node_launch(recipe);
    nn_node_release(recipe); /* with the saved tensors nothing will read */
    return st;
}

nn_status nn_tensor_materialize(nn_tensor *t) {
    if (t->pending_writer && !t->ctx->flushing) NN_TRY(nn_ctx_flush(t->ctx, NULL)); /* a leaf with an update pending */
    if (t->storage) return NN_OK;
    if (t->producer && !t->ctx->flushing) NN_TRY(nn_ctx_flush(t->ctx, t));
    if (!t->storage && t->recipe) return run_recipe(t);
    if (!t->storage)
        return nn_set_error(NN_ERR_STATE, "a tensor of shape [%lld...] has no value: the operation that computes "
                                          "it has not run", (long long)t->shape[0]);
    return NN_OK;
}

static nn_status flush_entered(nn_ctx *ctx, const nn_tensor *keep) {
    if (ctx->flushing || ctx->pending_count == 0) return NN_OK;
    ctx->flushing = true;
    nn_node **nodes = ctx->pending;
    const int64_t count = ctx->pending_count;
    ctx->pending = NULL;
    ctx->pending_count = ctx->pending_capacity = 0;
    nn_status st = nn_fusion_run(ctx, nodes, count, keep);
    for (int64_t i = 0; i < count; i++) {
        if (nodes[i]->output->producer == nodes[i]) nodes[i]->output->producer = NULL;
        nn_node_forget_writes(nodes[i]);
        nn_node_release(nodes[i]);
    }
    free(nodes);
    ctx->flushing = false;
    return st;
}

nn_status nn_ctx_flush(nn_ctx *ctx, const nn_tensor *keep) {
    NN_TRY(nn_ctx_enter(ctx, "nn_ctx_flush"));
    nn_status status = flush_entered(ctx, keep);
    nn_ctx_leave(ctx);
    return status;
}

void nn_ctx_drop_pending(nn_ctx *ctx) {
    for (int64_t i = 0; i < ctx->pending_count; i++) {
        nn_node *node = ctx->pending[i];
        if (node->output->producer == node) node->output->producer = NULL;
        nn_node_forget_writes(node);
        nn_node_release(node);
    }
    free(ctx->pending);
    ctx->pending = NULL;
    ctx->pending_count = ctx->pending_capacity = 0;
}
