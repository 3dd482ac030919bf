/* Every operation's descriptor (core/graph.h), defined in its own file
 * under src/ops/, and the parameters of those the fusion patterns
 * (src/fusion/) read and the ones their backward rules share with them. */
#ifndef NN_OPS_OPS_H
#define NN_OPS_OPS_H

#include "op_common.h"

extern const nn_op nn_op_matmul, nn_op_linear, nn_op_add_bias, nn_op_conv2d, nn_op_maxpool2d, nn_op_flatten,
    nn_op_reshape, nn_op_relu, nn_op_softmax, nn_op_softmax_cross_entropy, nn_op_add, nn_op_sub, nn_op_mul, nn_op_div, nn_op_maximum, nn_op_minimum, nn_op_scale,
    nn_op_dropout, nn_op_sum, nn_op_mean, nn_op_sum_dims, nn_op_mean_dims, nn_op_max_dims, nn_op_min_dims,
    nn_op_argmax, nn_op_argmin, nn_op_permute, nn_op_slice, nn_op_cat, nn_op_expand;
extern const nn_op nn_op_batch_norm, nn_op_layer_norm, nn_op_group_norm;

/* nn_conv2d: the geometry of x [batch, channels, height, width] under the
 * weight [filters, channels, kernel_h, kernel_w]. */
typedef struct nn_conv2d_node {
    nn_conv_geometry g;
    int32_t filters;
    int32_t groups;
} nn_conv2d_node;

/* nn_maxpool2d's window over its input. */
typedef struct nn_maxpool_node {
    nn_pool_params pool;
} nn_maxpool_node;

/* ---- shared with the fused patterns (src/fusion/) ---- */

/* conv2d.c: argument checks (the messages name `op`) and output geometry. */
nn_status nn_conv2d_check_args(const char *op, nn_tensor *x, nn_tensor *w, nn_tensor *bias,
                               const nn_conv2d_params *params);
nn_conv_geometry nn_conv2d_geometry(const nn_tensor *x, const nn_tensor *w, const nn_conv2d_params *params);
/* The parameters with 0 for dilation and groups read as 1. */
nn_conv2d_params nn_conv2d_params_normalised(const nn_conv2d_params *params);
/* The column matrix the backend keeps from forward to the weight gradient
 * for this node (when it is on the tape, its weight wants a gradient and
 * the backend takes the column route), saved in the node; NULL without one
 * (and on failure, with *status set). */
nn_tensor *nn_conv2d_columns(nn_node *conv, const nn_conv_params *p, nn_status *status);
/* The convolution kernels' parameters of a conv2d node, with its epilogue. */
nn_conv_params nn_conv2d_params_of(const nn_node *conv, int32_t epilogue);
/* Whether a conv2d node is ungrouped and undilated: the only convolutions
 * the fused patterns and their kernels take. */
bool nn_conv2d_is_plain(const nn_node *conv);

/* linear.c: a Linear layer's weight [outputs, features] and bias
 * [outputs] (or NULL) for an input of `features`, in x's context; the
 * messages name the layer ("first", "second", ...). */
nn_status nn_linear_layer_check(const char *op, const char *layer, nn_tensor *x, int64_t features, nn_tensor *w,
                                nn_tensor *bias);
/* The gradients of a Linear from its output's gradient dy [rows, outputs]
 * and its input a [rows, inputs], for those of w and bias that want one:
 * dW (+)= dy^T a, db (+)= dy's column sums. */
nn_status nn_linear_layer_gradients(nn_ctx *ctx, nn_tensor *w, nn_tensor *bias, nn_tensor *dy, nn_tensor *a,
                                    int32_t rows, int32_t outputs, int32_t inputs);
/* The GEMM of a Linear node (x W^T), its bias and `epilogue` bits added. */
nn_gemm_epilogue_params nn_linear_gemm(const nn_node *linear, int32_t epilogue);

/* relu.c: whether `reader`, the only node on the tape that reads x, may
 * write x's gradient already masked by (x > 0) because x is a ReLU's
 * output: then the ReLU hands that gradient on with no kernel of its own.
 * Called at backward; claiming marks the ReLU's node. */
bool nn_relu_mask_claim(const nn_tensor *x);
/* normalization.c: whether the BatchNorm that produced y (y's only reader
 * on the tape being the activation whose backward asks) will take that
 * activation's mask in its own backward (kernels.h's grad_mask): its
 * backward sums the data and affine gradients in one reduction, which then
 * recomputes y. The activation then hands its output's gradient on with
 * no kernel of its own. Called at backward; claiming marks the BatchNorm's
 * node. */
