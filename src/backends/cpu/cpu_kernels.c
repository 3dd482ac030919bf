/* run(): the registry's table of the CPU backend's entry points
 * (nn_cpu_run_<name>, kernel_list.h). Each unpacks its buffer arguments
 * into the typed pointers of its family's function (cpu_*.c). */
#include "backends/conv_layout.h"
#include "base/error.h"
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

nn_status nn_cpu_run_elementwise(nn_backend *self, const nn_pointwise_params *p, const nn_buffer_ref *a) {
    if (p->op != NN_EW_SCALE && !a[1].buffer)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu elementwise: op %d needs b (buffer argument 1)", p->op);
    return nn_cpu_elementwise(nn_cpu_pool(self), p, F32(0), F32(1), F32(2));
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

/* Entry points that only unpack their buffers: into nn_cpu_<name>(pool,
 * p, typed buffers...) (POOLED) or nn_cpu_<name>(p, typed buffers...)
 * (SERIAL), or that hand them whole to a family's function, with the
 * kernel id where the family serves several (FAMILY, FAMILY_OF). */
#define POOLED(name, params, ...)                                                          \
    nn_status nn_cpu_run_##name(nn_backend *self, const params *p, const nn_buffer_ref *a) { \
        return nn_cpu_##name(nn_cpu_pool(self), p, __VA_ARGS__);                           \
    }
#define SERIAL(name, params, ...)                                                          \
    nn_status nn_cpu_run_##name(nn_backend *self, const params *p, const nn_buffer_ref *a) { \
        return nn_cpu_##name(p, __VA_ARGS__);                                              \
    }
/* The optimizers' updates and COUNTER_ADD: nothing when their optional
 * last argument `skip` is given and set (kernels.h: skipped updates). */
static bool update_skipped(nn_buffer_ref skip) { return skip.buffer && nn_cpu_f32(skip)[0] != 0.0f; }
#define POOLED_UPDATE(name, params, skip, ...)                                             \
    nn_status nn_cpu_run_##name(nn_backend *self, const params *p, const nn_buffer_ref *a) { \
        if (update_skipped(a[skip])) return NN_OK;                                         \
        return nn_cpu_##name(nn_cpu_pool(self), p, __VA_ARGS__);                           \
    }
#define SERIAL_UPDATE(name, params, skip, ...)                                             \
    nn_status nn_cpu_run_##name(nn_backend *self, const params *p, const nn_buffer_ref *a) { \
        if (update_skipped(a[skip])) return NN_OK;                                         \
        return nn_cpu_##name(p, __VA_ARGS__);                                              \
    }
#define FAMILY(name, params, family)                                                       \
    nn_status nn_cpu_run_##name(nn_backend *self, const params *p, const nn_buffer_ref *a) { \
        return nn_cpu_##family(self, nn_cpu_pool(self), p, a);                             \
    }
#define FAMILY_OF(name, params, family, kernel)                                            \
    nn_status nn_cpu_run_##name(nn_backend *self, const params *p, const nn_buffer_ref *a) { \
        return nn_cpu_##family(self, nn_cpu_pool(self), kernel, p, a);                     \
    }

