/* The layers: Linear, Conv2d, MaxPool2d, Flatten, ReLU. */
#include <math.h>

#include "module.h"

/* Weight and bias of a Linear or Conv2d layer, initialised as `init` says:
 * Kaiming (PyTorch's reset_parameters: weight kaiming_uniform(a = sqrt 5),
 * bias uniform(+-1/sqrt(fan_in))) or Xavier-uniform with zero bias (the seed). */
static nn_module *with_weight_and_bias(nn_module *m, int ndim, const int64_t *weight_shape,
                                       nn_init init) {
    nn_ctx *ctx = m->ctx;
    nn_tensor *weight = nn_tensor_new(ctx, NN_F32, ndim, weight_shape);
    nn_tensor *bias = weight ? nn_tensor_new(ctx, NN_F32, 1, weight_shape) : NULL;
    nn_status status = bias ? NN_OK : nn_last_status();
    if (status == NN_OK) {
        double fan_in = 1.0;
        for (int i = 1; i < ndim; i++) fan_in *= (double)weight_shape[i];
        if (init == NN_INIT_XAVIER_UNIFORM) {
            status = nn_init_xavier_uniform(weight, 1.0f);
        } else {
            float bound = (float)(1.0 / sqrt(fan_in));
            status = nn_init_kaiming_uniform(weight, sqrtf(5.0f));
            if (status == NN_OK) status = nn_init_uniform(bias, -bound, bound);
        }
    }
    if (status == NN_OK) status = nn_module_register_parameter(m, "weight", weight);
    if (status == NN_OK) status = nn_module_register_parameter(m, "bias", bias);
    nn_tensor_free(weight); /* the module holds its own references */
    nn_tensor_free(bias);
    if (status != NN_OK) {
        nn_module_free(m);
        return NULL;
    }
    return m;
}

static nn_status check_init(const char *fn, nn_ctx *ctx, nn_init init) {
    if (!ctx) return nn_set_error(NN_ERR_ARGUMENT, "%s: ctx is NULL", fn);
    if (init != NN_INIT_KAIMING_UNIFORM && init != NN_INIT_XAVIER_UNIFORM)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: unknown initialiser %d", fn, (int)init);
    return NN_OK;
}

static nn_tensor *linear_forward(nn_module *m, nn_tensor *x) {
    return nn_linear(x, m->params.tensors[0], m->params.tensors[1]);
}

nn_module *nn_linear_layer(nn_ctx *ctx, int in_features, int out_features, nn_init init) {
    const char *fn = "nn_linear_layer";
    if (check_init(fn, ctx, init)) return NULL;
    if (in_features < 1 || out_features < 1)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: features must be >= 1, got in %d out %d", fn,
                            in_features, out_features);
    nn_module *m = nn_module_alloc(ctx, "Linear", linear_forward);
    if (!m) return NULL;
    int64_t shape[2] = {out_features, in_features};
    return with_weight_and_bias(m, 2, shape, init);
}

static nn_tensor *conv2d_forward(nn_module *m, nn_tensor *x) {
    return nn_conv2d(x, m->params.tensors[0], m->params.tensors[1], m->stride, m->padding);
}

nn_module *nn_conv2d_layer(nn_ctx *ctx, int in_channels, int out_channels, int kernel_size,
                           int stride, int padding, nn_init init) {
    const char *fn = "nn_conv2d_layer";
    if (check_init(fn, ctx, init)) return NULL;
    if (in_channels < 1 || out_channels < 1 || kernel_size < 1 || stride < 1 || padding < 0)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT,
                            "%s: need channels, kernel_size, stride >= 1 and padding >= 0; got "
                            "in %d out %d kernel %d stride %d padding %d",
                            fn, in_channels, out_channels, kernel_size, stride, padding);
    nn_module *m = nn_module_alloc(ctx, "Conv2d", conv2d_forward);
    if (!m) return NULL;
    m->kernel = kernel_size;
    m->stride = stride;
    m->padding = padding;
    int64_t shape[4] = {out_channels, in_channels, kernel_size, kernel_size};
    return with_weight_and_bias(m, 4, shape, init);
}

static nn_tensor *maxpool2d_forward(nn_module *m, nn_tensor *x) {
    return nn_maxpool2d(x, m->kernel, m->stride);
}

nn_module *nn_maxpool2d_layer(nn_ctx *ctx, int kernel_size, int stride) {
    if (!ctx) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_maxpool2d_layer: ctx is NULL");
    if (kernel_size < 1 || stride < 1)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_maxpool2d_layer: kernel_size and stride must be >= 1, got %d and %d",
                            kernel_size, stride);
    nn_module *m = nn_module_alloc(ctx, "MaxPool2d", maxpool2d_forward);
    if (m) {
        m->kernel = kernel_size;
        m->stride = stride;
    }
    return m;
}

static nn_tensor *flatten_forward(nn_module *m, nn_tensor *x) { return nn_flatten(x); }
static nn_tensor *relu_forward(nn_module *m, nn_tensor *x) { return nn_relu(x); }

nn_module *nn_flatten_layer(nn_ctx *ctx) {
    if (!ctx) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_flatten_layer: ctx is NULL");
    return nn_module_alloc(ctx, "Flatten", flatten_forward);
}

nn_module *nn_relu_layer(nn_ctx *ctx) {
    if (!ctx) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_relu_layer: ctx is NULL");
    return nn_module_alloc(ctx, "ReLU", relu_forward);
}