bool nn_norm_mask_claim(const nn_tensor *y, nn_norm_mask mask);
/* Whether x is a ReLU's output whose only reader (among the pending nodes
 * at a flush: `readers`) could claim its mask. */
bool nn_relu_output(const nn_tensor *x);

/* A pointwise node as a kernel's epilogue (kernels.h): ReLU (as clamp(0,
 * inf)) or a row of unary_ops.h whose gradient follows from its output
 * alone, so a fused launch need not write its input (relu.c, unary.c).
 * False for any other node. */
bool nn_epilogue_of(const nn_node *node, nn_pointwise_epilogue *out);

/* normalization.c: whether a normalisation node can take an epilogue in
 * its apply (any of the three; not SyncBatchNorm's, whose statistics
 * come from other processes), and its forward with the epilogue written
 * into `out` (another node's output), its own output left unwritten: a
 * recipe that recomputes it without touching the running statistics.
 * `residual` (or NULL), a tensor of the output's shape and layout, is added
 * before the epilogue (a residual connection's add). */
bool nn_norm_takes_epilogue(const nn_node *node);
nn_status nn_norm_forward_with_epilogue(nn_node *node, nn_tensor *out, const nn_pointwise_epilogue *epilogue,
                                        const nn_tensor *residual);
/* A normalisation node's kernel parameters as its forward runs them (bench_norm_layers.c reads them off the tape). */
nn_norm_params nn_norm_params_of(const nn_node *norm);

/* loss.c: the gradient a softmax cross-entropy computed ahead (dlogits),
 * handed to the logits as the loss's backward does. */
nn_status nn_softmax_ce_hand_on(nn_node *loss, nn_tensor *dlogits);

/* ---- losses (losses.c, nll_loss.c, cross_entropy.c) ---- */
extern const nn_op nn_op_softmax_dim, nn_op_log_softmax, nn_op_nll_loss;
/* loss itself (NONE), its mean or its sum; NULL stays NULL. */
nn_tensor *nn_loss_reduce(nn_tensor *loss, nn_reduction reduction);
/* result, or NULL with the failing operation's message prefixed by `op`:
 * a loss composed of operations names itself. */
nn_tensor *nn_loss_named(const char *op, nn_tensor *result);
/* input and target are float32 tensors of one context; reduction is valid. */
nn_status nn_loss_check(const char *op, nn_tensor *input, nn_tensor *target, nn_reduction reduction);
/* The class targets' negative log-likelihood of nll_loss.c with label
 * smoothing (cross_entropy's after log_softmax); messages name `op`. */
nn_tensor *nn_class_nll(const char *op, nn_tensor *input, nn_tensor *target, nn_tensor *weight,
                        nn_reduction reduction, int ignore_index, float label_smoothing);
/* nll_loss_onnx.c: NegativeLogLikelihoodLoss, and the label smoothing's
 * terms around it. */
nn_status nn_nll_loss_onnx(struct exporter *x, struct op_io *io, const char *out);
/* attention.c: attention's ONNX composition over the values q, k (of k_ndim
 * dimensions), v and the additive mask (NULL: none, or p's causal constant):
 * Transpose, MatMul, Mul, Add, Softmax, MatMul into `out`; io names the nodes. */
nn_status nn_attention_onnx_composition(struct exporter *x, struct op_io *io, const char *q, const char *k, int k_ndim,
                                        const char *v, const char *mask, const nn_attention_params *p,
                                        const char *out);
/* ---- batched matmul, linear of any rank, embedding ---- */
extern const nn_op nn_op_matmul_batched, nn_op_linear_nd, nn_op_embedding;
/* linear_nd.c: nn_linear for x of any rank but 2 ([..., in]). */
nn_tensor *nn_linear_nd(nn_tensor *x, nn_tensor *weight, nn_tensor *bias);
/* conv_launch.c: a convolution's forward, data gradient and weight
 * gradient (kernels.h's arguments; absent bias or columns: a NULL ref),
 * with the depthwise kernels where p is depthwise. */
nn_status nn_conv_run_forward(nn_ctx *ctx, const nn_conv_params *p, nn_buffer_ref x, nn_buffer_ref w,
                              nn_buffer_ref y, nn_buffer_ref bias, nn_buffer_ref cols);
nn_status nn_conv_run_data(nn_ctx *ctx, const nn_conv_params *p, nn_buffer_ref dy, nn_buffer_ref w,
                           nn_buffer_ref dx);
nn_status nn_conv_run_weight(nn_ctx *ctx, const nn_conv_params *p, nn_buffer_ref dy, nn_buffer_ref x,
                             nn_buffer_ref dw, nn_buffer_ref cols);
extern const nn_op nn_op_conv_transpose2d, nn_op_interpolate;

#endif
