/* The layers of the convolution extensions: Conv2d with PyTorch's
 * arguments (rectangular kernels, dilation, groups, bias=False),
 * ConvTranspose2d and Upsample, made through the public module interface
 * (nn_module.h) with their arguments as the module's data. Parameters are
 * initialised as PyTorch's reset_parameters: weight kaiming_uniform(a =
 * sqrt 5), bias uniform(+-1 / sqrt(fan_in)), fan_in = weight.size(1) * kH * kW. */
#include <math.h>
#include <stdlib.h>

#include "module.h"

typedef struct conv_layer_args {
    nn_conv2d_params conv;
    nn_conv_transpose2d_params transpose;
    int out_h, out_w;
    double scale_h, scale_w;
    nn_interpolate_mode mode;
    bool align_corners;
} conv_layer_args;

static nn_tensor *param_or_null(nn_module *m, int i) { return i < nn_module_param_count(m) ? nn_module_param(m, i) : NULL; }

static nn_tensor *conv_forward(nn_module *m, nn_tensor *x) {
    const conv_layer_args *a = nn_module_data(m);
    return nn_conv2d_ex(x, nn_module_param(m, 0), param_or_null(m, 1), &a->conv);
}

static nn_tensor *transpose_forward(nn_module *m, nn_tensor *x) {
    const conv_layer_args *a = nn_module_data(m);
    return nn_conv_transpose2d(x, nn_module_param(m, 0), param_or_null(m, 1), &a->transpose);
}

static nn_tensor *upsample_forward(nn_module *m, nn_tensor *x) {
    const conv_layer_args *a = nn_module_data(m);
    return nn_interpolate(x, a->out_h, a->out_w, a->scale_h, a->scale_w, a->mode, a->align_corners);
}

/* weight (and bias [bias_size] when wanted), registered and initialised. */
static nn_module *with_parameters(nn_module *m, const int64_t weight_shape[4], int64_t bias_size, bool bias) {
    if (!m) return NULL;
    nn_ctx *ctx = nn_module_ctx(m);
    nn_tensor *w = nn_tensor_new(ctx, NN_F32, 4, weight_shape);
    nn_tensor *b = w && bias ? nn_tensor_new(ctx, NN_F32, 1, &bias_size) : NULL;
    nn_status st = w && (b || !bias) ? nn_init_kaiming_uniform(w, sqrtf(5.0f)) : nn_last_status();
    const float bound = (float)(1.0 / sqrt((double)(weight_shape[1] * weight_shape[2] * weight_shape[3])));
    if (st == NN_OK && b) st = nn_init_uniform(b, -bound, bound);
    if (st == NN_OK) st = nn_module_register_parameter(m, "weight", w);
    if (st == NN_OK && b) st = nn_module_register_parameter(m, "bias", b);
    nn_tensor_free(w);
    nn_tensor_free(b);
    if (st != NN_OK) {
        nn_module_free(m);
        return NULL;
    }
    return m;
}

/* The layer's arguments, after the checks both layers share. */
static conv_layer_args *checked_args(const char *fn, nn_ctx *ctx, bool have_params, int in_channels,
                                     int out_channels, int kernel_h, int kernel_w, int groups) {
    if (!ctx || !have_params) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: %s is NULL", fn, ctx ? "params" : "ctx");
    if (in_channels < 1 || out_channels < 1 || kernel_h < 1 || kernel_w < 1 || groups < 1 ||
        in_channels % groups || out_channels % groups)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: need channels and kernel sizes >= 1 and groups dividing both "
                            "channel counts; got in %d out %d kernel %dx%d groups %d", fn, in_channels,
                            out_channels, kernel_h, kernel_w, groups);
    conv_layer_args *a = calloc(1, sizeof *a);
    if (!a) return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of memory", fn);
    return a;
}

nn_module *nn_conv2d_layer_ex(nn_ctx *ctx, int in_channels, int out_channels, int kernel_h, int kernel_w,
                              const nn_conv2d_params *params, bool bias) {
    const char *fn = "nn_conv2d_layer_ex";
    const int groups = params && params->groups ? params->groups : 1;
    conv_layer_args *a = checked_args(fn, ctx, params != NULL, in_channels, out_channels, kernel_h, kernel_w, groups);
    if (!a) return NULL;
    a->conv = *params;
    const int64_t shape[4] = {out_channels, in_channels / groups, kernel_h, kernel_w};
    return with_parameters(nn_module_new(ctx, "Conv2d", conv_forward, a, free), shape, out_channels, bias);
}

nn_module *nn_conv_transpose2d_layer(nn_ctx *ctx, int in_channels, int out_channels, int kernel_h, int kernel_w,
                                     const nn_conv_transpose2d_params *params, bool bias) {
    const char *fn = "nn_conv_transpose2d_layer";
    const int groups = params && params->groups ? params->groups : 1;
    conv_layer_args *a = checked_args(fn, ctx, params != NULL, in_channels, out_channels, kernel_h, kernel_w, groups);
    if (!a) return NULL;
    a->transpose = *params;
    const int64_t shape[4] = {in_channels, out_channels / groups, kernel_h, kernel_w};
    return with_parameters(nn_module_new(ctx, "ConvTranspose2d", transpose_forward, a, free), shape, out_channels,
                           bias);
}

nn_module *nn_upsample_layer(nn_ctx *ctx, int out_h, int out_w, double scale_h, double scale_w,
                             nn_interpolate_mode mode, bool align_corners) {
    if (!ctx) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_upsample_layer: ctx is NULL");
    conv_layer_args *a = calloc(1, sizeof *a);
    if (!a) return NN_FAIL_NULL(NN_ERR_MEMORY, "nn_upsample_layer: out of memory");
    *a = (conv_layer_args){.out_h = out_h, .out_w = out_w, .scale_h = scale_h, .scale_w = scale_w, .mode = mode,
                           .align_corners = align_corners};
    return nn_module_new(ctx, "Upsample", upsample_forward, a, free);
}
