#include "kernels.h"

#include "core/error.h"

/* What the rest of the engine knows about each kernel, in one row: its name
 * (messages, profiles), its number of buffer arguments (kernels.h lists
 * them), the size of its parameter struct (capture copies it) and which
 * arguments it writes (bit i: argument i; the Vulkan backend's hazard
 * tracking). A kernel added to the enum needs its row here. */
typedef struct kernel_info {
    const char *name;
    int args;
    size_t params_size;
    unsigned written;
} kernel_info;

#define W(i) (1u << (i))

static const kernel_info kKernels[NN_KERNEL_COUNT] = {
    [NN_KERNEL_GEMM] = {"gemm", 3, sizeof(nn_gemm_params), W(2)},
    [NN_KERNEL_IM2COL] = {"im2col", 2, sizeof(nn_conv_geometry), W(1)},
    [NN_KERNEL_COL2IM] = {"col2im", 2, sizeof(nn_conv_geometry), W(1)},
    [NN_KERNEL_MAXPOOL_FORWARD] = {"maxpool_forward", 3, sizeof(nn_pool_params), W(1) | W(2)},
    [NN_KERNEL_MAXPOOL_BACKWARD] = {"maxpool_backward", 3, sizeof(nn_pool_params), W(2)},
    [NN_KERNEL_BIAS_ADD] = {"bias_add", 2, sizeof(nn_bias_params), W(0)},
    [NN_KERNEL_BIAS_GRAD] = {"bias_grad", 2, sizeof(nn_bias_params), W(1)},
    [NN_KERNEL_RELU_FORWARD] = {"relu_forward", 2, sizeof(nn_pointwise_params), W(1)},
    [NN_KERNEL_RELU_BACKWARD] = {"relu_backward", 3, sizeof(nn_pointwise_params), W(2)},
    [NN_KERNEL_ELEMENTWISE] = {"elementwise", 3, sizeof(nn_pointwise_params), W(2)},
    [NN_KERNEL_SOFTMAX_FORWARD] = {"softmax_forward", 2, sizeof(nn_softmax_params), W(1)},
    [NN_KERNEL_SOFTMAX_BACKWARD] = {"softmax_backward", 3, sizeof(nn_softmax_params), W(2)},
    [NN_KERNEL_SOFTMAX_CE_FORWARD] = {"softmax_ce_forward", 4, sizeof(nn_softmax_params), W(2) | W(3)},
    [NN_KERNEL_SOFTMAX_CE_BACKWARD] = {"softmax_ce_backward", 4, sizeof(nn_softmax_params), W(3)},
    [NN_KERNEL_REDUCE_SUM] = {"reduce_sum", 2, sizeof(nn_pointwise_params), W(1)},
    [NN_KERNEL_BROADCAST_SCALAR] = {"broadcast_scalar", 2, sizeof(nn_pointwise_params), W(1)},
    [NN_KERNEL_SUM_SQUARES] = {"sum_squares", 2, sizeof(nn_pointwise_params), W(1)},
    [NN_KERNEL_SGD_UPDATE] = {"sgd_update", 4, sizeof(nn_sgd_params), W(0) | W(2)},
    /* capture: training loops that stay on the device */
    [NN_KERNEL_GATHER_SAMPLES] = {"gather_samples", 4, sizeof(nn_gather_params), W(3)},
    [NN_KERNEL_GATHER_ROWS] = {"gather_rows", 4, sizeof(nn_gather_params), W(3)},
    [NN_KERNEL_COUNTER_ADD] = {"counter_add", 1, sizeof(nn_counter_params), W(0)},
    [NN_KERNEL_FILL] = {"fill", 1, sizeof(nn_fill_params), W(0)},
    [NN_KERNEL_METRICS_ACCUMULATE] = {"metrics_accumulate", 4, sizeof(nn_metrics_params), W(3)},
    /* fusion */
    [NN_KERNEL_GEMM_EPILOGUE] = {"gemm_epilogue", 4, sizeof(nn_gemm_epilogue_params), W(2)},
    [NN_KERNEL_MAXPOOL_BACKWARD_MASKED] = {"maxpool_backward_masked", 4, sizeof(nn_pool_params), W(3)},
    [NN_KERNEL_SOFTMAX_CE_FUSED] = {"softmax_ce_fused", 4, sizeof(nn_softmax_params), W(2) | W(3)},
    [NN_KERNEL_SGD_UPDATE_DEVICE_LR] = {"sgd_update_device_lr", 4, sizeof(nn_sgd_params), W(0) | W(2)},
    /* dropout: y and mask; the counter is only read */
    [NN_KERNEL_DROPOUT_FORWARD] = {"dropout_forward", 4, sizeof(nn_dropout_params), W(1) | W(2)},
    [NN_KERNEL_CONV2D_FORWARD] = {"conv2d_forward", 5, sizeof(nn_conv_params), W(2) | W(4)},
    [NN_KERNEL_CONV2D_BACKWARD_DATA] = {"conv2d_backward_data", 3, sizeof(nn_conv_params), W(2)},
    [NN_KERNEL_CONV2D_BACKWARD_WEIGHT] = {"conv2d_backward_weight", 4, sizeof(nn_conv_params), W(2)},
    [NN_KERNEL_CONV2D_POOL_FORWARD] = {"conv2d_pool_forward", 6, sizeof(nn_conv_pool_params), W(3) | W(4) | W(5)},
    [NN_KERNEL_CONV2D_POOL_BACKWARD_WEIGHT] = {"conv2d_pool_backward_weight", 6, sizeof(nn_conv_pool_params),
                                               W(3) | W(4)},
    [NN_KERNEL_CONV2D_POOL_BACKWARD_DATA] = {"conv2d_pool_backward_data", 4, sizeof(nn_conv_pool_params), W(3)},
    [NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT] = {"conv2d_pool_chain_weight", 7, sizeof(nn_conv_pool_chain_params),
                                            W(5) | W(6)},
    [NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD] = {"conv2d_pool_linear_forward", 8, sizeof(nn_conv_pool_linear_params),
                                              W(3) | W(4) | W(7)},
    [NN_KERNEL_LINEAR_HEAD_FORWARD] = {"linear_head_forward", 7, sizeof(nn_linear_head_params), W(5) | W(6)},
    [NN_KERNEL_LINEAR_HEAD_BACKWARD_DATA] = {"linear_head_backward_data", 7, sizeof(nn_linear_head_params),
                                             W(5) | W(6)},
    [NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY] = {"linear_head_cross_entropy", 12, sizeof(nn_linear_head_params),
                                             W(6) | W(7) | W(8) | W(9) | W(10) | W(11)},
};

