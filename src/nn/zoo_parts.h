/* Parts the torchvision-style zoo models share (zoo_resnet.c,
 * zoo_mobilenet.c): convolutions initialised as torchvision's, and the
 * parameterless layers they name (ReLU6, padded MaxPool2d,
 * AdaptiveAvgPool2d). Private to the library. */
#ifndef NN_ZOO_PARTS_H
#define NN_ZOO_PARTS_H

#include "module.h"

/* Conv2d(in, out, kernel, stride, padding = (kernel - 1) / 2, groups,
 * bias=False) with torchvision's initialisation: kaiming_normal_(mode =
 * "fan_out", nonlinearity = "relu"), std = sqrt(2 / (out * kernel^2)). */
nn_module *nn_zoo_conv(nn_ctx *ctx, int in_channels, int out_channels, int kernel, int stride, int groups);
/* BatchNorm2d with PyTorch's defaults (eps 1e-5, momentum 0.1): weight 1, bias 0. */
nn_module *nn_zoo_batchnorm(nn_ctx *ctx, int channels);
nn_module *nn_zoo_relu6(nn_ctx *ctx);
/* MaxPool2d(kernel, stride, padding). */
nn_module *nn_zoo_maxpool(nn_ctx *ctx, int kernel, int stride, int padding);
/* AdaptiveAvgPool2d((1, 1)). */
nn_module *nn_zoo_global_avgpool(nn_ctx *ctx);

/* Linear(in, out, bias) with PyTorch's initialisation (nn_linear_layer's
 * Kaiming); without bias, a Linear of a weight alone. */
nn_module *nn_zoo_linear(nn_ctx *ctx, int in_features, int out_features, bool bias);
/* GELU (exact) as a module: the transformers' MLPs. */
nn_module *nn_zoo_gelu(nn_ctx *ctx);

/* A module that only holds children (torch's ModuleDict, ModuleList): its
 * forward refuses, its owner calls the children. */
nn_module *nn_zoo_container(nn_ctx *ctx, const char *kind);

/* The named child's output for x, or NULL when x already is (an earlier
 * error): lets a forward chain its children without a check per call. */
nn_tensor *nn_zoo_child(nn_module *self, const char *name, nn_tensor *x);

/* Adds children in order while *status is NN_OK; once it is not, frees
 * each further child (constructors may have succeeded) and keeps the first
 * error. Lets a builder list its children without a check per line. */
void nn_zoo_add(nn_module *parent, const char *name, nn_module *child, nn_status *status);

/* The module on success; otherwise frees it and returns NULL (the error is
 * already set). */
nn_module *nn_zoo_finish(nn_module *m, nn_status status);

#endif
