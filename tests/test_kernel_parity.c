/* The kernel parity test: every kernel of the registry (nn_kernel in
 * backends/kernels.h, ids 0 to NN_KERNEL_COUNT - 1) runs on the CPU backend,
 * the reference, and on every other backend this build and machine offer,
 * with the same inputs, and every buffer argument the kernel writes
 * (nn_kernel_written_args) must match the CPU's. The other kernel tests
 * take one family at a time; this one is where a new kernel or a new
 * backend cannot go unchecked: a kernel id without a case in kCases fails
 * kernel_parity_every_kernel_has_a_case, and a backend listed by
 * parity_other_backends() runs every case.
 *
 * Each case runs its kernel at awkward sizes (odd, not multiples of a tile
 * or of 4, batch 1 and more), accumulate on and off, optional arguments
 * given and absent, each argument a view at a byte offset into a larger
 * buffer. Outputs start as random values, not zeros, so an output element
 * one backend leaves unwritten differs from the CPU's. Guard words surround
 * every view, and the arguments a kernel only reads must come back
 * unchanged: a kernel writing outside its views, or writing an argument the
 * registry does not list as written, fails on whichever backend does it.
 *
 * Tolerances, |other - cpu| <= tol * max(1, |cpu|): float sums of n terms
 * 1e-5 * sqrt(n) (sums_tol); one or two roundings per element 1e-6
 * (ROUNDING: a fused multiply-add or not); copies and selections exactly,
 * and integer outputs (argmax, winners, counters, gathered words, dropout
 * masks) bit for bit. Inputs that decide a selection (the fused
 * convolutions' winners) are small multiples of powers of two, so every
 * backend computes them exactly whatever the order of its sums.
 *
 * This file holds the kCases table (a case per kernel id) and the two
 * tests. The harness (the backends compared, host arrays, tolerances,
 * parity_check, which runs a kernel on the CPU and another backend and
 * compares every argument) is in parity_harness.h and parity_harness.c; the
 * cases, declared in parity_cases.h, are in parity_cases_dense.c (GEMM,
 * convolution, pooling, bias, pointwise, softmax, SGD, the device loop,
 * dropout) and parity_cases_fused.c (the fused conv+pool, chain,
 * conv+pool+linear and Linear -> ReLU -> Linear kernels).
 *
 * Tests may use src/ internals; the backends are driven through
 * nn_backend's functions only. */
#include <stdio.h>

#include "backends/backend.h"
#include "parity_cases.h"
#include "parity_harness.h"
#include "test.h"

/* ---- the registry's cases, and the tests ---- */

/* A case runs its kernel on the CPU and on `other` (parity_check). */
typedef struct parity_case {
    void (*run)(nn_backend *other);
} parity_case;

