/* The kernels every backend implements: their ids (from the registry,
 * kernel_list.h), the parameters of each (the seed's constant buffers,
 * Vulkan's push constants) and what the registry says of each. All sizes
 * are element counts; all tensors are dense and row-major. Buffer arguments
 * are passed to backend->run in the order kernel_list.h gives. */
#ifndef NN_KERNELS_H
#define NN_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "kernel_list.h"
#include "broadcast_ops.h"
#include "unary_ops.h"
#include "nn_context.h"
#include "nn_error.h"

typedef enum nn_kernel {
#define NN_KERNEL_ENUM(ID, ...) NN_KERNEL_##ID,
    NN_KERNEL_LIST(NN_KERNEL_ENUM)
#undef NN_KERNEL_ENUM
    NN_KERNEL_COUNT
} nn_kernel;

/* Backward kernels either overwrite their output or add into it: a tensor
 * used by several operations accumulates its gradient (the seed's grad_accum). */

/* C[b] = alpha * op(A[b]) op(B[b]) + beta * C[b], for b < batch, where A[b]
 * starts at b * stride_a (likewise B, C). op(A) is m x k, op(B) is k x n.
 * stride_c == 0 with batch > 1 sums the batch into one C (conv's dW). */
typedef struct nn_gemm_params {
    int32_t m, n, k;
    int32_t trans_a, trans_b;
    int32_t lda, ldb, ldc;
    int32_t batch;
    int64_t stride_a, stride_b, stride_c;
    float alpha, beta;
    /* NN_PRECISION_FP32 (0), or FP16 / BF16: A and B are rounded to that
     * format before they are multiplied; the sums stay fp32 (nn_context.h). */
    int32_t precision;
} nn_gemm_params;

/* Image [batch, channels, height, width] <-> columns [batch, channels*kh*kw,
 * out_h*out_w]; col2im adds every column entry back into its pixel. Tap
 * (ki, kj) of output (oh, ow) reads pixel (oh * stride_h - pad_h + ki *
 * dilation_h, ow * stride_w - pad_w + kj * dilation_w). */
typedef struct nn_conv_geometry {
    int32_t batch, channels, height, width;
    int32_t kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
    int32_t out_h, out_w;
    int32_t accumulate; /* col2im only */
    int32_t dilation_h, dilation_w; /* 0 reads as 1: geometries written before dilation keep their meaning */
} nn_conv_geometry;

static inline int32_t nn_conv_dilation_h(const nn_conv_geometry *g) { return g->dilation_h > 0 ? g->dilation_h : 1; }
static inline int32_t nn_conv_dilation_w(const nn_conv_geometry *g) { return g->dilation_w > 0 ? g->dilation_w : 1; }

typedef struct nn_pool_params {
    int32_t batch, channels, height, width;
    int32_t kernel, stride, pad;
    int32_t out_h, out_w;
    int32_t accumulate; /* backward only */
    int32_t layout;     /* the nn_layout of x, y, dy, dx (argmax is y's layout; its values are in-plane indices) */
} nn_pool_params;

/* y[o, c, i] += bias[c] for o < outer, c < channels, i < inner (forward);
 * dbias[c] (+)= sum over o, i of dy[o, c, i] (backward). */
typedef struct nn_bias_params {
    int64_t outer, inner;
    int32_t channels;
    int32_t accumulate;
} nn_bias_params;

typedef enum nn_elementwise_op {
    NN_EW_ADD,   /* out (+)= a + b */
    NN_EW_MUL,   /* out (+)= a * b */
    NN_EW_SCALE  /* out (+)= alpha * a */
} nn_elementwise_op;

/* The elementwise functions of shaders/unary_ops.h, by row. */
#define NN_UNARY_ENUM_ROW(ID, name, Onnx, forward, backward, export, public) NN_UNARY_##ID,
typedef enum nn_unary_op { NN_UNARY_OPS(NN_UNARY_ENUM_ROW) NN_UNARY_COUNT } nn_unary_op;
#undef NN_UNARY_ENUM_ROW

/* A pointwise function a kernel applies to its result as it stores it (its
 * epilogue; the fusion pass's norm+activation chain): when `on`, the row
 * `op` (nn_unary_op) of shaders/unary_ops.h with its parameters, evaluated
 * on the result as rounded to float, exactly as the row's own kernel would. */
typedef struct nn_pointwise_epilogue {
    int32_t on, op;
    float alpha, beta;
} nn_pointwise_epilogue;

/* For elementwise kernels, relu, unary functions, broadcast, reductions. */
typedef struct nn_pointwise_params {
    int64_t n;
    int32_t op;         /* nn_elementwise_op (ELEMENTWISE), nn_unary_op (UNARY_*), nn_cast_op (CAST) */
    int32_t accumulate; /* add into the output instead of overwriting it */
    float alpha;        /* scale factor (SCALE, REDUCE_SUM, BROADCAST_SCALAR); UNARY_*: the row's first parameter */
    float beta;         /* UNARY_*: the row's second parameter */
} nn_pointwise_params;

/* The strided kernels address tensors of up to NN_STRIDED_DIMS dimensions
 * through element strides (a buffer argument's offset is its ref's): the
 * operations' views, broadcasts and reductions over any dimensions. */
#define NN_STRIDED_DIMS 6

