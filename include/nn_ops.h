/* Operations. Each takes its inputs' context, checks shapes and records the
 * call, on the autograd tape too when an input requires grad and grad mode
 * is on. Results are new tensors owned by the current step (see
 * nn_tensor.h). On a bad argument: NULL, with a message naming the
 * operation and the shapes in nn_last_error().
 *
 * The kernels run later, when a value is needed: a read of a result,
 * nn_ctx_sync, nn_backward, the step's end, or another call that touches
 * memory (a write, a fill). Until then the engine may run a chain of
 * operations as one fused kernel (nn_ctx_set_fusion); results are the same
 * either way. A failure of the device itself is reported by the call that
 * made the kernels run. */
#ifndef NN_OPS_H
#define NN_OPS_H

#include <stdbool.h>
#include "nn_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* op(a) x op(b) for 2-D tensors; op transposes when the flag is set. */
nn_tensor *nn_matmul(nn_tensor *a, nn_tensor *b, bool transpose_a, bool transpose_b);
/* x + bias along dimension 1: x is [N, C] or [N, C, H, W], bias is [C]. */
nn_tensor *nn_add_bias(nn_tensor *x, nn_tensor *bias);
/* x W^T + b: x [N, in] (or any rank: nn_matmul_batched's note), weight [out, in], bias [out] or NULL. */
nn_tensor *nn_linear(nn_tensor *x, nn_tensor *weight, nn_tensor *bias);

typedef struct nn_conv2d_params {
    int stride_h, stride_w;
    int pad_h, pad_w;
    /* PyTorch's dilation and groups; 0 reads as 1, so parameters written
     * before these fields (zero-initialised) keep their meaning. */
    int dilation_h, dilation_w;
    int groups;
} nn_conv2d_params;
/* 2-D convolution (cross-correlation, as PyTorch): x [N, C, H, W],
 * weight [OC, C / groups, KH, KW], bias [OC] or NULL; C and OC divisible
 * by groups. The backend computes it as im2col + GEMM would (one GEMM per
 * group; keeping the column matrix for the backward pass where it takes
 * that route), straight from the image (Vulkan, small ungrouped layers), or
 * with the depthwise kernels when groups == C (filters a multiple of C). */
nn_tensor *nn_conv2d(nn_tensor *x, nn_tensor *weight, nn_tensor *bias, int stride, int padding);
nn_tensor *nn_conv2d_ex(nn_tensor *x, nn_tensor *weight, nn_tensor *bias,
                        const nn_conv2d_params *params);

/* Max pooling over kernel x kernel windows: x [N, C, H, W]. Padding (at most
 * kernel / 2) never wins the max, as in PyTorch. The argmax is kept for backward. */
nn_tensor *nn_maxpool2d(nn_tensor *x, int kernel, int stride);
nn_tensor *nn_maxpool2d_ex(nn_tensor *x, int kernel, int stride, int padding);

/* Views sharing x's storage. flatten: [N, ...] -> [N, rest]. reshape: one
 * dimension may be -1 and is inferred. */
nn_tensor *nn_flatten(nn_tensor *x);
nn_tensor *nn_reshape(nn_tensor *x, int ndim, const int64_t *shape);

/* Rearrangements, each a new dense tensor (its gradient the rearrangement
 * back). Dimensions may be negative (from the end). permute: dimension d of
 * the result is dimension perm[d] of x. slice: elements start, start + step,
 * ... before end along dim (PyTorch's rules: negative start and end count
 * from the end and both are clamped; the result must not be empty). select:
 * x[..., index, ...] along dim, which is dropped (slice and select take
 * int32 tensors too; the rest float32). cat: along dim, the others
 * equal; stack: along a new dimension dim. expand: x repeated along its
 * dimensions of size 1 and new leading ones (-1 keeps a size). unsqueeze
 * inserts a dimension of size 1; squeeze drops dim when its size is 1. */
nn_tensor *nn_permute(nn_tensor *x, const int *perm, int ndim);
nn_tensor *nn_transpose(nn_tensor *x, int dim0, int dim1);
nn_tensor *nn_slice(nn_tensor *x, int dim, int64_t start, int64_t end, int64_t step);
nn_tensor *nn_select(nn_tensor *x, int dim, int64_t index);
nn_tensor *nn_cat(nn_tensor *const *tensors, int count, int dim);
nn_tensor *nn_stack(nn_tensor *const *tensors, int count, int dim);
nn_tensor *nn_expand(nn_tensor *x, int ndim, const int64_t *shape);
nn_tensor *nn_unsqueeze(nn_tensor *x, int dim);
nn_tensor *nn_squeeze(nn_tensor *x, int dim);

