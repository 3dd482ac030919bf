/* run(): the registry's table of the CPU backend's entry points
 * (nn_cpu_run_<name>, kernel_list.h). Each unpacks its buffer arguments
 * into the typed pointers of its family's function (cpu_*.c). */
#include "core/error.h"
#include "cpu_backend.h"
#include "cpu_gemm.h"

#define F32(i) nn_cpu_f32(a[i])
#define I32(i) nn_cpu_i32(a[i])

nn_status nn_cpu_run_gemm(nn_backend *self, const nn_gemm_params *p, const nn_buffer_ref *a) {
    nn_status s = nn_cpu_gemm(nn_cpu_pool(self), p, F32(0), F32(1), F32(2));
    if (s == NN_OK) return NN_OK;
    return nn_set_error(s, "cpu gemm m=%d n=%d k=%d batch=%d lda=%d ldb=%d ldc=%d: %s", p->m, p->n, p->k, p->batch,
                        p->lda, p->ldb, p->ldc, s == NN_ERR_MEMORY ? "out of scratch memory" : "invalid sizes or strides");
}

nn_status nn_cpu_run_gemm_epilogue(nn_backend *self, const nn_gemm_epilogue_params *p, const nn_buffer_ref *a) {
    return nn_cpu_gemm_epilogue(nn_cpu_pool(self), p, F32(0), F32(1), F32(2), F32(3));
}

nn_status nn_cpu_run_im2col(nn_backend *self, const nn_conv_geometry *p, const nn_buffer_ref *a) {
    return nn_cpu_im2col(nn_cpu_pool(self), p, F32(0), F32(1));
}

nn_status nn_cpu_run_col2im(nn_backend *self, const nn_conv_geometry *p, const nn_buffer_ref *a) {
    return nn_cpu_col2im(nn_cpu_pool(self), p, F32(0), F32(1));
}

nn_status nn_cpu_run_maxpool_forward(nn_backend *self, const nn_pool_params *p, const nn_buffer_ref *a) {
    return nn_cpu_maxpool_forward(nn_cpu_pool(self), p, F32(0), F32(1), I32(2));
}

nn_status nn_cpu_run_maxpool_backward(nn_backend *self, const nn_pool_params *p, const nn_buffer_ref *a) {
    return nn_cpu_maxpool_backward(nn_cpu_pool(self), p, F32(0), I32(1), F32(2));
}

nn_status nn_cpu_run_maxpool_backward_masked(nn_backend *self, const nn_pool_params *p, const nn_buffer_ref *a) {
    return nn_cpu_maxpool_backward_masked(nn_cpu_pool(self), p, F32(0), I32(1), F32(2), F32(3));
}

nn_status nn_cpu_run_bias_add(nn_backend *self, const nn_bias_params *p, const nn_buffer_ref *a) {
    return nn_cpu_bias_add(nn_cpu_pool(self), p, F32(0), F32(1));
}

nn_status nn_cpu_run_bias_grad(nn_backend *self, const nn_bias_params *p, const nn_buffer_ref *a) {
    return nn_cpu_bias_grad(nn_cpu_pool(self), p, F32(0), F32(1));
}

nn_status nn_cpu_run_relu_forward(nn_backend *self, const nn_pointwise_params *p, const nn_buffer_ref *a) {
    return nn_cpu_relu_forward(nn_cpu_pool(self), p, F32(0), F32(1));
}

nn_status nn_cpu_run_relu_backward(nn_backend *self, const nn_pointwise_params *p, const nn_buffer_ref *a) {
    return nn_cpu_relu_backward(nn_cpu_pool(self), p, F32(0), F32(1), F32(2));
}

nn_status nn_cpu_run_unary_forward(nn_backend *self, const nn_pointwise_params *p, const nn_buffer_ref *a) {
    return nn_cpu_unary_forward(nn_cpu_pool(self), p, F32(0), F32(1));
}

nn_status nn_cpu_run_unary_backward(nn_backend *self, const nn_pointwise_params *p, const nn_buffer_ref *a) {
    return nn_cpu_unary_backward(nn_cpu_pool(self), p, F32(0), F32(1), F32(2), F32(3));
}

