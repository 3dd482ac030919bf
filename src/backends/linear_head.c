#include "linear_head.h"

#include "base/error.h"

nn_status nn_linear_head_params_check(const char *backend, nn_kernel kernel, const nn_linear_head_params *p) {
    if (p->rows < 0 || p->in < 0 || p->hidden < 0 || p->out < 0)
        return nn_set_error(NN_ERR_ARGUMENT, "%s %s: negative size (rows %d, in %d, hidden %d, out %d)", backend,
                            nn_kernel_name(kernel), p->rows, p->in, p->hidden, p->out);
    if ((p->mask_input != 0 && p->mask_input != 1) || (p->accumulate != 0 && p->accumulate != 1))
        return nn_set_error(NN_ERR_ARGUMENT, "%s %s: mask_input %d and accumulate %d must be 0 or 1", backend,
                            nn_kernel_name(kernel), p->mask_input, p->accumulate);
    return NN_OK;
}

nn_status nn_linear_head_loss_args_check(const char *backend, const nn_linear_head_params *p,
                                         const nn_buffer_ref *a) {
    const char *name = nn_kernel_name(NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY);
    if (p->accumulate)
        return nn_set_error(NN_ERR_ARGUMENT, "%s %s: accumulate must be 0 (dx is overwritten)", backend, name);
    if (a[11].buffer && !a[10].buffer) return nn_set_error(NN_ERR_ARGUMENT, "%s %s: dx needs dh", backend, name);
    return NN_OK;
}

/* C [m, n] = A [m, k] B^T (B [n, k]) or A B (B [k, n]). */
static nn_gemm_epilogue_params product(int32_t m, int32_t n, int32_t k, bool b_transposed, int32_t epilogue,
                                       bool accumulate) {
    return (nn_gemm_epilogue_params){
        .gemm = {.m = m, .n = n, .k = k, .trans_b = b_transposed, .lda = k, .ldb = b_transposed ? k : n, .ldc = n,
                 .batch = 1, .alpha = 1.0f, .beta = accumulate ? 1.0f : 0.0f},
        .epilogue = epilogue};
}

nn_gemm_epilogue_params nn_linear_head_first_forward(const nn_linear_head_params *p, bool bias) {
    return product(p->rows, p->hidden, p->in, true, (bias ? NN_EPI_BIAS_COLS : 0) | NN_EPI_RELU, false);
}

nn_gemm_epilogue_params nn_linear_head_second_forward(const nn_linear_head_params *p, bool bias) {
    return product(p->rows, p->out, p->hidden, true, bias ? NN_EPI_BIAS_COLS : 0, false);
}

nn_gemm_epilogue_params nn_linear_head_hidden_gradient(const nn_linear_head_params *p) {
    return product(p->rows, p->hidden, p->out, false, NN_EPI_MASK, false);
}

nn_gemm_epilogue_params nn_linear_head_input_gradient(const nn_linear_head_params *p) {
    return product(p->rows, p->in, p->hidden, false, p->mask_input ? NN_EPI_MASK : 0, p->accumulate);
}
