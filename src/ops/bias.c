/* x + bias along dimension 1 (channels of [N, C, H, W], features of [N, C]). */
#include "op_common.h"

static nn_bias_params bias_geometry(const nn_tensor *x) {
    nn_bias_params p = {.outer = x->shape[0], .channels = (int32_t)x->shape[1], .inner = 1};
    for (int i = 2; i < x->ndim; i++) p.inner *= x->shape[i];
    return p;
}

static nn_status add_bias_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *bias = node->inputs[1], *dy = node->output->grad;
    nn_tensor *grad;
    int32_t acc;
    if (nn_wants_grad(x)) {
        NN_TRY(nn_grad_target(x, &grad, &acc));
        NN_TRY(nn_run_scale(x->ctx, nn_tensor_ref(dy), nn_tensor_ref(grad), x->numel, 1.0f, acc));
    }
    if (nn_wants_grad(bias)) {
        NN_TRY(nn_grad_target(bias, &grad, &acc));
        nn_bias_params p = bias_geometry(x);
        p.accumulate = acc;
        nn_buffer_ref args[2] = {nn_tensor_ref(dy), nn_tensor_ref(grad)};
        NN_TRY(nn_ctx_run(x->ctx, NN_KERNEL_BIAS_GRAD, args, 2, &p));
    }
    return NN_OK;
}

nn_tensor *nn_add_bias(nn_tensor *x, nn_tensor *bias) {
    const char *op = "nn_add_bias";
    if (nn_check_tensor(op, "x", x, NN_F32) || nn_check_tensor_ndim(op, "bias", bias, NN_F32, 1) ||
        nn_check_same_ctx(op, x, bias))
        return NULL;
    char sx[96], sb[96];
    if (x->ndim < 2 || x->shape[1] != bias->shape[0])
        return NN_FAIL_NULL(NN_ERR_SHAPE,
                            "%s: bias %s must have one value per channel (dimension 1) of x %s", op,
                            nn_format_shape(1, bias->shape, sb, sizeof sb),
                            nn_format_shape(x->ndim, x->shape, sx, sizeof sx));
    if (nn_check_int32(op, "channels", x->shape[1])) return NULL;
    nn_tensor *y = nn_op_result(x->ctx, x->ndim, x->shape);
    if (!y) return NULL;
    nn_bias_params p = bias_geometry(x);
    nn_buffer_ref args[2] = {nn_tensor_ref(y), nn_tensor_ref(bias)};
    if (nn_ctx_copy(x->ctx, nn_tensor_ref(y), nn_tensor_ref(x),
                              (size_t)x->numel * sizeof(float)) != NN_OK ||
        nn_ctx_run(x->ctx, NN_KERNEL_BIAS_ADD, args, 2, &p) != NN_OK)
        return nn_op_fail(y);
    nn_tensor *inputs[2] = {x, bias};
    return nn_op_finish(y, op, add_bias_backward, inputs, 2, NULL, 0, NULL);
}
