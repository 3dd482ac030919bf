/* MobileNetV2 (width 1.0) as torchvision.models.mobilenet_v2 builds it:
 * features.0 (Conv2dNormActivation 3->32, stride 2), features.1 ..
 * features.17 (InvertedResidual blocks, their layers under conv.0, conv.1,
 * ...), features.18 (1x1 to 1280), a global average pool, then
 * classifier.0 Dropout(0.2) and classifier.1 Linear; ReLU6 throughout.
 * Names and shapes are torchvision's state_dict, so its weights load
 * strictly; initialisation is its own (kaiming_normal_ fan_out
 * convolutions, BatchNorm 1 and 0, Linear N(0, 0.01) with zero bias). */
#include "zoo_parts.h"

#include <stdio.h>

#include "base/error.h"

/* Conv2dNormActivation: 0 Conv2d (bias=False), 1 BatchNorm2d, 2 ReLU6. */
static nn_module *conv_bn_relu6(nn_ctx *ctx, int in_channels, int out_channels, int kernel, int stride, int groups) {
    nn_module *seq = nn_sequential(ctx);
    nn_status st = NN_OK;
    nn_zoo_add(seq, "0", nn_zoo_conv(ctx, in_channels, out_channels, kernel, stride, groups), &st);
    nn_zoo_add(seq, "1", nn_zoo_batchnorm(ctx, out_channels), &st);
    nn_zoo_add(seq, "2", nn_zoo_relu6(ctx), &st);
    return nn_zoo_finish(seq, st);
}

/* A block's data is this flag's address when it adds its input
 * (torchvision's use_res_connect: stride 1, as many channels out as in). */
static const bool kAddsInput = true;

static nn_tensor *inverted_residual_forward(nn_module *self, nn_tensor *x) {
    nn_tensor *out = nn_module_forward(nn_module_child(self, "conv"), x);
    return out && nn_module_data(self) ? nn_add(x, out) : out;
}

/* InvertedResidual(inp, oup, stride, expand_ratio): conv = [1x1 expansion
 * to inp * t (when t != 1)], 3x3 depthwise with the stride, 1x1 projection
 * to oup (no activation), BatchNorm. */
static nn_module *inverted_residual(nn_ctx *ctx, int in_channels, int out_channels, int stride, int expand_ratio) {
    const int hidden = in_channels * expand_ratio;
    const bool adds_input = stride == 1 && in_channels == out_channels;
    nn_module *block = nn_module_new(ctx, "InvertedResidual", inverted_residual_forward,
                                     adds_input ? (void *)&kAddsInput : NULL, NULL);
    nn_module *conv = block ? nn_sequential(ctx) : NULL;
    nn_status st = NN_OK;
    int next = 0;
    char name[12];
#define NEXT_NAME() (snprintf(name, sizeof name, "%d", next++), name)
    if (expand_ratio != 1) nn_zoo_add(conv, NEXT_NAME(), conv_bn_relu6(ctx, in_channels, hidden, 1, 1, 1), &st);
    nn_zoo_add(conv, NEXT_NAME(), conv_bn_relu6(ctx, hidden, hidden, 3, stride, hidden), &st);
    nn_zoo_add(conv, NEXT_NAME(), nn_zoo_conv(ctx, hidden, out_channels, 1, 1, 1), &st);
    nn_zoo_add(conv, NEXT_NAME(), nn_zoo_batchnorm(ctx, out_channels), &st);
#undef NEXT_NAME
    nn_zoo_add(block, "conv", nn_zoo_finish(conv, st), &st);
    return nn_zoo_finish(block, st);
}

/* torchvision's inverted_residual_setting: expansion t, channels c,
 * repeats n, stride of the first s. */
static const struct { int t, c, n, s; } kSettings[7] = {
    {1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2}, {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1},
};

static nn_module *features(nn_ctx *ctx) {
    nn_module *seq = nn_sequential(ctx);
    nn_status st = NN_OK;
    nn_zoo_add(seq, "0", conv_bn_relu6(ctx, 3, 32, 3, 2, 1), &st);
    int channels = 32, index = 1;
    char name[12];
    for (int i = 0; i < 7; i++) {
        for (int r = 0; r < kSettings[i].n; r++, index++) {
            snprintf(name, sizeof name, "%d", index);
            nn_zoo_add(seq, name, st == NN_OK ? inverted_residual(ctx, channels, kSettings[i].c, r == 0 ? kSettings[i].s : 1,
                                                                  kSettings[i].t)
                                              : NULL, &st);
            channels = kSettings[i].c;
        }
    }
    snprintf(name, sizeof name, "%d", index);
    nn_zoo_add(seq, name, conv_bn_relu6(ctx, channels, 1280, 1, 1, 1), &st);
    return nn_zoo_finish(seq, st);
}

static nn_module *classifier(nn_ctx *ctx, int classes) {
    nn_module *seq = nn_sequential(ctx);
    nn_status st = NN_OK;
    nn_module *linear = nn_linear_layer(ctx, 1280, classes, NN_INIT_KAIMING_UNIFORM);
    if (linear && (nn_init_normal(nn_module_param(linear, 0), 0.0f, 0.01f) != NN_OK ||
                   nn_init_uniform(nn_module_param(linear, 1), 0.0f, 0.0f) != NN_OK)) {
        nn_module_free(linear);
        linear = NULL;
    }
    nn_zoo_add(seq, "0", nn_dropout_layer(ctx, 0.2f), &st);
    nn_zoo_add(seq, "1", linear, &st);
    return nn_zoo_finish(seq, st);
}

static nn_tensor *mobilenet_v2_forward(nn_module *self, nn_tensor *x) {
    nn_tensor *h = nn_module_forward(nn_module_child(self, "features"), x);
    h = h ? nn_adaptive_avgpool2d(h, 1, 1) : NULL;
    return h ? nn_module_forward(nn_module_child(self, "classifier"), nn_flatten(h)) : NULL;
}

nn_module *nn_mobilenet_v2(nn_ctx *ctx, int num_classes) {
    if (!ctx) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_mobilenet_v2: ctx is NULL");
    if (num_classes < 1)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_mobilenet_v2: num_classes must be >= 1, got %d", num_classes);
    nn_module *net = nn_module_new(ctx, "MobileNetV2", mobilenet_v2_forward, NULL, NULL);
    nn_status st = NN_OK;
    nn_zoo_add(net, "features", net ? features(ctx) : NULL, &st);
    nn_zoo_add(net, "classifier", st == NN_OK ? classifier(ctx, num_classes) : NULL, &st);
    return nn_zoo_finish(net, st);
}