/* The functions of shaders/broadcast_ops.h, by row. */
#define NN_BROADCAST_ENUM_ROW(ID, operands, f) NN_BROADCAST_##ID,
typedef enum nn_broadcast_op { NN_BROADCAST_OPS(NN_BROADCAST_ENUM_ROW) NN_BROADCAST_COUNT } nn_broadcast_op;
#undef NN_BROADCAST_ENUM_ROW

/* BROADCAST: for every index i of shape[0, ndim) in row-major order,
 * out[i] (+)= alpha * f(a[i . stride[0]], b[i . stride[1]], c[i . stride[2]])
 * with f the row op of broadcast_ops.h; out is dense, an operand's stride is
 * 0 along a dimension it broadcasts over. */
typedef struct nn_broadcast_params {
    int32_t ndim, op, accumulate;
    float alpha;
    int32_t shape[NN_STRIDED_DIMS];
    int32_t stride[3][NN_STRIDED_DIMS];
} nn_broadcast_params;

/* STRIDED_COPY: dst[i . dst_stride] (+)= src[i . src_stride] for every
 * index i of shape: a slice, a permutation, one part of a concatenation, an
 * expansion, and their gradients. No two indices may share a dst element. */
typedef struct nn_strided_copy_params {
    int32_t ndim, accumulate;
    int32_t shape[NN_STRIDED_DIMS];
    int32_t src_stride[NN_STRIDED_DIMS], dst_stride[NN_STRIDED_DIMS];
} nn_strided_copy_params;

typedef enum nn_reduce_op { NN_REDUCE_SUM, NN_REDUCE_MAX, NN_REDUCE_MIN, NN_REDUCE_OP_COUNT } nn_reduce_op;

/* REDUCE_DIMS: the first `kept` dimensions of shape/stride index the output
 * (dense, row-major), the next `reduced` the elements each output combines:
 * out[j] (+)= alpha * op over r of x[j . stride[0, kept) + r . stride[kept,
 * kept + reduced)]. MAX and MIN also write winners[j], the winner's r as a
 * row-major position in the reduced dimensions (the first of equal values;
 * a NaN wins, as in PyTorch). With `integer` (SUM only; alpha unused), x
 * and out hold int32 and the sum is exact, wrapping modulo 2^32 on
 * overflow. REDUCE_DIMS_SCATTER, with the same parameters (alpha, op
 * unused): dx at the winner of output j (+)= dy[j]; the other elements of
 * dx are left as they are. */
typedef struct nn_reduce_dims_params {
    int32_t op, kept, reduced, accumulate;
    float alpha;
    int32_t shape[NN_STRIDED_DIMS];
    int32_t stride[NN_STRIDED_DIMS];
    int32_t integer;
} nn_reduce_dims_params;

/* COMPARE: for every index i of shape[0, ndim) in row-major order, out[i] =
 * 1 where a[i . stride[0]] op b[i . stride[1]] holds, else 0; op an
 * nn_compare_op (nn_ops.h), out dense int32. The operands are int32 with
 * `integer`, else float32, where a comparison with a NaN holds only for NE
 * (IEEE's unordered). */
typedef struct nn_compare_params {
    int32_t ndim, op, integer;
    int32_t shape[NN_STRIDED_DIMS];
    int32_t stride[2][NN_STRIDED_DIMS];
} nn_compare_params;

/* CAST (nn_pointwise_params: n, op), out[i] = x[i] converted. */
typedef enum nn_cast_op {
    /* truncated toward zero (PyTorch's .int()); NaN gives 0 and values beyond
     * int32's range INT32_MIN or INT32_MAX, on every backend */
    NN_CAST_FLOAT_TO_INT,
    NN_CAST_INT_TO_FLOAT, /* rounded to nearest, ties to even */
    NN_CAST_OP_COUNT
} nn_cast_op;

/* Row-wise softmax and softmax + cross-entropy over [rows, cols]. */
typedef struct nn_softmax_params {
    int32_t rows, cols;
    int32_t accumulate;
} nn_softmax_params;

typedef struct nn_sgd_params {
    int64_t n;
    float lr, momentum, weight_decay;
    float clip_value;    /* 0 = off */
    float max_grad_norm; /* 0 = off; reads grad_norm_sq[0] */
    int32_t nesterov;
} nn_sgd_params;

/* Rows gathered from a table by a device-side position: row i of `out` is
 * row index(i) of the table, where position(i) = first + counter[0] * stride
 * + i (counter absent: 0) and index = order[position] (order absent: the
 * position itself). A position >= positions, or an index >= table_rows,
 * gives a row of zeros: replaying more steps than an epoch has cannot read
 * outside the buffers. GATHER_SAMPLES converts uint8 to float as
 * value * scale[c] + shift[c], c = (element / plane) (at most 4 channels). */
typedef struct nn_gather_params {
    int32_t rows, row_elems;
    int32_t first, stride;
    int32_t positions, table_rows;
    int32_t plane;
    float scale[4], shift[4];
    /* GATHER_SAMPLES' augmentation (none when crop_pad is 0 and flip 0):
     * each sample shifted by (dy, dx) in [-crop_pad, crop_pad]^2 with zero
     * pixels coming in (torchvision's RandomCrop with padding) and mirrored
     * left to right when flipped (RandomHorizontalFlip), both drawn from
     * word nn_philox_word(draw_row + i, draws[0], seed) (dropout_philox.h) of
     * output row i and the draw counter (argument 4, required then; its
     * owner advances it after each gather); width: the images' width. */
    int32_t width, crop_pad, flip;
    uint32_t seed_lo, seed_hi;
    /* the row of the global batch that output row 0 is (a rank's first,
     * rank * rows), so a sample draws alike however the batch is split */
    int32_t draw_row;
} nn_gather_params;

