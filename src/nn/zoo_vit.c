/* The vision transformer as torchvision.models.VisionTransformer builds it
 * (Dosovitskiy et al. 2020): its module tree, state_dict names
 * ("encoder.layers.encoder_layer_0.self_attention.in_proj_weight") and
 * initialisation, with any number of input channels (torchvision's takes
 * 3): patches by a strided convolution (conv_proj), a class token, learned
 * position embeddings, pre-norm encoder blocks (LayerNorm eps 1e-6,
 * self-attention, GELU MLP) and a linear head on the class token. */
#include "zoo_parts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/error.h"

/* x + self_attention(ln_1(x)), then that + mlp(ln_2(that)). */
static nn_tensor *encoder_block_forward(nn_module *self, nn_tensor *x) {
    nn_tensor *h = nn_zoo_child(self, "dropout", nn_zoo_child(self, "self_attention", nn_zoo_child(self, "ln_1", x)));
    nn_tensor *y = h ? nn_add(h, x) : NULL;
    nn_tensor *m = nn_zoo_child(self, "mlp", nn_zoo_child(self, "ln_2", y));
    return m ? nn_add(y, m) : NULL;
}

static nn_tensor *encoder_forward(nn_module *self, nn_tensor *x) {
    nn_tensor *pos = nn_module_get_parameter(self, "pos_embedding");
    if (x && (x->ndim != 3 || x->shape[1] != pos->shape[1] || x->shape[2] != pos->shape[2]))
        return NN_FAIL_NULL(NN_ERR_SHAPE, "VisionTransformer encoder: expected [N, %lld, %lld] tokens, got %d "
                                          "dimensions",
                            (long long)pos->shape[1], (long long)pos->shape[2], x->ndim);
    nn_tensor *placed = nn_zoo_child(self, "dropout", x ? nn_add(x, pos) : NULL);
    return nn_zoo_child(self, "ln", nn_zoo_child(self, "layers", placed));
}

typedef struct vit_config {
    int image_size, channels;
} vit_config;

static nn_tensor *vit_forward(nn_module *self, nn_tensor *x) {
    const vit_config *c = nn_module_data(self);
    if (x && (x->ndim != 4 || x->shape[1] != c->channels || x->shape[2] != c->image_size ||
              x->shape[3] != c->image_size))
        return NN_FAIL_NULL(NN_ERR_SHAPE, "VisionTransformer: expected input [N, %d, %d, %d], got %d dimensions",
                            c->channels, c->image_size, c->image_size, x->ndim);
    nn_tensor *patches = nn_zoo_child(self, "conv_proj", x); /* [N, D, h, w] */
    if (!patches) return NULL;
    const int64_t n = patches->shape[0], width = patches->shape[1], count = patches->shape[2] * patches->shape[3];
    nn_tensor *tokens = nn_transpose(nn_reshape(patches, 3, (const int64_t[]){n, width, count}), 1, 2);
    nn_tensor *cls = nn_expand(nn_module_get_parameter(self, "class_token"), 3, (const int64_t[]){n, 1, width});
    nn_tensor *all = tokens && cls ? nn_cat((nn_tensor *const[]){cls, tokens}, 2, 1) : NULL;
    nn_tensor *encoded = nn_zoo_child(self, "encoder", all);
    return nn_zoo_child(self, "heads", encoded ? nn_select(encoded, 1, 0) : NULL);
}

/* A parameter of `shape`, N(0, std^2) (zeros for std 0). */
static nn_status add_parameter(nn_module *m, const char *name, int ndim, const int64_t *shape, float std) {
    nn_tensor *t = nn_tensor_new(nn_module_ctx(m), NN_F32, ndim, shape);
    nn_status st = !t ? nn_last_status() : std > 0.0f ? nn_init_normal(t, 0.0f, std) : NN_OK;
    if (st == NN_OK) st = nn_module_register_parameter(m, name, t);
    nn_tensor_free(t);
    return st;
}

/* torchvision's MLPBlock: 0 Linear, 1 GELU, 2 Dropout, 3 Linear, 4 Dropout;
 * xavier_uniform_ weights, biases N(0, 1e-12). */
static nn_module *mlp_block(nn_ctx *ctx, int width, int hidden) {
    nn_module *mlp = nn_sequential(ctx);
    nn_status st = mlp ? NN_OK : nn_last_status();
    nn_module *in = nn_linear_layer(ctx, width, hidden, NN_INIT_XAVIER_UNIFORM);
    nn_module *out = nn_linear_layer(ctx, hidden, width, NN_INIT_XAVIER_UNIFORM);
    if (in && out && st == NN_OK) st = nn_init_normal(nn_module_get_parameter(in, "bias"), 0.0f, 1e-6f);
    if (in && out && st == NN_OK) st = nn_init_normal(nn_module_get_parameter(out, "bias"), 0.0f, 1e-6f);
    nn_zoo_add(mlp, "0", in, &st);
    nn_zoo_add(mlp, "1", nn_zoo_gelu(ctx), &st);
    nn_zoo_add(mlp, "2", nn_dropout_layer(ctx, 0.0f), &st);
    nn_zoo_add(mlp, "3", out, &st);
    nn_zoo_add(mlp, "4", nn_dropout_layer(ctx, 0.0f), &st);
    return nn_zoo_finish(mlp, st);
}

static nn_module *layer_norm(nn_ctx *ctx, int width) {
    return nn_layernorm(ctx, 1, (const int64_t[]){width}, 1e-6f, true, true);
}

