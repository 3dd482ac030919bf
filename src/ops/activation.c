/* relu and softmax. Both backward rules read the saved output (relu's
 * output is positive exactly where its input was). */
#include "op_common.h"

static nn_status relu_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *y = node->output;
    nn_tensor *grad;
    int32_t acc;
    NN_TRY(nn_grad_target(x, &grad, &acc));
    nn_pointwise_params p = {.n = x->numel, .accumulate = acc};
    nn_buffer_ref args[3] = {nn_tensor_ref(y), nn_tensor_ref(y->grad), nn_tensor_ref(grad)};
    return nn_ctx_run(x->ctx, NN_KERNEL_RELU_BACKWARD, args, 3, &p);
}

nn_tensor *nn_relu(nn_tensor *x) {
    if (nn_check_tensor("nn_relu", "x", x, NN_F32)) return NULL;
    nn_tensor *y = nn_op_result(x->ctx, x->ndim, x->shape);
    if (!y) return NULL;
    nn_pointwise_params p = {.n = x->numel};
    nn_buffer_ref args[2] = {nn_tensor_ref(x), nn_tensor_ref(y)};
    if (nn_ctx_run(x->ctx, NN_KERNEL_RELU_FORWARD, args, 2, &p) != NN_OK) return nn_op_fail(y);
    return nn_op_finish(y, "nn_relu", relu_backward, &x, 1, NULL, 0, NULL);
}

static nn_softmax_params rows_of(const nn_tensor *x) {
    nn_softmax_params p = {.cols = (int32_t)x->shape[x->ndim - 1]};
    p.rows = (int32_t)(x->numel / p.cols);
    return p;
}

static nn_status softmax_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *y = node->output;
    nn_tensor *grad;
    int32_t acc;
    NN_TRY(nn_grad_target(x, &grad, &acc));
    nn_softmax_params p = rows_of(x);
    p.accumulate = acc;
    nn_buffer_ref args[3] = {nn_tensor_ref(y), nn_tensor_ref(y->grad), nn_tensor_ref(grad)};
    return nn_ctx_run(x->ctx, NN_KERNEL_SOFTMAX_BACKWARD, args, 3, &p);
}

nn_tensor *nn_softmax(nn_tensor *x) {
    const char *op = "nn_softmax";
    if (nn_check_tensor(op, "x", x, NN_F32) || nn_check_int32(op, "elements", x->numel)) return NULL;
    nn_tensor *y = nn_op_result(x->ctx, x->ndim, x->shape);
    if (!y) return NULL;
    nn_softmax_params p = rows_of(x);
    nn_buffer_ref args[2] = {nn_tensor_ref(x), nn_tensor_ref(y)};
    if (nn_ctx_run(x->ctx, NN_KERNEL_SOFTMAX_FORWARD, args, 2, &p) != NN_OK) return nn_op_fail(y);
    return nn_op_finish(y, op, softmax_backward, &x, 1, NULL, 0, NULL);
}
