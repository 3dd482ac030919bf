/* The fusion pass's table (core/fusion.h): at each node the pass tries
 * these in order and takes the first that matches, so a longer chain, or
 * one with more of its work in one kernel, comes before the chains it
 * contains. */
#include "patterns.h"

const nn_fusion_pattern *const nn_fusion_patterns[] = {
    &nn_pattern_conv_pool_linear_relu, /* conv2d, relu, maxpool2d, flatten, linear, relu */
    &nn_pattern_conv_pool_linear,      /* conv2d, relu, maxpool2d, flatten, linear */
    &nn_pattern_head_cross_entropy,    /* linear, relu, linear, softmax_cross_entropy */
    &nn_pattern_conv_pool,             /* conv2d, relu, maxpool2d */
    &nn_pattern_linear_head,           /* linear, relu, linear */
    &nn_pattern_conv_relu,             /* conv2d, relu */
    &nn_pattern_linear_relu,           /* linear, relu */
    &nn_pattern_norm_add_activation,   /* a norm, an add of a residual, then an activation of its output */
    &nn_pattern_norm_activation,       /* batch, layer or group norm, then relu or an activation of its output */
    &nn_pattern_norm_add,              /* a norm, then an add of a residual */
};

const int nn_fusion_pattern_count = (int)(sizeof nn_fusion_patterns / sizeof nn_fusion_patterns[0]);
