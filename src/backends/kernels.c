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
        [NN_KERNEL_GATHER_SAMPLES] = "gather_samples",
        [NN_KERNEL_GATHER_ROWS] = "gather_rows",
        [NN_KERNEL_COUNTER_ADD] = "counter_add",
        [NN_KERNEL_METRICS_ACCUMULATE] = "metrics_accumulate",
        /* fusion */
        [NN_KERNEL_GEMM_EPILOGUE] = "gemm_epilogue",
        [NN_KERNEL_MAXPOOL_BACKWARD_MASKED] = "maxpool_backward_masked",
        [NN_KERNEL_SOFTMAX_CE_FUSED] = "softmax_ce_fused",
        [NN_KERNEL_SGD_UPDATE_DEVICE_LR] = "sgd_update_device_lr",
        /* dropout */
        [NN_KERNEL_DROPOUT_FORWARD] = "dropout_forward",
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
        [NN_KERNEL_GATHER_SAMPLES] = 4, [NN_KERNEL_GATHER_ROWS] = 4,
        [NN_KERNEL_COUNTER_ADD] = 1,    [NN_KERNEL_METRICS_ACCUMULATE] = 4,
        /* fusion */
        [NN_KERNEL_GEMM_EPILOGUE] = 4,  [NN_KERNEL_MAXPOOL_BACKWARD_MASKED] = 4,
        [NN_KERNEL_SOFTMAX_CE_FUSED] = 4, [NN_KERNEL_SGD_UPDATE_DEVICE_LR] = 4,
        /* dropout */
        [NN_KERNEL_DROPOUT_FORWARD] = 4,
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

size_t nn_kernel_params_size(nn_kernel kernel) {
    static const size_t sizes[NN_KERNEL_COUNT] = {
        [NN_KERNEL_GEMM] = sizeof(nn_gemm_params),
        [NN_KERNEL_IM2COL] = sizeof(nn_conv_geometry),
        [NN_KERNEL_COL2IM] = sizeof(nn_conv_geometry),
        [NN_KERNEL_MAXPOOL_FORWARD] = sizeof(nn_pool_params),
        [NN_KERNEL_MAXPOOL_BACKWARD] = sizeof(nn_pool_params),
        [NN_KERNEL_BIAS_ADD] = sizeof(nn_bias_params),
        [NN_KERNEL_BIAS_GRAD] = sizeof(nn_bias_params),
        [NN_KERNEL_RELU_FORWARD] = sizeof(nn_pointwise_params),
        [NN_KERNEL_RELU_BACKWARD] = sizeof(nn_pointwise_params),
        [NN_KERNEL_ELEMENTWISE] = sizeof(nn_pointwise_params),
        [NN_KERNEL_SOFTMAX_FORWARD] = sizeof(nn_softmax_params),
        [NN_KERNEL_SOFTMAX_BACKWARD] = sizeof(nn_softmax_params),
        [NN_KERNEL_SOFTMAX_CE_FORWARD] = sizeof(nn_softmax_params),
        [NN_KERNEL_SOFTMAX_CE_BACKWARD] = sizeof(nn_softmax_params),
        [NN_KERNEL_REDUCE_SUM] = sizeof(nn_pointwise_params),
        [NN_KERNEL_BROADCAST_SCALAR] = sizeof(nn_pointwise_params),
        [NN_KERNEL_SUM_SQUARES] = sizeof(nn_pointwise_params),
        [NN_KERNEL_SGD_UPDATE] = sizeof(nn_sgd_params),
        [NN_KERNEL_GATHER_SAMPLES] = sizeof(nn_gather_params),
        [NN_KERNEL_GATHER_ROWS] = sizeof(nn_gather_params),
        [NN_KERNEL_COUNTER_ADD] = sizeof(nn_counter_params),
        [NN_KERNEL_METRICS_ACCUMULATE] = sizeof(nn_metrics_params),
        [NN_KERNEL_GEMM_EPILOGUE] = sizeof(nn_gemm_epilogue_params),
        [NN_KERNEL_MAXPOOL_BACKWARD_MASKED] = sizeof(nn_pool_params),
        [NN_KERNEL_SOFTMAX_CE_FUSED] = sizeof(nn_softmax_params),
        [NN_KERNEL_SGD_UPDATE_DEVICE_LR] = sizeof(nn_sgd_params),
        /* dropout */
        [NN_KERNEL_DROPOUT_FORWARD] = sizeof(nn_dropout_params),
    };
    return (unsigned)kernel < NN_KERNEL_COUNT ? sizes[kernel] : 0;
}

unsigned nn_kernel_written_args(nn_kernel kernel, const void *params) {
    (void)params;
    switch (kernel) {
    case NN_KERNEL_BIAS_ADD:
    case NN_KERNEL_COUNTER_ADD: return 1u << 0;
    case NN_KERNEL_IM2COL:
    case NN_KERNEL_COL2IM:
    case NN_KERNEL_BIAS_GRAD:
    case NN_KERNEL_RELU_FORWARD:
    case NN_KERNEL_SOFTMAX_FORWARD:
    case NN_KERNEL_REDUCE_SUM:
    case NN_KERNEL_BROADCAST_SCALAR:
    case NN_KERNEL_SUM_SQUARES: return 1u << 1;
    case NN_KERNEL_GEMM:
    case NN_KERNEL_GEMM_EPILOGUE:
    case NN_KERNEL_MAXPOOL_BACKWARD:
    case NN_KERNEL_RELU_BACKWARD:
    case NN_KERNEL_ELEMENTWISE:
    case NN_KERNEL_SOFTMAX_BACKWARD: return 1u << 2;
    case NN_KERNEL_MAXPOOL_FORWARD: return (1u << 1) | (1u << 2);
    case NN_KERNEL_SOFTMAX_CE_FORWARD:
    case NN_KERNEL_SOFTMAX_CE_FUSED: return (1u << 2) | (1u << 3);
    case NN_KERNEL_SOFTMAX_CE_BACKWARD:
    case NN_KERNEL_MAXPOOL_BACKWARD_MASKED:
    case NN_KERNEL_GATHER_SAMPLES:
    case NN_KERNEL_GATHER_ROWS:
    case NN_KERNEL_METRICS_ACCUMULATE: return 1u << 3;
    case NN_KERNEL_SGD_UPDATE:
    case NN_KERNEL_SGD_UPDATE_DEVICE_LR: return (1u << 0) | (1u << 2);
    /* dropout: y and mask; the counter is only read */
    case NN_KERNEL_DROPOUT_FORWARD: return (1u << 1) | (1u << 2);
    default: return ~0u; /* a kernel this table does not know: assume it writes everything */
    }
}
