/* Softmax + cross-entropy in one kernel: the forward writes the mean loss
 * and the gradient of that mean, (p - onehot(label)) / N. When the loss is
 * the root of nn_backward (its gradient the seed 1), that gradient becomes
 * the logits' gradient as it is: backward runs no kernel. Otherwise (the
 * loss scaled or summed with another) it is multiplied by the loss's
 * gradient on the device (nothing read back). */
#include "io/onnx_graph.h"
#include "ops.h"

static nn_status softmax_ce_forward(nn_node *node) {
    nn_tensor *logits = node->inputs[0], *labels = node->inputs[1];
    nn_tensor *dlogits = nn_node_save_new(node, NN_F32, 2, logits->shape);
    if (!dlogits) return nn_last_status();
    nn_softmax_params p = {.rows = (int32_t)logits->shape[0], .cols = (int32_t)logits->shape[1]};
    nn_buffer_ref args[4] = {nn_tensor_ref(logits), nn_tensor_ref(labels), nn_tensor_ref(dlogits),
                             nn_tensor_ref(node->output)};
    return nn_ctx_run(logits->ctx, NN_KERNEL_SOFTMAX_CE_FUSED, args, 4, &p);
}

nn_status nn_softmax_ce_hand_on(nn_node *node, nn_tensor *dlogits) {
    nn_tensor *logits = node->inputs[0];
    if (node->output->grad_seeded) return nn_grad_hand_on(logits, dlogits);
    nn_tensor *grad;
    int32_t acc;
    NN_TRY(nn_grad_target(logits, &grad, &acc));
    return nn_run_scalar_times(logits->ctx, node->output->grad, dlogits, grad, acc); /* grad (+)= dloss[0] * dlogits */
}

static nn_status softmax_ce_backward(nn_node *node) { return nn_softmax_ce_hand_on(node, node->saved[0]); }

static nn_status softmax_ce_onnx(exporter *x, op_io *io, const char *out) {
    return nn_set_error(NN_ERR_ARGUMENT, "%s: operation %s has no ONNX mapping (a loss: export the model's logits, "
                                         "not the loss)", x->who, io->node->op->name);
}

const nn_op nn_op_softmax_cross_entropy = {
    .name = "nn_softmax_cross_entropy",
    .forward = softmax_ce_forward,
    .backward = softmax_ce_backward,
    .to_onnx = softmax_ce_onnx};

nn_tensor *nn_softmax_cross_entropy(nn_tensor *logits, nn_tensor *labels) {
    const char *op = "nn_softmax_cross_entropy";
    if (nn_check_tensor_ndim(op, "logits", logits, NN_F32, 2) ||
        nn_check_tensor_ndim(op, "labels", labels, NN_I32, 1) || nn_check_same_ctx(op, "logits", logits, "labels", labels))
        return NULL;
    char sl[96], sy[96];
    if (labels->shape[0] != logits->shape[0])
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: %lld labels %s for %lld rows of logits %s", op,
                            (long long)labels->shape[0], nn_format_shape(1, labels->shape, sy, sizeof sy),
                            (long long)logits->shape[0], nn_format_shape(2, logits->shape, sl, sizeof sl));
    if (nn_check_int32(op, "rows", logits->shape[0]) || nn_check_int32(op, "classes", logits->shape[1]))
        return NULL;
    const int64_t one = 1;
    nn_tensor *inputs[2] = {logits, labels};
    return nn_op_result(&nn_op_softmax_cross_entropy, inputs, 2, NULL, 0, 1, &one);
}