/* Skipped updates: the optimizers' kernels (SGD_UPDATE, SGD_UPDATE_DEVICE_LR,
 * ADAM_UPDATE, RMSPROP_UPDATE, LION_UPDATE, MUON_MOMENTUM, MUON_APPLY) and
 * COUNTER_ADD take an optional last argument skip[1] (a float): when it is
 * given and skip[0] != 0 the kernel writes nothing. Dynamic loss scaling
 * passes its found flag, so a step whose gradients overflowed leaves the
 * parameters, the optimizer's state and its step count as they were,
 * decided on the device (a captured step replays it). */

/* COUNTER_ADD: counter[0] += delta. */
typedef struct nn_counter_params {
    int32_t delta;
} nn_counter_params;

/* LOSS_SCALE: dynamic loss scaling (torch.amp.GradScaler) on the device.
 * state[4] floats = {scale, found (0 or 1), good steps, skipped steps}.
 *   UNSCALE  x[0, n) *= 1 / scale; found = 1 if any result is infinite or
 *            NaN (else left as it was);
 *   UPDATE   found: scale *= backoff, good = 0, skipped += 1; else good
 *            += 1 and at growth_interval scale *= growth, good = 0; then
 *            found = 0 (x absent).
 * Between the two, the optimizer's updates take the found flag as their
 * skip argument (below), so a step with an overflow changes nothing. */
typedef enum nn_loss_scale_mode { NN_LOSS_SCALE_UNSCALE = 0, NN_LOSS_SCALE_UPDATE = 1 } nn_loss_scale_mode;
typedef struct nn_loss_scale_params {
    int64_t n;
    int32_t mode;
    int32_t growth_interval;
    float growth_factor, backoff_factor;
} nn_loss_scale_params;

/* FILL: out[0, count) = bits, as 32-bit words: what nn_backend.fill
 * does, which the Vulkan backend runs as this kernel (vk_backend.c). */
typedef struct nn_fill_params {
    int64_t count;
    uint32_t bits;
} nn_fill_params;

/* METRICS_ACCUMULATE: sums[0] += loss[0] * rows; sums[1] += the rows whose
 * largest logit (the first of equals) is at the label. */
typedef struct nn_metrics_params {
    int32_t rows, cols;
} nn_metrics_params;

/* NN_KERNEL_GEMM_EPILOGUE: the GEMM of nn_gemm_params, with the product
 * t = alpha * op(A) op(B) passed through an epilogue before it meets C:
 *   t += bias[col] (NN_EPI_BIAS_COLS: Linear, x W^T + b) or bias[row]
 *        (NN_EPI_BIAS_ROWS: convolution, W cols + b per filter), bias = aux;
 *   t = relu(t) (NN_EPI_RELU; a NaN passes, as relu_forward);
 *   t = aux > 0 ? t : 0 (NN_EPI_MASK: the ReLU backward mask, aux laid out
 *        as C: the ReLU output whose input gradient this GEMM produces);
 *   C = t + beta * C (beta == 0 overwrites C without reading it).
 * Bias and mask exclude each other (aux is one buffer). */
enum {
    NN_EPI_BIAS_COLS = 1,
    NN_EPI_BIAS_ROWS = 2,
    NN_EPI_RELU = 4,
    NN_EPI_MASK = 8,
};
typedef struct nn_gemm_epilogue_params {
    nn_gemm_params gemm;
    int32_t epilogue; /* NN_EPI_* bits */
} nn_gemm_epilogue_params;

/* Where a 4-D activation [N, C, H, W] keeps its elements: row-major, or
 * channels-last (memory in N, H, W, C order, a channel's values strided
 * by C). Operations that are not told otherwise see dense tensors; the
 * core converts at the edges (core/layout.h). */
typedef enum nn_layout { NN_LAYOUT_DENSE = 0, NN_LAYOUT_CHANNELS_LAST = 1 } nn_layout;

/* The convolution kernels: x [batch, channels, height, width], weight
 * [filters, channels, kernel_h, kernel_w], y [batch, filters, out_h, out_w],
 * with g's geometry; with K = channels * kernel_h * kernel_w, P = out_h *
 * out_w and cols_n = im2col(x_n) [K, P] (nn_conv_geometry's layout), they
 * compute what the column route computes, without cols in memory (each
 * backend decides how):
 *   FORWARD          y_n = epilogue(W[filters, K] cols_n), the epilogue as
 *                    GEMM_EPILOGUE's with NN_EPI_BIAS_ROWS (bias[filter])
 *                    and NN_EPI_RELU only; y is overwritten;
 *   BACKWARD_DATA    dx (+)= col2im(W^T dy_n) for every image n;
 *   BACKWARD_WEIGHT  dweight (+)= sum over n of dy_n cols_n^T.
 * g.accumulate: the backward kernels add into their output.
 * columns: where the backend keeps them (nn_backend.conv_keeps_columns),
 * [batch, K, P] that the forward fills with every cols_n and the weight
 * gradient reads instead of computing them again. */