/* The kernel's row, or NULL for an id outside the table. */
static const kernel_info *info(nn_kernel kernel) {
    return (unsigned)kernel < NN_KERNEL_COUNT && kKernels[kernel].name ? &kKernels[kernel] : NULL;
}

const char *nn_kernel_name(nn_kernel kernel) {
    const kernel_info *k = info(kernel);
    return k ? k->name : "unknown kernel";
}

nn_status nn_kernel_check_call(const char *backend, nn_kernel kernel, int nargs, const void *params) {
    const kernel_info *k = info(kernel);
    if (!k) return nn_set_error(NN_ERR_BACKEND, "%s: no kernel with id %d", backend, (int)kernel);
    if (nargs != k->args || !params)
        return nn_set_error(NN_ERR_BACKEND, "%s %s: called with %d buffers (wants %d)%s", backend, k->name, nargs,
                            k->args, params ? "" : " and no parameters");
    return NN_OK;
}

size_t nn_kernel_params_size(nn_kernel kernel) {
    const kernel_info *k = info(kernel);
    return k ? k->params_size : 0;
}

int nn_kernel_arg_count(nn_kernel kernel) {
    const kernel_info *k = info(kernel);
    return k ? k->args : 0;
}

unsigned nn_kernel_written_args(nn_kernel kernel) {
    const kernel_info *k = info(kernel);
    return k ? k->written : ~0u; /* unknown: assume it writes everything */
}
