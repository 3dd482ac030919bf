/* A causal decoder of GPT-2's design (Radford et al. 2019) with the module
 * tree, state_dict names and initialisation of nanoGPT's GPT (Karpathy,
 * model.py), whose layers are torch.nn.Linear: transformer.wte and .wpe
 * (token and position embeddings), transformer.h.<i> blocks (ln_1,
 * attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj), transformer.ln_f
 * and lm_head, whose weight is wte's (tied: one parameter under two names).
 * Weights N(0, 0.02^2), the residual projections' N(0, (0.02 / sqrt(2
 * depth))^2), biases 0, LayerNorm eps 1e-5; no dropout. */
#include "zoo_parts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/error.h"

typedef struct gpt_config {
    int context, depth;
} gpt_config;

static nn_tensor *causal_attention_forward(nn_module *self, nn_tensor *x) {
    const int *heads = nn_module_data(self);
    return nn_zoo_child(self, "c_proj", nn_attention_qkv_packed(nn_zoo_child(self, "c_attn", x), *heads, true));
}

static nn_tensor *mlp_forward(nn_module *self, nn_tensor *x) {
    return nn_zoo_child(self, "c_proj", nn_zoo_child(self, "gelu", nn_zoo_child(self, "c_fc", x)));
}

/* x + attn(ln_1(x)), then that + mlp(ln_2(that)). */
static nn_tensor *block_forward(nn_module *self, nn_tensor *x) {
    nn_tensor *a = nn_zoo_child(self, "attn", nn_zoo_child(self, "ln_1", x));
    nn_tensor *y = a ? nn_add(x, a) : NULL;
    nn_tensor *m = nn_zoo_child(self, "mlp", nn_zoo_child(self, "ln_2", y));
    return m ? nn_add(y, m) : NULL;
}

static nn_tensor *gpt_forward(nn_module *self, nn_tensor *tokens) {
    const gpt_config *c = nn_module_data(self);
    if (!tokens) return NULL;
    if (tokens->ndim != 2 || tokens->dtype != NN_I32 || tokens->shape[1] < 1 || tokens->shape[1] > c->context)
        return NN_FAIL_NULL(NN_ERR_SHAPE, "GPT: expected int32 tokens [N, T] with 1 <= T <= the context %d, got %d "
                                          "dimensions (T %lld)",
                            c->context, tokens->ndim, (long long)(tokens->ndim >= 2 ? tokens->shape[1] : 0));
    nn_module *t = nn_module_child(self, "transformer");
    const int64_t length = tokens->shape[1];
    nn_tensor *positions = nn_slice(nn_module_get_parameter(t, "wpe.weight"), 0, 0, length, 1); /* [T, W] */
    nn_tensor *x = nn_zoo_child(t, "wte", tokens);
    x = x && positions ? nn_add(x, positions) : NULL;
    nn_module *blocks = nn_module_child(t, "h");
    for (int i = 0; i < c->depth && x; i++) x = nn_module_forward(nn_module_child_at(blocks, i), x);
    return nn_zoo_child(self, "lm_head", nn_zoo_child(t, "ln_f", x));
}

static nn_module *layer_norm(nn_ctx *ctx, int width) {
    return nn_layernorm(ctx, 1, (const int64_t[]){width}, 1e-5f, true, true);
}

/* Linear(in, out) with weight N(0, std^2) and zero bias. */
static nn_module *linear(nn_ctx *ctx, int in, int out, float std) {
    nn_module *l = nn_linear_layer(ctx, in, out, NN_INIT_KAIMING_UNIFORM);
    if (!l) return NULL;
    nn_status st = nn_init_normal(nn_module_get_parameter(l, "weight"), 0.0f, std);
    if (st == NN_OK) st = nn_tensor_fill(nn_module_get_parameter(l, "bias"), 0.0f);
    return nn_zoo_finish(l, st);
}

