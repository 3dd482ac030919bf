#include "conv_pool.h"

#include "conv_columns.h"
#include "base/error.h"

nn_status nn_conv_pool_params_check(const char *backend, nn_kernel kernel, const nn_conv_pool_params *p) {
    NN_TRY(nn_conv_params_check(backend, NN_KERNEL_CONV2D_FORWARD, &p->conv));
    const nn_conv_geometry *g = &p->conv.g;
    if (p->pool < 1 || p->pooled_h != g->out_h / p->pool || p->pooled_w != g->out_w / p->pool)
        return nn_set_error(NN_ERR_ARGUMENT,
                            "%s %s: pooling %dx%d windows over a %dx%d convolution output gives %dx%d, not %dx%d",
                            backend, nn_kernel_name(kernel), p->pool, p->pool, g->out_h, g->out_w,
                            p->pool > 0 ? g->out_h / p->pool : 0, p->pool > 0 ? g->out_w / p->pool : 0,
                            p->pooled_h, p->pooled_w);
    return NN_OK;
}

nn_status nn_conv_pool_chain_check(const char *backend, const nn_conv_pool_chain_params *p) {
    const nn_kernel kernel = NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT;
    NN_TRY(nn_conv_pool_params_check(backend, kernel, &p->first));
    NN_TRY(nn_conv_pool_params_check(backend, kernel, &p->second));
    const nn_conv_geometry *a = &p->first.conv.g, *b = &p->second.conv.g;
    if (b->batch != a->batch || b->channels != p->first.conv.filters || b->height != p->first.pooled_h ||
        b->width != p->first.pooled_w)
        return nn_set_error(NN_ERR_ARGUMENT,
                            "%s %s: the first layer's output [%d, %d, %d, %d] is not the second's input "
                            "[%d, %d, %d, %d]",
                            backend, nn_kernel_name(kernel), a->batch, p->first.conv.filters, p->first.pooled_h,
                            p->first.pooled_w, b->batch, b->channels, b->height, b->width);
    return NN_OK;
}

nn_status nn_conv_pool_linear_check(const char *backend, const nn_conv_pool_linear_params *p) {
    const nn_kernel kernel = NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD;
    NN_TRY(nn_conv_pool_params_check(backend, kernel, &p->conv_pool));
    if (p->out_features < 1)
        return nn_set_error(NN_ERR_ARGUMENT, "%s %s: out_features must be >= 1, got %d", backend,
                            nn_kernel_name(kernel), p->out_features);
    if (p->epilogue & ~(NN_EPI_BIAS_COLS | NN_EPI_RELU))
        return nn_set_error(NN_ERR_ARGUMENT, "%s %s: the Linear's epilogue may hold only a bias and a ReLU (got %#x)",
                            backend, nn_kernel_name(kernel), (unsigned)p->epilogue);
    const int64_t in = (int64_t)p->conv_pool.conv.filters * p->conv_pool.pooled_h * p->conv_pool.pooled_w;
    if (in > INT32_MAX)
        return nn_set_error(NN_ERR_ARGUMENT, "%s %s: %lld input features; at most %d", backend,
                            nn_kernel_name(kernel), (long long)in, INT32_MAX);
    return NN_OK;
}

nn_pool_params nn_conv_pool_pooling(const nn_conv_pool_params *p) {
    const nn_conv_geometry *g = &p->conv.g;
    return (nn_pool_params){
        .batch = g->batch, .channels = p->conv.filters, .height = g->out_h, .width = g->out_w,
        .kernel = p->pool, .stride = p->pool, .pad = 0, .out_h = p->pooled_h, .out_w = p->pooled_w,
    };
}
