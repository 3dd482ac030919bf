/* The built-in layers, a sequential container, initialisers and the model
 * zoo: modules (nn_module.h) whose parameters are named as PyTorch's
 * ("weight", "bias", and "<child>.<name>" inside containers). */
#ifndef NN_LAYERS_H
#define NN_LAYERS_H

#include "nn_module.h"
#include "nn_ops.h"
#include "nn_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

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
/* Dropout with probability p in [0, 1) (nn_dropout): active while the module
 * is in training mode, the identity in evaluation mode. */
nn_module *nn_dropout_layer(nn_ctx *ctx, float p);

/* A container running its children in order. */
nn_module *nn_sequential(nn_ctx *ctx);
/* Append `child` under `name` (nn_module_add_child, refused for a module
 * that is not a Sequential). The container takes ownership of child in
 * every case: on failure child is freed. */
nn_status nn_sequential_append(nn_module *seq, const char *name, nn_module *child);

/* LeNet-5 as in the seed: c1 conv 1->6 k5, relu, pool 2; c2 conv 6->16 k5,
 * relu, pool 2; flatten; l1 256->120 relu; l2 120->84 relu; l3 84->10.
 * Input [N, 1, 28, 28], output logits [N, 10]. */
nn_module *nn_lenet5(nn_ctx *ctx, nn_init init);
/* The same with `classes` outputs. */
nn_module *nn_lenet5_classes(nn_ctx *ctx, int classes, nn_init init);

/* AlexNet, the seed's form: c1 conv 3->64 k11 s4 p2, relu1, pool1 (3/2);
 * c2 64->192 k5 p2, relu2, pool2; c3 192->384 k3 p1, relu3; c4 384->256,
 * relu4; c5 256->256, relu5, pool3; flatten; l1 9216->512, relu6; l2
 * 512->512, relu7; l3 512->classes. No dropout. Input [N, 3, 224, 224]. */
nn_module *nn_alexnet(nn_ctx *ctx, int classes, nn_init init);
/* AlexNet as torchvision.models.alexnet (1000 classes there): features.0 ..
 * features.12 (the same convolutions and pools), avgpool (AdaptiveAvgPool2d
 * 6: the identity at 224 x 224, an adaptive average at other sizes),
 * flatten, classifier.0 Dropout(0.5), .1 Linear 9216->4096, .2 ReLU, .3
 * Dropout(0.5), .4 4096->4096, .5 ReLU, .6 4096->classes. Parameter names are
 * torchvision's state_dict keys ("features.0.weight", "classifier.6.bias").
 * Call nn_module_set_training(net, false) for inference (dropout off). */
nn_module *nn_alexnet_tv(nn_ctx *ctx, int classes, nn_init init);

/* A multilayer perceptron: flatten; then l1, relu1, l2, relu2, ... through
 * the hidden widths; the last linear layer has `classes` outputs (no relu).
 * Input [N, ...] with in_features elements per sample. */
nn_module *nn_mlp(nn_ctx *ctx, int in_features, const int *hidden, int hidden_count, int classes,
                  nn_init init);

/* Normalisation layers with PyTorch's semantics and state_dict names.
 * BatchNorm1d takes [N, C] or [N, C, L], BatchNorm2d [N, C, H, W]: in
 * training mode (the default) they normalise with the batch's statistics
 * and, with track_running_stats, update running_mean (init 0) and
 * running_var (init 1) with momentum (PyTorch's default 0.1;
 * NN_BATCH_NORM_CUMULATIVE for momentum=None) and count
 * num_batches_tracked (int32 [1]); in evaluation mode they use the running
 * statistics (without them: the batch's). affine: weight (init 1) and bias
 * (init 0) [C]. PyTorch's eps default is 1e-5. */