nn_tensor *nn_relu(nn_tensor *x);
/* Elementwise functions of one tensor, with their gradients: the rows of
 * shaders/unary_ops.h, which src/ops/unary.c defines as operations. */
nn_tensor *nn_sigmoid(nn_tensor *x); /* 1 / (1 + exp(-x)) */
nn_tensor *nn_tanh(nn_tensor *x);
nn_tensor *nn_neg(nn_tensor *x);  /* -x */
nn_tensor *nn_exp(nn_tensor *x);
nn_tensor *nn_log(nn_tensor *x);  /* NaN for x < 0, -infinity at 0 */
nn_tensor *nn_sqrt(nn_tensor *x); /* NaN for x < 0 */
nn_tensor *nn_abs(nn_tensor *x);  /* gradient sign(x), 0 at 0 */
/* x Phi(x) (Phi the standard normal CDF), or PyTorch's tanh approximation
 * 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (approximate='tanh'). */
nn_tensor *nn_gelu(nn_tensor *x, bool tanh_approximation);
nn_tensor *nn_silu(nn_tensor *x);        /* x sigmoid(x) */
nn_tensor *nn_relu6(nn_tensor *x);       /* min(max(x, 0), 6) */
nn_tensor *nn_hardswish(nn_tensor *x);   /* x relu6(x + 3) / 6 */
nn_tensor *nn_hardsigmoid(nn_tensor *x); /* relu6(x + 3) / 6 */
nn_tensor *nn_softsign(nn_tensor *x);    /* x / (1 + |x|) */
/* With scalar parameters, PyTorch's argument order; a NaN parameter (or
 * one the rule beside it refuses) returns NULL with a message naming it. */
nn_tensor *nn_leaky_relu(nn_tensor *x, float negative_slope); /* x > 0 ? x : slope x; slope finite */
nn_tensor *nn_elu(nn_tensor *x, float alpha);                 /* x > 0 ? x : alpha (e^x - 1); alpha finite */
/* beta x > threshold ? x : log(1 + e^(beta x)) / beta; beta finite and > 0. */
nn_tensor *nn_softplus(nn_tensor *x, float beta, float threshold);
/* x limited to [min, max]: pass -INFINITY for no min, INFINITY for no max.
 * min is applied first (min > max gives max everywhere, as PyTorch). The
 * gradient is 1 on [min, max] (bounds included), 0 outside. */
nn_tensor *nn_clamp(nn_tensor *x, float min, float max);
/* x ** exponent (finite), PyTorch's values: negative x with an integer
 * exponent keeps its sign rule, with any other exponent gives NaN; x ** 0
 * is 1. Gradient exponent x^(exponent - 1) (0 for exponent 0). */
nn_tensor *nn_pow_scalar(nn_tensor *x, float exponent);
/* x + s, x * s, s - x, s / x (x - s and x / s: add -s, multiply by 1 / s). */
nn_tensor *nn_add_scalar(nn_tensor *x, float s);
nn_tensor *nn_mul_scalar(nn_tensor *x, float s);
nn_tensor *nn_rsub_scalar(nn_tensor *x, float s);
nn_tensor *nn_rdiv_scalar(nn_tensor *x, float s);

/* Softmax over the last dimension. */
nn_tensor *nn_softmax(nn_tensor *x);
/* Mean over the batch of -log softmax(logits)[label]: logits [N, C] float32,
 * labels [N] int32 in [0, C). Numerically stable; one fused kernel each way.
 * Returns a one-element tensor. */
nn_tensor *nn_softmax_cross_entropy(nn_tensor *logits, nn_tensor *labels);

/* Elementwise functions of two tensors, broadcasting as NumPy and PyTorch
 * do: shapes aligned at their last dimension, where sizes must be equal or
 * 1 (a size of 1, or a missing dimension, repeats). maximum and minimum
 * propagate NaN and split the gradient of ties evenly, as PyTorch. */
