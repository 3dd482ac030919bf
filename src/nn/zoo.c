/* Ready-made models. */
#include "module.h"

nn_module *nn_lenet5(nn_ctx *ctx, nn_init init) {
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
    APPEND("l3", nn_linear_layer(ctx, 84, 10, init));
#undef APPEND
    if (status != NN_OK) {
        nn_module_free(net);
        return NULL;
    }
    return net;
}
