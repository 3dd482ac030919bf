#include "kernels.h"

#include "core/error.h"

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
        /* dropout */
        [NN_KERNEL_DROPOUT_FORWARD] = "dropout_forward",
        [NN_KERNEL_DROPOUT_ADVANCE] = "dropout_advance",
    };
    return (unsigned)kernel < NN_KERNEL_COUNT && names[kernel] ? names[kernel] : "unknown kernel";
}

/* How many buffer arguments each kernel takes (kernels.h lists them); 0 for
 * an unknown kernel. */
static int nn_kernel_arg_count(nn_kernel kernel) {
    static const int counts[NN_KERNEL_COUNT] = {
        [NN_KERNEL_GEMM] = 3,           [NN_KERNEL_IM2COL] = 2,
        [NN_KERNEL_COL2IM] = 2,         [NN_KERNEL_MAXPOOL_FORWARD] = 3,
        [NN_KERNEL_MAXPOOL_BACKWARD] = 3, [NN_KERNEL_BIAS_ADD] = 2,
        [NN_KERNEL_BIAS_GRAD] = 2,      [NN_KERNEL_RELU_FORWARD] = 2,
        [NN_KERNEL_RELU_BACKWARD] = 3,  [NN_KERNEL_ELEMENTWISE] = 3,
        [NN_KERNEL_SOFTMAX_FORWARD] = 2, [NN_KERNEL_SOFTMAX_BACKWARD] = 3,
        [NN_KERNEL_SOFTMAX_CE_FORWARD] = 4, [NN_KERNEL_SOFTMAX_CE_BACKWARD] = 4,
        [NN_KERNEL_REDUCE_SUM] = 2,     [NN_KERNEL_BROADCAST_SCALAR] = 2,
        [NN_KERNEL_SUM_SQUARES] = 2,    [NN_KERNEL_SGD_UPDATE] = 4,
        /* dropout */
        [NN_KERNEL_DROPOUT_FORWARD] = 4, [NN_KERNEL_DROPOUT_ADVANCE] = 1,
    };
    return (unsigned)kernel < NN_KERNEL_COUNT ? counts[kernel] : 0;
}

nn_status nn_kernel_check_call(const char *backend, nn_kernel kernel, int nargs, const void *params) {
    if ((unsigned)kernel >= NN_KERNEL_COUNT)
        return nn_set_error(NN_ERR_BACKEND, "%s: no kernel with id %d", backend, (int)kernel);
    if (nargs != nn_kernel_arg_count(kernel) || !params)
        return nn_set_error(NN_ERR_BACKEND, "%s %s: called with %d buffers (wants %d)%s", backend,
                            nn_kernel_name(kernel), nargs, nn_kernel_arg_count(kernel),
                            params ? "" : " and no parameters");
    return NN_OK;
}