nn_tensor *nn_add(nn_tensor *a, nn_tensor *b);
nn_tensor *nn_sub(nn_tensor *a, nn_tensor *b);
nn_tensor *nn_mul(nn_tensor *a, nn_tensor *b);
nn_tensor *nn_div(nn_tensor *a, nn_tensor *b);
nn_tensor *nn_maximum(nn_tensor *a, nn_tensor *b);
nn_tensor *nn_minimum(nn_tensor *a, nn_tensor *b);
/* x times a constant. */
nn_tensor *nn_scale(nn_tensor *x, float factor);

/* Elementwise comparison a op b, broadcasting as nn_add: an int32 tensor of
 * 0 and 1 (PyTorch's bool), (a == b).sum() counting matches. a and b are
 * both float32 or both int32, of one context; a comparison with NaN is
 * false, except NE's, which is true (IEEE, PyTorch). No gradient: the
 * result never requires grad (inputs may). */
typedef enum nn_compare_op {
    NN_COMPARE_EQ, /* == */
    NN_COMPARE_NE, /* != */
    NN_COMPARE_LT, /* <  */
    NN_COMPARE_LE, /* <= */
    NN_COMPARE_GT, /* >  */
    NN_COMPARE_GE  /* >= */
} nn_compare_op;
nn_tensor *nn_compare(nn_tensor *a, nn_tensor *b, nn_compare_op op);

/* x converted to dtype (PyTorch's .float(), and .int() / .long() as int32).
 * float32 -> int32 truncates toward zero (-2.7 gives -2); NaN gives 0 and
 * values beyond int32's range INT32_MIN or INT32_MAX, the same on every
 * device. int32 -> float32 rounds to nearest, ties to even (16777217 gives
 * 16777216). To x's own dtype: a copy; a float32 copy passes its gradient
 * through as the identity, and int32 results have no gradient. */
nn_tensor *nn_cast(nn_tensor *x, nn_dtype dtype);

/* Dropout (PyTorch's): with training set, each element is zeroed with
 * probability p (0 <= p < 1) and the others scaled by 1 / (1 - p); the mask
 * is drawn on the device from the context's generator (nn_ctx_manual_seed
 * makes it repeat) and differs at every call, captured replays included.
 * Without training: the identity (a view of x). */
nn_tensor *nn_dropout(nn_tensor *x, float p, bool training);

/* Reductions over all elements, to a one-element tensor. nn_sum and
 * nn_sum_dims also take an int32 x and return int32: exact integer sums,
 * wrapping modulo 2^32 on overflow, with no gradient. The other reductions
 * take float32 only (the mean of int32 is refused, as in PyTorch). */
nn_tensor *nn_sum(nn_tensor *x);
nn_tensor *nn_mean(nn_tensor *x);

/* Reductions over the `count` dimensions listed in dims (negative ones
 * count from the end; count 0 means every dimension). keepdim keeps them
 * with size 1; a reduction of every dimension without keepdim gives a
 * one-element tensor [1]. max and min propagate NaN and pass the gradient
 * to the first extreme element of each output (PyTorch's max(dim)). */
nn_tensor *nn_sum_dims(nn_tensor *x, const int *dims, int count, bool keepdim);
nn_tensor *nn_mean_dims(nn_tensor *x, const int *dims, int count, bool keepdim);
nn_tensor *nn_max_dims(nn_tensor *x, const int *dims, int count, bool keepdim);
nn_tensor *nn_min_dims(nn_tensor *x, const int *dims, int count, bool keepdim);
/* The position of the first extreme element as an int32 tensor (no
 * gradient): the index along the dimension for one, the row-major position
 * within the reduced dimensions for several. */
nn_tensor *nn_argmax_dims(nn_tensor *x, const int *dims, int count, bool keepdim);
nn_tensor *nn_argmin_dims(nn_tensor *x, const int *dims, int count, bool keepdim);
/* sum((x - mean)^2) / (n - correction) over the dimensions (correction 1:
 * the unbiased estimate, PyTorch's default). */
nn_tensor *nn_var_dims(nn_tensor *x, const int *dims, int count, double correction, bool keepdim);

/* ---- normalisation (PyTorch's batch_norm, layer_norm, group_norm) ----
 * Each normalises groups of elements by their mean and biased variance,
 * (x - mean) / sqrt(var + eps), then scales by weight and shifts by bias
 * (either may be NULL: 1 and 0). Gradients flow to x, weight and bias. */