typedef struct nn_conv_params {
    nn_conv_geometry g;
    int32_t filters;
    int32_t epilogue; /* FORWARD: NN_EPI_BIAS_ROWS | NN_EPI_RELU bits */
    /* Channels and filters in `groups` groups (0 reads as 1): filter f reads
     * channels [f / (filters / groups) * channels / groups, ...) and the
     * weight is [filters, channels / groups, kernel_h, kernel_w]; K above is
     * then channels / groups * kernel_h * kernel_w per group. */
    int32_t groups;
    int32_t precision; /* as nn_gemm_params's: for the products of the columns route */
    /* The nn_layout of the image side (x; dx for BACKWARD_DATA) and of the
     * output side (y; dy for the backward kernels). The columns (kept or
     * not) are the same whatever the layouts; the weight is always dense. */
    int32_t image_layout, output_layout;
} nn_conv_params;

static inline int32_t nn_conv_groups(const nn_conv_params *p) { return p->groups > 0 ? p->groups : 1; }
/* Depthwise: one group per input channel (filters a multiple of channels),
 * which the DEPTHWISE_CONV2D_* kernels run directly. */
static inline int nn_conv_is_depthwise(const nn_conv_params *p) {
    return nn_conv_groups(p) > 1 && nn_conv_groups(p) == p->g.channels;
}

/* The layers Conv2d -> ReLU -> MaxPool2d, when the pooling windows do not
 * overlap (window == stride, no padding), as one forward kernel and two
 * backward kernels; the convolution's output z [batch, filters, out_h,
 * out_w] and its gradient are never in memory:
 *   FORWARD   y [batch, filters, pooled_h, pooled_w] = the max over each
 *             pool x pool window of relu(z + bias[filter]) (z as
 *             CONV2D_FORWARD's), ties and NaNs as NN_KERNEL_MAXPOOL_FORWARD;
 *             winners = the window's argmax as that kernel gives it (the
 *             index within z's plane, oh * out_w + ow) where y > 0, and -1
 *             where it is not (the ReLU passes no gradient there). Windows
 *             are whole: pooled_h = out_h / pool (rows past them are
 *             dropped, as max pooling drops them).
 *   The gradient of z is then dz[n, f, i] = dy[n, f, j] where winners[n,
 *   f, j] == i, else 0, and the backward kernels compute from it what
 *   CONV2D_BACKWARD_WEIGHT / _DATA and BIAS_GRAD compute:
 *   BACKWARD_WEIGHT  dweight (+)= sum over n of dz_n cols_n^T (g.accumulate),
 *                    dbias (+)= the sum of dz per filter (bias_accumulate);
 *                    either may be absent, not both;
 *   BACKWARD_DATA    dx (+)= col2im(W^T dz_n) (g.accumulate).
 * columns as for the convolution kernels (nn_backend.conv_keeps_columns
 * for conv). The layers run fused where nn_backend.supports says so for
 * CONV2D_POOL_FORWARD; a backend's kernels refuse, by name, geometries they
 * do not take. */
typedef struct nn_conv_pool_params {
    nn_conv_params conv; /* conv.epilogue: NN_EPI_BIAS_ROWS with a bias; the ReLU is implied */
    int32_t pool;        /* window and stride */
    int32_t pooled_h, pooled_w;
    int32_t bias_accumulate; /* BACKWARD_WEIGHT: add into dbias */
} nn_conv_pool_params;

/* NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT: two such layers in a row, the first's
 * pooled output the second's input (a network's first two, say). From the
 * second's pooled gradient dy, winners and weight, the first's weight and
 * bias gradients (either may be absent, not both): what the second's
 * BACKWARD_DATA followed by the first's BACKWARD_WEIGHT computes, with the
 * first's parameters (first.conv.g.accumulate, first.bias_accumulate);
 * the gradient between them is not in memory. second.conv.g.accumulate is
 * not used. The layers are chained where nn_backend.supports says so for
 * this kernel, when nothing else wants that gradient (the first layer's
 * input needs none). */
typedef struct nn_conv_pool_chain_params {
    nn_conv_pool_params first, second;
} nn_conv_pool_chain_params;

/* NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD: such a layer's forward (y and
 * winners as CONV2D_POOL_FORWARD writes them; conv_pool.conv.g.accumulate
 * and bias_accumulate are not used), then a Linear of out_features outputs
 * on its pooled output flattened per image (in_features = filters *
 * pooled_h * pooled_w, in y's order): h = flat(y) lin_weight^T (+ lin_bias
 * with NN_EPI_BIAS_COLS), then relu (NN_EPI_RELU), as GEMM_EPILOGUE with
 * trans_b computes it. Both layers' outputs are written: backward reads y
 * and the winners. Conv2d, ReLU, MaxPool2d, Flatten and Linear (and a ReLU
 * after it) run so where nn_backend.supports says so for this kernel (a
 * last convolution feeding a classifier's first Linear): the Linear then
 * needs no kernel and no barrier of its own. */
typedef struct nn_conv_pool_linear_params {
    nn_conv_pool_params conv_pool;
    int32_t out_features;
    int32_t epilogue; /* NN_EPI_BIAS_COLS, NN_EPI_RELU */
} nn_conv_pool_linear_params;

