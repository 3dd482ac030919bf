/* sum and mean over all elements; backward broadcasts the scalar gradient. */
#include "op_common.h"

static nn_status reduce_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *grad;
    int32_t acc;
    NN_TRY(nn_grad_target(x, &grad, &acc));
    nn_pointwise_params p = {.n = x->numel, .accumulate = acc, .alpha = node->params.factor};
    nn_buffer_ref args[2] = {nn_tensor_ref(node->output->grad), nn_tensor_ref(grad)};
    return nn_ctx_run(x->ctx, NN_KERNEL_BROADCAST_SCALAR, args, 2, &p);
}

static nn_tensor *reduce_all(const char *op, nn_tensor *x, float factor) {
    int64_t one = 1;
    nn_tensor *y = nn_op_result(x->ctx, 1, &one);
    if (!y) return NULL;
    nn_pointwise_params p = {.n = x->numel, .alpha = factor};
    nn_buffer_ref args[2] = {nn_tensor_ref(x), nn_tensor_ref(y)};
    if (nn_ctx_run(x->ctx, NN_KERNEL_REDUCE_SUM, args, 2, &p) != NN_OK) return nn_op_fail(y);
    nn_node *node;
    y = nn_op_finish(y, op, reduce_backward, &x, 1, NULL, 0, &node);
    if (node) node->params.factor = factor;
    return y;
}

nn_tensor *nn_sum(nn_tensor *x) {
    if (nn_check_tensor("nn_sum", "x", x, NN_F32)) return NULL;
    return reduce_all("nn_sum", x, 1.0f);
}

nn_tensor *nn_mean(nn_tensor *x) {
    if (nn_check_tensor("nn_mean", "x", x, NN_F32)) return NULL;
    return reduce_all("nn_mean", x, (float)(1.0 / (double)x->numel));
}