POOLED(gemm_epilogue, nn_gemm_epilogue_params, F32(0), F32(1), F32(2), F32(3))
POOLED(im2col, nn_conv_geometry, F32(0), F32(1))
POOLED(col2im, nn_conv_geometry, F32(0), F32(1))
POOLED(maxpool_forward, nn_pool_params, F32(0), F32(1), I32(2))
POOLED(maxpool_backward, nn_pool_params, F32(0), I32(1), F32(2))
POOLED(maxpool_backward_masked, nn_pool_params, F32(0), I32(1), F32(2), F32(3))
POOLED(bias_add, nn_bias_params, F32(0), F32(1))
POOLED(bias_grad, nn_bias_params, F32(0), F32(1))
POOLED(relu_forward, nn_pointwise_params, F32(0), F32(1))
POOLED(relu_backward, nn_pointwise_params, F32(0), F32(1), F32(2))
POOLED(unary_forward, nn_pointwise_params, F32(0), F32(1))
POOLED(unary_backward, nn_pointwise_params, F32(0), F32(1), F32(2), F32(3))
POOLED(softmax_forward, nn_softmax_params, F32(0), F32(1))
POOLED(softmax_backward, nn_softmax_params, F32(0), F32(1), F32(2))
POOLED(softmax_ce_forward, nn_softmax_params, F32(0), I32(1), F32(2), F32(3))
POOLED(softmax_ce_backward, nn_softmax_params, F32(0), I32(1), F32(2), F32(3))
POOLED(softmax_ce_fused, nn_softmax_params, F32(0), I32(1), F32(2), F32(3))
POOLED(reduce_sum, nn_pointwise_params, F32(0), F32(1))
POOLED(broadcast_scalar, nn_pointwise_params, F32(0), F32(1))
POOLED(sum_squares, nn_pointwise_params, F32(0), F32(1))
POOLED_UPDATE(sgd_update, nn_sgd_params, 4, F32(0), F32(1), F32(2), F32(3))
POOLED_UPDATE(sgd_update_device_lr, nn_sgd_params, 4, F32(0), F32(1), F32(2), F32(3))
POOLED(dropout_forward, nn_dropout_params, F32(0), F32(1), F32(2), (const uint32_t *)I32(3))
SERIAL(gather_samples, nn_gather_params, (const uint8_t *)I32(0), I32(1), I32(2), F32(3), I32(4))
SERIAL(gather_rows, nn_gather_params, I32(0), I32(1), I32(2), I32(3))
SERIAL_UPDATE(counter_add, nn_counter_params, 1, I32(0))
POOLED(broadcast, nn_broadcast_params, F32(0), F32(1), F32(2), F32(3))
POOLED(compare, nn_compare_params, F32(0), F32(1), I32(2))
POOLED(cast, nn_pointwise_params, F32(0), F32(1))
POOLED(strided_copy, nn_strided_copy_params, F32(0), F32(1))
POOLED(reduce_dims, nn_reduce_dims_params, F32(0), F32(1), I32(2))
POOLED(reduce_dims_scatter, nn_reduce_dims_params, F32(0), I32(1), F32(2))
SERIAL(metrics_accumulate, nn_metrics_params, F32(0), I32(1), F32(2), F32(3))
FAMILY_OF(conv2d_forward, nn_conv_params, conv2d, NN_KERNEL_CONV2D_FORWARD)
FAMILY_OF(conv2d_backward_data, nn_conv_params, conv2d, NN_KERNEL_CONV2D_BACKWARD_DATA)
FAMILY_OF(conv2d_backward_weight, nn_conv_params, conv2d, NN_KERNEL_CONV2D_BACKWARD_WEIGHT)
FAMILY_OF(conv2d_pool_forward, nn_conv_pool_params, conv_pool, NN_KERNEL_CONV2D_POOL_FORWARD)
FAMILY_OF(conv2d_pool_backward_weight, nn_conv_pool_params, conv_pool, NN_KERNEL_CONV2D_POOL_BACKWARD_WEIGHT)
FAMILY_OF(conv2d_pool_backward_data, nn_conv_pool_params, conv_pool, NN_KERNEL_CONV2D_POOL_BACKWARD_DATA)
FAMILY(conv2d_pool_chain_weight, nn_conv_pool_chain_params, conv_pool_chain)
FAMILY(conv2d_pool_linear_forward, nn_conv_pool_linear_params, conv_pool_linear)
FAMILY_OF(linear_head_forward, nn_linear_head_params, linear_head, NN_KERNEL_LINEAR_HEAD_FORWARD)
FAMILY_OF(linear_head_backward_data, nn_linear_head_params, linear_head, NN_KERNEL_LINEAR_HEAD_BACKWARD_DATA)
FAMILY_OF(linear_head_cross_entropy, nn_linear_head_params, linear_head, NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY)
POOLED(norm_stats, nn_norm_params, F32(0), F32(1), F32(2))
POOLED(norm_apply, nn_norm_params, F32(0), F32(1), F32(2), F32(3), F32(4), F32(5), F32(6))
POOLED(norm_backward_data, nn_norm_params, F32(0), F32(1), F32(2), F32(3), F32(4), F32(5))
POOLED(norm_backward_affine, nn_norm_params, F32(0), F32(1), F32(2), F32(3), F32(4), F32(5))
SERIAL(norm_running_update, nn_norm_running_params, F32(0), F32(1), F32(2), F32(3), I32(4))
POOLED(pool2d_max_forward, nn_pool2d_geometry, F32(0), F32(1), I32(2))
POOLED(pool2d_max_backward, nn_pool2d_geometry, F32(0), I32(1), F32(2))
POOLED(pool2d_avg_forward, nn_pool2d_geometry, F32(0), F32(1))
POOLED(pool2d_avg_backward, nn_pool2d_geometry, F32(0), F32(1))
POOLED(softmax_dim_forward, nn_softmax_dim_params, F32(0), F32(1))
POOLED(softmax_dim_backward, nn_softmax_dim_params, F32(0), F32(1), F32(2))
SERIAL(nll_forward, nn_nll_params, F32(0), I32(1), F32(2), F32(3), F32(4))
POOLED(nll_backward, nn_nll_params, F32(0), I32(1), F32(2), F32(3), F32(4))
POOLED(embedding_forward, nn_embedding_params, I32(0), F32(1), F32(2))
POOLED(embedding_backward, nn_embedding_params, I32(0), F32(1), F32(2))
/* The depthwise kernels read dense tensors: channels-last ones go through
 * copies (nn_cpu_conv_layouts). */
