/* Softmax + cross-entropy in one kernel (issue 6): the forward writes the
 * mean loss and the gradient of that mean, (p - onehot(label)) / N. When the
 * loss is the root of nn_backward (its gradient the seed 1), that gradient
 * becomes the logits' gradient as it is: backward runs no kernel. Otherwise
 * (the loss scaled or summed with another) it is multiplied by the loss's
 * gradient on the device (nothing read back). */
#include "op_common.h"

static nn_status softmax_ce_backward(nn_node *node) {
    nn_tensor *logits = node->inputs[0], *dlogits = node->saved[1];
    if (node->output->grad_seeded) return nn_grad_hand_on(logits, dlogits);
    nn_tensor *grad;
    int32_t acc;
    NN_TRY(nn_grad_target(logits, &grad, &acc));
    return nn_run_scalar_times(logits->ctx, node->output->grad, dlogits, grad, acc); /* grad (+)= dloss[0] * dlogits */
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
