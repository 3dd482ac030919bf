/* Conv2d -> ReLU -> MaxPool2d, Flatten and Linear (with or without a ReLU
 * after it) with the two layers' forwards in one kernel
 * (NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD): LeNet-5's second convolution and
 * first Linear. The Linear is small, so the workgroups that compute an
 * image's pooled output multiply it with the Linear's weights themselves;
 * forward then has no GEMM and no barrier between the two layers, which on
 * a GPU costs more than reading the weights once per image.
 *
 * Only the kernels change: the layers record the tape nodes they record one
 * by one (the conv + pool node, the flatten view, the Linear's node and its
 * fused ReLU's), in that order, so backward, gradient accumulation and the
 * ONNX export are theirs. */
#include "fused_relu.h"

/* The kernel's parameters for a conv + pool layer of parameters c and the
 * Linear (lin_weight [outputs, features], lin_bias or NULL). */
static nn_status linear_params(const char *op, nn_tensor *x, const nn_conv_pool_params *c, nn_tensor *lin_weight,
                               nn_tensor *lin_bias, int lin_flags, nn_conv_pool_linear_params *out) {
    const int64_t features = (int64_t)c->conv.filters * c->pooled_h * c->pooled_w;
    NN_TRY(nn_linear_layer_check(op, "Linear", x, features, lin_weight, lin_bias));
    *out = (nn_conv_pool_linear_params){
        .conv_pool = *c,
        .out_features = (int32_t)lin_weight->shape[0],
        .epilogue = (lin_bias ? NN_EPI_BIAS_COLS : 0) | ((lin_flags & NN_FUSE_RELU) ? NN_EPI_RELU : 0),
    };
    return NN_OK;
}

bool nn_conv2d_relu_maxpool_linear_fuses(nn_tensor *x, nn_tensor *weight, nn_tensor *bias,
                                         const nn_conv2d_params *params, int pool, nn_tensor *lin_weight,
                                         nn_tensor *lin_bias) {
    if (!nn_conv2d_relu_maxpool_fuses(x, weight, bias, params, pool)) return false;
    const nn_conv_geometry g = nn_conv2d_geometry(x, weight, params);
    nn_conv_pool_linear_params p;
    const nn_conv_pool_params c = nn_conv_pool_params_of(&g, (int32_t)weight->shape[0], bias != NULL, pool);
    if (linear_params("nn_conv2d_relu_maxpool_linear", x, &c, lin_weight, lin_bias, 0, &p) != NN_OK) {
        nn_clear_error(); /* the unfused layers report it */
        return false;
    }
    /* The kernel does not write the column matrix a backend may keep for
     * the weight gradient. */
    return !nn_ctx_conv_keeps_columns(x->ctx, &c.conv) && nn_ctx_supports(x->ctx, NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD, &p);
}

nn_tensor *nn_conv2d_relu_maxpool_linear(nn_tensor *x, nn_tensor *weight, nn_tensor *bias,
                                         const nn_conv2d_params *params, int pool, int flags, nn_tensor *lin_weight,
                                         nn_tensor *lin_bias, int lin_flags) {
    const char *op = "nn_conv2d_relu_maxpool_linear";
    nn_conv_pool_forward conv;
    if (nn_conv_pool_forward_begin(op, x, weight, bias, params, pool, &conv) != NN_OK) return NULL;
    nn_conv_pool_linear_params p;
    if (linear_params(op, x, &conv.params, lin_weight, lin_bias, lin_flags, &p) != NN_OK || conv.cols) {
        if (conv.cols) nn_set_error(NN_ERR_BACKEND, "%s: the backend keeps the convolution's columns", op);
        nn_conv_pool_forward_abort(&conv);
        return NULL;
    }
    /* The layers' nodes in their order: the convolution's before the
     * flatten reads its output, then the Linear's after the kernel. */
    nn_tensor *winners = nn_tensor_retain(conv.winners);
    nn_tensor *y = nn_conv_pool_forward_end(&conv, "nn_conv2d_relu_maxpool", flags);
    nn_tensor *flat = y ? nn_flatten(y) : NULL;
    nn_linear_forward linear;
    if (!flat || nn_linear_forward_begin(flat, lin_weight, lin_bias, lin_flags, &linear) != NN_OK) {
        nn_tensor_release(winners);
        return NULL;
    }
    const nn_buffer_ref none = {NULL, 0, 0};
    nn_buffer_ref args[8] = {nn_tensor_ref(x),      nn_tensor_ref(weight),   bias ? nn_tensor_ref(bias) : none,
                             nn_tensor_ref(y),      nn_tensor_ref(winners),  nn_tensor_ref(lin_weight),
                             lin_bias ? nn_tensor_ref(lin_bias) : none, nn_tensor_ref(linear.y)};
    nn_status st = nn_ctx_run(x->ctx, NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD, args, 8, &p);
    nn_tensor_release(winners);
    if (st != NN_OK) {
        nn_linear_forward_abort(&linear);
        return NULL;
    }
    return nn_linear_forward_end(&linear, 0);
}
