/* softmax over the last dimension. Its backward reads its output. */
#include "io/onnx_graph.h"
#include "ops.h"

static nn_softmax_params rows_of(const nn_tensor *x) {
    nn_softmax_params p = {.cols = (int32_t)x->shape[x->ndim - 1]};
    p.rows = (int32_t)(x->numel / p.cols);
    return p;
}

static nn_status softmax_forward(nn_node *node) {
    nn_tensor *x = node->inputs[0];
    nn_softmax_params p = rows_of(x);
    return nn_run_forward(node, NN_KERNEL_SOFTMAX_FORWARD, &p);
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

static nn_status softmax_onnx(exporter *x, op_io *io, const char *out) {
    return nn_onnx_along_axis(x, io, out, "Softmax", -1);
}

const nn_op nn_op_softmax = {
    .name = "nn_softmax", .forward = softmax_forward, .backward = softmax_backward, .to_onnx = softmax_onnx};

nn_tensor *nn_softmax(nn_tensor *x) {
    const char *op = "nn_softmax";
    if (nn_check_tensor(op, "x", x, NN_F32) || nn_check_int32(op, "elements", x->numel)) return NULL;
    return nn_op_result(&nn_op_softmax, &x, 1, NULL, 0, x->ndim, x->shape);
}
