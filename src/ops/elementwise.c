/* add, mul and scale on tensors of the same shape. */
#include "op_common.h"

static nn_status add_backward(nn_node *node) {
    nn_tensor *dy = node->output->grad;
    for (int i = 0; i < 2; i++) {
        nn_tensor *input = node->inputs[i], *grad;
        int32_t acc;
        if (!nn_wants_grad(input)) continue;
        NN_TRY(nn_grad_target(input, &grad, &acc));
        NN_TRY(nn_run_scale(dy->ctx, nn_tensor_ref(dy), nn_tensor_ref(grad), dy->numel, 1.0f, acc));
    }
    return NN_OK;
}

/* d(a*b)/da = b and d(a*b)/db = a; mul(x, x) accumulates both into x's grad. */
static nn_status mul_backward(nn_node *node) {
    nn_tensor *dy = node->output->grad;
    for (int i = 0; i < 2; i++) {
        nn_tensor *input = node->inputs[i], *other = node->inputs[1 - i], *grad;
        int32_t acc;
        if (!nn_wants_grad(input)) continue;
        NN_TRY(nn_grad_target(input, &grad, &acc));
        nn_pointwise_params p = {.n = dy->numel, .op = NN_EW_MUL, .accumulate = acc};
        nn_buffer_ref args[3] = {nn_tensor_ref(dy), nn_tensor_ref(other), nn_tensor_ref(grad)};
        NN_TRY(nn_ctx_run(dy->ctx, NN_KERNEL_ELEMENTWISE, args, 3, &p));
    }
    return NN_OK;
}

static nn_tensor *binary(const char *op, nn_elementwise_op kind, nn_backward_fn backward,
                         nn_tensor *a, nn_tensor *b) {
    if (nn_check_tensor(op, "a", a, NN_F32) || nn_check_tensor(op, "b", b, NN_F32) ||
        nn_check_same_ctx(op, a, b) || nn_check_same_shape(op, a, b))
        return NULL;
    nn_tensor *y = nn_op_result(a->ctx, a->ndim, a->shape);
    if (!y) return NULL;
    nn_pointwise_params p = {.n = a->numel, .op = kind};
    nn_buffer_ref args[3] = {nn_tensor_ref(a), nn_tensor_ref(b), nn_tensor_ref(y)};
    if (nn_ctx_run(a->ctx, NN_KERNEL_ELEMENTWISE, args, 3, &p) != NN_OK) return nn_op_fail(y);
    nn_tensor *inputs[2] = {a, b};
    return nn_op_finish(y, op, backward, inputs, 2, NULL, 0, NULL);
}

nn_tensor *nn_add(nn_tensor *a, nn_tensor *b) { return binary("nn_add", NN_EW_ADD, add_backward, a, b); }
nn_tensor *nn_mul(nn_tensor *a, nn_tensor *b) { return binary("nn_mul", NN_EW_MUL, mul_backward, a, b); }

static nn_status scale_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *grad;
    int32_t acc;
    NN_TRY(nn_grad_target(x, &grad, &acc));
    return nn_run_scale(x->ctx, nn_tensor_ref(node->output->grad), nn_tensor_ref(grad), x->numel,
                        node->params.factor, acc);
}

nn_tensor *nn_scale(nn_tensor *x, float factor) {
    if (nn_check_tensor("nn_scale", "x", x, NN_F32)) return NULL;
    nn_tensor *y = nn_op_result(x->ctx, x->ndim, x->shape);
    if (!y) return NULL;
    if (nn_run_scale(x->ctx, nn_tensor_ref(x), nn_tensor_ref(y), x->numel, factor, 0) != NN_OK)
        return nn_op_fail(y);
    nn_node *node;
    y = nn_op_finish(y, "nn_scale", scale_backward, &x, 1, NULL, 0, &node);
    if (node) node->params.factor = factor;
    return y;
}
