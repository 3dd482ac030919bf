#include "kernels.h"

const char *nn_kernel_name(nn_kernel kernel) {
    static const char *const names[NN_KERNEL_COUNT] = {
        [NN_KERNEL_GEMM] = "gemm",
        [NN_KERNEL_IM2COL] = "im2col",
        [NN_KERNEL_COL2IM] = "col2im",
        [NN_KERNEL_MAXPOOL_FORWARD] = "maxpool_forward",
        [NN_KERNEL_MAXPOOL_BACKWARD] = "maxpool_backward",
        [NN_KERNEL_BIAS_ADD] = "bias_add",
        [NN_KERNEL_BIAS_GRAD] = "bias_grad",
        [NN_KERNEL_RELU_FORWARD] = "relu_forward",
        [NN_KERNEL_RELU_BACKWARD] = "relu_backward",
        [NN_KERNEL_ELEMENTWISE] = "elementwise",
        [NN_KERNEL_SOFTMAX_FORWARD] = "softmax_forward",
        [NN_KERNEL_SOFTMAX_BACKWARD] = "softmax_backward",
        [NN_KERNEL_SOFTMAX_CE_FORWARD] = "softmax_ce_forward",
        [NN_KERNEL_SOFTMAX_CE_BACKWARD] = "softmax_ce_backward",
        [NN_KERNEL_REDUCE_SUM] = "reduce_sum",
        [NN_KERNEL_BROADCAST_SCALAR] = "broadcast_scalar",
        [NN_KERNEL_SUM_SQUARES] = "sum_squares",
        [NN_KERNEL_SGD_UPDATE] = "sgd_update",
    };
    return (unsigned)kernel < NN_KERNEL_COUNT && names[kernel] ? names[kernel] : "unknown kernel";
}