nn_status nn_cpu_run_elementwise(nn_backend *self, const nn_pointwise_params *p, const nn_buffer_ref *a) {
    if (p->op != NN_EW_SCALE && !a[1].buffer)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu elementwise: op %d needs b (buffer argument 1)", p->op);
    return nn_cpu_elementwise(nn_cpu_pool(self), p, F32(0), F32(1), F32(2));
}

nn_status nn_cpu_run_softmax_forward(nn_backend *self, const nn_softmax_params *p, const nn_buffer_ref *a) {
    return nn_cpu_softmax_forward(nn_cpu_pool(self), p, F32(0), F32(1));
}

nn_status nn_cpu_run_softmax_backward(nn_backend *self, const nn_softmax_params *p, const nn_buffer_ref *a) {
    return nn_cpu_softmax_backward(nn_cpu_pool(self), p, F32(0), F32(1), F32(2));
}

nn_status nn_cpu_run_softmax_ce_forward(nn_backend *self, const nn_softmax_params *p, const nn_buffer_ref *a) {
    return nn_cpu_softmax_ce_forward(nn_cpu_pool(self), p, F32(0), I32(1), F32(2), F32(3));
}

nn_status nn_cpu_run_softmax_ce_backward(nn_backend *self, const nn_softmax_params *p, const nn_buffer_ref *a) {
    return nn_cpu_softmax_ce_backward(nn_cpu_pool(self), p, F32(0), I32(1), F32(2), F32(3));
}

nn_status nn_cpu_run_softmax_ce_fused(nn_backend *self, const nn_softmax_params *p, const nn_buffer_ref *a) {
    return nn_cpu_softmax_ce_fused(nn_cpu_pool(self), p, F32(0), I32(1), F32(2), F32(3));
}

nn_status nn_cpu_run_reduce_sum(nn_backend *self, const nn_pointwise_params *p, const nn_buffer_ref *a) {
    return nn_cpu_reduce_sum(nn_cpu_pool(self), p, F32(0), F32(1));
}

nn_status nn_cpu_run_broadcast_scalar(nn_backend *self, const nn_pointwise_params *p, const nn_buffer_ref *a) {
    return nn_cpu_broadcast_scalar(nn_cpu_pool(self), p, F32(0), F32(1));
}

nn_status nn_cpu_run_sum_squares(nn_backend *self, const nn_pointwise_params *p, const nn_buffer_ref *a) {
    return nn_cpu_sum_squares(nn_cpu_pool(self), p, F32(0), F32(1));
}

nn_status nn_cpu_run_sgd_update(nn_backend *self, const nn_sgd_params *p, const nn_buffer_ref *a) {
    return nn_cpu_sgd_update(nn_cpu_pool(self), p, F32(0), F32(1), F32(2), F32(3));
}

nn_status nn_cpu_run_sgd_update_device_lr(nn_backend *self, const nn_sgd_params *p, const nn_buffer_ref *a) {
    return nn_cpu_sgd_update_device_lr(nn_cpu_pool(self), p, F32(0), F32(1), F32(2), F32(3));
}

nn_status nn_cpu_run_gather_samples(nn_backend *self, const nn_gather_params *p, const nn_buffer_ref *a) {
    return nn_cpu_gather_samples(p, (const uint8_t *)I32(0), I32(1), I32(2), F32(3));
}

nn_status nn_cpu_run_gather_rows(nn_backend *self, const nn_gather_params *p, const nn_buffer_ref *a) {
    return nn_cpu_gather_rows(p, I32(0), I32(1), I32(2), I32(3));
}

nn_status nn_cpu_run_counter_add(nn_backend *self, const nn_counter_params *p, const nn_buffer_ref *a) {
    return nn_cpu_counter_add(p, I32(0));
}

nn_status nn_cpu_run_fill(nn_backend *self, const nn_fill_params *p, const nn_buffer_ref *a) {
    if (p->count < 0 || a[0].offset > a[0].buffer->bytes ||
        (uint64_t)p->count > (a[0].buffer->bytes - a[0].offset) / sizeof(uint32_t))
        return nn_set_error(NN_ERR_ARGUMENT, "cpu fill: %lld words from byte %zu run past the buffer's %zu bytes",
                            (long long)p->count, a[0].offset, a[0].buffer->bytes);
    uint32_t *out = (uint32_t *)I32(0);
    for (int64_t i = 0; i < p->count; i++) out[i] = p->bits;
    return NN_OK;
}

