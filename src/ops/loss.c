/* Softmax + cross-entropy in one kernel (issue 6): the forward writes the
 * mean loss and the gradient of that mean, (p - onehot(label)) / N. When the
 * loss is the root of nn_backward (its gradient the seed 1), that gradient
 * becomes the logits' gradient as it is: backward runs no kernel. Otherwise
 * (the loss scaled or summed with another) it is multiplied by the loss's
 * gradient on the device (nothing read back). */
#include "op_common.h"

static nn_status softmax_ce_backward(nn_node *node) {
    nn_tensor *logits = node->inputs[0], *dlogits = node->saved[1], *dloss = node->output->grad;
    nn_ctx *ctx = logits->ctx;
    bool seed = node->output->grad_seeded;
    /* A leaf's gradient is a running sum the caller owns: it is added to. */
    if (seed && !logits->grad && logits->grad_fn) logits->grad = nn_tensor_retain(dlogits);
    nn_tensor *grad;
    int32_t acc;
    NN_TRY(nn_grad_target(logits, &grad, &acc));
    if (seed && grad == dlogits && !acc) return NN_OK;
    if (seed) return nn_run_scale(ctx, nn_tensor_ref(dlogits), nn_tensor_ref(grad), logits->numel, 1.0f, acc);
    /* grad (+)= dloss[0] * dlogits: the scalar broadcast, then a product. */
    nn_tensor *scaled = nn_op_scratch(ctx, NN_F32, logits->ndim, logits->shape);
    if (!scaled) return nn_last_status();
    nn_pointwise_params b = {.n = logits->numel, .alpha = 1.0f};
    nn_buffer_ref bargs[2] = {nn_tensor_ref(dloss), nn_tensor_ref(scaled)};
    nn_status status = nn_ctx_run(ctx, NN_KERNEL_BROADCAST_SCALAR, bargs, 2, &b);
    if (status == NN_OK) {
        nn_pointwise_params m = {.n = logits->numel, .op = NN_EW_MUL, .accumulate = acc};
        nn_buffer_ref margs[3] = {nn_tensor_ref(scaled), nn_tensor_ref(dlogits), nn_tensor_ref(grad)};
        status = nn_ctx_run(ctx, NN_KERNEL_ELEMENTWISE, margs, 3, &m);
    }
    nn_tensor_release(scaled);
    return status;
}

nn_tensor *nn_softmax_cross_entropy(nn_tensor *logits, nn_tensor *labels) {
    const char *op = "nn_softmax_cross_entropy";
    if (nn_check_tensor_ndim(op, "logits", logits, NN_F32, 2) ||
        nn_check_tensor_ndim(op, "labels", labels, NN_I32, 1) || nn_check_same_ctx(op, logits, labels))
        return NULL;
    char sl[96], sy[96];
    if (labels->shape[0] != logits->shape[0])
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: %lld labels %s for %lld rows of logits %s", op,
                            (long long)labels->shape[0], nn_format_shape(1, labels->shape, sy, sizeof sy),
                            (long long)logits->shape[0],
                            nn_format_shape(2, logits->shape, sl, sizeof sl));
    if (nn_check_int32(op, "rows", logits->shape[0]) || nn_check_int32(op, "classes", logits->shape[1]))
        return NULL;
    int64_t one = 1;
    nn_tensor *loss = nn_op_result(logits->ctx, 1, &one);
    if (!loss) return NULL;
    nn_tensor *dlogits = nn_op_scratch(logits->ctx, NN_F32, 2, logits->shape);
    if (!dlogits) return nn_op_fail(loss);
    nn_softmax_params p = {.rows = (int32_t)logits->shape[0], .cols = (int32_t)logits->shape[1]};
    nn_buffer_ref args[4] = {nn_tensor_ref(logits), nn_tensor_ref(labels), nn_tensor_ref(dlogits),
                             nn_tensor_ref(loss)};
    if (nn_ctx_run(logits->ctx, NN_KERNEL_SOFTMAX_CE_FUSED, args, 4, &p) != NN_OK) {
        nn_tensor_release(dlogits);
        return nn_op_fail(loss);
    }
    nn_tensor *saved[2] = {labels, dlogits};
    loss = nn_op_finish(loss, op, softmax_ce_backward, &logits, 1, saved, 2, NULL);
    nn_tensor_release(dlogits);
    return loss;
}