static const parity_case kCases[NN_KERNEL_COUNT] = {
    [NN_KERNEL_GEMM] = {parity_gemm_case},
    [NN_KERNEL_IM2COL] = {parity_im2col_case},
    [NN_KERNEL_COL2IM] = {parity_col2im_case},
    [NN_KERNEL_MAXPOOL_FORWARD] = {parity_maxpool_forward_case},
    [NN_KERNEL_MAXPOOL_BACKWARD] = {parity_maxpool_backward_case},
    [NN_KERNEL_BIAS_ADD] = {parity_bias_add_case},
    [NN_KERNEL_BIAS_GRAD] = {parity_bias_grad_case},
    [NN_KERNEL_RELU_FORWARD] = {parity_relu_forward_case},
    [NN_KERNEL_RELU_BACKWARD] = {parity_relu_backward_case},
    [NN_KERNEL_UNARY_FORWARD] = {parity_unary_forward_case},
    [NN_KERNEL_UNARY_BACKWARD] = {parity_unary_backward_case},
    [NN_KERNEL_ELEMENTWISE] = {parity_elementwise_case},
    [NN_KERNEL_SOFTMAX_FORWARD] = {parity_softmax_forward_case},
    [NN_KERNEL_SOFTMAX_BACKWARD] = {parity_softmax_backward_case},
    [NN_KERNEL_SOFTMAX_CE_FORWARD] = {parity_softmax_ce_forward_case},
    [NN_KERNEL_SOFTMAX_CE_BACKWARD] = {parity_softmax_ce_backward_case},
    [NN_KERNEL_REDUCE_SUM] = {parity_reduce_sum_case},
    [NN_KERNEL_BROADCAST_SCALAR] = {parity_broadcast_scalar_case},
    [NN_KERNEL_SUM_SQUARES] = {parity_sum_squares_case},
    [NN_KERNEL_SGD_UPDATE] = {parity_sgd_update_case},
    [NN_KERNEL_GATHER_SAMPLES] = {parity_gather_samples_case},
    [NN_KERNEL_GATHER_ROWS] = {parity_gather_rows_case},
    [NN_KERNEL_COUNTER_ADD] = {parity_counter_add_case},
    [NN_KERNEL_FILL] = {parity_fill_case},
    [NN_KERNEL_METRICS_ACCUMULATE] = {parity_metrics_accumulate_case},
    [NN_KERNEL_GEMM_EPILOGUE] = {parity_gemm_epilogue_case},
    [NN_KERNEL_MAXPOOL_BACKWARD_MASKED] = {parity_maxpool_backward_masked_case},
    [NN_KERNEL_SOFTMAX_CE_FUSED] = {parity_softmax_ce_fused_case},
    [NN_KERNEL_SGD_UPDATE_DEVICE_LR] = {parity_sgd_update_device_lr_case},
    [NN_KERNEL_DROPOUT_FORWARD] = {parity_dropout_forward_case},
    [NN_KERNEL_CONV2D_FORWARD] = {parity_conv_forward_case},
    [NN_KERNEL_CONV2D_BACKWARD_DATA] = {parity_conv_data_case},
    [NN_KERNEL_CONV2D_BACKWARD_WEIGHT] = {parity_conv_weight_case},
    [NN_KERNEL_CONV2D_POOL_FORWARD] = {parity_conv_pool_forward_case},
    [NN_KERNEL_CONV2D_POOL_BACKWARD_WEIGHT] = {parity_conv_pool_weight_case},
    [NN_KERNEL_CONV2D_POOL_BACKWARD_DATA] = {parity_conv_pool_data_case},
    [NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT] = {parity_conv_pool_chain_case},
    [NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD] = {parity_conv_pool_linear_case},
    [NN_KERNEL_LINEAR_HEAD_FORWARD] = {parity_linear_head_forward_case},
    [NN_KERNEL_LINEAR_HEAD_BACKWARD_DATA] = {parity_linear_head_data_case},
    [NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY] = {parity_linear_head_cross_entropy_case},
    [NN_KERNEL_BROADCAST] = {parity_broadcast_case},
    [NN_KERNEL_STRIDED_COPY] = {parity_strided_copy_case},
    [NN_KERNEL_REDUCE_DIMS] = {parity_reduce_dims_case},
    [NN_KERNEL_REDUCE_DIMS_SCATTER] = {parity_reduce_dims_scatter_case},
    [NN_KERNEL_NORM_STATS] = {parity_norm_stats_case},
    [NN_KERNEL_NORM_APPLY] = {parity_norm_apply_case},
    [NN_KERNEL_NORM_BACKWARD_DATA] = {parity_norm_backward_data_case},
    [NN_KERNEL_NORM_BACKWARD_AFFINE] = {parity_norm_backward_affine_case},
    [NN_KERNEL_NORM_RUNNING_UPDATE] = {parity_norm_running_update_case},
    [NN_KERNEL_POOL2D_MAX_FORWARD] = {parity_pool2d_max_forward_case},
    [NN_KERNEL_POOL2D_MAX_BACKWARD] = {parity_pool2d_max_backward_case},
    [NN_KERNEL_POOL2D_AVG_FORWARD] = {parity_pool2d_avg_forward_case},
    [NN_KERNEL_POOL2D_AVG_BACKWARD] = {parity_pool2d_avg_backward_case},
    [NN_KERNEL_ATTENTION_FORWARD] = {parity_attention_forward_case},
    [NN_KERNEL_ATTENTION_BACKWARD_QUERY] = {parity_attention_backward_query_case},
    [NN_KERNEL_ATTENTION_BACKWARD_KEYS] = {parity_attention_backward_keys_case},
    [NN_KERNEL_SOFTMAX_DIM_FORWARD] = {parity_softmax_dim_forward_case},
    [NN_KERNEL_SOFTMAX_DIM_BACKWARD] = {parity_softmax_dim_backward_case},
    [NN_KERNEL_NLL_FORWARD] = {parity_nll_forward_case},
    [NN_KERNEL_NLL_BACKWARD] = {parity_nll_backward_case},
    [NN_KERNEL_EMBEDDING_FORWARD] = {parity_embedding_forward_case},
    [NN_KERNEL_EMBEDDING_BACKWARD] = {parity_embedding_backward_case},
    [NN_KERNEL_DEPTHWISE_CONV2D_FORWARD] = {parity_depthwise_forward_case},
    [NN_KERNEL_DEPTHWISE_CONV2D_BACKWARD_DATA] = {parity_depthwise_data_case},
    [NN_KERNEL_DEPTHWISE_CONV2D_BACKWARD_WEIGHT] = {parity_depthwise_weight_case},
    [NN_KERNEL_INTERPOLATE_FORWARD] = {parity_interpolate_forward_case},
    [NN_KERNEL_INTERPOLATE_BACKWARD] = {parity_interpolate_backward_case},
    [NN_KERNEL_ADAM_UPDATE] = {parity_adam_update_case},
    [NN_KERNEL_RMSPROP_UPDATE] = {parity_rmsprop_update_case},
    [NN_KERNEL_LION_UPDATE] = {parity_lion_update_case},
    [NN_KERNEL_MUON_MOMENTUM] = {parity_muon_momentum_case},
    [NN_KERNEL_MUON_NORMALIZE] = {parity_muon_normalize_case},
    [NN_KERNEL_MUON_APPLY] = {parity_muon_apply_case},
    [NN_KERNEL_LR_SCHEDULE] = {parity_lr_schedule_case},
    [NN_KERNEL_EMA_UPDATE] = {parity_ema_update_case},
    [NN_KERNEL_LOSS_SCALE] = {parity_loss_scale_case},
    [NN_KERNEL_NORM_BACKWARD_SUMS] = {parity_norm_backward_sums_case},
    [NN_KERNEL_NORM_BACKWARD_FROM_SUMS] = {parity_norm_backward_from_sums_case},
    [NN_KERNEL_COMPARE] = {parity_compare_case},
    [NN_KERNEL_CAST] = {parity_cast_case},
    [NN_KERNEL_CUSTOM] = {parity_custom_case},
};