/* Linear -> ReLU -> Linear, the small layers at the end of a classifier
 * (a hidden layer and the output), as one operation whose kernels take a
 * block of rows through both layers, so the hidden layer's output and
 * gradient never wait on a barrier between two kernels:
 *   FORWARD        h = relu(x wa^T + ba) [rows, hidden] (a NaN passes, as
 *                  relu_forward), y = h wb^T + bb [rows, out]; wa is
 *                  [hidden, in] and wb [out, hidden] (Linear's layout); the
 *                  biases may be absent;
 *   BACKWARD_DATA  dh = (dy wb) * (h > 0) [rows, hidden], the gradient of
 *                  the ReLU's input, and, when dx is given, dx (+)= dh wa
 *                  [rows, in] (accumulate), times (x > 0) with mask_input
 *                  (x is a fused ReLU's output whose gradient this op
 *                  writes masked: ops/relu.c); x is read only then.
 *   CROSS_ENTROPY  the head at the end of a classifier trained with
 *                  softmax cross-entropy, forward and the loss's gradient
 *                  back to x in one: h and logits as FORWARD (y); row_loss
 *                  [rows] = logsumexp(logits row) - logits[label], dlogits =
 *                  (softmax(logits) - onehot(label)) / rows (a bad label as
 *                  NN_KERNEL_SOFTMAX_CE_FUSED: NaN row loss, reported); then,
 *                  when dh is given, dh and dx as BACKWARD_DATA with dy =
 *                  dlogits (dx only when given, overwritten: accumulate 0).
 * The weight and bias gradients are GEMMs and column sums of dy and dh.
 * The layers run fused where nn_backend.supports says so for
 * LINEAR_HEAD_FORWARD (and, with the loss, LINEAR_HEAD_CROSS_ENTROPY); a
 * backend's kernels refuse, by name, sizes they do not take. */
typedef struct nn_linear_head_params {
    int32_t rows, in, hidden, out;
    int32_t mask_input; /* BACKWARD_DATA: dx *= (x > 0) */
    int32_t accumulate; /* BACKWARD_DATA: add into dx */
} nn_linear_head_params;

/* NN_KERNEL_MAXPOOL_BACKWARD_MASKED takes nn_pool_params: the max-pool
 * backward of a pool whose input is a ReLU output, fused with that ReLU's
 * backward: dx[argmax] (+)= y > 0 ? dy : 0, where y is the pool's output
 * (the ReLU output at the argmax), so dx is the gradient of the ReLU's input.
 *
 * NN_KERNEL_SOFTMAX_CE_FUSED takes nn_softmax_params: softmax + cross-entropy
 * forward writing the mean loss and the gradient of that mean loss,
 * dlogits = (softmax(logits) - onehot(label)) / rows, in one kernel; a bad
 * label is reported as by NN_KERNEL_SOFTMAX_CE_FORWARD (its row's gradient is
 * softmax / rows). accumulate is not used.
 *
 * NN_KERNEL_SGD_UPDATE_DEVICE_LR takes nn_sgd_params (its lr is ignored):
 * the update of NN_KERNEL_SGD_UPDATE with the learning rate read from
 * scalars[0] on the device (so a recorded step can be replayed with a new
 * rate) and the squared global gradient norm from scalars[1]. */

/* DROPOUT_FORWARD: element i is kept when philox4x32_10(counter = (i, draw, 0, 0),
 * key = (seed_lo, seed_hi)) word 0 >= threshold, where draw = counter[0] is
 * read from a device buffer (advanced by COUNTER_ADD after each draw, so
 * a replayed kernel list draws a fresh mask); mask[i] = kept ? scale : 0 and
 * y[i] = x[i] * mask[i]. backends/dropout_philox.h is the hash. */
typedef struct nn_dropout_params {
    int64_t n;
    uint32_t threshold; /* floor(p * 2^32) */
    float scale;        /* 1 / (1 - p) */
    uint32_t seed_lo, seed_hi;
} nn_dropout_params;

/* The POOL2D_* kernels: max or average pooling of x [batch, channels,
 * height, width] to y [batch, channels, out_h, out_w]. Output (oh, ow)'s
 * window is shaders/pool2d_window.h's along each axis: sliding (kernel,
 * stride, pad, dilation) or adaptive (windows [floor(o * size / out),
 * ceil((o + 1) * size / out)), dilation 1, no padding). Padding never wins
 * a max; argmax is the winner's index within its plane (the first maximum
 * in row-major window order; a NaN wins). An average divides its window's
 * sum by divisor when > 0, else by pool2d_avg_count's (count_include_pad).
 * Backward kernels gather: each input element adds, in a fixed order, the
 * gradients of the outputs whose windows read it (chose it, for max), to
 * its old value with accumulate. */
typedef struct nn_pool2d_geometry {
    int32_t batch, channels, height, width;
    int32_t out_h, out_w;
    int32_t kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
    int32_t adaptive;
    int32_t count_include_pad, divisor; /* average only */
    int32_t accumulate;                 /* backward only */
} nn_pool2d_geometry;

/* The EMBEDDING_* kernels: rows of weight [num, dim] picked by `count`
 * int32 indices. FORWARD: out[i, :] = weight[indices[i], :]; an index
 * outside [0, num) gives a row of NaN and an error (the CPU's at once,
 * Vulkan's through the status buffer at the next sync). BACKWARD: every
 * dweight[r, f] (+)= the dy[i, f] of the positions i with indices[i] == r,
 * added one by one in order of i (deterministic, no float atomics); row
 * padding_idx (-1: none) gets nothing and bad indices are skipped. */
