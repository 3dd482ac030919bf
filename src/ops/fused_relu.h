/* Layer ops with the ReLU fused in (issue 6), used by nn_sequential.
 *
 * Forward: conv2d/linear + ReLU is one kernel (the GEMM epilogue adds the
 * bias and applies the ReLU) but still two tape nodes, the layer's and an
 * "nn_relu" node, so autograd and the ONNX export (Conv/Gemm + Relu) see the
 * unfused graph. The layer node's output z (the pre-activation) is never
 * computed: it is a view of the ReLU output r, read by nobody (the layer's
 * backward reads only its output's gradient).
 *
 * Backward: a consumer of r that is r's only consumer (nn_sequential knows:
 * the next layer) may claim r (nn_fused_relu_claim): it then writes the
 * gradient of z, already masked by (r > 0), into r's gradient where it
 * produces it (the dX GEMM's epilogue of the next Linear, the masked
 * max-pool backward), and the ReLU node hands that gradient on to z with no
 * kernel. Unclaimed, the ReLU node runs relu_backward as nn_relu does.
 * Gradient accumulation stays exact: a claimed r has one consumer, so its
 * gradient has one writer; anything else is left unclaimed. */
#ifndef NN_OPS_FUSED_RELU_H
#define NN_OPS_FUSED_RELU_H

#include "nn_ops.h"
#include "op_common.h"

/* Flags of the fused ops. */
enum {
    NN_FUSE_RELU = 1,       /* apply a ReLU to the op's output */
    NN_FUSE_MASK_INPUT = 2, /* x is the output of a fused ReLU and this op is its only consumer */
    NN_FUSE_CHAIN_INPUT = 4, /* x is a fused Conv2d -> ReLU -> MaxPool2d's output and this op its only consumer */
};

/* nn_node.fusion bits. */
enum {
    NN_NODE_MASKS_INPUT_GRAD = 1, /* a consumer that writes its input's gradient masked */
    NN_NODE_GRAD_PREMASKED = 2,   /* a fused ReLU node whose output gradient arrives masked */
    NN_NODE_CHAINS_INPUT = 4,     /* a conv + pool node whose backward computes its input's producer's gradients */
};

nn_tensor *nn_linear_fused(nn_tensor *x, nn_tensor *weight, nn_tensor *bias, int flags);
nn_tensor *nn_conv2d_fused(nn_tensor *x, nn_tensor *weight, nn_tensor *bias, const nn_conv2d_params *params,
                           int flags);
nn_tensor *nn_maxpool2d_fused(nn_tensor *x, int kernel, int stride, int padding, int flags);

/* Conv2d -> ReLU -> MaxPool2d(pool, stride pool) as one tape node and the
 * fused kernels (kernels.h, nn_conv_pool_params): src/ops/conv_pool.c.
 * nn_sequential runs its layers so where nn_conv2d_relu_maxpool_fuses
 * says the backend fuses them. With NN_FUSE_CHAIN_INPUT, x is the output
 * of another such op and this op its only consumer: where the backend
 * chains the two (nn_backend.supports, CONV2D_POOL_CHAIN_WEIGHT) and the other op's input
 * needs no gradient, this op's backward computes the other's weight and
 * bias gradients from its own output's gradient in one kernel
 * (NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT), and x's gradient, which nothing
 * else wants, is never computed. */
bool nn_conv2d_relu_maxpool_fuses(nn_tensor *x, nn_tensor *weight, nn_tensor *bias, const nn_conv2d_params *params,
                                  int pool);
nn_tensor *nn_conv2d_relu_maxpool(nn_tensor *x, nn_tensor *weight, nn_tensor *bias, const nn_conv2d_params *params,
                                  int pool, int flags);

/* ... and with a Flatten and a Linear (of lin_flags: NN_FUSE_RELU) after
 * it, forward in one kernel (NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD):
 * src/ops/conv_pool_linear.c. The tape holds what the layers record one by
 * one (the conv + pool node, the flatten, the Linear's and ReLU's nodes),
 * so backward, the ONNX export and the results are theirs; the Linear then
 * costs no kernel and no barrier of its own in forward. Returns the
 * Linear's output (the ReLU's with NN_FUSE_RELU). */
bool nn_conv2d_relu_maxpool_linear_fuses(nn_tensor *x, nn_tensor *weight, nn_tensor *bias,
                                         const nn_conv2d_params *params, int pool, nn_tensor *lin_weight,
                                         nn_tensor *lin_bias);
nn_tensor *nn_conv2d_relu_maxpool_linear(nn_tensor *x, nn_tensor *weight, nn_tensor *bias,
                                         const nn_conv2d_params *params, int pool, int flags, nn_tensor *lin_weight,
                                         nn_tensor *lin_bias, int lin_flags);

/* The kernels' parameters of a fused layer with geometry g (its bias, if
 * any, and the ReLU in the epilogue; pooled_h and pooled_w as the pooling
 * of whole windows leaves them). */
nn_conv_pool_params nn_conv_pool_params_of(const nn_conv_geometry *g, int32_t filters, bool bias, int pool);

/* The fused layer's forward and a Linear's around their kernels, for an op
 * that runs both in one (conv_pool_linear.c): _begin checks the arguments
 * and makes the outputs, the caller runs the kernel, _end records the
 * nodes and returns the output (NULL on failure), _abort frees the
 * outputs after a failed kernel. */
