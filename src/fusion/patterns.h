/* The fused patterns (core/fusion.h), one file each, and what they share. */
#ifndef NN_FUSION_PATTERNS_H
#define NN_FUSION_PATTERNS_H

#include "core/fusion.h"
#include "ops/ops.h"

extern const nn_fusion_pattern nn_pattern_conv_relu, nn_pattern_linear_relu, nn_pattern_conv_pool,
    nn_pattern_conv_pool_linear, nn_pattern_conv_pool_linear_relu, nn_pattern_linear_head,
    nn_pattern_head_cross_entropy, nn_pattern_norm_activation, nn_pattern_norm_add_activation, nn_pattern_norm_add;

/* conv_pool.c: the kernels' parameters of a Conv2d -> ReLU -> MaxPool2d
 * chain (its pooled size as the pooling of whole windows leaves it), and
 * whether the pooling fits them (window == stride, no padding). */
bool nn_conv_pool_chain_fits(nn_node *const *members, nn_conv_pool_params *out);
/* Its forward's outputs and segment: the pooled output (storage), the
 * winners and columns, the convolution's and the ReLU's outputs left
 * unwritten, and the fused backward over the three members. The caller
 * runs the kernel, with the returned winners and columns (or NULL). */
nn_status nn_conv_pool_prepare(nn_node *const *members, const nn_conv_pool_params *p, nn_tensor **winners,
                               nn_tensor **cols);

/* linear_head.c: the head's parameters of Linear -> ReLU -> Linear members. */
nn_linear_head_params nn_linear_head_params_of(nn_node *const *members);
/* The head's gradients from dy, its output's: the four layer gradients
 * that want one, and dx (its input's, into dx when not NULL, as p's
 * mask_input and accumulate say). */
nn_status nn_linear_head_gradients(const nn_linear_head_params *p, nn_tensor *x, nn_tensor *wa, nn_tensor *ba,
                                   nn_tensor *wb, nn_tensor *bb, nn_tensor *h, nn_tensor *dy, nn_tensor *dx);

#endif