/* BatchNorm over x [N, C] or [N, C, ...], per channel: weight, bias,
 * running_mean and running_var are [C] (the running pair both or neither).
 * With training, or without running statistics, x's own statistics over N
 * and the trailing dimensions (a channel needs more than one value in
 * training); with training and running statistics these are also updated
 * on the device, running = (1 - momentum) running + momentum stat, the
 * variance unbiased. Without training: the running statistics. momentum in
 * [0, 1]. The running statistics are updated when the call returns. */
nn_tensor *nn_batch_norm(nn_tensor *x, nn_tensor *running_mean, nn_tensor *running_var, nn_tensor *weight,
                         nn_tensor *bias, bool training, float momentum, float eps);
/* momentum=None: the cumulative average, running = running + (stat -
 * running) / num_batches_tracked. */
#define NN_BATCH_NORM_CUMULATIVE (-1.0f)
/* nn_batch_norm that, in training with running statistics, first adds 1 to
 * num_batches_tracked (int32 [1], on the device; may be NULL unless
 * momentum is NN_BATCH_NORM_CUMULATIVE): BatchNorm1d/2d's update. */
nn_tensor *nn_batch_norm_counted(nn_tensor *x, nn_tensor *running_mean, nn_tensor *running_var,
                                 nn_tensor *num_batches_tracked, nn_tensor *weight, nn_tensor *bias, bool training,
                                 float momentum, float eps);
/* LayerNorm over the trailing normalized_ndim dimensions of x, which must
 * equal normalized_shape; weight and bias have normalized_shape. */
nn_tensor *nn_layer_norm(nn_tensor *x, int normalized_ndim, const int64_t *normalized_shape, nn_tensor *weight,
                         nn_tensor *bias, float eps);
/* GroupNorm of x [N, C, ...] in num_groups groups of C / num_groups
 * channels each (num_groups divides C); weight and bias are [C]. */
nn_tensor *nn_group_norm(nn_tensor *x, int num_groups, nn_tensor *weight, nn_tensor *bias, float eps);
/* 2-D pooling with PyTorch's arguments (nn.MaxPool2d, nn.AvgPool2d): windows
 * of kernel_h x kernel_w every stride_h, stride_w (0: the kernel's, PyTorch's
 * default), padding pad_h, pad_w on each side (at most half the kernel),
 * taps dilation_h, dilation_w apart (0 means 1; max pooling only), and with
 * ceil_mode the output size rounded up (no window starts in the right or
 * bottom padding). x is [N, C, H, W] or unbatched [C, H, W]. */
typedef struct nn_pool2d_params {
    int kernel_h, kernel_w;
    int stride_h, stride_w;
    int pad_h, pad_w;
    int dilation_h, dilation_w;
    bool ceil_mode;
} nn_pool2d_params;
/* Max pooling: padding never wins; the first maximum of a window wins ties,
 * a NaN wins. What nn_maxpool2d_ex can do (square windows, one stride and
 * padding, no dilation, no rounding up, [N, C, H, W]) is recorded as
 * nn_maxpool2d_ex, which fuses with a convolution before it. */
nn_tensor *nn_maxpool2d_window(nn_tensor *x, const nn_pool2d_params *window);
/* Average pooling (dilation must be 1): a window's sum over divisor_override
 * when > 0, else over its size clipped to the padded input
 * (count_include_pad) or to the input. */
nn_tensor *nn_avgpool2d(nn_tensor *x, const nn_pool2d_params *window, bool count_include_pad, int divisor_override);
/* Adaptive pooling to out_h x out_w, any size (larger than the input too):
 * output (i, j) pools rows [floor(i H / out_h), ceil((i + 1) H / out_h)) and
 * likewise columns. 1 x 1 is global pooling. */
nn_tensor *nn_adaptive_avgpool2d(nn_tensor *x, int out_h, int out_w);
nn_tensor *nn_adaptive_maxpool2d(nn_tensor *x, int out_h, int out_w);

/* ---- softmax along any dimension, and losses (PyTorch's F.softmax,
 * F.log_softmax and loss functions, with their arguments) ----
 * dim may be negative (from the end). log_softmax is x - max - log(sum
 * exp(x - max)) along dim, never log(softmax). nn_softmax_dim over the last
 * dimension is nn_softmax. */
nn_tensor *nn_softmax_dim(nn_tensor *x, int dim);
nn_tensor *nn_log_softmax(nn_tensor *x, int dim);

/* What a loss returns: each element's loss (NONE, the broadcast shape of
 * input and target, or target's for the class losses), or their mean or
 * sum as a one-element tensor [1]. */