typedef struct nn_conv_pool_forward {
    nn_conv_pool_params params;
    nn_tensor *inputs[3]; /* x, weight, bias */
    nn_tensor *y, *winners, *cols;
} nn_conv_pool_forward;
nn_status nn_conv_pool_forward_begin(const char *op, nn_tensor *x, nn_tensor *weight, nn_tensor *bias,
                                     const nn_conv2d_params *params, int pool, nn_conv_pool_forward *f);
nn_tensor *nn_conv_pool_forward_end(nn_conv_pool_forward *f, const char *op, int flags);
void nn_conv_pool_forward_abort(nn_conv_pool_forward *f);

typedef struct nn_linear_forward {
    nn_tensor *inputs[3]; /* x, weight, bias */
    nn_tensor *y;         /* what the kernel writes: the output (the ReLU's with NN_FUSE_RELU) */
    nn_tensor *z;         /* the layer's own output: y, or a view of it (fused_relu.h) */
    nn_gemm_epilogue_params params;
} nn_linear_forward;
nn_status nn_linear_forward_begin(nn_tensor *x, nn_tensor *weight, nn_tensor *bias, int flags, nn_linear_forward *f);
nn_tensor *nn_linear_forward_end(nn_linear_forward *f, int flags);
void nn_linear_forward_abort(nn_linear_forward *f);

/* Linear -> ReLU -> Linear as one tape node and the fused kernels
 * (kernels.h, nn_linear_head_params): src/ops/linear_head.c. With
 * NN_FUSE_MASK_INPUT, x is a fused ReLU's output this op claims. */
bool nn_linear_relu_linear_fuses(nn_tensor *x, nn_tensor *wa, nn_tensor *ba, nn_tensor *wb, nn_tensor *bb);
nn_tensor *nn_linear_relu_linear(nn_tensor *x, nn_tensor *wa, nn_tensor *ba, nn_tensor *wb, nn_tensor *bb, int flags);

/* A Linear layer's weight [outputs, features] and bias [outputs] (or NULL)
 * for an input of `features`, in x's context; the messages name the layer
 * ("first", "second", ...). */
nn_status nn_linear_layer_check(const char *op, const char *layer, nn_tensor *x, int64_t features, nn_tensor *w,
                                nn_tensor *bias);
/* The gradients of a Linear from its output's gradient dy [rows, outputs]
 * and its input a [rows, inputs], for those of w and bias that want one:
 * dW (+)= dy^T a, db (+)= dy's column sums. */
nn_status nn_linear_layer_gradients(nn_ctx *ctx, nn_tensor *w, nn_tensor *bias, nn_tensor *dy, nn_tensor *a,
                                    int32_t rows, int32_t outputs, int32_t inputs);
/* The head's gradients from dy, its output's: the four layer gradients
 * that want one, and dx (its input's, into dx when not NULL, as p's
 * mask_input and accumulate say). */
nn_status nn_linear_head_gradients(const nn_linear_head_params *p, nn_tensor *x, nn_tensor *wa, nn_tensor *ba,
                                   nn_tensor *wb, nn_tensor *bb, nn_tensor *h, nn_tensor *dy, nn_tensor *dx);

/* A classifier's last layers and its loss as one operation
 * (src/ops/head_cross_entropy.c): Linear(wa, ba), ReLU, Linear(wb, bb),
 * then the mean softmax cross-entropy against labels, with the loss's
 * gradient taken back to x in the same kernel
 * (NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY). The loss and the gradients backward
 * gives are those of the layers and nn_softmax_cross_entropy. *logits
 * receives the last layer's output (step-owned), for reading: no gradient
 * flows back through it. With NN_FUSE_MASK_INPUT, x is a fused ReLU's
 * output this op claims. */
bool nn_head_cross_entropy_fuses(nn_tensor *x, nn_tensor *wa, nn_tensor *ba, nn_tensor *wb, nn_tensor *bb,
                                 nn_tensor *labels);
nn_tensor *nn_head_cross_entropy(nn_tensor *x, nn_tensor *wa, nn_tensor *ba, nn_tensor *wb, nn_tensor *bb,
                                 nn_tensor *labels, int flags, nn_tensor **logits);

/* conv2d.c's argument checks (the messages name `op`) and output geometry,
 * shared with the fused op. */
nn_status nn_conv2d_check_args(const char *op, nn_tensor *x, nn_tensor *w, nn_tensor *bias,
                               const nn_conv2d_params *params);
nn_conv_geometry nn_conv2d_geometry(const nn_tensor *x, const nn_tensor *w, const nn_conv2d_params *params);

/* The output r of a fused layer + ReLU (shape given) and, when autograd
 * records, the layer's output z as a view of r (else z == r). */
nn_status nn_fused_relu_outputs(nn_ctx *ctx, bool record, int ndim, const int64_t *shape, nn_tensor **r,
                                nn_tensor **z);
/* After the layer recorded z (or did not need to): records the ReLU node
 * z -> r and returns r; on failure frees r and returns NULL. */
nn_tensor *nn_fused_relu_finish(nn_tensor *z, nn_tensor *r);
/* Called by a consumer with NN_FUSE_MASK_INPUT after recording its node:
 * when x is a fused ReLU's output, marks both nodes and returns true (the
 * consumer's backward must then mask x's gradient by x > 0). */
bool nn_fused_relu_claim(nn_tensor *x, nn_node *consumer);
/* Whether nn_fused_relu_claim(x, a recorded node) would return true: for a
 * consumer that produces x's gradient before it records its node. */
bool nn_fused_relu_claimable(const nn_tensor *x);

#endif