typedef struct nn_embedding_params {
    int64_t count;
    int32_t num, dim;
    int32_t padding_idx;
    int32_t accumulate; /* backward only */
} nn_embedding_params;
/* Resampling of planes [planes, in_h, in_w] -> [planes, out_h, out_w]
 * (interpolate_map.h: which inputs each output reads, with what weights):
 * NN_INTERP_NEAREST reads one, NN_INTERP_BILINEAR two by two. scale_h,
 * scale_w: input positions per output step (PyTorch's: in / out, or 1 /
 * scale_factor where one was given; (in - 1) / (out - 1) with
 * align_corners). The backward gathers: each input adds, in a fixed order,
 * the outputs that read it, to its old value with accumulate. */
typedef struct nn_interpolate_params {
    int32_t planes, in_h, in_w, out_h, out_w;
    int32_t mode;          /* NN_INTERP_* */
    int32_t align_corners; /* bilinear only */
    float scale_h, scale_w;
    int32_t accumulate; /* backward only */
} nn_interpolate_params;

/* ---- the registry's facts of each kernel (kernel_list.h) ---- */

/* "unknown kernel" for an id outside the registry. */
const char *nn_kernel_name(nn_kernel kernel);
/* GATHER_SAMPLES' augmentation parameters make sense (every backend checks). */
nn_status nn_gather_check_augment(const char *backend, nn_kernel kernel, const nn_gather_params *p);
/* The size of the kernel's parameter struct (0 for an unknown kernel). */
size_t nn_kernel_params_size(nn_kernel kernel);
/* Bit i set: the kernel writes buffer argument i (it may read it too; every
 * argument may be read). Unknown kernels: every argument. */
unsigned nn_kernel_written_args(nn_kernel kernel);
/* The arguments one launch writes: the row's, or a custom kernel's as its
 * parameters name them (nn_custom_params.written). */
unsigned nn_kernel_launch_written_args(nn_kernel kernel, const void *params);
/* Bit i set: buffer argument i may be absent (a NULL buffer). */
unsigned nn_kernel_optional_args(nn_kernel kernel);
/* The number of buffer arguments the kernel takes (0 for an unknown id). */
int nn_kernel_arg_count(nn_kernel kernel);

/* ---- normalisation: BatchNorm, LayerNorm, GroupNorm ----
 * x is [outer, groups, inner] as far as the statistics go: group g holds
 * the outer * inner elements (o * groups + g) * inner + i, normalised with
 * the group's mean and biased variance var, xhat = (x - mean) / sqrt(var +
 * eps). The affine is per channel: element e's channel is (e /
 * channel_inner) % channels, and channel c's elements are (o * channels +
 * c) * channel_inner + i. BatchNorm over [N, C, L]: outer N, groups C,
 * inner L, channel_inner L; GroupNorm over [N, C, S] in G groups: outer 1,
 * groups N * G, inner C / G * S, channel_inner S; LayerNorm over [M, D]:
 * outer 1, groups M, inner D, channels D, channel_inner 1.
 *   STATS            mean[g], var[g] (biased), from x;
 *   APPLY            y = xhat * weight[c] + bias[c] (either absent: 1, 0),
 *                    plus residual[e] where given (a tensor of x's
 *                    shape and layout: a residual connection's add),
 *                    then `epilogue`; mean and var may be running
 *                    statistics (eval BatchNorm);
 *   BACKWARD_DATA    dx (+)= the gradient of x: with batch_stats (mean and
 *                    var came from x), rstd * (w dy - mean_g(w dy) - xhat
 *                    mean_g(w dy xhat)), else (constants) rstd * w dy;
 *   BACKWARD_AFFINE  dweight[c] (+)= sum of dy xhat, dbias[c] (+)= sum of
 *                    dy over channel c's elements (either may be absent);
 *   BACKWARD_SUMS    sums[2 g], sums[2 g + 1] = the sums of w dy and of
 *                    w dy xhat over group g (BACKWARD_DATA's reductions);
 *   BACKWARD_FROM_SUMS  dx (+)= rstd * (w dy - sums[2 g] / n - xhat
 *                    sums[2 g + 1] / n), n = outer * inner: BACKWARD_DATA
 *                    with batch statistics from given sums, so sums reduced
 *                    over several processes in between (SyncBatchNorm, sums
 *                    scaled by n / the processes' count) act as the batch's;
 *                    with sums_unweighted, the sums are of dy and dy xhat
 *                    (BACKWARD_SUMS without a weight: BACKWARD_AFFINE's
 *                    sums too) and w[c] multiplies them here, which needs
 *                    one channel per group (BatchNorm); then the sums are
 *                    also the affine gradients, and dweight[c] (+)=
 *                    sums[2 c + 1], dbias[c] (+)= sums[2 c] where given
 *                    (either may be absent; affine_accumulate says which
 *                    add into theirs), so no pass of their own copies them.
 * BACKWARD_SUMS with sums_unweighted sums dy and dy xhat even with the
 * weight given (it is there for grad_mask). grad_mask (BACKWARD_SUMS,
 * BACKWARD_FROM_SUMS; one channel per group): dy is the gradient of an
 * activation's output, act(y) with y = xhat weight[c] + bias[c] as APPLY
 * computes it (weight, bias: either absent, 1, 0), and both kernels take
 * the normalisation's own output gradient as that activation's backward
 * gives it: NN_NORM_MASK_RELU dy where y > 0, NN_NORM_MASK_RELU6 dy where
 * not (y <= 0 or y >= 6) (a NaN passes), else 0. The activation's own
 * backward then hands its gradient on unmasked (nn_norm_mask_claim). */
