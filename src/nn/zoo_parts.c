/* The zoo's shared parts (zoo_parts.h). */
#include "zoo_parts.h"

#include <math.h>

#include "base/error.h"

nn_module *nn_zoo_conv(nn_ctx *ctx, int in_channels, int out_channels, int kernel, int stride, int groups) {
    const int pad = (kernel - 1) / 2;
    const nn_conv2d_params p = {.stride_h = stride, .stride_w = stride, .pad_h = pad, .pad_w = pad, .groups = groups};
    nn_module *conv = nn_conv2d_layer_ex(ctx, in_channels, out_channels, kernel, kernel, &p, false);
    if (!conv) return NULL;
    const double fan_out = (double)out_channels * kernel * kernel;
    if (nn_init_normal(nn_module_param(conv, 0), 0.0f, (float)sqrt(2.0 / fan_out)) != NN_OK) {
        nn_module_free(conv);
        return NULL;
    }
    return conv;
}

nn_module *nn_zoo_batchnorm(nn_ctx *ctx, int channels) {
    return nn_batchnorm2d(ctx, channels, 1e-5f, 0.1f, true, true);
}

static nn_tensor *relu6_forward(nn_module *m, nn_tensor *x) {
    (void)m;
    return nn_relu6(x);
}

nn_module *nn_zoo_relu6(nn_ctx *ctx) { return nn_module_new(ctx, "ReLU6", relu6_forward, NULL, NULL); }

static nn_tensor *maxpool_forward(nn_module *m, nn_tensor *x) {
    return nn_maxpool2d_ex(x, m->kernel, m->stride, m->padding);
}

nn_module *nn_zoo_maxpool(nn_ctx *ctx, int kernel, int stride, int padding) {
    nn_module *m = nn_module_new(ctx, "MaxPool2d", maxpool_forward, NULL, NULL);
    if (m) {
        m->kernel = kernel;
        m->stride = stride;
        m->padding = padding;
    }
    return m;
}

static nn_tensor *global_avgpool_forward(nn_module *m, nn_tensor *x) {
    (void)m;
    return nn_adaptive_avgpool2d(x, 1, 1);
}

static nn_tensor *gelu_forward(nn_module *m, nn_tensor *x) {
    (void)m;
    return nn_gelu(x, false);
}

nn_module *nn_zoo_gelu(nn_ctx *ctx) { return nn_module_new(ctx, "GELU", gelu_forward, NULL, NULL); }

nn_module *nn_zoo_global_avgpool(nn_ctx *ctx) {
    return nn_module_new(ctx, "AdaptiveAvgPool2d", global_avgpool_forward, NULL, NULL);
}

nn_tensor *nn_zoo_child(nn_module *self, const char *name, nn_tensor *x) {
    return x ? nn_module_forward(nn_module_child(self, name), x) : NULL;
}

void nn_zoo_add(nn_module *parent, const char *name, nn_module *child, nn_status *status) {
    if (*status == NN_OK && !parent) *status = nn_last_status(); /* its constructor's error */
    if (*status != NN_OK) {
        nn_module_free(child);
        return;
    }
    *status = nn_module_add_child(parent, name, child); /* frees child on failure */
}

nn_module *nn_zoo_finish(nn_module *m, nn_status status) {
    if (status == NN_OK) return m;
    nn_module_free(m);
    return NULL;
}

static nn_tensor *linear_forward(nn_module *m, nn_tensor *x) {
    return nn_linear(x, nn_module_get_parameter(m, "weight"), nn_module_get_parameter(m, "bias"));
}

nn_module *nn_zoo_linear(nn_ctx *ctx, int in_features, int out_features, bool bias) {
    if (bias) return nn_linear_layer(ctx, in_features, out_features, NN_INIT_KAIMING_UNIFORM);
    if (in_features < 1 || out_features < 1)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "Linear: features must be >= 1, got in %d out %d", in_features,
                            out_features);
    nn_module *m = nn_module_new(ctx, "Linear", linear_forward, NULL, NULL);
    if (!m) return NULL;
    nn_tensor *weight = nn_tensor_new(ctx, NN_F32, 2, (const int64_t[]){out_features, in_features});
    nn_status st = weight ? nn_init_kaiming_uniform(weight, sqrtf(5.0f)) : nn_last_status();
    if (st == NN_OK) st = nn_module_register_parameter(m, "weight", weight);
    nn_tensor_free(weight);
    return nn_zoo_finish(m, st);
}

static nn_tensor *container_forward(nn_module *self, nn_tensor *x) {
    (void)x;
    return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: holds a model's parts and is not called on its own",
                        nn_module_kind(self));
}

nn_module *nn_zoo_container(nn_ctx *ctx, const char *kind) {
    return nn_module_new(ctx, kind, container_forward, NULL, NULL);
}