static nn_module *block(nn_ctx *ctx, const nn_gpt_options *o) {
    const float std = 0.02f, residual_std = (float)(0.02 / sqrt(2.0 * o->depth));
    int *heads = malloc(sizeof *heads);
    if (!heads) return NN_FAIL_NULL(NN_ERR_MEMORY, "nn_gpt: out of host memory");
    *heads = o->heads;
    nn_module *attn = nn_module_new(ctx, "CausalSelfAttention", causal_attention_forward, heads, free);
    nn_status st = attn ? NN_OK : nn_last_status();
    nn_zoo_add(attn, "c_attn", linear(ctx, o->width, 3 * o->width, std), &st);
    nn_zoo_add(attn, "c_proj", linear(ctx, o->width, o->width, residual_std), &st);
    nn_module *mlp = st == NN_OK ? nn_module_new(ctx, "MLP", mlp_forward, NULL, NULL) : NULL;
    nn_zoo_add(mlp, "c_fc", linear(ctx, o->width, 4 * o->width, std), &st);
    nn_zoo_add(mlp, "gelu", nn_zoo_gelu(ctx), &st);
    nn_zoo_add(mlp, "c_proj", linear(ctx, 4 * o->width, o->width, residual_std), &st);
    nn_module *b = st == NN_OK ? nn_module_new(ctx, "Block", block_forward, NULL, NULL) : NULL;
    nn_zoo_add(b, "ln_1", layer_norm(ctx, o->width), &st);
    nn_zoo_add(b, "attn", nn_zoo_finish(attn, st), &st);
    nn_zoo_add(b, "ln_2", layer_norm(ctx, o->width), &st);
    nn_zoo_add(b, "mlp", nn_zoo_finish(mlp, st), &st);
    return nn_zoo_finish(b, st);
}

/* An embedding [count, width] drawn from N(0, 0.02^2). */
static nn_module *embedding(nn_ctx *ctx, int count, int width) {
    nn_module *e = nn_embedding_layer(ctx, count, width, -1);
    return e ? nn_zoo_finish(e, nn_init_normal(nn_module_get_parameter(e, "weight"), 0.0f, 0.02f)) : NULL;
}

static nn_tensor *tied_head_forward(nn_module *self, nn_tensor *x) {
    return nn_linear(x, nn_module_get_parameter(self, "weight"), NULL);
}

nn_module *nn_gpt(nn_ctx *ctx, const nn_gpt_options *o) {
    const char *fn = "nn_gpt";
    if (!ctx || !o) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: ctx and options must not be NULL", fn);
    if (o->vocab_size < 1 || o->context < 1 || o->width < 1 || o->depth < 1 || o->heads < 1 ||
        o->width % o->heads != 0)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: vocab %d, context %d, width %d, depth %d, heads %d: each must be "
                                             ">= 1 and the heads must divide the width",
                            fn, o->vocab_size, o->context, o->width, o->depth, o->heads);
    gpt_config *c = malloc(sizeof *c);
    if (!c) return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", fn);
    *c = (gpt_config){.context = o->context, .depth = o->depth};
    nn_module *net = nn_module_new(ctx, "GPT", gpt_forward, c, free);
    nn_status st = net ? NN_OK : nn_last_status();
    nn_module *t = st == NN_OK ? nn_zoo_container(ctx, "ModuleDict") : NULL;
    nn_zoo_add(t, "wte", embedding(ctx, o->vocab_size, o->width), &st);
    nn_zoo_add(t, "wpe", embedding(ctx, o->context, o->width), &st);
    nn_module *h = st == NN_OK ? nn_zoo_container(ctx, "ModuleList") : NULL;
    char name[16];
    for (int i = 0; i < o->depth; i++) {
        snprintf(name, sizeof name, "%d", i);
        nn_zoo_add(h, name, block(ctx, o), &st);
    }
    nn_zoo_add(t, "h", nn_zoo_finish(h, st), &st);
    nn_zoo_add(t, "ln_f", layer_norm(ctx, o->width), &st);
    nn_zoo_add(net, "transformer", nn_zoo_finish(t, st), &st);
    nn_module *head = st == NN_OK ? nn_module_new(ctx, "Linear", tied_head_forward, NULL, NULL) : NULL;
    if (head) st = nn_module_register_parameter(head, "weight", nn_module_get_parameter(net, "transformer.wte.weight"));
    nn_zoo_add(net, "lm_head", head, &st);
    return nn_zoo_finish(net, st);
}

nn_module *nn_gpt_mini(nn_ctx *ctx, int context) {
    const nn_gpt_options o = {.vocab_size = 256, .context = context, .width = 384, .depth = 6, .heads = 6};
    return nn_gpt(ctx, &o);
}
