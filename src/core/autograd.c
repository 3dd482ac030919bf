/* The define-by-run tape and nn_backward. Operations put their nodes on
 * the tape as they are recorded (graph.c); backward runs what is pending,
 * then walks the nodes in reverse from the loss's node and calls each
 * node's backward (or its fused segment's, fusion.h) when its output has
 * received a gradient. */
#include <stdlib.h>

#include "fusion.h"
#include "graph.h"

/* A result on the tape that requires no grad (an int32 one, or a float32
 * one computed from those) is traced too, so that an export can follow a
 * graph through argmax, comparisons, casts and integer sums. */
bool nn_autograd_needed(nn_ctx *ctx, nn_tensor *const *inputs, int count) {
    if (!ctx->grad_enabled) return false;
    for (int i = 0; i < count; i++)
        if (inputs[i] && (inputs[i]->requires_grad || inputs[i]->grad_fn)) return true;
    return false;
}

bool nn_wants_grad(const nn_tensor *t) { return t && t->requires_grad; }

nn_status nn_tape_push(nn_node *node) {
    nn_ctx *ctx = node->output->ctx;
    NN_TRY(nn_node_list_push(&ctx->tape, &ctx->tape_count, &ctx->tape_capacity, node, "the tape"));
    node->tape_index = ctx->tape_count - 1;
    node->output->grad_fn = node;
    /* an int32 result (argmax), or one computed from traced inputs alone, is
     * on the tape only to be traced (ONNX export) */
    bool differentiable = false;
    for (int i = 0; i < node->input_count; i++) differentiable |= nn_wants_grad(node->inputs[i]);
    node->output->requires_grad = node->output->dtype == NN_F32 && differentiable;
    node->output->is_result = true;
    return NN_OK;
}

void nn_tape_clear(nn_ctx *ctx) {
    for (int64_t i = 0; i < ctx->tape_count; i++) {
        ctx->tape[i]->tape_index = -1;
        nn_node_release(ctx->tape[i]);
    }
    ctx->tape_count = 0;
}

/* Free the nodes a backward pass walked (those at or before `start` whose
 * backward ran, or their segment's: the loss's ancestors) and keep the
 * rest, so another loss recorded in the same step can still be
 * back-propagated. */
static void consume_walked_nodes(nn_ctx *ctx, int64_t start) {
    int64_t kept = 0;
    for (int64_t i = 0; i < ctx->tape_count; i++) {
        nn_node *node = ctx->tape[i];
        if (i <= start && node->walked) {
            node->tape_index = -1;
            nn_node_release(node);
        } else {
            node->tape_index = kept;
            ctx->tape[kept++] = node;
        }
    }
    ctx->tape_count = kept;
}

/* Drop the nodes whose result nothing holds any more (no caller, no step,
 * no later node, no saved reference: the node's own is its only one) and
 * that nothing pending still runs: no backward can reach them, as PyTorch
 * frees a graph nobody refers to (a metric computed from the outputs and
 * read, a branch the loss never used). From the end, so that a node
 * dropped lets the nodes that fed only it go too. */
static void drop_unreachable_nodes(nn_ctx *ctx) {
    int64_t kept = ctx->tape_count;
    for (int64_t i = ctx->tape_count - 1; i >= 0; i--) {
        nn_node *node = ctx->tape[i];
        if (node->refs == 1 && node->output && node->output->refcount == 1 && !node->segment) {
            node->tape_index = -1;
            ctx->tape[i] = NULL;
            nn_node_release(node);
            kept--;
        }
    }
    if (kept == ctx->tape_count) return;
    int64_t at = 0;
    for (int64_t i = 0; i < ctx->tape_count; i++)
        if (ctx->tape[i]) {
            ctx->tape[i]->tape_index = at;
            ctx->tape[at++] = ctx->tape[i];
        }
    ctx->tape_count = at;
}

int nn_tape_consumers(const nn_tensor *t) { return t->tape_readers; }

/* How many nodes up to `start` read each tensor (nn_tape_consumers), and
 * for leaves how many are still to run their backward. */
static void count_readers(nn_ctx *ctx, int64_t start) {
    for (int64_t i = 0; i <= start; i++)
        for (int k = 0; k < ctx->tape[i]->input_count; k++) {
            nn_tensor *t = ctx->tape[i]->inputs[k];
            if (t) t->tape_readers = t->readers_left = 0;
        }
    for (int64_t i = 0; i <= start; i++)
        for (int k = 0; k < ctx->tape[i]->input_count; k++) {
            nn_tensor *t = ctx->tape[i]->inputs[k];
            if (t) {
                t->tape_readers++;
                t->readers_left++;
            }
        }
}

