/* Every pipeline the Vulkan backend builds, once each: its id (vk_backend.h's
 * vk_pipeline_id), its shader (shaders/<shader>.comp), the kernel it serves
 * (messages) and, for the GEMM family's tiles, their specialization
 * constants. A kernel may use several pipelines (split-K's two passes);
 * pipelines specialised per layer take their constants at dispatch
 * (vk_pipeline_special).
 *
 *   P(ID, shader, kernel, BM, BN, BK, TM, TN, workgroup size, double-buffered)
 *     the tile constants are 0 for pipelines that take none */
#ifndef NN_VK_PIPELINE_LIST_H
#define NN_VK_PIPELINE_LIST_H

#define VK_PIPELINE_LIST(P)                                                                                    \
    /* the tiled GEMM: tiles of BM x BN, k slices of BK, TM x TN outputs per invocation */                     \
    P(GEMM_LARGE, gemm, "gemm", 128, 128, 8, 8, 8, 256, 0)                                                     \
    P(GEMM_LARGE16, gemm, "gemm", 128, 128, 16, 8, 8, 256, 0)                                                  \
    P(GEMM_LARGE_DB, gemm, "gemm", 128, 128, 8, 8, 8, 256, 1)                                                  \
    P(GEMM_LARGE16_DB, gemm, "gemm", 128, 128, 16, 8, 8, 256, 1)                                               \
    P(GEMM_128X64, gemm, "gemm", 128, 64, 16, 8, 4, 256, 0)                                                    \
    P(GEMM_64X128, gemm, "gemm", 64, 128, 16, 4, 8, 256, 0)                                                    \
    P(GEMM_MEDIUM, gemm, "gemm", 64, 64, 16, 4, 4, 256, 0)                                                     \
    P(GEMM_SMALL, gemm, "gemm", 32, 32, 16, 4, 4, 64, 0)                                                       \
    P(GEMM_THIN, gemm, "gemm", 16, 64, 16, 4, 4, 64, 0) /* few rows */                                         \
    P(GEMM_SPLITK, gemm_splitk, "gemm (split-K sum)", 0, 0, 0, 0, 0, 0, 0)                                     \
    /* fp16 products on matrix cores: BM x BN tiles, k slices of BK, subgroup blocks of TM x TN (WM x WN) */ \
    P(GEMM_COOPMAT, gemm_coopmat, "gemm (fp16 matrix cores)", 128, 128, 32, 64, 64, 128, 0)                    \
    P(GEMM_COOPMAT_MEDIUM, gemm_coopmat, "gemm (fp16 matrix cores)", 64, 64, 32, 32, 32, 128, 1)               \
    /* latency-bound products: one output per invocation, 128 invocations */                                  \
    P(GEMM_LATENCY, gemm_latency, "gemm (latency-bound)", 16, 8, 64, 1, 1, 128, 0)                             \
    P(GEMM_LATENCY_FEW_ROWS, gemm_latency, "gemm (latency-bound)", 8, 16, 64, 1, 1, 128, 0) /* m <= 8 */       \
    P(CONV_LATENCY, conv_latency, "conv2d (latency-bound)", 16, 8, 64, 1, 1, 128, 0)                           \
    P(CONV_LATENCY_FEW_ROWS, conv_latency, "conv2d (latency-bound)", 8, 16, 64, 1, 1, 128, 0)                  \
    P(GEMM_EPILOGUE_PASS, gemm_epilogue_pass, "gemm (epilogue pass)", 0, 0, 0, 0, 0, 0, 0)                     \
    P(IM2COL, im2col, "im2col", 0, 0, 0, 0, 0, 0, 0)                                                           \
    P(COL2IM, col2im, "col2im", 0, 0, 0, 0, 0, 0, 0)                                                           \
    P(MAXPOOL_FORWARD, maxpool_forward, "maxpool_forward", 0, 0, 0, 0, 0, 0, 0)                                \
    P(MAXPOOL_BACKWARD, maxpool_backward, "maxpool_backward", 0, 0, 0, 0, 0, 0, 0)                             \
    P(MAXPOOL_BACKWARD_MASKED, maxpool_backward_masked, "maxpool_backward_masked", 0, 0, 0, 0, 0, 0, 0)        \
    P(BIAS_ADD, bias_add, "bias_add", 0, 0, 0, 0, 0, 0, 0)                                                     \
    P(BIAS_GRAD, bias_grad, "bias_grad", 0, 0, 0, 0, 0, 0, 0)                                                  \
    P(RELU_FORWARD, relu_forward, "relu_forward", 0, 0, 0, 0, 0, 0, 0)                                         \
    P(RELU_BACKWARD, relu_backward, "relu_backward", 0, 0, 0, 0, 0, 0, 0)                                      \
    P(UNARY_FORWARD, unary_forward, "unary_forward", 0, 0, 0, 0, 0, 0, 0)                                      \
    P(UNARY_BACKWARD, unary_backward, "unary_backward", 0, 0, 0, 0, 0, 0, 0)                                   \
    P(CAST, cast, "cast", 0, 0, 0, 0, 0, 0, 0)                                                                 \
    P(ELEMENTWISE, elementwise, "elementwise", 0, 0, 0, 0, 0, 0, 0)                                            \
    P(SOFTMAX_FORWARD, softmax_forward, "softmax_forward", 0, 0, 0, 0, 0, 0, 0)                                \
    P(SOFTMAX_BACKWARD, softmax_backward, "softmax_backward", 0, 0, 0, 0, 0, 0, 0)                             \
    P(SOFTMAX_CE_FORWARD, softmax_ce_forward, "softmax_cross_entropy_forward", 0, 0, 0, 0, 0, 0, 0)            \
    P(SOFTMAX_CE_BACKWARD, softmax_ce_backward, "softmax_cross_entropy_backward", 0, 0, 0, 0, 0, 0, 0)         \
    P(SOFTMAX_CE_FUSED, softmax_ce_fused, "softmax_ce_fused", 0, 0, 0, 0, 0, 0, 0)                             \
    P(REDUCE, reduce, "reduce_sum/sum_squares", 0, 0, 0, 0, 0, 0, 0)                                           \
    P(BROADCAST_SCALAR, broadcast_scalar, "broadcast_scalar", 0, 0, 0, 0, 0, 0, 0)                             \
    P(SGD_UPDATE, sgd_update, "sgd_update", 0, 0, 0, 0, 0, 0, 0)                                               \
    P(SGD_UPDATE_DEVICE_LR, sgd_update_device_lr, "sgd_update_device_lr", 0, 0, 0, 0, 0, 0, 0)                 \
    P(GATHER_SAMPLES, gather_samples, "gather_samples", 0, 0, 0, 0, 0, 0, 0)                                   \
    P(GATHER_ROWS, gather_rows, "gather_rows", 0, 0, 0, 0, 0, 0, 0)                                            \
    P(COUNTER_ADD, counter_add, "counter_add", 0, 0, 0, 0, 0, 0, 0)                                            \
    P(FILL, fill, "fill", 0, 0, 0, 0, 0, 0, 0)                                                                 \
    P(METRICS_ACCUMULATE, metrics_accumulate, "metrics_accumulate", 0, 0, 0, 0, 0, 0, 0)                       \
    P(DROPOUT_FORWARD, dropout_forward, "dropout_forward", 0, 0, 0, 0, 0, 0, 0)                                \
    /* specialised per layer (vk_pipeline_special) */                                                          \
    P(CONV_POOL_FORWARD, conv_pool_forward, "conv2d_pool_forward", 0, 0, 0, 0, 0, 0, 0)                        \
    P(CONV_POOL_WEIGHT, conv_pool_weight, "conv2d_pool_backward_weight", 0, 0, 0, 0, 0, 0, 0)                  \
    P(CONV_POOL_DATA, conv_pool_data, "conv2d_pool_backward_data", 0, 0, 0, 0, 0, 0, 0)                        \
    P(CONV_POOL_CHAIN_WEIGHT, conv_pool_chain_weight, "conv2d_pool_chain_weight", 0, 0, 0, 0, 0, 0, 0)         \
    P(LINEAR_HEAD_FORWARD, linear_head_forward, "linear_head_forward", 0, 0, 0, 0, 0, 0, 0)                    \
    P(LINEAR_HEAD_DATA, linear_head_data, "linear_head_backward_data", 0, 0, 0, 0, 0, 0, 0)                    \
    P(LINEAR_HEAD_LOSS, linear_head_loss, "linear_head_cross_entropy", 0, 0, 0, 0, 0, 0, 0)                    \
    P(BROADCAST, broadcast, "broadcast", 0, 0, 0, 0, 0, 0, 0)                                                  \
    P(COMPARE, compare, "compare", 0, 0, 0, 0, 0, 0, 0)                                                        \
    P(STRIDED_COPY, strided_copy, "strided_copy", 0, 0, 0, 0, 0, 0, 0)                                         \
    P(REDUCE_DIMS, reduce_dims, "reduce_dims", 0, 0, 0, 0, 0, 0, 0)                                            \
    P(REDUCE_DIMS_SCATTER, reduce_dims_scatter, "reduce_dims_scatter", 0, 0, 0, 0, 0, 0, 0)                     \
    /* normalisation */                                                                                        \
    P(NORM_STATS, norm_stats, "norm_stats", 0, 0, 0, 0, 0, 0, 0)                                               \
    P(NORM_APPLY, norm_apply, "norm_apply", 0, 0, 0, 0, 0, 0, 0)                                               \
    P(NORM_BACKWARD_DATA, norm_backward_data, "norm_backward_data", 0, 0, 0, 0, 0, 0, 0)                       \
    P(NORM_BACKWARD_AFFINE, norm_backward_affine, "norm_backward_affine", 0, 0, 0, 0, 0, 0, 0)                 \
    P(NORM_RUNNING_UPDATE, norm_running_update, "norm_running_update", 0, 0, 0, 0, 0, 0, 0)                     \
    P(POOL2D_MAX_FORWARD, pool2d_max_forward, "pool2d_max_forward", 0, 0, 0, 0, 0, 0, 0)                       \
    P(POOL2D_MAX_BACKWARD, pool2d_max_backward, "pool2d_max_backward", 0, 0, 0, 0, 0, 0, 0)                    \
    P(POOL2D_AVG_FORWARD, pool2d_avg_forward, "pool2d_avg_forward", 0, 0, 0, 0, 0, 0, 0)                       \
    P(POOL2D_AVG_BACKWARD, pool2d_avg_backward, "pool2d_avg_backward", 0, 0, 0, 0, 0, 0, 0)                     \
    /* softmax along any dimension, class-target losses */                                                     \
    P(SOFTMAX_DIM_FORWARD, softmax_dim_forward, "softmax_dim_forward", 0, 0, 0, 0, 0, 0, 0)                     \
    P(SOFTMAX_DIM_BACKWARD, softmax_dim_backward, "softmax_dim_backward", 0, 0, 0, 0, 0, 0, 0)                  \
    P(SOFTMAX_DIM_ROWS_FORWARD, softmax_dim_rows_forward, "softmax_dim_forward", 0, 0, 0, 0, 0, 0, 0)          \
    P(SOFTMAX_DIM_ROWS_BACKWARD, softmax_dim_rows_backward, "softmax_dim_backward", 0, 0, 0, 0, 0, 0, 0)       \
    P(NLL_FORWARD, nll_forward, "nll_forward", 0, 0, 0, 0, 0, 0, 0)                                             \
    P(NLL_BACKWARD, nll_backward, "nll_backward", 0, 0, 0, 0, 0, 0, 0)                                          \
    /* attention: variants hold E and Ev up to 64, 128, 192, 256 (attention_tiles.glsl's CHUNKS); the fp16     \
       kernels on matrix cores up to 64 and 128 */                                                             \
    P(ATTENTION_FORWARD, attention_forward, "attention_forward", 0, 0, 0, 0, 0, 0, 0)                          \
    P(ATTENTION_FORWARD_COOPMAT, attention_forward_coopmat, "attention_forward (cores)", 0, 0, 0, 0, 0, 0, 0)  \
    P(ATTENTION_BACKWARD_QUERY, attention_backward_query, "attention_backward_query", 0, 0, 0, 0, 0, 0, 0)     \
    P(ATTENTION_BACKWARD_KEYS, attention_backward_keys, "attention_backward_keys", 0, 0, 0, 0, 0, 0, 0)        \
    P(ATTENTION_BACKWARD_QUERY_COOPMAT, attention_backward_query_coopmat, "attention_backward_query (cores)", 0, 0, 0, \
      0, 0, 0, 0)                                                                                                   \
    P(ATTENTION_BACKWARD_KEYS_COOPMAT, attention_backward_keys_coopmat, "attention_backward_keys (cores)", 0, 0, 0, 0, \
      0, 0, 0)                                                                                                      \
    P(EMBEDDING_FORWARD, embedding_forward, "embedding_forward", 0, 0, 0, 0, 0, 0, 0)                          \
    P(EMBEDDING_BACKWARD, embedding_backward, "embedding_backward", 0, 0, 0, 0, 0, 0, 0)                        \
    P(DEPTHWISE_FORWARD, depthwise_conv2d_forward, "depthwise_conv2d_forward", 0, 0, 0, 0, 0, 0, 0)           \
    P(DEPTHWISE_DATA, depthwise_conv2d_data, "depthwise_conv2d_backward_data", 0, 0, 0, 0, 0, 0, 0)           \
    P(DEPTHWISE_WEIGHT, depthwise_conv2d_weight, "depthwise_conv2d_backward_weight", 0, 0, 0, 0, 0, 0, 0)     \
    P(INTERPOLATE_FORWARD, interpolate_forward, "interpolate_forward", 0, 0, 0, 0, 0, 0, 0)                    \
    P(INTERPOLATE_BACKWARD, interpolate_backward, "interpolate_backward", 0, 0, 0, 0, 0, 0, 0)                  \
    /* normalisation and pooling over large groups and windows (vk_norm.c, vk_pool2d.c) */                      \
    P(POOL2D_AVG_WINDOW, pool2d_avg_window, "pool2d_avg_forward (large windows)", 0, 0, 0, 0, 0, 0, 0)          \
    P(NORM_BACKWARD_SUMS, norm_backward_sums, "norm_backward_data (sums)", 0, 0, 0, 0, 0, 0, 0)                \
    P(NORM_BACKWARD_POINTWISE, norm_backward_pointwise, "norm_backward_data (pointwise)", 0, 0, 0, 0, 0, 0, 0) \
    P(NORM_COLUMNS, norm_columns, "normalisation (columns)", 0, 0, 0, 0, 0, 0, 0)                              \
    P(NORM_COLUMNS_MASKED, norm_columns_masked, "norm_backward_sums (activation mask)", 0, 0, 0, 0, 0, 0, 0)    \
    P(NORM_BACKWARD_POINTWISE_MASKED, norm_backward_pointwise_masked, "norm_backward_from_sums (activation mask)", \
      0, 0, 0, 0, 0, 0, 0)                                                                                      \
    /* the optimizers beyond SGD (vk_optimizers.c) */                                                          \
    P(ADAM_UPDATE, adam_update, "adam_update", 0, 0, 0, 0, 0, 0, 0)                                            \
    P(RMSPROP_UPDATE, rmsprop_update, "rmsprop_update", 0, 0, 0, 0, 0, 0, 0)                                   \
    P(LION_UPDATE, lion_update, "lion_update", 0, 0, 0, 0, 0, 0, 0)                                            \
    P(MUON_MOMENTUM, muon_momentum, "muon_momentum", 0, 0, 0, 0, 0, 0, 0)                                      \
    P(MUON_NORMALIZE, muon_normalize, "muon_normalize", 0, 0, 0, 0, 0, 0, 0)                                   \
    P(MUON_APPLY, muon_apply, "muon_apply", 0, 0, 0, 0, 0, 0, 0)                                                \
    /* learning-rate schedules and weight averages (vk_schedule.c) */                                          \
    P(LR_SCHEDULE, lr_schedule, "lr_schedule", 0, 0, 0, 0, 0, 0, 0)                                            \
    P(EMA_UPDATE, ema_update, "ema_update", 0, 0, 0, 0, 0, 0, 0)                                            \
    P(LOSS_SCALE, loss_scale, "loss_scale", 0, 0, 0, 0, 0, 0, 0)                                            \
    /* implicit-GEMM convolution (vk_conv_gemm.c): variant bits 0, 1 the vec4 loads, 2-3 the mode */          \
    P(CONV_GEMM_128X64, conv_gemm, "conv2d (implicit GEMM)", 128, 64, 16, 8, 4, 256, 0)                        \
    P(CONV_GEMM_64X128, conv_gemm, "conv2d (implicit GEMM)", 64, 128, 16, 4, 8, 256, 0)                        \
    P(CONV_GEMM_64X64, conv_gemm, "conv2d (implicit GEMM)", 64, 64, 16, 4, 4, 256, 0)                          \
    P(CONV_GEMM_32X32, conv_gemm, "conv2d (implicit GEMM)", 32, 32, 16, 4, 4, 64, 0)                           \
    P(CONV_GEMM_PACK, conv_gemm_pack, "conv2d (weight packing)", 0, 0, 0, 0, 0, 0, 0)                         \
    /* the same in fp16 on matrix cores: subgroup blocks of TM x TN (WM x WN), as GEMM_COOPMAT */              \
    P(CONV_GEMM_COOPMAT_128X128, conv_gemm_coopmat, "conv2d (fp16 cores)", 128, 128, 32, 64, 32, 256, 1)       \
    P(CONV_GEMM_COOPMAT_128X64, conv_gemm_coopmat, "conv2d (fp16 cores)", 128, 64, 32, 32, 32, 256, 1)         \
    P(CONV_GEMM_COOPMAT_64X128, conv_gemm_coopmat, "conv2d (fp16 cores)", 64, 128, 32, 32, 32, 256, 1)         \
    P(CONV_GEMM_COOPMAT_64X64, conv_gemm_coopmat, "conv2d (fp16 cores)", 64, 64, 32, 32, 32, 128, 1)         \
    /* Winograd convolution's transforms (vk_conv_winograd.c; variant 4: the 5x5 filters' 8x8 transform); \
     * its products are GEMMs */                                                                              \
    P(WINOGRAD_FILTER, winograd_filter, "conv2d (Winograd filter transform)", 0, 0, 0, 0, 0, 0, 0)             \
    P(WINOGRAD_TILES, winograd_tiles, "conv2d (Winograd input transform)", 0, 0, 0, 0, 0, 0, 0)               \
    P(WINOGRAD_OUTPUT, winograd_output, "conv2d (Winograd output transform)", 0, 0, 0, 0, 0, 0, 0)

#endif