nn_status nn_cpu_run_metrics_accumulate(nn_backend *self, const nn_metrics_params *p, const nn_buffer_ref *a) {
    return nn_cpu_metrics_accumulate(p, F32(0), I32(1), F32(2), F32(3));
}

nn_status nn_cpu_run_dropout_forward(nn_backend *self, const nn_dropout_params *p, const nn_buffer_ref *a) {
    return nn_cpu_dropout_forward(nn_cpu_pool(self), p, F32(0), F32(1), F32(2), (const uint32_t *)I32(3));
}

nn_status nn_cpu_run_conv2d_forward(nn_backend *self, const nn_conv_params *p, const nn_buffer_ref *a) {
    return nn_cpu_conv2d(self, nn_cpu_pool(self), NN_KERNEL_CONV2D_FORWARD, p, a);
}

nn_status nn_cpu_run_conv2d_backward_data(nn_backend *self, const nn_conv_params *p, const nn_buffer_ref *a) {
    return nn_cpu_conv2d(self, nn_cpu_pool(self), NN_KERNEL_CONV2D_BACKWARD_DATA, p, a);
}

nn_status nn_cpu_run_conv2d_backward_weight(nn_backend *self, const nn_conv_params *p, const nn_buffer_ref *a) {
    return nn_cpu_conv2d(self, nn_cpu_pool(self), NN_KERNEL_CONV2D_BACKWARD_WEIGHT, p, a);
}

nn_status nn_cpu_run_conv2d_pool_forward(nn_backend *self, const nn_conv_pool_params *p, const nn_buffer_ref *a) {
    return nn_cpu_conv_pool(self, nn_cpu_pool(self), NN_KERNEL_CONV2D_POOL_FORWARD, p, a);
}

nn_status nn_cpu_run_conv2d_pool_backward_weight(nn_backend *self, const nn_conv_pool_params *p,
                                                 const nn_buffer_ref *a) {
    return nn_cpu_conv_pool(self, nn_cpu_pool(self), NN_KERNEL_CONV2D_POOL_BACKWARD_WEIGHT, p, a);
}

nn_status nn_cpu_run_conv2d_pool_backward_data(nn_backend *self, const nn_conv_pool_params *p,
                                               const nn_buffer_ref *a) {
    return nn_cpu_conv_pool(self, nn_cpu_pool(self), NN_KERNEL_CONV2D_POOL_BACKWARD_DATA, p, a);
}

nn_status nn_cpu_run_conv2d_pool_chain_weight(nn_backend *self, const nn_conv_pool_chain_params *p,
                                              const nn_buffer_ref *a) {
    return nn_cpu_conv_pool_chain(self, nn_cpu_pool(self), p, a);
}

nn_status nn_cpu_run_conv2d_pool_linear_forward(nn_backend *self, const nn_conv_pool_linear_params *p,
                                                const nn_buffer_ref *a) {
    return nn_cpu_conv_pool_linear(self, nn_cpu_pool(self), p, a);
}

nn_status nn_cpu_run_linear_head_forward(nn_backend *self, const nn_linear_head_params *p, const nn_buffer_ref *a) {
    return nn_cpu_linear_head(self, nn_cpu_pool(self), NN_KERNEL_LINEAR_HEAD_FORWARD, p, a);
}

nn_status nn_cpu_run_linear_head_backward_data(nn_backend *self, const nn_linear_head_params *p,
                                               const nn_buffer_ref *a) {
    return nn_cpu_linear_head(self, nn_cpu_pool(self), NN_KERNEL_LINEAR_HEAD_BACKWARD_DATA, p, a);
}

nn_status nn_cpu_run_linear_head_cross_entropy(nn_backend *self, const nn_linear_head_params *p,
                                               const nn_buffer_ref *a) {
    return nn_cpu_linear_head(self, nn_cpu_pool(self), NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY, p, a);
}

#define NN_ENTRY_SELF nn_backend
#define NN_ENTRY_RUN(name) nn_cpu_run_##name
NN_KERNEL_ENTRY_TABLE(kEntries)

nn_status nn_cpu_run(nn_backend *self, nn_kernel kernel, const nn_buffer_ref *a, int nargs, const void *params) {
    NN_TRY(nn_kernel_check_call("cpu", kernel, a, nargs, params));
    return kEntries[kernel](self, params, a);
}
