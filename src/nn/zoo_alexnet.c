/* AlexNet in two forms: the seed's (5 convolutions, a
 * 9216-512-512-classes classifier, no dropout; parameter names c1..c5,
 * l1..l3 as the seed's script) and torchvision's (torchvision.models.alexnet:
 * features / avgpool / classifier with its state_dict names, so weights
 * load into torchvision's model with strict=True). Both take [N, 3, 224, 224]. */
#include "module.h"

#include <stdio.h>

#include "base/error.h"

#define APPEND(seq, name, layer) \
    if (status == NN_OK) status = nn_sequential_append(seq, name, layer)

/* The five convolutions with their ReLUs and three pools, appended to `seq`
 * under the given names (NULL for a pool: `pools` names those). */
static nn_status append_features(nn_ctx *ctx, nn_module *seq, nn_init init, const char *const names[13]) {
    nn_status status = NN_OK;
    APPEND(seq, names[0], nn_conv2d_layer(ctx, 3, 64, 11, 4, 2, init));
    APPEND(seq, names[1], nn_relu_layer(ctx));
    APPEND(seq, names[2], nn_maxpool2d_layer(ctx, 3, 2));
    APPEND(seq, names[3], nn_conv2d_layer(ctx, 64, 192, 5, 1, 2, init));
    APPEND(seq, names[4], nn_relu_layer(ctx));
    APPEND(seq, names[5], nn_maxpool2d_layer(ctx, 3, 2));
    APPEND(seq, names[6], nn_conv2d_layer(ctx, 192, 384, 3, 1, 1, init));
    APPEND(seq, names[7], nn_relu_layer(ctx));
    APPEND(seq, names[8], nn_conv2d_layer(ctx, 384, 256, 3, 1, 1, init));
    APPEND(seq, names[9], nn_relu_layer(ctx));
    APPEND(seq, names[10], nn_conv2d_layer(ctx, 256, 256, 3, 1, 1, init));
    APPEND(seq, names[11], nn_relu_layer(ctx));
    APPEND(seq, names[12], nn_maxpool2d_layer(ctx, 3, 2));
    return status;
}

static nn_module *finish(nn_module *net, nn_status status) {
    if (status == NN_OK) return net;
    nn_module_free(net);
    return NULL;
}

nn_module *nn_alexnet(nn_ctx *ctx, int classes, nn_init init) {
    if (classes < 1)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_alexnet: classes must be >= 1, got %d", classes);
    nn_module *net = nn_sequential(ctx);
    if (!net) return NULL;
    static const char *const names[13] = {"c1", "relu1", "pool1", "c2", "relu2", "pool2", "c3",
                                          "relu3", "c4", "relu4", "c5", "relu5", "pool3"};
    nn_status status = append_features(ctx, net, init, names);
    APPEND(net, "flatten", nn_flatten_layer(ctx));
    APPEND(net, "l1", nn_linear_layer(ctx, 256 * 6 * 6, 512, init));
    APPEND(net, "relu6", nn_relu_layer(ctx));
    APPEND(net, "l2", nn_linear_layer(ctx, 512, 512, init));
    APPEND(net, "relu7", nn_relu_layer(ctx));
    APPEND(net, "l3", nn_linear_layer(ctx, 512, classes, init));
    return finish(net, status);
}

/* torchvision's AdaptiveAvgPool2d((6, 6)). At the 224 x 224 input both
 * forms are built for, the features are already 6 x 6 and the pool is the
 * identity (a view: no kernel, and ONNX export gets a Reshape); other input
 * sizes average adaptively, as torchvision's does. */
static nn_tensor *avgpool6_forward(nn_module *m, nn_tensor *x) {
    int64_t shape[4];
    if (nn_tensor_ndim(x) != 4)
        return NN_FAIL_NULL(NN_ERR_SHAPE, "nn_alexnet_tv avgpool: input must be 4-D, got %d-D", nn_tensor_ndim(x));
    for (int i = 0; i < 4; i++) shape[i] = nn_tensor_dim(x, i);
    if (shape[2] != 6 || shape[3] != 6) return nn_adaptive_avgpool2d(x, 6, 6);
    return nn_reshape(x, 4, shape);
}

nn_module *nn_alexnet_tv(nn_ctx *ctx, int classes, nn_init init) {
    if (classes < 1)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_alexnet_tv: classes must be >= 1, got %d", classes);
    nn_module *net = nn_sequential(ctx);
    nn_module *features = net ? nn_sequential(ctx) : NULL;
    nn_module *classifier = features ? nn_sequential(ctx) : NULL;
    nn_module *avgpool = classifier ? nn_module_alloc(ctx, "AdaptiveAvgPool2d", avgpool6_forward) : NULL;
    if (!avgpool) {
        nn_module_free(net);
        nn_module_free(features);
        nn_module_free(classifier);
        return NULL;
    }
    static const char *const names[13] = {"0", "1", "2", "3", "4", "5", "6",
                                          "7", "8", "9", "10", "11", "12"};
    nn_status status = append_features(ctx, features, init, names);
    APPEND(classifier, "0", nn_dropout_layer(ctx, 0.5f));
    APPEND(classifier, "1", nn_linear_layer(ctx, 256 * 6 * 6, 4096, init));
    APPEND(classifier, "2", nn_relu_layer(ctx));
    APPEND(classifier, "3", nn_dropout_layer(ctx, 0.5f));
    APPEND(classifier, "4", nn_linear_layer(ctx, 4096, 4096, init));
    APPEND(classifier, "5", nn_relu_layer(ctx));
    APPEND(classifier, "6", nn_linear_layer(ctx, 4096, classes, init));
    /* The containers take ownership even on failure (nn_sequential_append). */
    if (status == NN_OK) {
        status = nn_sequential_append(net, "features", features);
    } else {
        nn_module_free(features);
    }
    features = NULL;
    if (status == NN_OK) status = nn_sequential_append(net, "avgpool", avgpool);
    else nn_module_free(avgpool);
    APPEND(net, "flatten", nn_flatten_layer(ctx));
    if (status == NN_OK) status = nn_sequential_append(net, "classifier", classifier);
    else nn_module_free(classifier);
    return finish(net, status);
}
