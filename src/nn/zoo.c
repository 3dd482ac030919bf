/* Ready-made models. */
#include "module.h"

#include <stdio.h>

#include "base/error.h"

nn_module *nn_lenet5(nn_ctx *ctx, nn_init init) { return nn_lenet5_classes(ctx, 10, init); }

nn_module *nn_lenet5_classes(nn_ctx *ctx, int classes, nn_init init) {
    if (classes < 1)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_lenet5_classes: classes must be >= 1, got %d", classes);
    nn_module *net = nn_sequential(ctx);
    if (!net) return NULL;
    /* Names match the seed's LeNet class (and so a PyTorch port of it). */
    nn_status status = NN_OK;
#define APPEND(name, layer) \
    if (status == NN_OK) status = nn_sequential_append(net, name, layer)
    APPEND("c1", nn_conv2d_layer(ctx, 1, 6, 5, 1, 0, init));
    APPEND("relu1", nn_relu_layer(ctx));
    APPEND("pool1", nn_maxpool2d_layer(ctx, 2, 2));
    APPEND("c2", nn_conv2d_layer(ctx, 6, 16, 5, 1, 0, init));
    APPEND("relu2", nn_relu_layer(ctx));
    APPEND("pool2", nn_maxpool2d_layer(ctx, 2, 2));
    APPEND("flatten", nn_flatten_layer(ctx));
    APPEND("l1", nn_linear_layer(ctx, 16 * 4 * 4, 120, init));
    APPEND("relu3", nn_relu_layer(ctx));
    APPEND("l2", nn_linear_layer(ctx, 120, 84, init));
    APPEND("relu4", nn_relu_layer(ctx));
    APPEND("l3", nn_linear_layer(ctx, 84, classes, init));
#undef APPEND
    if (status != NN_OK) {
        nn_module_free(net);
        return NULL;
    }
    return net;
}

nn_module *nn_mlp(nn_ctx *ctx, int in_features, const int *hidden, int hidden_count, int classes,
                  nn_init init) {
    if (in_features < 1 || classes < 1 || hidden_count < 0 || (hidden_count > 0 && !hidden))
        return NN_FAIL_NULL(NN_ERR_ARGUMENT,
                            "nn_mlp: in_features %d, classes %d, hidden_count %d (need >= 1, >= 1, >= 0)",
                            in_features, classes, hidden_count);
    nn_module *net = nn_sequential(ctx);
    if (!net) return NULL;
    nn_status status = nn_sequential_append(net, "flatten", nn_flatten_layer(ctx));
    int width = in_features;
    char name[32];
    for (int i = 0; i <= hidden_count && status == NN_OK; i++) {
        int out = i < hidden_count ? hidden[i] : classes;
        snprintf(name, sizeof name, "l%d", i + 1);
        status = nn_sequential_append(net, name, nn_linear_layer(ctx, width, out, init));
        if (status == NN_OK && i < hidden_count) {
            snprintf(name, sizeof name, "relu%d", i + 1);
            status = nn_sequential_append(net, name, nn_relu_layer(ctx));
        }
        width = out;
    }
    if (status != NN_OK) {
        nn_module_free(net);
        return NULL;
    }
    return net;
}
