/* Self-attention as a module (torch.nn.MultiheadAttention's names and
 * initialisation, batch_first, query = key = value): one product for the
 * queries, keys and values, their heads attended in place
 * (nn_attention_qkv_packed), out_proj. */
#include "zoo_parts.h"

#include <stdlib.h>

#include "base/error.h"

typedef struct attention_config {
    int heads;
    bool causal;
} attention_config;

static nn_tensor *self_attention_forward(nn_module *self, nn_tensor *x) {
    const attention_config *c = nn_module_data(self);
    nn_tensor *weight = nn_module_get_parameter(self, "in_proj_weight");
    if (x && (x->ndim != 3 || x->shape[2] != weight->shape[1]))
        return NN_FAIL_NULL(NN_ERR_SHAPE, "MultiheadAttention: expected input [N, T, %lld] (batch first), got %d "
                                          "dimensions with %lld last",
                            (long long)weight->shape[1], x->ndim, (long long)x->shape[x->ndim - 1]);
    nn_tensor *qkv = x ? nn_linear(x, weight, nn_module_get_parameter(self, "in_proj_bias")) : NULL;
    return nn_module_forward(nn_module_child(self, "out_proj"), qkv ? nn_attention_qkv_packed(qkv, c->heads, c->causal)
                                                                      : NULL);
}

/* A parameter of `shape` registered under `name`, filled with `value`
 * (xavier_uniform where `xavier`). */
static nn_status add_parameter(nn_module *m, const char *name, int ndim, const int64_t *shape, bool xavier) {
    nn_tensor *t = nn_tensor_new(nn_module_ctx(m), NN_F32, ndim, shape);
    nn_status st = !t ? nn_last_status() : xavier ? nn_init_xavier_uniform(t, 1.0f) : NN_OK;
    if (st == NN_OK) st = nn_module_register_parameter(m, name, t);
    nn_tensor_free(t);
    return st;
}

nn_module *nn_self_attention_layer(nn_ctx *ctx, int embed_dim, int num_heads, bool bias, bool causal) {
    const char *fn = "nn_self_attention_layer";
    if (!ctx) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: ctx is NULL", fn);
    if (embed_dim < 1 || num_heads < 1 || embed_dim % num_heads != 0)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: embed_dim (%d) must be a positive multiple of num_heads (%d)", fn,
                            embed_dim, num_heads);
    attention_config *c = malloc(sizeof *c);
    if (!c) return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", fn);
    *c = (attention_config){.heads = num_heads, .causal = causal};
    nn_module *m = nn_module_new(ctx, "MultiheadAttention", self_attention_forward, c, free);
    if (!m) return NULL;
    /* torch's _reset_parameters: xavier_uniform_ in_proj_weight, zero biases, Linear's out_proj.weight. */
    nn_status st = add_parameter(m, "in_proj_weight", 2, (const int64_t[]){3 * (int64_t)embed_dim, embed_dim}, true);
    if (st == NN_OK && bias) st = add_parameter(m, "in_proj_bias", 1, (const int64_t[]){3 * (int64_t)embed_dim}, false);
    nn_module *out = nn_zoo_linear(ctx, embed_dim, embed_dim, bias);
    if (out && bias && st == NN_OK) st = nn_tensor_fill(nn_module_get_parameter(out, "bias"), 0.0f);
    nn_zoo_add(m, "out_proj", out, &st);
    return nn_zoo_finish(m, st);
}