#define DEPTHWISE(name, ID, ...)                                                                 \
    nn_status nn_cpu_run_##name(nn_backend *self, const nn_conv_params *p, const nn_buffer_ref *a) { \
        if (nn_conv_channels_last(p)) return nn_cpu_conv_layouts(self, NN_KERNEL_##ID, p, a);    \
        return nn_cpu_##name(nn_cpu_pool(self), p, __VA_ARGS__);                                 \
    }
DEPTHWISE(depthwise_conv2d_forward, DEPTHWISE_CONV2D_FORWARD, F32(0), F32(1), F32(2), F32(3))
DEPTHWISE(depthwise_conv2d_backward_data, DEPTHWISE_CONV2D_BACKWARD_DATA, F32(0), F32(1), F32(2))
DEPTHWISE(depthwise_conv2d_backward_weight, DEPTHWISE_CONV2D_BACKWARD_WEIGHT, F32(0), F32(1), F32(2))
POOLED(interpolate_forward, nn_interpolate_params, F32(0), F32(1))
POOLED(interpolate_backward, nn_interpolate_params, F32(0), F32(1))
POOLED_UPDATE(adam_update, nn_adam_params, 7, F32(0), F32(1), F32(2), F32(3), F32(4), F32(5), I32(6))
POOLED_UPDATE(rmsprop_update, nn_rmsprop_params, 6, F32(0), F32(1), F32(2), F32(3), F32(4), F32(5))
POOLED_UPDATE(lion_update, nn_lion_params, 4, F32(0), F32(1), F32(2), F32(3))
SERIAL_UPDATE(muon_momentum, nn_muon_params, 3, F32(0), F32(1), F32(2))
SERIAL(muon_normalize, nn_muon_params, F32(0), F32(1))
SERIAL_UPDATE(muon_apply, nn_muon_params, 3, F32(0), F32(1), F32(2))
SERIAL(lr_schedule, nn_lr_schedule_params, I32(0), F32(1))
POOLED(ema_update, nn_ema_params, (uint32_t *)I32(0), (uint32_t *)I32(1))

nn_status nn_cpu_run_loss_scale(nn_backend *self, const nn_loss_scale_params *p, const nn_buffer_ref *a) {
    (void)self;
    return nn_cpu_loss_scale(p, a);
}

POOLED(norm_backward_sums, nn_norm_params, F32(0), F32(1), F32(2), F32(3), F32(4), F32(5), F32(6))
POOLED(norm_backward_from_sums, nn_norm_params, F32(0), F32(1), F32(2), F32(3), F32(4), F32(5), F32(6), F32(7),
       F32(8), F32(9))
#undef POOLED
#undef SERIAL
#undef POOLED_UPDATE
#undef SERIAL_UPDATE
#undef FAMILY
#undef FAMILY_OF

#define NN_ENTRY_SELF nn_backend
#define NN_ENTRY_RUN(name) nn_cpu_run_##name
NN_KERNEL_ENTRY_TABLE(kEntries)

nn_status nn_cpu_run(nn_backend *self, nn_kernel kernel, const nn_buffer_ref *a, int nargs, const void *params) {
    NN_TRY(nn_kernel_check_call("cpu", kernel, a, nargs, params));
    return kEntries[kernel](self, params, a);
}
