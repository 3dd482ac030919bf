/* Layers (modules), a sequential container, initialisers and the model zoo.
 * A module owns its parameters (persistent tensors that require grad);
 * nn_module_free frees them. Parameter names follow PyTorch's state_dict
 * ("weight", "bias", and "<child>.<name>" inside containers). */
#ifndef NN_LAYERS_H
#define NN_LAYERS_H

#include "nn_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nn_module nn_module;

typedef enum nn_init {
    NN_INIT_KAIMING_UNIFORM = 0, /* PyTorch's default for Linear and Conv2d */
    NN_INIT_XAVIER_UNIFORM = 1   /* the seed engine's: Xavier weights, zero bias */
} nn_init;

/* Initialisers draw from the tensor's context generator (nn_ctx_manual_seed).
 * Fans follow PyTorch: fan_in = shape[1] * receptive field, fan_out = shape[0]
 * * receptive field, for tensors of 2 or more dimensions. */
nn_status nn_init_uniform(nn_tensor *t, float low, float high);
nn_status nn_init_xavier_uniform(nn_tensor *t, float gain);
/* kaiming_uniform_(t, a, mode="fan_in", nonlinearity="leaky_relu"). */
nn_status nn_init_kaiming_uniform(nn_tensor *t, float a);

nn_module *nn_linear_layer(nn_ctx *ctx, int in_features, int out_features, nn_init init);
nn_module *nn_conv2d_layer(nn_ctx *ctx, int in_channels, int out_channels, int kernel_size,
                           int stride, int padding, nn_init init);
nn_module *nn_maxpool2d_layer(nn_ctx *ctx, int kernel_size, int stride);
nn_module *nn_flatten_layer(nn_ctx *ctx);
nn_module *nn_relu_layer(nn_ctx *ctx);

/* A container running its children in order. */
nn_module *nn_sequential(nn_ctx *ctx);
/* Append `child` under `name` (letters, digits, '_'; unique). The container
 * takes ownership of child in every case: on failure child is freed. A NULL
 * child (a failed constructor) is reported with the constructor's message. */
nn_status nn_sequential_append(nn_module *seq, const char *name, nn_module *child);

nn_tensor *nn_module_forward(nn_module *m, nn_tensor *x);
/* "Linear", "Conv2d", "MaxPool2d", "Flatten", "ReLU", "Sequential". */
const char *nn_module_kind(const nn_module *m);
int nn_module_param_count(const nn_module *m);
/* Borrowed; NULL when i is out of range. */
nn_tensor *nn_module_param(const nn_module *m, int i);
const char *nn_module_param_name(const nn_module *m, int i);
void nn_module_free(nn_module *m);

/* LeNet-5 as in the seed: c1 conv 1->6 k5, relu, pool 2; c2 conv 6->16 k5,
 * relu, pool 2; flatten; l1 256->120 relu; l2 120->84 relu; l3 84->10.
 * Input [N, 1, 28, 28], output logits [N, 10]. */
nn_module *nn_lenet5(nn_ctx *ctx, nn_init init);
/* The same with `classes` outputs. */
nn_module *nn_lenet5_classes(nn_ctx *ctx, int classes, nn_init init);

/* A multilayer perceptron: flatten; then l1, relu1, l2, relu2, ... through
 * the hidden widths; the last linear layer has `classes` outputs (no relu).
 * Input [N, ...] with in_features elements per sample. */
nn_module *nn_mlp(nn_ctx *ctx, int in_features, const int *hidden, int hidden_count, int classes,
                  nn_init init);

#ifdef __cplusplus
}
#endif
#endif
