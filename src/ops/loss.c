/* Softmax + cross-entropy, fused: forward keeps the probabilities, and the
 * gradient is (p - onehot(label)) / N times the loss's gradient, computed on
 * the device from the loss gradient's buffer (nothing read back). */
#include "op_common.h"

static nn_status softmax_ce_backward(nn_node *node) {
    nn_tensor *logits = node->inputs[0], *labels = node->saved[0], *probs = node->saved[1];
    nn_tensor *grad;
    int32_t acc;
    NN_TRY(nn_grad_target(logits, &grad, &acc));
    nn_softmax_params p = {.rows = (int32_t)logits->shape[0], .cols = (int32_t)logits->shape[1],
                           .accumulate = acc};
    nn_buffer_ref args[4] = {nn_tensor_ref(probs), nn_tensor_ref(labels),
                             nn_tensor_ref(node->output->grad), nn_tensor_ref(grad)};
    return nn_ctx_run(logits->ctx, NN_KERNEL_SOFTMAX_CE_BACKWARD, args, 4, &p);
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
    nn_tensor *probs = nn_op_scratch(logits->ctx, NN_F32, 2, logits->shape);
    if (!probs) return nn_op_fail(loss);
    nn_softmax_params p = {.rows = (int32_t)logits->shape[0], .cols = (int32_t)logits->shape[1]};
    nn_buffer_ref args[4] = {nn_tensor_ref(logits), nn_tensor_ref(labels), nn_tensor_ref(probs),
                             nn_tensor_ref(loss)};
    if (nn_ctx_run(logits->ctx, NN_KERNEL_SOFTMAX_CE_FORWARD, args, 4, &p) != NN_OK) {
        nn_tensor_release(probs);
        return nn_op_fail(loss);
    }
    nn_tensor *saved[2] = {labels, probs};
    loss = nn_op_finish(loss, op, softmax_ce_backward, &logits, 1, saved, 2, NULL);
    nn_tensor_release(probs);
    return loss;
}
