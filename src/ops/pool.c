/* Max pooling; the winning index of each window is kept for backward. */
#include "fused_relu.h"

static nn_status maxpool_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *argmax = node->saved[0];
    nn_tensor *grad;
    int32_t acc;
    NN_TRY(nn_grad_target(x, &grad, &acc));
    nn_pool_params p = node->params.pool;
    p.accumulate = acc;
    if (node->fusion & NN_NODE_MASKS_INPUT_GRAD) {
        /* x is a claimed ReLU output (fused_relu.h): the pooled value is that
         * ReLU's output at the argmax, so its mask is (output > 0). */
        nn_buffer_ref args[4] = {nn_tensor_ref(node->output->grad), nn_tensor_ref(argmax),
                                 nn_tensor_ref(node->output), nn_tensor_ref(grad)};
        return nn_ctx_run(x->ctx, NN_KERNEL_MAXPOOL_BACKWARD_MASKED, args, 4, &p);
    }
    nn_buffer_ref args[3] = {nn_tensor_ref(node->output->grad), nn_tensor_ref(argmax),
                             nn_tensor_ref(grad)};
    return nn_ctx_run(x->ctx, NN_KERNEL_MAXPOOL_BACKWARD, args, 3, &p);
}

nn_tensor *nn_maxpool2d_ex(nn_tensor *x, int kernel, int stride, int padding) {
    return nn_maxpool2d_fused(x, kernel, stride, padding, 0);
}

/* flags: NN_FUSE_MASK_INPUT only (fused_relu.h). */
nn_tensor *nn_maxpool2d_fused(nn_tensor *x, int kernel, int stride, int padding, int flags) {
    const char *op = "nn_maxpool2d";
    if (nn_check_tensor_ndim(op, "x", x, NN_F32, 4)) return NULL;
    if (kernel < 1 || stride < 1)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: kernel and stride must be >= 1, got kernel %d stride %d",
                            op, kernel, stride);
    if (padding < 0 || padding > kernel / 2)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: padding must be in [0, kernel/2 = %d], got %d", op,
                            kernel / 2, padding);
    char sx[96];
    if (x->shape[2] + 2 * padding < kernel || x->shape[3] + 2 * padding < kernel)
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: window %d is larger than the input %s (padding %d)",
                            op, kernel, nn_format_shape(4, x->shape, sx, sizeof sx), padding);
    for (int i = 0; i < 4; i++)
        if (nn_check_int32(op, "a dimension of x", x->shape[i])) return NULL;
    nn_pool_params p = {
        .batch = (int32_t)x->shape[0], .channels = (int32_t)x->shape[1],
        .height = (int32_t)x->shape[2], .width = (int32_t)x->shape[3],
        .kernel = kernel, .stride = stride, .pad = padding,
    };
    p.out_h = (p.height + 2 * padding - kernel) / stride + 1;
    p.out_w = (p.width + 2 * padding - kernel) / stride + 1;
    int64_t shape[4] = {p.batch, p.channels, p.out_h, p.out_w};
    nn_tensor *y = nn_op_result(x->ctx, 4, shape);
    if (!y) return NULL;
    nn_tensor *argmax = nn_op_scratch(x->ctx, NN_I32, 4, shape);
    if (!argmax) return nn_op_fail(y);
    nn_buffer_ref args[3] = {nn_tensor_ref(x), nn_tensor_ref(y), nn_tensor_ref(argmax)};
    if (nn_ctx_run(x->ctx, NN_KERNEL_MAXPOOL_FORWARD, args, 3, &p) != NN_OK) {
        nn_tensor_release(argmax);
        return nn_op_fail(y);
    }
    nn_node *node;
    y = nn_op_finish(y, op, maxpool_backward, &x, 1, &argmax, 1, &node);
    if (node) node->params.pool = p;
    if (node && (flags & NN_FUSE_MASK_INPUT)) nn_fused_relu_claim(x, node);
    nn_tensor_release(argmax);
    return y;
}

nn_tensor *nn_maxpool2d(nn_tensor *x, int kernel, int stride) {
    return nn_maxpool2d_ex(x, kernel, stride, 0);
}
