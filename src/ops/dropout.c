/* Dropout (PyTorch's semantics): in training, each element is zeroed with
 * probability p and the kept ones are scaled by 1 / (1 - p); in evaluation
 * it is the identity (a view of x). The mask is drawn on the device from a
 * counter-based hash of (key, draw, element): the key comes from the
 * context's generator, the draw number from a device counter that a second
 * kernel advances after each draw. Nothing about the draw is a host-side
 * kernel parameter that changes between steps, so a captured step replayed
 * as the same kernel list with the same parameters still draws a fresh mask
 * each time (the counter is advanced by COUNTER_ADD, the device loop's
 * kernel). A reseed takes effect at the next eager dropout call: a capture
 * recorded before nn_ctx_manual_seed keeps its key and counter. Backward multiplies by the saved mask (0 or the scale). */
#include <math.h>

#include "op_common.h"

/* The context's draw counter, created at the first draw and reset (with a
 * new key from the generator) whenever the generator was reseeded since:
 * after nn_ctx_manual_seed(ctx, s) the masks repeat as they did after the
 * last nn_ctx_manual_seed(ctx, s). */
static nn_status dropout_state(nn_ctx *ctx, nn_tensor **counter) {
    if (!ctx->dropout_counter) {
        int64_t one = 1;
        ctx->dropout_counter = nn_op_scratch(ctx, NN_I32, 1, &one);
        if (!ctx->dropout_counter) return nn_last_status();
        ctx->dropout_generation = ctx->rng.generation - 1; /* forces the reset below */
    }
    if (ctx->dropout_generation != ctx->rng.generation) {
        /* Straight to the backend, not through the context: were this write
         * recorded by a capture, every replay would reset the counter and
         * draw the same mask again. */
        uint32_t zero = 0;
        NN_TRY(ctx->backend->write(ctx->backend, nn_tensor_ref(ctx->dropout_counter), &zero, sizeof zero));
        ctx->dropout_key[0] = nn_rng_next_u32(&ctx->rng);
        ctx->dropout_key[1] = nn_rng_next_u32(&ctx->rng);
        ctx->dropout_generation = ctx->rng.generation;
    }
    *counter = ctx->dropout_counter;
    return NN_OK;
}

static nn_status dropout_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *mask = node->saved[0];
    nn_tensor *grad;
    int32_t acc;
    NN_TRY(nn_grad_target(x, &grad, &acc));
    nn_pointwise_params p = {.n = x->numel, .op = NN_EW_MUL, .accumulate = acc};
    nn_buffer_ref args[3] = {nn_tensor_ref(node->output->grad), nn_tensor_ref(mask), nn_tensor_ref(grad)};
    return nn_ctx_run(x->ctx, NN_KERNEL_ELEMENTWISE, args, 3, &p);
}

/* Evaluation: the identity, as a view whose gradient passes through. */
static nn_status identity_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0];
    nn_tensor *grad;
    int32_t acc;
    NN_TRY(nn_grad_target(x, &grad, &acc));
    return nn_run_scale(x->ctx, nn_tensor_ref(node->output->grad), nn_tensor_ref(grad), x->numel, 1.0f, acc);
}

nn_tensor *nn_dropout(nn_tensor *x, float p, bool training) {
    const char *op = "nn_dropout";
    if (nn_check_tensor(op, "x", x, NN_F32)) return NULL;
    if (!(p >= 0.0f && p < 1.0f))
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: p must be in [0, 1), got %g", op, (double)p);
    nn_node *node;
    if (!training) {
        nn_tensor *y = nn_tensor_view(x, x->ndim, x->shape);
        if (!y) return NULL;
        y = nn_op_finish(y, op, identity_backward, &x, 1, NULL, 0, &node);
        if (node) node->params.factor = p;
        return y;
    }
    if (x->numel > (int64_t)UINT32_MAX)
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: %lld elements exceed the mask hash's 32-bit index", op,
                            (long long)x->numel);
    nn_tensor *counter = NULL;
    if (dropout_state(x->ctx, &counter) != NN_OK) return NULL;
    double threshold = floor((double)p * 4294967296.0);
    nn_dropout_params params = {
        .n = x->numel,
        .threshold = threshold > 4294967295.0 ? 4294967295u : (uint32_t)threshold,
        .scale = (float)(1.0 / (1.0 - (double)p)),
        .seed_lo = x->ctx->dropout_key[0],
        .seed_hi = x->ctx->dropout_key[1],
    };
    nn_tensor *y = nn_op_result(x->ctx, x->ndim, x->shape);
    if (!y) return NULL;
    nn_tensor *mask = nn_op_scratch(x->ctx, NN_F32, x->ndim, x->shape);
    if (!mask) return nn_op_fail(y);
    nn_buffer_ref args[4] = {nn_tensor_ref(x), nn_tensor_ref(y), nn_tensor_ref(mask), nn_tensor_ref(counter)};
    nn_buffer_ref advance[1] = {nn_tensor_ref(counter)};
    nn_counter_params one = {.delta = 1};
    if (nn_ctx_run(x->ctx, NN_KERNEL_DROPOUT_FORWARD, args, 4, &params) != NN_OK ||
        nn_ctx_run(x->ctx, NN_KERNEL_COUNTER_ADD, advance, 1, &one) != NN_OK) {
        nn_tensor_release(mask);
        return nn_op_fail(y);
    }
    y = nn_op_finish(y, op, dropout_backward, &x, 1, &mask, 1, &node);
    if (node) node->params.factor = p;
    nn_tensor_release(mask);
    return y;
}
