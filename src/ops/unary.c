/* The elementwise functions of shaders/unary_ops.h as operations: each row
 * is nn_<name>(x), recorded with its row's code; forward and backward run
 * the UNARY kernels and export writes the row's ONNX operator. The rows
 * define the public functions here (nn_ops.h declares them). */
#include "io/onnx_graph.h"
#include "ops.h"

typedef struct unary_node {
    int32_t op; /* nn_unary_op */
} unary_node;

static const char *const kOnnx[NN_UNARY_COUNT + 1] = {
#define ONNX_ROW(ID, name, Onnx, forward, backward) #Onnx,
    NN_UNARY_OPS(ONNX_ROW)
#undef ONNX_ROW
    NULL};

static nn_status unary_forward(nn_node *node) {
    nn_tensor *x = node->inputs[0];
    nn_pointwise_params p = {.n = x->numel, .op = NN_NODE_PARAMS(node, unary_node)->op};
    return nn_run_forward(node, NN_KERNEL_UNARY_FORWARD, &p);
}

static nn_status unary_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *y = node->output, *grad;
    int32_t acc;
    NN_TRY(nn_grad_target(x, &grad, &acc));
    nn_pointwise_params p = {.n = x->numel, .op = NN_NODE_PARAMS(node, unary_node)->op, .accumulate = acc};
    nn_buffer_ref args[4] = {nn_tensor_ref(x), nn_tensor_ref(y), nn_tensor_ref(y->grad), nn_tensor_ref(grad)};
    return nn_ctx_run(x->ctx, NN_KERNEL_UNARY_BACKWARD, args, 4, &p);
}

static nn_status unary_onnx(exporter *x, op_io *io, const char *out) {
    return nn_onnx_elementwise(x, io, out, kOnnx[NN_NODE_PARAMS(io->node, unary_node)->op]);
}

static nn_tensor *unary(const nn_op *op, nn_unary_op code, nn_tensor *x) {
    if (nn_check_tensor(op->name, "x", x, NN_F32)) return NULL;
    const unary_node p = {code};
    return nn_op_result(op, &x, 1, &p, sizeof p, x->ndim, x->shape);
}

/* (The row's columns are named apart from nn_op's fields.) */
#define DEFINE_ROW(ID, fn, Onnx, forward_expr, backward_expr)                                                  \
    static const nn_op op_##fn = {                                                                             \
        .name = "nn_" #fn, .forward = unary_forward, .backward = unary_backward, .to_onnx = unary_onnx};       \
    nn_tensor *nn_##fn(nn_tensor *x) { return unary(&op_##fn, NN_UNARY_##ID, x); }
NN_UNARY_OPS(DEFINE_ROW)
#undef DEFINE_ROW
