/* The kernel registry: every kernel once, as a row of facts from which the
 * rest is generated (kernels.h's nn_kernel enum and nn_kernel_info, each
 * backend's table of entry points) or checked (the parity test fails for a
 * kernel without a case).
 *
 *   X(ID, name, params, args, written, optional)
 *     ID        the enum constant NN_KERNEL_<ID>
 *     name      its name in messages and profiles; every backend implements
 *               it as <backend>_run_<name>(self, const params *, args)
 *     params    its parameter struct (kernels.h)
 *     args      how many buffer arguments it takes, in the order of the
 *               comment beside the row
 *     written   the arguments it writes (NN_ARG(i): argument i), which the
 *               schedules and the Vulkan backend's barriers follow
 *     optional  the arguments that may be absent (a NULL buffer); the rest
 *               are refused by name when missing, on every backend
 *
 * Adding a kernel: its row here, its parameter struct in kernels.h if new,
 * its entry point on every backend, and its case in the parity test. */
#ifndef NN_KERNEL_LIST_H
#define NN_KERNEL_LIST_H

#define NN_ARG(i) (1u << (i))

#define NN_KERNEL_LIST(X)                                                                                       \
    /* GEMM family: A, B, C (A and B may be absent when alpha or k is 0) */                                     \
    X(GEMM, gemm, nn_gemm_params, 3, NN_ARG(2), NN_ARG(0) | NN_ARG(1))                                          \
    /* ... and the product through an epilogue: A, B, C, aux (bias or mask) */                                  \
    X(GEMM_EPILOGUE, gemm_epilogue, nn_gemm_epilogue_params, 4, NN_ARG(2), NN_ARG(0) | NN_ARG(1) | NN_ARG(3))   \
    /* image, columns */                                                                                        \
    X(IM2COL, im2col, nn_conv_geometry, 2, NN_ARG(1), 0)                                                        \
    /* columns, image */                                                                                        \
    X(COL2IM, col2im, nn_conv_geometry, 2, NN_ARG(1), 0)                                                        \
    /* x, y, argmax (int32) */                                                                                  \
    X(MAXPOOL_FORWARD, maxpool_forward, nn_pool_params, 3, NN_ARG(1) | NN_ARG(2), 0)                            \
    /* dy, argmax, dx */                                                                                        \
    X(MAXPOOL_BACKWARD, maxpool_backward, nn_pool_params, 3, NN_ARG(2), 0)                                      \
    /* dy, argmax, y (the pool's output, a ReLU's at the argmax), dx */                                         \
    X(MAXPOOL_BACKWARD_MASKED, maxpool_backward_masked, nn_pool_params, 4, NN_ARG(3), 0)                        \
    /* y (in place), bias */                                                                                    \
    X(BIAS_ADD, bias_add, nn_bias_params, 2, NN_ARG(0), 0)                                                      \
    /* dy, dbias */                                                                                             \
    X(BIAS_GRAD, bias_grad, nn_bias_params, 2, NN_ARG(1), 0)                                                    \
    /* x, y */                                                                                                  \
    X(RELU_FORWARD, relu_forward, nn_pointwise_params, 2, NN_ARG(1), 0)                                         \
    /* y, dy, dx */                                                                                             \
    X(RELU_BACKWARD, relu_backward, nn_pointwise_params, 3, NN_ARG(2), 0)                                       \
    /* x, y: y = f(x), f the row op of shaders/unary_ops.h */                                                    \
    X(UNARY_FORWARD, unary_forward, nn_pointwise_params, 2, NN_ARG(1), 0)                                       \
    /* x, y, dy, dx: dx (+)= f'(x) dy */                                                                        \
    X(UNARY_BACKWARD, unary_backward, nn_pointwise_params, 4, NN_ARG(3), 0)                                     \
    /* a, b (absent for SCALE), out */                                                                          \
    X(ELEMENTWISE, elementwise, nn_pointwise_params, 3, NN_ARG(2), NN_ARG(1))                                   \
    /* x, y */                                                                                                  \
    X(SOFTMAX_FORWARD, softmax_forward, nn_softmax_params, 2, NN_ARG(1), 0)                                     \
    /* y, dy, dx */                                                                                             \
    X(SOFTMAX_BACKWARD, softmax_backward, nn_softmax_params, 3, NN_ARG(2), 0)                                   \
    /* logits, labels (int32), probs, loss[1] */                                                                \
    X(SOFTMAX_CE_FORWARD, softmax_ce_forward, nn_softmax_params, 4, NN_ARG(2) | NN_ARG(3), 0)                   \
    /* probs, labels, dloss[1], dlogits */                                                                      \
    X(SOFTMAX_CE_BACKWARD, softmax_ce_backward, nn_softmax_params, 4, NN_ARG(3), 0)                             \
    /* logits, labels (int32), dlogits, loss[1] */                                                              \
    X(SOFTMAX_CE_FUSED, softmax_ce_fused, nn_softmax_params, 4, NN_ARG(2) | NN_ARG(3), 0)                       \
    /* x, out[1] */                                                                                             \
    X(REDUCE_SUM, reduce_sum, nn_pointwise_params, 2, NN_ARG(1), 0)                                             \
    /* s[1], out */                                                                                             \
    X(BROADCAST_SCALAR, broadcast_scalar, nn_pointwise_params, 2, NN_ARG(1), 0)                                 \
    /* x, out[1] */                                                                                             \
    X(SUM_SQUARES, sum_squares, nn_pointwise_params, 2, NN_ARG(1), 0)                                           \
    /* param, grad, velocity, grad_norm_sq[1], skip[1] (kernels.h: skipped updates) */                         \
    X(SGD_UPDATE, sgd_update, nn_sgd_params, 5, NN_ARG(0) | NN_ARG(2), NN_ARG(2) | NN_ARG(3) | NN_ARG(4))       \
    /* param, grad, velocity, scalars[2] = {lr, grad_norm_sq}, skip[1] */                                      \
    X(SGD_UPDATE_DEVICE_LR, sgd_update_device_lr, nn_sgd_params, 5, NN_ARG(0) | NN_ARG(2), NN_ARG(2) | NN_ARG(4)) \
    /* samples (uint8, packed 4 per word), order, counter, out, draws (int32[1]: augmentation's draw) */        \
    X(GATHER_SAMPLES, gather_samples, nn_gather_params, 5, NN_ARG(3), NN_ARG(1) | NN_ARG(2) | NN_ARG(4))       \
    /* table (32-bit words), order, counter, out */                                                             \
    X(GATHER_ROWS, gather_rows, nn_gather_params, 4, NN_ARG(3), NN_ARG(1) | NN_ARG(2))                          \
    /* counter (int32[1]), skip[1] */                                                                           \
    X(COUNTER_ADD, counter_add, nn_counter_params, 2, NN_ARG(0), NN_ARG(1))                                     \
    /* out (32-bit words) */                                                                                    \
    X(FILL, fill, nn_fill_params, 1, NN_ARG(0), 0)                                                              \
    /* logits, labels (int32), loss[1], sums[2] */                                                              \
    X(METRICS_ACCUMULATE, metrics_accumulate, nn_metrics_params, 4, NN_ARG(3), 0)                               \
    /* x, y, mask, counter[1] (uint32, read; COUNTER_ADD advances it) */                                        \
    X(DROPOUT_FORWARD, dropout_forward, nn_dropout_params, 4, NN_ARG(1) | NN_ARG(2), 0)                         \
    /* x, weight, y, bias, columns */                                                                           \
    X(CONV2D_FORWARD, conv2d_forward, nn_conv_params, 5, NN_ARG(2) | NN_ARG(4), NN_ARG(3) | NN_ARG(4))          \
    /* dy, weight, dx */                                                                                        \
    X(CONV2D_BACKWARD_DATA, conv2d_backward_data, nn_conv_params, 3, NN_ARG(2), 0)                              \
    /* dy, x, dweight, columns */                                                                               \
    X(CONV2D_BACKWARD_WEIGHT, conv2d_backward_weight, nn_conv_params, 4, NN_ARG(2), NN_ARG(3))                  \
    /* x, weight, bias, y, winners (int32), columns */                                                          \
    X(CONV2D_POOL_FORWARD, conv2d_pool_forward, nn_conv_pool_params, 6, NN_ARG(3) | NN_ARG(4) | NN_ARG(5),      \
      NN_ARG(2) | NN_ARG(5))                                                                                    \
    /* dy, winners, x, dweight, dbias (one of the two at least), columns */                                     \
    X(CONV2D_POOL_BACKWARD_WEIGHT, conv2d_pool_backward_weight, nn_conv_pool_params, 6, NN_ARG(3) | NN_ARG(4),  \
      NN_ARG(3) | NN_ARG(4) | NN_ARG(5))                                                                        \
    /* dy, winners, weight, dx */                                                                               \
    X(CONV2D_POOL_BACKWARD_DATA, conv2d_pool_backward_data, nn_conv_pool_params, 4, NN_ARG(3), 0)               \
    /* dy, winners, weight (the second layer's), first_winners, x (the first's input), dweight, dbias (the      \
       first's; one of the two at least) */                                                                     \
    X(CONV2D_POOL_CHAIN_WEIGHT, conv2d_pool_chain_weight, nn_conv_pool_chain_params, 7, NN_ARG(5) | NN_ARG(6),  \
      NN_ARG(5) | NN_ARG(6))                                                                                    \
    /* x, weight, bias, y, winners (int32), lin_weight, lin_bias, h */                                          \
    X(CONV2D_POOL_LINEAR_FORWARD, conv2d_pool_linear_forward, nn_conv_pool_linear_params, 8,                    \
      NN_ARG(3) | NN_ARG(4) | NN_ARG(7), NN_ARG(2) | NN_ARG(6))                                                 \
    /* x, wa, ba, wb, bb, h, y */                                                                               \
    X(LINEAR_HEAD_FORWARD, linear_head_forward, nn_linear_head_params, 7, NN_ARG(5) | NN_ARG(6),                \
      NN_ARG(2) | NN_ARG(4))                                                                                    \
    /* dy, wb, h, wa, x (read with mask_input), dh, dx */                                                       \
    X(LINEAR_HEAD_BACKWARD_DATA, linear_head_backward_data, nn_linear_head_params, 7, NN_ARG(5) | NN_ARG(6),    \
      NN_ARG(4) | NN_ARG(6))                                                                                    \
    /* x, wa, ba, wb, bb, labels (int32), h, logits, row_loss, dlogits, dh, dx */                               \
    X(LINEAR_HEAD_CROSS_ENTROPY, linear_head_cross_entropy, nn_linear_head_params, 12,                          \
      NN_ARG(6) | NN_ARG(7) | NN_ARG(8) | NN_ARG(9) | NN_ARG(10) | NN_ARG(11),                                  \
      NN_ARG(2) | NN_ARG(4) | NN_ARG(10) | NN_ARG(11))                                                        \
    /* a, b, c (absent where the row reads fewer), out */                                                      \
    X(BROADCAST, broadcast, nn_broadcast_params, 4, NN_ARG(3), NN_ARG(1) | NN_ARG(2))                           \
    /* src, dst */                                                                                              \
    X(STRIDED_COPY, strided_copy, nn_strided_copy_params, 2, NN_ARG(1), 0)                                      \
    /* x, out, winners (int32; MAX and MIN, optional); x and out int32 for integer sums */                     \
    X(REDUCE_DIMS, reduce_dims, nn_reduce_dims_params, 3, NN_ARG(1) | NN_ARG(2), NN_ARG(2))                     \
    /* dy, winners (int32), dx */                                                                               \
    X(REDUCE_DIMS_SCATTER, reduce_dims_scatter, nn_reduce_dims_params, 3, NN_ARG(2), 0)                          \
    /* normalisation (nn_norm_params): x, mean, var (per group; var biased) */                                  \
    X(NORM_STATS, norm_stats, nn_norm_params, 3, NN_ARG(1) | NN_ARG(2), 0)                                      \
    /* x, mean, var, weight, bias, y, residual */                                                               \
    X(NORM_APPLY, norm_apply, nn_norm_params, 7, NN_ARG(5), NN_ARG(3) | NN_ARG(4) | NN_ARG(6))                  \
    /* x, mean, var, weight, dy, dx */                                                                          \
    X(NORM_BACKWARD_DATA, norm_backward_data, nn_norm_params, 6, NN_ARG(5), NN_ARG(3))                          \
    /* x, mean, var, dy, dweight, dbias (one of the two at least) */                                            \
    X(NORM_BACKWARD_AFFINE, norm_backward_affine, nn_norm_params, 6, NN_ARG(4) | NN_ARG(5),                     \
      NN_ARG(4) | NN_ARG(5))                                                                                    \
    /* mean, var, running_mean, running_var, count (int32[1], read) */                                          \
    X(NORM_RUNNING_UPDATE, norm_running_update, nn_norm_running_params, 5, NN_ARG(2) | NN_ARG(3), NN_ARG(4))    \
    /* 2-D pooling over nn_pool2d_geometry's windows. x, y, argmax (int32) */                                   \
    X(POOL2D_MAX_FORWARD, pool2d_max_forward, nn_pool2d_geometry, 3, NN_ARG(1) | NN_ARG(2), 0)                   \
    /* dy, argmax, dx */                                                                                        \
    X(POOL2D_MAX_BACKWARD, pool2d_max_backward, nn_pool2d_geometry, 3, NN_ARG(2), 0)                             \
    /* x, y */                                                                                                  \
    X(POOL2D_AVG_FORWARD, pool2d_avg_forward, nn_pool2d_geometry, 2, NN_ARG(1), 0)                               \
    /* dy, dx */                                                                                                \
    X(POOL2D_AVG_BACKWARD, pool2d_avg_backward, nn_pool2d_geometry, 2, NN_ARG(1), 0)                             \
    /* softmax and log_softmax along any dimension (nn_softmax_dim_params). x, y */                              \
    X(SOFTMAX_DIM_FORWARD, softmax_dim_forward, nn_softmax_dim_params, 2, NN_ARG(1), 0)                           \
    /* y, dy, dx */                                                                                             \
    X(SOFTMAX_DIM_BACKWARD, softmax_dim_backward, nn_softmax_dim_params, 3, NN_ARG(2), 0)                         \
    /* attention without the score matrix (nn_attention_params). q, k, v, mask, out, lse */                     \
    X(ATTENTION_FORWARD, attention_forward, nn_attention_params, 6, NN_ARG(4) | NN_ARG(5), NN_ARG(3))            \
    /* q, k, v, mask, out, dout, lse, delta, dq */                                                              \
    X(ATTENTION_BACKWARD_QUERY, attention_backward_query, nn_attention_params, 9, NN_ARG(7) | NN_ARG(8),        \
      NN_ARG(3))                                                                                                \
    /* q, k, v, mask, dout, lse, delta, dk, dv */                                                               \
    X(ATTENTION_BACKWARD_KEYS, attention_backward_keys, nn_attention_params, 9, NN_ARG(7) | NN_ARG(8),          \
      NN_ARG(3))                                                                                                \
    /* class-target negative log-likelihood (nn_nll_params). input, target (int32), weight, loss, total_weight */ \
    X(NLL_FORWARD, nll_forward, nn_nll_params, 5, NN_ARG(3) | NN_ARG(4), NN_ARG(2) | NN_ARG(4))                   \
    /* dloss, target (int32), weight, total_weight (MEAN), dinput */                                           \
    X(NLL_BACKWARD, nll_backward, nn_nll_params, 5, NN_ARG(4), NN_ARG(2) | NN_ARG(3))                           \
    /* embedding (nn_embedding_params): indices (int32), weight, out */                                        \
    X(EMBEDDING_FORWARD, embedding_forward, nn_embedding_params, 3, NN_ARG(2), 0)                               \
    /* indices (int32), dy, dweight */                                                                         \
    X(EMBEDDING_BACKWARD, embedding_backward, nn_embedding_params, 3, NN_ARG(2), 0)                             \
    /* depthwise convolution (nn_conv_is_depthwise). x, weight, y, bias */                                     \
    X(DEPTHWISE_CONV2D_FORWARD, depthwise_conv2d_forward, nn_conv_params, 4, NN_ARG(2), NN_ARG(3))              \
    /* dy, weight, dx */                                                                                        \
    X(DEPTHWISE_CONV2D_BACKWARD_DATA, depthwise_conv2d_backward_data, nn_conv_params, 3, NN_ARG(2), 0)          \
    /* dy, x, dweight */                                                                                        \
    X(DEPTHWISE_CONV2D_BACKWARD_WEIGHT, depthwise_conv2d_backward_weight, nn_conv_params, 3, NN_ARG(2), 0)      \
    /* resampling of planes (nn_interpolate_params). x, y */                                                   \
    X(INTERPOLATE_FORWARD, interpolate_forward, nn_interpolate_params, 2, NN_ARG(1), 0)                         \
    /* dy, dx */                                                                                                \
    X(INTERPOLATE_BACKWARD, interpolate_backward, nn_interpolate_params, 2, NN_ARG(1), 0)                        \
    /* optimizer updates over a range of the flat buffers (src/optim/). param, grad, exp_avg, exp_avg_sq,       \
       max_exp_avg_sq (amsgrad), lr[1], step[1] (int32, read: COUNTER_ADD advances it), skip[1] */              \
    X(ADAM_UPDATE, adam_update, nn_adam_params, 8, NN_ARG(0) | NN_ARG(2) | NN_ARG(3) | NN_ARG(4),               \
      NN_ARG(4) | NN_ARG(7))                                                                                    \
    /* param, grad, square_avg, momentum_buffer, grad_avg (centered), lr[1], skip[1] */                         \
    X(RMSPROP_UPDATE, rmsprop_update, nn_rmsprop_params, 7, NN_ARG(0) | NN_ARG(2) | NN_ARG(3) | NN_ARG(4),      \
      NN_ARG(3) | NN_ARG(4) | NN_ARG(6))                                                                        \
    /* param, grad, exp_avg, lr[1], skip[1] */                                                                  \
    X(LION_UPDATE, lion_update, nn_lion_params, 5, NN_ARG(0) | NN_ARG(2), NN_ARG(4))                            \
    /* Muon (nn_muon_params). grad, momentum_buffer, update, skip[1] */                                         \
    X(MUON_MOMENTUM, muon_momentum, nn_muon_params, 4, NN_ARG(1) | NN_ARG(2), NN_ARG(3))                        \
    /* x, norm_sq[1] */                                                                                         \
    X(MUON_NORMALIZE, muon_normalize, nn_muon_params, 2, NN_ARG(0), 0)                                          \
    /* param, update, lr[1], skip[1] */                                                                         \
    X(MUON_APPLY, muon_apply, nn_muon_params, 4, NN_ARG(0), NN_ARG(3))                                          \
    /* learning-rate schedule (nn_lr_schedule_params). counter (int32[1]), lr[1] */                            \
    X(LR_SCHEDULE, lr_schedule, nn_lr_schedule_params, 2, NN_ARG(0) | NN_ARG(1), 0)                            \
    /* moving average of weights (nn_ema_params). shadow, value (32-bit words) */                              \
    X(EMA_UPDATE, ema_update, nn_ema_params, 2, NN_ARG(0) | NN_ARG(1), 0)                                      \
    /* dynamic loss scaling (nn_loss_scale_params). x, state[4] */                                              \
    X(LOSS_SCALE, loss_scale, nn_loss_scale_params, 2, NN_ARG(0) | NN_ARG(1), NN_ARG(0))                        \
    /* NORM_BACKWARD_DATA in two, for sums reduced in between (SyncBatchNorm):                                 \
     * x, mean, var, weight, dy, sums [2 * groups], bias (grad_mask) */                                        \
    X(NORM_BACKWARD_SUMS, norm_backward_sums, nn_norm_params, 7, NN_ARG(5), NN_ARG(3) | NN_ARG(6))              \
    /* x, mean, var, weight, dy, dx, sums [2 * groups], dweight, dbias, bias (grad_mask) */                    \
    X(NORM_BACKWARD_FROM_SUMS, norm_backward_from_sums, nn_norm_params, 10, NN_ARG(5) | NN_ARG(7) | NN_ARG(8),     \
      NN_ARG(3) | NN_ARG(7) | NN_ARG(8) | NN_ARG(9))                                                            \
    /* a, b (both float32 or both int32: nn_compare_params.integer), out (int32, 0 or 1) */                     \
    X(COMPARE, compare, nn_compare_params, 3, NN_ARG(2), 0)                                                     \
    /* x, out (nn_pointwise_params.op: nn_cast_op, float32 -> int32 or int32 -> float32) */                    \
    X(CAST, cast, nn_pointwise_params, 2, NN_ARG(1), 0)                                                         \
    /* a custom kernel (nn_custom_params): up to 8 buffers, those it writes named by the launch */             \
    X(CUSTOM, custom, nn_custom_params, 8, 0xffu, 0xffu)

#endif
