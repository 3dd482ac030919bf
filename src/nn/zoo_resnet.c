/* ResNets as torchvision.models builds them (resnet18, resnet34 with
 * BasicBlock; resnet50 with Bottleneck, v1.5: the stride on the 3x3), with
 * its module tree and state_dict names ("layer2.0.downsample.1.running_var"),
 * so torchvision's weights load strictly, and its initialisation
 * (kaiming_normal_ fan_out convolutions, BatchNorm 1 and 0, PyTorch's
 * default Linear; zero_init_residual off). resnet18-cifar is the same
 * network with a 3x3 stride-1 stem and no max pool, for small images. */
#include "zoo_parts.h"

#include <stdio.h>

#include "base/error.h"

typedef enum block_kind { BASIC_BLOCK, BOTTLENECK } block_kind;

/* Output channels of a block over `planes`: torchvision's `expansion`. */
static int expansion(block_kind kind) { return kind == BOTTLENECK ? 4 : 1; }

/* The shortcut: x itself, or downsample(x) where the shape changes. */
static nn_tensor *identity(nn_module *self, nn_tensor *x) {
    nn_module *down = nn_module_child(self, "downsample");
    return down ? nn_module_forward(down, x) : x;
}

static nn_tensor *residual_sum(nn_module *self, nn_tensor *out, nn_tensor *shortcut) {
    return out && shortcut ? nn_zoo_child(self, "relu", nn_add(out, shortcut)) : NULL;
}

static nn_tensor *basic_block_forward(nn_module *self, nn_tensor *x) {
    nn_tensor *out = nn_zoo_child(self, "relu", nn_zoo_child(self, "bn1", nn_zoo_child(self, "conv1", x)));
    out = nn_zoo_child(self, "bn2", nn_zoo_child(self, "conv2", out));
    return residual_sum(self, out, identity(self, x));
}

static nn_tensor *bottleneck_forward(nn_module *self, nn_tensor *x) {
    nn_tensor *out = nn_zoo_child(self, "relu", nn_zoo_child(self, "bn1", nn_zoo_child(self, "conv1", x)));
    out = nn_zoo_child(self, "relu", nn_zoo_child(self, "bn2", nn_zoo_child(self, "conv2", out)));
    out = nn_zoo_child(self, "bn3", nn_zoo_child(self, "conv3", out));
    return residual_sum(self, out, identity(self, x));
}

/* One block from in_channels to planes * expansion, the first of a layer
 * downsampling (conv1x1 with the stride, then BatchNorm) where the shape changes. */
static nn_module *block(nn_ctx *ctx, block_kind kind, int in_channels, int planes, int stride) {
    const int out_channels = planes * expansion(kind);
    nn_module *b = kind == BOTTLENECK ? nn_module_new(ctx, "Bottleneck", bottleneck_forward, NULL, NULL)
                                      : nn_module_new(ctx, "BasicBlock", basic_block_forward, NULL, NULL);
    if (!b) return NULL;
    nn_status st = NN_OK;
    if (kind == BOTTLENECK) {
        nn_zoo_add(b, "conv1", nn_zoo_conv(ctx, in_channels, planes, 1, 1, 1), &st);
        nn_zoo_add(b, "bn1", nn_zoo_batchnorm(ctx, planes), &st);
        nn_zoo_add(b, "conv2", nn_zoo_conv(ctx, planes, planes, 3, stride, 1), &st);
        nn_zoo_add(b, "bn2", nn_zoo_batchnorm(ctx, planes), &st);
        nn_zoo_add(b, "conv3", nn_zoo_conv(ctx, planes, out_channels, 1, 1, 1), &st);
        nn_zoo_add(b, "bn3", nn_zoo_batchnorm(ctx, out_channels), &st);
        nn_zoo_add(b, "relu", nn_relu_layer(ctx), &st);
    } else {
        nn_zoo_add(b, "conv1", nn_zoo_conv(ctx, in_channels, planes, 3, stride, 1), &st);
        nn_zoo_add(b, "bn1", nn_zoo_batchnorm(ctx, planes), &st);
        nn_zoo_add(b, "relu", nn_relu_layer(ctx), &st);
        nn_zoo_add(b, "conv2", nn_zoo_conv(ctx, planes, planes, 3, 1, 1), &st);
        nn_zoo_add(b, "bn2", nn_zoo_batchnorm(ctx, planes), &st);
    }
    if (stride != 1 || in_channels != out_channels) {
        nn_module *down = st == NN_OK ? nn_sequential(ctx) : NULL;
        nn_zoo_add(down, "0", nn_zoo_conv(ctx, in_channels, out_channels, 1, stride, 1), &st);
        nn_zoo_add(down, "1", nn_zoo_batchnorm(ctx, out_channels), &st);
        nn_zoo_add(b, "downsample", nn_zoo_finish(down, st), &st);
    }
    return nn_zoo_finish(b, st);
}