/* A node's backward has run: its leaf inputs have one reader fewer to
 * wait for, and one whose last reader it was has its whole gradient. */
static nn_status tell_leaves(nn_ctx *ctx, nn_node *node) {
    if (node->leaves_told) return NN_OK;
    node->leaves_told = true;
    for (int k = 0; k < node->input_count; k++) {
        nn_tensor *t = node->inputs[k];
        if (!t || t->grad_fn || !t->requires_grad || t->readers_left <= 0) continue;
        if (--t->readers_left == 0) NN_TRY(ctx->grad_ready(ctx->grad_ready_user, t));
    }
    return NN_OK;
}

static nn_status tell_grad_ready(nn_ctx *ctx, nn_node *node) {
    if (!ctx->grad_ready) return NN_OK;
    if (!node->segment) return tell_leaves(ctx, node);
    for (int i = 0; i < node->segment->count; i++)
        if (node->segment->members[i]) NN_TRY(tell_leaves(ctx, node->segment->members[i]));
    return NN_OK;
}

nn_status nn_ctx_set_grad_ready(nn_ctx *ctx, nn_grad_ready_fn fn, void *user) {
    if (fn && ctx->grad_ready && (ctx->grad_ready != fn || ctx->grad_ready_user != user))
        return nn_set_error(NN_ERR_STATE, "nn_ctx_set_grad_ready: the context's gradients are already watched");
    ctx->grad_ready = fn;
    ctx->grad_ready_user = fn ? user : NULL;
    return NN_OK;
}

nn_status nn_grad_target(nn_tensor *t, nn_tensor **grad, int32_t *accumulate) {
    /* A result whose recording is gone cannot pass its gradient on: stopping
     * here would silently drop the rest of the chain (PyTorch refuses too). */
    if (t->is_result && !t->grad_fn)
        return nn_set_error(NN_ERR_STATE,
                            "nn_backward: a tensor on the path to the loss was produced by "
                            "operations already consumed by an earlier nn_backward (or dropped "
                            "by nn_ctx_step_end); compute it again in this step");
    bool leaf = t->grad_fn == NULL;
    if (!t->grad) {
        t->grad = nn_tensor_alloc(t->ctx, NN_F32, t->ndim, t->shape, false);
        if (!t->grad) return nn_last_status();
        t->grad->layout = t->layout;
        /* A leaf's gradient is a running sum (until zeroed), so it starts at 0;
         * a non-leaf's is overwritten by the first rule that writes it. */
        if (leaf) NN_TRY(nn_tensor_fill(t->grad, 0.0f));
    }
    *grad = t->grad;
    if (leaf) {
        *accumulate = 1;
    } else {
        *accumulate = t->grad_written;
        t->grad_written = true;
    }
    return NN_OK;
}

/* d(leaf)/d(leaf) = 1 added into the leaf's grad. */
static nn_status backward_from_leaf(nn_tensor *loss) {
    nn_tensor *grad;
    int32_t accumulate;
    NN_TRY(nn_grad_target(loss, &grad, &accumulate));
    nn_tensor *one = nn_tensor_alloc(loss->ctx, NN_F32, loss->ndim, loss->shape, false);
    if (!one) return nn_last_status();
    nn_status status = nn_tensor_fill(one, 1.0f);
    if (status == NN_OK) {
        nn_pointwise_params p = {.n = 1, .op = NN_EW_SCALE, .accumulate = 1, .alpha = 1.0f};
        nn_buffer_ref args[3] = {nn_tensor_ref(one), nn_tensor_ref(one), nn_tensor_ref(grad)};
        status = nn_ctx_run(loss->ctx, NN_KERNEL_ELEMENTWISE, args, 3, &p);
    }
    nn_tensor_release(one);
    return status;
}

/* A node's backward (or its segment's) has run: the gradients of its
 * output (of every member's, for a segment), which nothing else reads, are
 * freed unless retained (nn_tensor_retain_grad), as PyTorch frees a
 * result's gradient; their memory serves the gradients still to come, so a
 * step holds one layer's gradients at a time rather than all of them. */
static void drop_output_grad(nn_tensor *t) {
    if (!t->grad || t->retain_grad || !t->grad_fn) return;
    nn_tensor_release(t->grad);
    t->grad = NULL;
}

