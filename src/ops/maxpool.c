/* Max pooling, in its input's layout (dense or channels-last); the winning
 * index of each window within its plane is kept for backward.
 * Where its input is a ReLU's output that it alone reads, its backward
 * applies the ReLU's mask itself (the pooled value is that ReLU's output at
 * the argmax, so the mask is y > 0): nn_relu_mask_claim. */
#include "core/layout.h"
#include "io/onnx_graph.h"
#include "ops.h"

static nn_status maxpool_forward(nn_node *node) {
    const nn_pool_params *p = &NN_NODE_PARAMS(node, nn_maxpool_node)->pool;
    nn_tensor *x = node->inputs[0], *y = node->output;
    nn_tensor *argmax = nn_node_save_new(node, NN_I32, 4, y->shape);
    if (!argmax) return nn_last_status();
    argmax->layout = y->layout; /* its values are indices within a plane */
    nn_buffer_ref args[3] = {nn_tensor_ref(x), nn_tensor_ref(y), nn_tensor_ref(argmax)};
    return nn_ctx_run(x->ctx, NN_KERNEL_MAXPOOL_FORWARD, args, 3, p);
}

static nn_status maxpool_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *argmax = node->saved[0];
    nn_pool_params p = NN_NODE_PARAMS(node, nn_maxpool_node)->pool;
    const bool masked = nn_relu_mask_claim(x);
    nn_tensor *grad;
    NN_TRY(nn_grad_target(x, &grad, &p.accumulate));
    if (masked) {
        nn_buffer_ref args[4] = {nn_tensor_ref(node->output->grad), nn_tensor_ref(argmax),
                                 nn_tensor_ref(node->output), nn_tensor_ref(grad)};
        return nn_ctx_run(x->ctx, NN_KERNEL_MAXPOOL_BACKWARD_MASKED, args, 4, &p);
    }
    nn_buffer_ref args[3] = {nn_tensor_ref(node->output->grad), nn_tensor_ref(argmax), nn_tensor_ref(grad)};
    return nn_ctx_run(x->ctx, NN_KERNEL_MAXPOOL_BACKWARD, args, 3, &p);
}

static nn_status maxpool_onnx(exporter *x, op_io *io, const char *out) {
    NN_TRY(nn_onnx_only_input_carries_batch(x, io, 0));
    const nn_pool_params *p = &NN_NODE_PARAMS(io->node, nn_maxpool_node)->pool;
    int64_t kernels[2] = {p->kernel, p->kernel}, strides[2] = {p->stride, p->stride};
    int64_t pads[4] = {p->pad, p->pad, p->pad, p->pad};
    nn_onnx_node n;
    nn_onnx_begin_window(x, &n, "MaxPool", io, 1, out, kernels, strides, pads);
    nn_onnx_node_end(&n, &x->graph);
    return NN_OK;
}

const nn_op nn_op_maxpool2d = {.name = "nn_maxpool2d", .forward = maxpool_forward, .backward = maxpool_backward,
                               .to_onnx = maxpool_onnx, .layouts = nn_layouts_follow_input};

nn_tensor *nn_maxpool2d_ex(nn_tensor *x, int kernel, int stride, int padding) {
    const char *op = "nn_maxpool2d";
    if (nn_check_tensor_ndim(op, "x", x, NN_F32, 4)) return NULL;
    if (kernel < 1 || stride < 1)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: kernel and stride must be >= 1, got kernel %d stride %d",
                            op, kernel, stride);
    if (padding < 0 || padding > kernel / 2)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: padding must be in [0, kernel/2 = %d], got %d", op,
                            kernel / 2, padding);
    for (int i = 0; i < 4; i++)
        if (nn_check_int32(op, "a dimension of x", x->shape[i])) return NULL;
    if (nn_check_padded(op, "height", x->shape[2], padding) || nn_check_padded(op, "width", x->shape[3], padding))
        return NULL;
    char sx[96];
    if (x->shape[2] + 2 * (int64_t)padding < kernel || x->shape[3] + 2 * (int64_t)padding < kernel)
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: window %d is larger than the input %s (padding %d)",
                            op, kernel, nn_format_shape(4, x->shape, sx, sizeof sx), padding);
    nn_maxpool_node p = {.pool = {
        .batch = (int32_t)x->shape[0], .channels = (int32_t)x->shape[1],
        .height = (int32_t)x->shape[2], .width = (int32_t)x->shape[3],
        .kernel = kernel, .stride = stride, .pad = padding, .layout = x->layout,
    }};
    p.pool.out_h = (p.pool.height + 2 * padding - kernel) / stride + 1;
    p.pool.out_w = (p.pool.width + 2 * padding - kernel) / stride + 1;
    const int64_t shape[4] = {p.pool.batch, p.pool.channels, p.pool.out_h, p.pool.out_w};
    return nn_op_result(&nn_op_maxpool2d, &x, 1, &p, sizeof p, 4, shape);
}

nn_tensor *nn_maxpool2d(nn_tensor *x, int kernel, int stride) { return nn_maxpool2d_ex(x, kernel, stride, 0); }
