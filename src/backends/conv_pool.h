/* What every backend checks first in the fused convolution + ReLU + max
 * pooling kernels (kernels.h, nn_conv_pool_params), and the pooling they
 * imply. */
#ifndef NN_CONV_POOL_H
#define NN_CONV_POOL_H

#include "kernels.h"

/* The convolution's geometry (nn_conv_params_check), an epilogue of bias
 * and ReLU only, and whole non-overlapping windows: pool >= 1, pooled_h ==
 * out_h / pool, pooled_w == out_w / pool. The message names the backend
 * and the kernel. */
nn_status nn_conv_pool_params_check(const char *backend, nn_kernel kernel, const nn_conv_pool_params *p);

/* Both layers' checks, and that the first's pooled output is the second's
 * input (NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT). */
nn_status nn_conv_pool_chain_check(const char *backend, const nn_conv_pool_chain_params *p);

/* The layer's checks, and the Linear's: at least one output, an epilogue of
 * NN_EPI_BIAS_COLS and NN_EPI_RELU only, in_features within 32 bits
 * (NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD). */
nn_status nn_conv_pool_linear_check(const char *backend, const nn_conv_pool_linear_params *p);

/* The max pooling over z that the fused layers perform. */
nn_pool_params nn_conv_pool_pooling(const nn_conv_pool_params *p);

#endif
