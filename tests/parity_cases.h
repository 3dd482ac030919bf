/* The kernel parity test's cases, one a kernel of the registry: each runs
 * its kernel on the CPU and on `o` over awkward sizes and variants and
 * compares them (parity_check in parity_harness.h). test_kernel_parity.c
 * lists them in kCases by kernel id. */
#ifndef NN_TESTS_PARITY_CASES_H
#define NN_TESTS_PARITY_CASES_H

#include "backends/backend.h"

/* parity_cases_dense.c */
void parity_gemm_case(nn_backend *o);
void parity_gemm_epilogue_case(nn_backend *o);
void parity_im2col_case(nn_backend *o);
void parity_col2im_case(nn_backend *o);
void parity_conv_forward_case(nn_backend *o);
void parity_conv_data_case(nn_backend *o);
void parity_conv_weight_case(nn_backend *o);
void parity_maxpool_forward_case(nn_backend *o);
void parity_maxpool_backward_case(nn_backend *o);
void parity_maxpool_backward_masked_case(nn_backend *o);
void parity_bias_add_case(nn_backend *o);
void parity_bias_grad_case(nn_backend *o);
void parity_relu_forward_case(nn_backend *o);
void parity_relu_backward_case(nn_backend *o);
void parity_unary_forward_case(nn_backend *o);
void parity_unary_backward_case(nn_backend *o);
void parity_elementwise_case(nn_backend *o);
void parity_broadcast_scalar_case(nn_backend *o);
void parity_reduce_sum_case(nn_backend *o);
void parity_sum_squares_case(nn_backend *o);
void parity_softmax_forward_case(nn_backend *o);
void parity_softmax_backward_case(nn_backend *o);
void parity_softmax_ce_forward_case(nn_backend *o);
void parity_softmax_ce_fused_case(nn_backend *o);
void parity_softmax_ce_backward_case(nn_backend *o);
void parity_sgd_update_case(nn_backend *o);
void parity_sgd_update_device_lr_case(nn_backend *o);
void parity_gather_samples_case(nn_backend *o);
void parity_gather_rows_case(nn_backend *o);
void parity_counter_add_case(nn_backend *o);
void parity_fill_case(nn_backend *o);
void parity_metrics_accumulate_case(nn_backend *o);
void parity_dropout_forward_case(nn_backend *o);
void parity_cast_case(nn_backend *o);
void parity_custom_case(nn_backend *o);

/* parity_cases_fused.c */
void parity_conv_pool_forward_case(nn_backend *o);
void parity_conv_pool_weight_case(nn_backend *o);
void parity_conv_pool_data_case(nn_backend *o);
void parity_conv_pool_chain_case(nn_backend *o);
void parity_conv_pool_linear_case(nn_backend *o);
void parity_linear_head_forward_case(nn_backend *o);
void parity_linear_head_data_case(nn_backend *o);
void parity_linear_head_cross_entropy_case(nn_backend *o);

/* parity_cases_strided.c */
void parity_broadcast_case(nn_backend *o);
void parity_strided_copy_case(nn_backend *o);
void parity_reduce_dims_case(nn_backend *o);
void parity_reduce_dims_scatter_case(nn_backend *o);
void parity_compare_case(nn_backend *o);
/* parity_cases_norm.c */
void parity_norm_stats_case(nn_backend *o);
void parity_norm_apply_case(nn_backend *o);
void parity_norm_backward_data_case(nn_backend *o);
void parity_norm_backward_affine_case(nn_backend *o);
void parity_norm_running_update_case(nn_backend *o);
/* parity_cases_pool2d.c */
void parity_pool2d_max_forward_case(nn_backend *o);
void parity_pool2d_max_backward_case(nn_backend *o);
void parity_pool2d_avg_forward_case(nn_backend *o);
void parity_pool2d_avg_backward_case(nn_backend *o);
/* parity_cases_embedding.c */
void parity_embedding_forward_case(nn_backend *o);
void parity_embedding_backward_case(nn_backend *o);

/* parity_cases_attention.c */
void parity_attention_forward_case(nn_backend *o);
void parity_attention_backward_query_case(nn_backend *o);
void parity_attention_backward_keys_case(nn_backend *o);

/* parity_cases_losses.c */
void parity_softmax_dim_forward_case(nn_backend *o);
void parity_softmax_dim_backward_case(nn_backend *o);
void parity_nll_forward_case(nn_backend *o);
void parity_nll_backward_case(nn_backend *o);

/* parity_cases_conv_ext.c (the grouped, dilated and dilated-column cases
 * run from the dense cases of their kernels) */
void parity_im2col_dilated_case(nn_backend *o);
void parity_col2im_dilated_case(nn_backend *o);
void parity_conv_grouped_forward_case(nn_backend *o);
void parity_conv_grouped_data_case(nn_backend *o);
void parity_conv_grouped_weight_case(nn_backend *o);
void parity_depthwise_forward_case(nn_backend *o);
void parity_depthwise_data_case(nn_backend *o);
void parity_depthwise_weight_case(nn_backend *o);
void parity_interpolate_forward_case(nn_backend *o);
void parity_interpolate_backward_case(nn_backend *o);

/* parity_cases_optim.c */
void parity_adam_update_case(nn_backend *o);
void parity_rmsprop_update_case(nn_backend *o);
void parity_lion_update_case(nn_backend *o);
void parity_muon_momentum_case(nn_backend *o);
void parity_muon_normalize_case(nn_backend *o);
void parity_muon_apply_case(nn_backend *o);
void parity_lr_schedule_case(nn_backend *o);
void parity_ema_update_case(nn_backend *o);
void parity_loss_scale_case(nn_backend *o);

/* parity_cases_norm.c: NORM_BACKWARD_DATA in two (SyncBatchNorm) */
void parity_norm_backward_sums_case(nn_backend *o);
void parity_norm_backward_from_sums_case(nn_backend *o);

/* parity_cases_conv_implicit.c: the Vulkan convolution routes (implicit
 * GEMM forced, the default's choice, the column route forced), run from
 * parity_conv_forward_case, parity_conv_data_case and parity_conv_weight_case */
void parity_conv_routes_forward_case(nn_backend *o);
void parity_conv_routes_data_case(nn_backend *o);
void parity_conv_routes_weight_case(nn_backend *o);

#endif
