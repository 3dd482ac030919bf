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

#ifdef __cplusplus
}
#endif
#endif