typedef enum nn_norm_mask { NN_NORM_MASK_NONE, NN_NORM_MASK_RELU, NN_NORM_MASK_RELU6 } nn_norm_mask;
typedef struct nn_norm_params {
    int64_t outer, inner;
    int64_t channel_inner;
    int32_t groups;
    int32_t channels;
    float eps;
    int32_t batch_stats; /* BACKWARD_DATA */
    int32_t accumulate;  /* the backward kernels add into their outputs */
    int32_t sums_unweighted; /* BACKWARD_SUMS, BACKWARD_FROM_SUMS */
    int32_t affine_accumulate; /* BACKWARD_FROM_SUMS: bit 0, dweight adds into its output; bit 1, dbias */
    nn_pointwise_epilogue epilogue; /* APPLY */
    int32_t grad_mask; /* nn_norm_mask: BACKWARD_SUMS, BACKWARD_FROM_SUMS */
} nn_norm_params;

/* NORM_RUNNING_UPDATE: for c < channels, running = (1 - f) running + f
 * stat, with the variance made unbiased (times count / (count - 1)); f is
 * momentum, or 1 / count_tracked[0] when momentum < 0 (PyTorch's
 * momentum=None: the cumulative average over the batches counted). */
typedef struct nn_norm_running_params {
    int64_t count; /* elements per channel in the batch, >= 2 */
    int32_t channels;
    float momentum;
} nn_norm_running_params;

/* SOFTMAX_DIM_FORWARD and SOFTMAX_DIM_BACKWARD: softmax, or log_softmax
 * when `log` is set, along one dimension of a dense tensor seen as [outer,
 * size, inner]: row (o, i) is the size elements o * size * inner + j *
 * inner + i. Forward shifts each row by its maximum; log_softmax is
 * x - max - log(sum exp(x - max)), never log(softmax). Backward (+)= from
 * the output y and dy: softmax y (dy - sum dy y), log_softmax
 * dy - exp(y) sum dy. */
typedef struct nn_softmax_dim_params {
    int32_t outer, size, inner;
    int32_t log;
    int32_t accumulate; /* BACKWARD */
} nn_softmax_dim_params;

/* ATTENTION_*: softmax(scale q k^T + mask) v over a batch of [groups,
 * heads] matrices, computed a block of rows at a time with a running
 * softmax (FlashAttention-2's scheme), so the [L, S] scores never exist in
 * memory. Batch entry b = g * heads + h reads q at g * group_stride[0] +
 * h * head_stride[0] (k, v, mask likewise with entries 1, 2, 3; a stride
 * of 0 repeats the matrix); q is [L, E], k [S, E], v [S, Ev] row-major,
 * the mask (optional) an additive [L, S] with strides mask_row and
 * mask_col. out, dout, dq, dk, dv are dense [batch, rows, cols]; lse and
 * delta [batch, L]. Where qkv_row is set, rows of q, k and v are qkv_row
 * apart (heads read in place from packed projections [.., L, 3 H E]) and
 * dq, dk, dv are written with q's, k's and v's layouts; where out_row is
 * set, out and dout are [groups, L, heads, Ev] with rows out_row apart (the
 * heads merged). causal hides key j from query i when j > i (torch's
 * is_causal). A query whose keys are all hidden (-inf) gets 0, as torch's
 * safe softmax.
 *   FORWARD:         out = attention, lse = log sum exp of each row's scores
 *                    (+inf for a fully hidden row)
 *   BACKWARD_QUERY:  delta = rowsum(dout * out), dq (+)= d/dq
 *   BACKWARD_KEYS:   dk (+)= d/dk, dv (+)= d/dv, reading delta
 * The Vulkan backend takes E and Ev up to 256. */
typedef struct nn_attention_params {
    int32_t groups, heads;
    int32_t queries, keys;        /* L, S */
    int32_t head_dim, value_dim;  /* E, Ev */
    int32_t causal;
    int32_t accumulate;           /* BACKWARD_QUERY: dq; BACKWARD_KEYS: dk */
    int32_t accumulate_v;         /* BACKWARD_KEYS: dv */
    float scale;
    int32_t mask_row, mask_col;
    int32_t group_stride[4], head_stride[4]; /* q, k, v, mask */
    int32_t qkv_row, out_row;                /* 0: dense rows */
    /* The node's nn_precision. fp16 rounds the operands of every product
     * to fp16, the products summing in fp32: q, k, v, the forward's
     * unnormalised weights exp(s - running max), the backward's P, dout
     * and dS; the scores, the softmax's statistics, P and dS as computed,
     * delta and the outputs stay fp32 (cpu_attention.c,
     * attention_*_coopmat.comp). Other precisions multiply in fp32. */
    int32_t precision;
} nn_attention_params;

/* NLL_FORWARD: the negative log-likelihood of class targets, with label
 * smoothing eps (0 for nll_loss): input is [outer, classes, inner]
 * (log-probabilities), target int32 [outer, inner]; for each position
 * whose target t is not ignore_index,
 *   loss = -((1 - eps) w[t] x[t] + eps / classes * sum_c w[c] x[c]),
 * w the weight (absent: 1); an ignored position has loss 0 and weight 0.
 * reduction NONE writes each position's loss; SUM their sum to loss[0],
 * MEAN that sum over total_weight = sum of w[t] of the positions kept,
 * written to total_weight[0] (absent for NONE). A target outside
 * [0, classes) that is not ignore_index is an error naming it; its
 * position's loss is NaN and its weight 0 (nothing is read past the
 * weight). NLL_BACKWARD: dinput (+)= -g ((1 - eps) w[t] [c == t] + eps /
 * classes w[c]) at kept positions (0 elsewhere), g the position's dloss
 * (NONE), dloss[0] (SUM) or dloss[0] / total_weight[0] (MEAN). */