/* A kernel added to nn_kernel needs a case (in parity_cases_dense.c or
 * parity_cases_fused.c, declared in parity_cases.h) listed here before the
 * suite passes; this runs with or without another backend. */
TEST(kernel_parity_every_kernel_has_a_case) {
    for (int k = 0; k < NN_KERNEL_COUNT; k++)
        CHECK_MSG(kCases[k].run != NULL, "kernel %s (id %d) has no parity case: add one to kCases in %s",
                  nn_kernel_name((nn_kernel)k), k, __FILE__);
}

TEST(kernel_parity_every_kernel_on_every_backend) {
    nn_backend *others[PARITY_MAX_BACKENDS];
    const int count = parity_other_backends(others);
    for (int b = 0; b < count; b++) {
        parity_runs = 0;
        int kernels = 0, failed = 0;
        for (int k = 0; k < NN_KERNEL_COUNT; k++) {
            if (!kCases[k].run) continue; /* kernel_parity_every_kernel_has_a_case names it */
            kernels++;
            const int before = nn_test_failures();
            const double start = nn_test_seconds();
            kCases[k].run(others[b]);
            parity_arrays_free();
            if (nn_test_show_times())
                printf("    %s on %s [%.2f s]\n", nn_kernel_name((nn_kernel)k), others[b]->name,
                       nn_test_seconds() - start);
            /* every kernel that failed, past the runner's first few messages */
            if (nn_test_failures() > before) {
                printf("    %s on %s: %d failed checks\n", nn_kernel_name((nn_kernel)k), others[b]->name,
                       nn_test_failures() - before);
                failed++;
            }
        }
        printf("    %s: %d runs of %d kernels against the cpu, %d kernels differ", others[b]->name, parity_runs,
               kernels, failed);
        if (parity_sample_every() > 1)
            printf(" (each kernel's first variant, then 1 in %d: NN_TESTS_PARITY_SAMPLE)", parity_sample_every());
        putchar('\n');
    }
}