nn_module *nn_batchnorm1d(nn_ctx *ctx, int channels, float eps, float momentum, bool affine, bool track_running_stats);
nn_module *nn_batchnorm2d(nn_ctx *ctx, int channels, float eps, float momentum, bool affine, bool track_running_stats);
/* LayerNorm over the trailing dimensions `shape` (ndim of them): affine
 * (elementwise_affine) gives a weight of that shape, and bias a bias. */
nn_module *nn_layernorm(nn_ctx *ctx, int ndim, const int64_t *shape, float eps, bool affine, bool bias);
/* GroupNorm of [N, C, ...] in `groups` groups (dividing channels). */
nn_module *nn_groupnorm(nn_ctx *ctx, int groups, int channels, float eps, bool affine);

/* Embedding(num_embeddings, embedding_dim, padding_idx): weight [num,
 * dim] (state_dict key "weight") from N(0, 1) as PyTorch's, row padding_idx
 * (-1: none) zeroed and never trained; forward takes int32 indices of any
 * shape ([..., dim], nn_embedding). nn_init_normal: N(mean, std^2). */
nn_module *nn_embedding_layer(nn_ctx *ctx, int num_embeddings, int embedding_dim, int padding_idx);
nn_status nn_init_normal(nn_tensor *t, float mean, float std);
/* ---- convolution extensions (nn_ops.h's parameters; PyTorch's
 * initialisation and state_dict names weight, bias) ---- */
/* Conv2d(in, out, (kernel_h, kernel_w), stride, padding, dilation, groups,
 * bias): weight [out, in / groups, kH, kW], bias [out] unless bias is false. */
nn_module *nn_conv2d_layer_ex(nn_ctx *ctx, int in_channels, int out_channels, int kernel_h, int kernel_w,
                              const nn_conv2d_params *params, bool bias);
/* ConvTranspose2d: weight [in, out / groups, kH, kW], bias [out]. */
nn_module *nn_conv_transpose2d_layer(nn_ctx *ctx, int in_channels, int out_channels, int kernel_h, int kernel_w,
                                     const nn_conv_transpose2d_params *params, bool bias);
/* Upsample: nn_interpolate's arguments (by size, or by scale factor with
 * out_h = out_w = 0), checked at each forward. No parameters. */
nn_module *nn_upsample_layer(nn_ctx *ctx, int out_h, int out_w, double scale_h, double scale_w,
                             nn_interpolate_mode mode, bool align_corners);

/* ---- the model zoo with torchvision's names (torchvision.models) ----
 * Module trees and state_dict names are torchvision's, so its weights
 * (a state_dict saved with safetensors) load strictly with nn_load_module,
 * and so is the initialisation: convolutions kaiming_normal_(fan_out),
 * BatchNorm weight 1 and bias 0. Input [N, 3, H, W]; at 224 x 224 the
 * ImageNet models are as published, and any size >= 32 runs (a global
 * average pool precedes the classifier). Call nn_module_set_training(net,
 * false) for inference (BatchNorm's running statistics, no dropout). */
/* ResNet-18 / -34 (BasicBlock) and -50 (Bottleneck, v1.5: stride on the
 * 3x3): conv1 7x7/2, bn1, relu, maxpool 3/2, layer1..layer4 (blocks "0",
 * "1", ...: conv1, bn1, conv2, bn2 [, conv3, bn3], downsample.0 conv1x1
 * and downsample.1 BatchNorm where the shape changes), avgpool, fc. */
nn_module *nn_resnet18(nn_ctx *ctx, int num_classes);
nn_module *nn_resnet34(nn_ctx *ctx, int num_classes);
nn_module *nn_resnet50(nn_ctx *ctx, int num_classes);
/* ResNet-18 for small images (CIFAR, Fashion-MNIST): conv1 is 3x3 stride
 * 1 from in_channels, no max pool; the rest and the names as nn_resnet18.
 * Input [N, in_channels, H, W], H and W >= 8. */