typedef enum nn_reduction { NN_REDUCTION_NONE = 0, NN_REDUCTION_MEAN = 1, NN_REDUCTION_SUM = 2 } nn_reduction;
/* (input - target)^2; |input - target|; and |d| < beta ? d^2 / (2 beta) :
 * |d| - beta / 2 (beta finite, >= 0; 0 is l1_loss). input and target are
 * float32 and broadcast (nn_sub); both get gradients. */
nn_tensor *nn_mse_loss(nn_tensor *input, nn_tensor *target, nn_reduction reduction);
nn_tensor *nn_l1_loss(nn_tensor *input, nn_tensor *target, nn_reduction reduction);
nn_tensor *nn_smooth_l1_loss(nn_tensor *input, nn_tensor *target, nn_reduction reduction, float beta);
/* -weight (pos_weight t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))), in
 * a form that cannot overflow: target has input's shape; weight (broadcast
 * to input) and pos_weight (broadcast along the last dimension, the
 * classes) may be NULL. */
nn_tensor *nn_binary_cross_entropy_with_logits(nn_tensor *input, nn_tensor *target, nn_tensor *weight,
                                               nn_tensor *pos_weight, nn_reduction reduction);
/* -weight[t] input[n, t, ...] for log-probabilities input [N, C] or [N, C,
 * d1, ...] and int32 class targets t, [N] or [N, d1, ...], in [0, C) or
 * equal to ignore_index (those count 0 and are left out of the mean);
 * weight [C] or NULL (ones). MEAN divides by the sum of weight[t] over the
 * targets kept (PyTorch's weighted mean; NaN when none is). Another target
 * is an error naming it, reported by the call that runs the kernels (the
 * read of the loss). Only input gets a gradient. */
nn_tensor *nn_nll_loss(nn_tensor *input, nn_tensor *target, nn_tensor *weight, nn_reduction reduction,
                       int ignore_index);
/* nll_loss of log_softmax(input, 1) with class targets (int32, as
 * nn_nll_loss), mixed with label_smoothing in [0, 1] of the uniform
 * distribution (PyTorch's rule, weights and ignore_index included); or,
 * for a float32 target of input's shape (class probabilities), -sum_c
 * weight[c] t[c] log_softmax(input)[c], MEAN over N * d1 * ...
 * (ignore_index must be negative). */
nn_tensor *nn_cross_entropy(nn_tensor *input, nn_tensor *target, nn_tensor *weight, nn_reduction reduction,
                            int ignore_index, float label_smoothing);
/* Matrix products with torch.matmul's rules: a 1-D a is a row and a 1-D b a
 * column, that dimension dropped from the result (1-D with 1-D: a
 * one-element [1]); dimensions before the last two are batch dimensions
 * and broadcast as NumPy's (a missing one or a size of 1 repeats), up to 6
 * dimensions. Gradients are summed over the broadcast batch. nn_linear
 * takes x [..., in] of any rank too ([..., in] -> [..., out]). */
nn_tensor *nn_matmul_batched(nn_tensor *a, nn_tensor *b);
/* Rows of weight [num, dim] picked by indices (int32, any shape):
 * [..., dim]. padding_idx (-1: none; else in [0, num)) gets no gradient.
 * An index outside [0, num) gives a row of NaN and an error at the read
 * or sync that runs the kernel. The gradient into weight is deterministic
 * (no float atomics): each row sums its occurrences in index order. */
nn_tensor *nn_embedding(nn_tensor *indices, nn_tensor *weight, int padding_idx);
/* softmax(q k^T * scale + mask) v over the last two dimensions, as
 * torch's F.scaled_dot_product_attention: q [..., L, E], k [..., S, E],
 * v [..., S, Ev] (batch dimensions broadcast), mask NULL or an additive
 * float mask broadcastable to [..., L, S]; is_causal masks key j > query i
 * (with no mask); scale 0 means 1 / sqrt(E). Fused on every backend (the
 * [..., L, S] scores never held in memory; a query whose keys are all
 * hidden gets 0); composed of nn_matmul_batched, nn_mul_scalar, nn_add and
 * nn_softmax where the fused kernels cannot take the operands (a broadcast
 * they cannot stride, a head wider than 256, a mask that requires grad).
 * ONNX export writes the composition. */
nn_tensor *nn_scaled_dot_product_attention(nn_tensor *q, nn_tensor *k, nn_tensor *v, nn_tensor *mask, bool is_causal,
                                           float scale);