typedef struct nn_nll_params {
    int32_t outer, classes, inner;
    int32_t ignore_index;
    int32_t reduction; /* nn_reduction (nn_ops.h): 0 none, 1 mean, 2 sum */
    float smoothing;
    int32_t accumulate; /* BACKWARD */
} nn_nll_params;

/* The optimizers' updates (src/optim/; the formulas are in nn_optim.h and
 * cpu_optimizers.c), each over n elements of the flat buffers, the rate
 * read from lr[0] on the device. ADAM_UPDATE's bias corrections use the
 * step count step[0] (int32, advanced by COUNTER_ADD before the update);
 * decoupled: AdamW's decay of the weights, else Adam's L2 added to the
 * gradient; maximize: ascend (the gradient negated). */
typedef struct nn_adam_params {
    int64_t n;
    float beta1, beta2, eps, weight_decay;
    int32_t decoupled, amsgrad, maximize;
} nn_adam_params;

typedef struct nn_rmsprop_params {
    int64_t n;
    float alpha, eps, weight_decay, momentum;
    int32_t centered, maximize;
} nn_rmsprop_params;

typedef struct nn_lion_params {
    int64_t n;
    float beta1, beta2, weight_decay;
    int32_t maximize;
} nn_lion_params;

/* Muon's pointwise kernels around its Newton-Schulz products (GEMM):
 * MUON_MOMENTUM the momentum and the (Nesterov) update to orthogonalise,
 * MUON_NORMALIZE x / (sqrt(norm_sq[0]) + eps), MUON_APPLY the decoupled
 * decay and the step of lr[0] * scale along the orthogonalised update. */
typedef struct nn_muon_params {
    int64_t n;
    float momentum;
    int32_t nesterov;
    float eps, scale, weight_decay;
} nn_muon_params;
/* LR_SCHEDULE: counter[0] += delta, then, when t = counter[0] is in
 * [start, until), lr[0] = the rate of step t - start (include/nn_schedule.h
 * gives each kind's formula, which is torch.optim.lr_scheduler's closed
 * form); outside, lr[0] is left (another part of a sequential schedule
 * writes it). One invocation; the CPU computes in double (as PyTorch's
 * schedulers do), Vulkan in float. */
#define NN_LR_SCHEDULE_MAX_MILESTONES 8
typedef struct nn_lr_schedule_params {
    int32_t kind;  /* nn_schedule_kind */
    int32_t delta; /* 0: rewrite the rate of the current step; 1: advance */
    int32_t start, until;
    double base_lr, gamma, eta_min;
    double warmup_start, end_factor; /* cosine's warm-up and LinearLR: the first and the last factor */
    int32_t step_size, warmup, total;
    int32_t milestone_count;
    int32_t milestones[NN_LR_SCHEDULE_MAX_MILESTONES];
    /* one-cycle: torch's initial_lr, max_lr and min_lr, the phases' last
     * steps (pct_start * total - 1 and, three-phase, 2 * pct_start * total - 2) */
    double initial_lr, max_lr, min_lr, phase_end1, phase_end2;
    int32_t anneal_linear, three_phase;
} nn_lr_schedule_params;
/* Whether the parameters are ones the kernel can run (a known kind, its
 * divisors non-zero): both backends refuse others. */
bool nn_lr_schedule_params_valid(const nn_lr_schedule_params *p);
/* The rate of step t >= 0 (relative to p->start), in double: the CPU
 * kernel's value and the host's (nn_schedule_rate). */
double nn_lr_schedule_rate(const nn_lr_schedule_params *p, int64_t t);
/* torch's OneCycleLR curve at step t: a to b over the first phase, then b
 * to c (three phases: b to a, then a to c). The rate is (initial, max,
 * min), the cycled momentum (max, base, max). */
double nn_one_cycle_value(const nn_lr_schedule_params *p, int64_t t, double a, double b, double c);

/* EMA_UPDATE over n 32-bit words of shadow and value: mode AVERAGE,
 * shadow = shadow * decay + weight * value (floats; weight = 1 - decay,
 * rounded once on the host); COPY, shadow = value; SWAP, exchanges them
 * (any 32-bit data). */
/* A launch of a kernel written outside the library (include/nn_custom.h):
 * its id in the process's registry (custom_kernels.h), the arguments it
 * writes (NN_ARG bits: the schedules and barriers follow them, not the
 * registry row's), its invocations and the call's parameter bytes. */
typedef struct nn_custom_params {
    int32_t id;
    uint32_t written;
    uint32_t grid[3];
    uint32_t params_size;
    _Alignas(8) unsigned char params[48];
} nn_custom_params;

typedef enum nn_ema_mode { NN_EMA_AVERAGE = 0, NN_EMA_COPY = 1, NN_EMA_SWAP = 2 } nn_ema_mode;
typedef struct nn_ema_params {
    int64_t n;
    int32_t mode;
    float decay, weight;
} nn_ema_params;

#endif
