/* The elementwise functions of shaders/unary_ops.h as operations: each row
 * is an operation nn_<name>, recorded with its row's code and parameters;
 * forward and backward run the UNARY kernels and export calls the row's
 * exporter (unary_onnx.c). The rows whose public column is `of_x` get
 * their public function nn_<name>(x) here (nn_ops.h declares them); the
 * others get theirs in unary_scalars.c. */
#include <math.h>

#include "core/layout.h"
#include "unary.h"

static nn_pointwise_params kernel_params(const nn_node *node, int64_t n) {
    const nn_unary_node *u = NN_NODE_PARAMS(node, nn_unary_node);
    return (nn_pointwise_params){.n = n, .op = u->op, .alpha = u->alpha, .beta = u->beta};
}

static nn_status unary_forward(nn_node *node) {
    nn_pointwise_params p = kernel_params(node, node->inputs[0]->numel);
    return nn_run_forward(node, NN_KERNEL_UNARY_FORWARD, &p);
}

/* The rows whose gradient follows from y alone: their backward expression
 * reads no x (sigmoid, tanh, neg, exp, sqrt, the scalar add, mul and rsub),
 * or gives the same with y in x's place (relu6: y is 0 exactly where x <= 0
 * and 6 exactly where x >= 6, NaN where x is). Their backward passes y for
 * x, so it never needs x's value (a fused launch may leave x unwritten). */
static bool gradient_from_output(nn_unary_op op) {
    switch (op) {
    case NN_UNARY_SIGMOID: case NN_UNARY_TANH: case NN_UNARY_NEG: case NN_UNARY_EXP: case NN_UNARY_SQRT:
    case NN_UNARY_RELU6: case NN_UNARY_ADD_SCALAR: case NN_UNARY_MUL_SCALAR: case NN_UNARY_RSUB_SCALAR:
        return true;
    default:
        return false;
    }
}

static nn_status unary_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *y = node->output, *grad;
    int32_t acc;
    if (NN_NODE_PARAMS(node, nn_unary_node)->op == NN_UNARY_RELU6 && nn_norm_mask_claim(x, NN_NORM_MASK_RELU6))
        return nn_grad_hand_on(x, y->grad);
    NN_TRY(nn_grad_target(x, &grad, &acc));
    nn_pointwise_params p = kernel_params(node, x->numel);
    p.accumulate = acc;
    const nn_tensor *input = gradient_from_output((nn_unary_op)p.op) ? y : x;
    nn_buffer_ref args[4] = {nn_tensor_ref(input), nn_tensor_ref(y), nn_tensor_ref(y->grad), nn_tensor_ref(grad)};
    return nn_ctx_run(x->ctx, NN_KERNEL_UNARY_BACKWARD, args, 4, &p);
}

static nn_status unary_onnx(exporter *x, op_io *io, const char *out) {
    const nn_unary_node *u = NN_NODE_PARAMS(io->node, nn_unary_node);
    switch ((nn_unary_op)u->op) {
#define EXPORT_ROW(ID, name, Onnx, forward, backward, export, public) \
    case NN_UNARY_##ID: return unary_onnx_##export(x, io, out, #Onnx, u);
        NN_UNARY_OPS(EXPORT_ROW)
#undef EXPORT_ROW
    case NN_UNARY_COUNT: break;
    }
    return nn_set_error(NN_ERR_ARGUMENT, "%s: unknown elementwise function %d", x->who, u->op);
}

/* (The row's columns are named apart from nn_op's fields.) */
static const nn_op kOps[NN_UNARY_COUNT] = {
#define OP_ROW(ID, fn, Onnx, forward_expr, backward_expr, export, public)                                      \
    [NN_UNARY_##ID] = {.name = "nn_" #fn, .forward = unary_forward, .backward = unary_backward,                \
                       .to_onnx = unary_onnx, .layouts = nn_layouts_pointwise},
    NN_UNARY_OPS(OP_ROW)
#undef OP_ROW
};

nn_tensor *nn_unary_record(nn_unary_op code, nn_tensor *x, float alpha, float beta) {
    const nn_op *op = &kOps[code];
    if (nn_check_tensor(op->name, "x", x, NN_F32)) return NULL;
    const nn_unary_node p = {code, alpha, beta};
    return nn_op_result(op, &x, 1, &p, sizeof p, x->ndim, x->shape);
}

bool nn_epilogue_of(const nn_node *node, nn_pointwise_epilogue *out) {
    if (node->op == &nn_op_relu) { /* clamp(0, inf) is relu, NaN included */
        *out = (nn_pointwise_epilogue){.on = 1, .op = NN_UNARY_CLAMP, .alpha = 0.0f, .beta = INFINITY};
        return true;
    }
    if (node->op->forward != unary_forward) return false; /* not a row's node */
    const nn_unary_node *u = NN_NODE_PARAMS(node, nn_unary_node);
    if (!gradient_from_output((nn_unary_op)u->op)) return false;
    *out = (nn_pointwise_epilogue){.on = 1, .op = u->op, .alpha = u->alpha, .beta = u->beta};
    return true;
}

#define PUBLIC_of_x(ID, fn) \
    nn_tensor *nn_##fn(nn_tensor *x) { return nn_unary_record(NN_UNARY_##ID, x, 0.0f, 0.0f); }
#define PUBLIC_with_scalars(ID, fn)
#define PUBLIC_ROW(ID, fn, Onnx, forward_expr, backward_expr, export, public) PUBLIC_##public(ID, fn)
NN_UNARY_OPS(PUBLIC_ROW)
#undef PUBLIC_ROW