static nn_module *encoder_block(nn_ctx *ctx, const nn_vit_options *o) {
    nn_module *b = nn_module_new(ctx, "EncoderBlock", encoder_block_forward, NULL, NULL);
    nn_status st = b ? NN_OK : nn_last_status();
    nn_zoo_add(b, "ln_1", layer_norm(ctx, o->hidden_dim), &st);
    nn_zoo_add(b, "self_attention", nn_self_attention_layer(ctx, o->hidden_dim, o->num_heads, true, false), &st);
    nn_zoo_add(b, "dropout", nn_dropout_layer(ctx, 0.0f), &st);
    nn_zoo_add(b, "ln_2", layer_norm(ctx, o->hidden_dim), &st);
    nn_zoo_add(b, "mlp", mlp_block(ctx, o->hidden_dim, o->mlp_dim), &st);
    return nn_zoo_finish(b, st);
}

static nn_module *encoder(nn_ctx *ctx, const nn_vit_options *o, int64_t tokens) {
    nn_module *e = nn_module_new(ctx, "Encoder", encoder_forward, NULL, NULL);
    nn_status st = e ? add_parameter(e, "pos_embedding", 3, (const int64_t[]){1, tokens, o->hidden_dim}, 0.02f)
                     : nn_last_status();
    nn_zoo_add(e, "dropout", nn_dropout_layer(ctx, 0.0f), &st);
    nn_module *layers = st == NN_OK ? nn_sequential(ctx) : NULL;
    char name[32];
    for (int i = 0; i < o->num_layers; i++) {
        snprintf(name, sizeof name, "encoder_layer_%d", i);
        nn_zoo_add(layers, name, encoder_block(ctx, o), &st);
    }
    nn_zoo_add(e, "layers", nn_zoo_finish(layers, st), &st);
    nn_zoo_add(e, "ln", layer_norm(ctx, o->hidden_dim), &st);
    return nn_zoo_finish(e, st);
}

/* conv_proj: trunc_normal_(std sqrt(1 / fan_in)) (truncated at +-2, many
 * deviations out at these fans: a normal), zero bias. */
static nn_module *patch_projection(nn_ctx *ctx, const nn_vit_options *o) {
    nn_module *conv = nn_conv2d_layer(ctx, o->in_channels, o->hidden_dim, o->patch_size, o->patch_size, 0,
                                      NN_INIT_KAIMING_UNIFORM);
    if (!conv) return NULL;
    const double fan_in = (double)o->in_channels * o->patch_size * o->patch_size;
    nn_status st = nn_init_normal(nn_module_get_parameter(conv, "weight"), 0.0f, (float)sqrt(1.0 / fan_in));
    if (st == NN_OK) st = nn_tensor_fill(nn_module_get_parameter(conv, "bias"), 0.0f);
    return nn_zoo_finish(conv, st);
}

/* heads.head, zero-initialised as torchvision's (no representation layer). */
static nn_module *heads(nn_ctx *ctx, const nn_vit_options *o) {
    nn_module *h = nn_sequential(ctx);
    nn_module *head = nn_linear_layer(ctx, o->hidden_dim, o->num_classes, NN_INIT_KAIMING_UNIFORM);
    nn_status st = h ? NN_OK : nn_last_status();
    if (head && st == NN_OK) st = nn_tensor_fill(nn_module_get_parameter(head, "weight"), 0.0f);
    if (head && st == NN_OK) st = nn_tensor_fill(nn_module_get_parameter(head, "bias"), 0.0f);
    nn_zoo_add(h, "head", head, &st);
    return nn_zoo_finish(h, st);
}

nn_module *nn_vision_transformer(nn_ctx *ctx, const nn_vit_options *o) {
    const char *fn = "nn_vision_transformer";
    if (!ctx || !o) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: ctx and options must not be NULL", fn);
    if (o->image_size < 1 || o->patch_size < 1 || o->in_channels < 1 || o->num_classes < 1 || o->hidden_dim < 1 ||
        o->num_layers < 1 || o->num_heads < 1 || o->mlp_dim < 1)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: every size must be >= 1 (image %d, patch %d, channels %d, classes "
                                             "%d, hidden %d, layers %d, heads %d, mlp %d)",
                            fn, o->image_size, o->patch_size, o->in_channels, o->num_classes, o->hidden_dim,
                            o->num_layers, o->num_heads, o->mlp_dim);
    if (o->image_size % o->patch_size != 0 || o->hidden_dim % o->num_heads != 0)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: the patch size (%d) must divide the image size (%d) and the heads "
                                             "(%d) the width (%d)",
                            fn, o->patch_size, o->image_size, o->num_heads, o->hidden_dim);
    const int64_t side = o->image_size / o->patch_size;
    vit_config *c = malloc(sizeof *c);
    if (!c) return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", fn);
    *c = (vit_config){.image_size = o->image_size, .channels = o->in_channels};
    nn_module *net = nn_module_new(ctx, "VisionTransformer", vit_forward, c, free);
    nn_status st = net ? add_parameter(net, "class_token", 3, (const int64_t[]){1, 1, o->hidden_dim}, 0.0f)
                       : nn_last_status();
    nn_zoo_add(net, "conv_proj", patch_projection(ctx, o), &st);
    nn_zoo_add(net, "encoder", encoder(ctx, o, side * side + 1), &st);
    nn_zoo_add(net, "heads", heads(ctx, o), &st);
    return nn_zoo_finish(net, st);
}

nn_module *nn_vit_tiny(nn_ctx *ctx, int in_channels, int image_size, int num_classes) {
    const nn_vit_options o = {.image_size = image_size, .patch_size = 4, .in_channels = in_channels,
                              .num_classes = num_classes, .hidden_dim = 192, .num_layers = 6, .num_heads = 3,
                              .mlp_dim = 768};
    return nn_vision_transformer(ctx, &o);
}
