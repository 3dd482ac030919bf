/* relu(x) = max(x, 0). Its backward reads its output (positive exactly
 * where its input was), and the only reader of that output may write the
 * output's gradient already masked (nn_relu_mask_claim): a Linear's data
 * GEMM or a max pooling's backward applies the mask where it produces the
 * gradient, and the ReLU then costs no kernel in backward. Likewise the
 * BatchNorm that produced its input may take the mask into its own backward
 * (nn_norm_mask_claim): the ReLU then hands its gradient on unmasked. */
#include "core/layout.h"
#include "io/onnx_graph.h"
#include "ops.h"

static nn_status relu_forward(nn_node *node) {
    nn_tensor *x = node->inputs[0];
    nn_pointwise_params p = {.n = x->numel};
    return nn_run_forward(node, NN_KERNEL_RELU_FORWARD, &p);
}

static nn_status relu_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *y = node->output;
    if (node->premasked || nn_norm_mask_claim(x, NN_NORM_MASK_RELU)) return nn_grad_hand_on(x, y->grad);
    nn_tensor *grad;
    int32_t acc;
    NN_TRY(nn_grad_target(x, &grad, &acc));
    nn_pointwise_params p = {.n = x->numel, .accumulate = acc};
    nn_buffer_ref args[3] = {nn_tensor_ref(y), nn_tensor_ref(y->grad), nn_tensor_ref(grad)};
    return nn_ctx_run(x->ctx, NN_KERNEL_RELU_BACKWARD, args, 3, &p);
}

static nn_status relu_onnx(exporter *x, op_io *io, const char *out) { return nn_onnx_elementwise(x, io, out, "Relu"); }

const nn_op nn_op_relu = {.name = "nn_relu", .forward = relu_forward, .backward = relu_backward,
                          .to_onnx = relu_onnx, .layouts = nn_layouts_pointwise};

nn_tensor *nn_relu(nn_tensor *x) {
    if (nn_check_tensor("nn_relu", "x", x, NN_F32)) return NULL;
    return nn_op_result(&nn_op_relu, &x, 1, NULL, 0, x->ndim, x->shape);
}

bool nn_relu_output(const nn_tensor *x) { return x->grad_fn && x->grad_fn->op == &nn_op_relu; }

bool nn_relu_mask_claim(const nn_tensor *x) {
    /* One reader: the ReLU's output gradient has one writer, which may mask it. A retained
     * gradient of x must be x's own, unmasked. */
    if (!nn_relu_output(x) || nn_tape_consumers(x) != 1 || x->grad_written || x->retain_grad) return false;
    x->grad_fn->premasked = true;
    return true;
}
