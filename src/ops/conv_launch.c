/* The kernels that run a convolution's three products (kernels.h,
 * nn_conv_params), shared by nn_conv2d and nn_conv_transpose2d (whose
 * forward is the data gradient): the DEPTHWISE_CONV2D_* kernels where
 * there is one group per input channel, the CONV2D_* kernels (columns and
 * one GEMM per group, or straight from the image) otherwise. */
#include "ops.h"

nn_status nn_conv_run_forward(nn_ctx *ctx, const nn_conv_params *p, nn_buffer_ref x, nn_buffer_ref w,
                              nn_buffer_ref y, nn_buffer_ref bias, nn_buffer_ref cols) {
    if (nn_conv_is_depthwise(p)) {
        nn_buffer_ref args[4] = {x, w, y, bias};
        return nn_ctx_run(ctx, NN_KERNEL_DEPTHWISE_CONV2D_FORWARD, args, 4, p);
    }
    nn_buffer_ref args[5] = {x, w, y, bias, cols};
    return nn_ctx_run(ctx, NN_KERNEL_CONV2D_FORWARD, args, 5, p);
}

nn_status nn_conv_run_data(nn_ctx *ctx, const nn_conv_params *p, nn_buffer_ref dy, nn_buffer_ref w,
                           nn_buffer_ref dx) {
    nn_buffer_ref args[3] = {dy, w, dx};
    return nn_ctx_run(ctx, nn_conv_is_depthwise(p) ? NN_KERNEL_DEPTHWISE_CONV2D_BACKWARD_DATA
                                                   : NN_KERNEL_CONV2D_BACKWARD_DATA, args, 3, p);
}

nn_status nn_conv_run_weight(nn_ctx *ctx, const nn_conv_params *p, nn_buffer_ref dy, nn_buffer_ref x,
                             nn_buffer_ref dw, nn_buffer_ref cols) {
    if (nn_conv_is_depthwise(p)) {
        nn_buffer_ref args[3] = {dy, x, dw};
        return nn_ctx_run(ctx, NN_KERNEL_DEPTHWISE_CONV2D_BACKWARD_WEIGHT, args, 3, p);
    }
    nn_buffer_ref args[4] = {dy, x, dw, cols};
    return nn_ctx_run(ctx, NN_KERNEL_CONV2D_BACKWARD_WEIGHT, args, 4, p);
}