/* layerN: `blocks` blocks, the first with the stride. *in_channels becomes
 * the layer's output channels. */
static nn_module *layer(nn_ctx *ctx, block_kind kind, int *in_channels, int planes, int blocks, int stride) {
    nn_module *seq = nn_sequential(ctx);
    if (!seq) return NULL;
    nn_status st = NN_OK;
    char name[16];
    for (int i = 0; i < blocks; i++) {
        snprintf(name, sizeof name, "%d", i);
        nn_zoo_add(seq, name, block(ctx, kind, *in_channels, planes, i == 0 ? stride : 1), &st);
        *in_channels = planes * expansion(kind);
    }
    return nn_zoo_finish(seq, st);
}

static nn_tensor *resnet_forward(nn_module *self, nn_tensor *x) {
    nn_tensor *h = nn_zoo_child(self, "relu", nn_zoo_child(self, "bn1", nn_zoo_child(self, "conv1", x)));
    if (nn_module_child(self, "maxpool")) h = nn_zoo_child(self, "maxpool", h);
    static const char *const layers[4] = {"layer1", "layer2", "layer3", "layer4"};
    for (int i = 0; i < 4; i++) h = nn_zoo_child(self, layers[i], h);
    h = nn_zoo_child(self, "avgpool", h);
    return nn_zoo_child(self, "fc", h ? nn_flatten(h) : NULL);
}

/* The network: a 7x7/2 stem and max pool 3/2 (torchvision's), or a 3x3/1
 * stem without the pool (small_images); then layer1..layer4 with 64, 128,
 * 256, 512 planes, global average pool and fc. */
static nn_module *resnet(const char *fn, nn_ctx *ctx, block_kind kind, const int blocks[4], int in_channels,
                         bool small_images, int classes) {
    if (!ctx) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: ctx is NULL", fn);
    if (classes < 1) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: num_classes must be >= 1, got %d", fn, classes);
    if (in_channels < 1)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: in_channels must be >= 1, got %d", fn, in_channels);
    nn_module *net = nn_module_new(ctx, "ResNet", resnet_forward, NULL, NULL);
    if (!net) return NULL;
    nn_status st = NN_OK;
    nn_zoo_add(net, "conv1", small_images ? nn_zoo_conv(ctx, in_channels, 64, 3, 1, 1)
                                          : nn_zoo_conv(ctx, in_channels, 64, 7, 2, 1), &st);
    nn_zoo_add(net, "bn1", nn_zoo_batchnorm(ctx, 64), &st);
    nn_zoo_add(net, "relu", nn_relu_layer(ctx), &st);
    if (!small_images) nn_zoo_add(net, "maxpool", nn_zoo_maxpool(ctx, 3, 2, 1), &st);
    int channels = 64;
    static const char *const names[4] = {"layer1", "layer2", "layer3", "layer4"};
    for (int i = 0; i < 4; i++)
        nn_zoo_add(net, names[i], st == NN_OK ? layer(ctx, kind, &channels, 64 << i, blocks[i], i == 0 ? 1 : 2) : NULL,
                   &st);
    nn_zoo_add(net, "avgpool", nn_zoo_global_avgpool(ctx), &st);
    nn_zoo_add(net, "fc", nn_linear_layer(ctx, 512 * expansion(kind), classes, NN_INIT_KAIMING_UNIFORM), &st);
    return nn_zoo_finish(net, st);
}

static const int kResNet18[4] = {2, 2, 2, 2}, kResNet34[4] = {3, 4, 6, 3}, kResNet50[4] = {3, 4, 6, 3};

nn_module *nn_resnet18(nn_ctx *ctx, int num_classes) {
    return resnet("nn_resnet18", ctx, BASIC_BLOCK, kResNet18, 3, false, num_classes);
}

nn_module *nn_resnet34(nn_ctx *ctx, int num_classes) {
    return resnet("nn_resnet34", ctx, BASIC_BLOCK, kResNet34, 3, false, num_classes);
}

nn_module *nn_resnet50(nn_ctx *ctx, int num_classes) {
    return resnet("nn_resnet50", ctx, BOTTLENECK, kResNet50, 3, false, num_classes);
}

nn_module *nn_resnet18_cifar(nn_ctx *ctx, int in_channels, int num_classes) {
    return resnet("nn_resnet18_cifar", ctx, BASIC_BLOCK, kResNet18, in_channels, true, num_classes);
}