static void drop_consumed_grads(nn_node *node) {
    if (!node->segment) {
        drop_output_grad(node->output);
        return;
    }
    if (!node->segment->done) return;
    for (int i = 0; i < node->segment->count; i++)
        if (node->segment->members[i]) drop_output_grad(node->segment->members[i]->output);
}

/* The node's inputs as the forward pass read them: one written since (a
 * version that moved) would give a gradient of old and new values mixed. */
static nn_status check_inputs_unchanged(const nn_node *node) {
    for (int i = 0; i < node->input_count; i++) {
        const nn_tensor *t = node->inputs[i];
        if (!t || nn_tensor_version(t) == node->input_versions[i]) continue;
        char shape[96];
        return nn_set_error(NN_ERR_STATE, "nn_backward: input %d of %s, %s, was written after the forward pass "
                            "read it (nn_tensor_write, nn_tensor_copy or nn_tensor_fill into it or a view of it, or "
                            "an optimizer step): its gradient would mix old and new values; run the forward pass "
                            "again after the write", i, node->op->name,
                            nn_format_shape(t->ndim, t->shape, shape, sizeof shape));
    }
    return NN_OK;
}

static nn_status node_backward(nn_node *node) {
    NN_TRY(check_inputs_unchanged(node));
    if (node->segment)
        for (int i = 0; i < node->segment->count; i++)
            if (node->segment->members[i]) NN_TRY(check_inputs_unchanged(node->segment->members[i]));
    node->walked = true;
    node->output->ctx->launch_precision = node->precision;
    if (node->segment) {
        for (int i = 0; i < node->segment->count; i++)
            if (node->segment->members[i]) node->segment->members[i]->walked = true;
        return nn_segment_backward(node);
    }
    return node->op->backward(node);
}

static nn_status backward_entered(nn_tensor *loss) {
    char buf[96];
    if (loss->numel != 1)
        return nn_set_error(NN_ERR_SHAPE,
                            "nn_backward: the loss must have one element, got shape %s",
                            nn_format_shape(loss->ndim, loss->shape, buf, sizeof buf));
    if (loss->dtype != NN_F32)
        return nn_set_error(NN_ERR_DTYPE, "nn_backward: the loss must be float32");
    if (!loss->requires_grad)
        return nn_set_error(NN_ERR_STATE,
                            "nn_backward: the loss does not require grad (no input of the "
                            "operations that produced it requires grad, or grad mode was off)");
    if (!loss->grad_fn && loss->is_result)
        return nn_set_error(NN_ERR_STATE,
                            "nn_backward: the operations that produced the loss were already "
                            "consumed by an earlier nn_backward (or dropped by nn_ctx_step_end)");
    nn_ctx *ctx = loss->ctx;
    NN_TRY(nn_ctx_flush(ctx, loss)); /* the forward pass, fused */
    if (!loss->grad_fn) return backward_from_leaf(loss);

    int64_t start = loss->grad_fn->tape_index;
    for (int64_t i = 0; i <= start; i++) {
        nn_node *node = ctx->tape[i];
        node->output->grad_written = false;
        node->walked = false;
        node->premasked = false;
        node->grad_mask = NN_NORM_MASK_NONE;
        node->leaves_told = false;
        if (node->segment) node->segment->done = false;
    }
    count_readers(ctx, start);

    nn_tensor *grad;
    int32_t accumulate;
    nn_status status = nn_grad_target(loss, &grad, &accumulate);
    if (status == NN_OK) status = nn_tensor_fill(grad, 1.0f);
    loss->grad_seeded = true; /* the root's gradient is the seed 1: a loss may hand its own on */
    for (int64_t i = start; i >= 0 && status == NN_OK; i--) {
        nn_node *node = ctx->tape[i];
        if (!node->output->grad_written) continue;
        status = node_backward(node);
        if (status == NN_OK) status = tell_grad_ready(ctx, node);
        if (status == NN_OK) drop_consumed_grads(node);
    }
    loss->grad_seeded = false;
    consume_walked_nodes(ctx, start);
    drop_unreachable_nodes(ctx);
    return status;
}

nn_status nn_backward(nn_tensor *loss) {
    if (!loss) return nn_set_error(NN_ERR_ARGUMENT, "nn_backward: loss is NULL");
    NN_TRY(nn_ctx_enter(loss->ctx, "nn_backward"));
    nn_status status = backward_entered(loss);
    nn_ctx_leave(loss->ctx);
    return status;
}
