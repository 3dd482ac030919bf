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
/* x W^T + b: x [N, in], weight [out, in], bias [out] or NULL. */
nn_tensor *nn_linear(nn_tensor *x, nn_tensor *weight, nn_tensor *bias);

typedef struct nn_conv2d_params {
    int stride_h, stride_w;
    int pad_h, pad_w;
} nn_conv2d_params;
/* 2-D convolution (cross-correlation, as PyTorch): x [N, C, H, W],
 * weight [OC, C, KH, KW], bias [OC] or NULL. The backend computes it as
 * im2col + GEMM would (keeping the column matrix for the backward pass
 * where it takes that route) or straight from the image (Vulkan, small
 * layers). */
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

nn_tensor *nn_relu(nn_tensor *x);
/* Elementwise functions of one tensor, with their gradients: the rows of
 * shaders/unary_ops.h, which src/ops/unary.c defines as operations. */
nn_tensor *nn_sigmoid(nn_tensor *x); /* 1 / (1 + exp(-x)) */
nn_tensor *nn_tanh(nn_tensor *x);

/* Softmax over the last dimension. */
nn_tensor *nn_softmax(nn_tensor *x);
/* Mean over the batch of -log softmax(logits)[label]: logits [N, C] float32,
 * labels [N] int32 in [0, C). Numerically stable; one fused kernel each way.
 * Returns a one-element tensor. */
nn_tensor *nn_softmax_cross_entropy(nn_tensor *logits, nn_tensor *labels);

/* Elementwise, on tensors of the same shape. */
nn_tensor *nn_add(nn_tensor *a, nn_tensor *b);
nn_tensor *nn_mul(nn_tensor *a, nn_tensor *b);
nn_tensor *nn_scale(nn_tensor *x, float factor);

/* Dropout (PyTorch's): with training set, each element is zeroed with
 * probability p (0 <= p < 1) and the others scaled by 1 / (1 - p); the mask
 * is drawn on the device from the context's generator (nn_ctx_manual_seed
 * makes it repeat) and differs at every call, captured replays included.
 * Without training: the identity (a view of x). */
nn_tensor *nn_dropout(nn_tensor *x, float p, bool training);

/* Reductions over all elements, to a one-element tensor. */
nn_tensor *nn_sum(nn_tensor *x);
nn_tensor *nn_mean(nn_tensor *x);

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

#ifdef __cplusplus
}
#endif
#endif