nn_module *nn_resnet18_cifar(nn_ctx *ctx, int in_channels, int num_classes);
/* MobileNetV2, width 1.0: features.0 .. features.18 (InvertedResidual
 * blocks, their layers under conv.0, conv.1, ...), ReLU6, a global average
 * pool, classifier.0 Dropout(0.2), classifier.1 Linear 1280->num_classes. */
nn_module *nn_mobilenet_v2(nn_ctx *ctx, int num_classes);

/* ---- transformers ---- */
/* torch.nn.MultiheadAttention(embed_dim, num_heads, bias=bias,
 * batch_first=True) as self-attention: forward takes x [N, T, E] and
 * attends x to itself (query, key and value all x) through the fused
 * nn_scaled_dot_product_attention, with causal masking (key j > query i)
 * where `causal`. torch's names and initialisation: in_proj_weight [3E, E]
 * (xavier_uniform), in_proj_bias [3E] (0), out_proj.weight (Linear's),
 * out_proj.bias (0). */
nn_module *nn_self_attention_layer(nn_ctx *ctx, int embed_dim, int num_heads, bool bias, bool causal);

/* torchvision.models.VisionTransformer's sizes. */
typedef struct nn_vit_options {
    int image_size, patch_size; /* the patch size divides the image size */
    int in_channels, num_classes;
    int hidden_dim, num_layers, num_heads, mlp_dim; /* the heads divide hidden_dim */
} nn_vit_options;
/* A vision transformer with torchvision's module tree, state_dict names
 * and initialisation (any in_channels; torchvision's takes 3): conv_proj,
 * class_token, encoder.pos_embedding, encoder.layers.encoder_layer_<i>
 * (ln_1, self_attention, ln_2, mlp.0, mlp.3; LayerNorm eps 1e-6, GELU),
 * encoder.ln, heads.head. Input [N, in_channels, image_size, image_size],
 * output logits [N, num_classes]. No dropout. */
nn_module *nn_vision_transformer(nn_ctx *ctx, const nn_vit_options *options);
/* vit-tiny for small images: patch 4, width 192, 6 layers, 3 heads, MLP
 * 768 (28 x 28: 49 patches and the class token). */
nn_module *nn_vit_tiny(nn_ctx *ctx, int in_channels, int image_size, int num_classes);

/* A causal decoder of GPT-2's design. */
typedef struct nn_gpt_options {
    int vocab_size; /* 256 for bytes */
    int context;    /* the longest sequence: position embeddings */
    int width, depth, heads; /* the heads divide the width */
} nn_gpt_options;
/* nanoGPT's GPT (its model.py's names, initialisation and design, bias on,
 * no dropout): transformer.wte, transformer.wpe, transformer.h.<i> (ln_1,
 * attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj; pre-norm, GELU MLP
 * 4x wide), transformer.ln_f and lm_head, whose weight is wte's (tied: one
 * parameter, listed as transformer.wte.weight, in the state_dict under both
 * names). Input int32 tokens [N, T], T <= context; output logits [N, T,
 * vocab_size]. */
nn_module *nn_gpt(nn_ctx *ctx, const nn_gpt_options *options);
/* gpt-mini: bytes (vocabulary 256), width 384, 6 layers, 6 heads. */
nn_module *nn_gpt_mini(nn_ctx *ctx, int context);

/* SyncBatchNorm: the BatchNorm1d/2d m takes its batch statistics through
 * sync (nn_ops.h's nn_batch_norm_synced), which it owns from now on (freed
 * with m, or at once on failure); NULL returns it to its own batch's.
 * nn_dist_sync_batch_norm does this for every BatchNorm of a model. */
nn_status nn_batchnorm_set_sync(nn_module *m, nn_batch_norm_sync *sync);
/* The channels of a BatchNorm1d or BatchNorm2d; 0 for any other module. */
int nn_batchnorm_channels(const nn_module *m);

#ifdef __cplusplus
}
#endif
#endif