/* Self-attention of packed projections (as flash_attn_qkvpacked_func):
 * qkv [N, T, 3 W] holds each token's query, key and value side by side (one
 * Linear of 3 W outputs: MultiheadAttention's in_proj, GPT-2's c_attn),
 * each W = heads x D wide; returns [N, T, W], the heads' outputs side by
 * side, scale 1 / sqrt(D), causal where is_causal. The kernels read the
 * heads in place and write them merged, so the split and merge copy
 * nothing; the gradient is qkv's, one block. Exports (ONNX) as the split,
 * nn_scaled_dot_product_attention and the merge. */
nn_tensor *nn_attention_qkv_packed(nn_tensor *qkv, int heads, bool is_causal);
/* ---- convolution extensions: transposed convolution, resampling ---- */

typedef struct nn_conv_transpose2d_params {
    int stride_h, stride_w;
    int pad_h, pad_w;
    /* Extra rows and columns at the bottom and right of the output, each
     * below the stride (PyTorch also allows up to the dilation; refused here). */
    int output_pad_h, output_pad_w;
    int dilation_h, dilation_w; /* 0 reads as 1 */
    int groups;                 /* 0 reads as 1 */
} nn_conv_transpose2d_params;
/* 2-D transposed convolution, as PyTorch's conv_transpose2d: x [N, C, H,
 * W], weight [C, OC / groups, KH, KW], bias [OC] or NULL; output [N, OC,
 * (H - 1) * stride - 2 * pad + dilation * (KH - 1) + output_pad + 1, ...].
 * It is nn_conv2d's data gradient (and its backward a convolution and a
 * weight gradient), run by the same kernels. */
nn_tensor *nn_conv_transpose2d(nn_tensor *x, nn_tensor *weight, nn_tensor *bias,
                               const nn_conv_transpose2d_params *params);

typedef enum nn_interpolate_mode {
    NN_INTERPOLATE_NEAREST = 0,  /* PyTorch's 'nearest' (ONNX: asymmetric, floor) */
    NN_INTERPOLATE_BILINEAR = 1, /* 'bilinear', align_corners false or true */
} nn_interpolate_mode;
/* Resampling of x [N, C, H, W] to [N, C, out_h, out_w], as PyTorch's
 * interpolate: by size (scale_h, scale_w 0) or by scale factor (out_h,
 * out_w 0: floor(H * scale_h), floor(W * scale_w); the scale then maps
 * output to input positions, as PyTorch's does). align_corners: bilinear
 * only. The backward gathers (no atomics): deterministic. */
nn_tensor *nn_interpolate(nn_tensor *x, int out_h, int out_w, double scale_h, double scale_w,
                          nn_interpolate_mode mode, bool align_corners);

/* ---- SyncBatchNorm: BatchNorm's batch statistics over several processes ----
 * nn_batch_norm_synced is nn_batch_norm_counted whose batch statistics (in
 * training, or without running statistics) are those of every process's
 * batch together, as PyTorch's SyncBatchNorm: the forward reduces each
 * channel's count, sum and sum of squares, the backward the sums of
 * weight * dy and weight * dy * xhat (the weight's and bias's gradients stay
 * this process's). `reduce` sums count doubles in place over the processes,
 * every process getting the same values, and is called by every process at
 * the same points (nn_dist_sync_batch_norm gives MPI's). It runs through
 * nn_capture_host_call, so a captured step reduces again at every replay.
 * The sync object serves one BatchNorm layer of `channels` on ctx. */
typedef nn_status (*nn_stats_reduce_fn)(double *values, int64_t count, void *user);
typedef struct nn_batch_norm_sync nn_batch_norm_sync;
nn_batch_norm_sync *nn_batch_norm_sync_new(nn_ctx *ctx, int channels, nn_stats_reduce_fn reduce, void *user);
void nn_batch_norm_sync_free(nn_batch_norm_sync *sync);
int nn_batch_norm_sync_channels(const nn_batch_norm_sync *sync);
nn_ctx *nn_batch_norm_sync_ctx(const nn_batch_norm_sync *sync);
nn_tensor *nn_batch_norm_synced(nn_batch_norm_sync *sync, nn_tensor *x, nn_tensor *running_mean,
                                nn_tensor *running_var, nn_tensor *num_batches_tracked, nn_tensor *weight,
                                nn_tensor *bias, bool training, float momentum, float eps);

#ifdef __cplusplus
}
#endif
#endif
