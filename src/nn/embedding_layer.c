/* Embedding as a module: weight [num_embeddings, embedding_dim] drawn from
 * N(0, 1) as PyTorch's, its padding row zeroed; forward takes int32
 * indices of any shape (nn_embedding). */
#include <stdlib.h>

#include "core/internal.h"
#include "nn_engine.h"

typedef struct embedding_config {
    int padding_idx;
} embedding_config;

static nn_tensor *embedding_layer_forward(nn_module *self, nn_tensor *indices) {
    const embedding_config *c = nn_module_data(self);
    return nn_embedding(indices, nn_module_get_parameter(self, "weight"), c->padding_idx);
}

/* The padding row starts at 0, as PyTorch's. */
static nn_status zero_row(nn_tensor *weight, int row, int dim) {
    float *all = malloc((size_t)weight->numel * sizeof *all);
    nn_status st = all ? nn_tensor_read(weight, all, (size_t)weight->numel * sizeof *all)
                       : nn_set_error(NN_ERR_MEMORY, "nn_embedding_layer: out of host memory");
    if (st == NN_OK) {
        for (int f = 0; f < dim; f++) all[(int64_t)row * dim + f] = 0.0f;
        st = nn_tensor_write(weight, all, (size_t)weight->numel * sizeof *all);
    }
    free(all);
    return st;
}

nn_module *nn_embedding_layer(nn_ctx *ctx, int num_embeddings, int embedding_dim, int padding_idx) {
    const char *fn = "nn_embedding_layer";
    if (!ctx) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: ctx is NULL", fn);
    if (num_embeddings < 1 || embedding_dim < 1)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: num_embeddings and embedding_dim must be >= 1, got %d and %d", fn,
                            num_embeddings, embedding_dim);
    if (padding_idx < -1 || padding_idx >= num_embeddings)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: padding_idx %d is outside [0, %d) (or -1 for none)", fn, padding_idx,
                            num_embeddings);
    embedding_config *c = malloc(sizeof *c);
    if (!c) return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", fn);
    c->padding_idx = padding_idx;
    nn_module *m = nn_module_new(ctx, "Embedding", embedding_layer_forward, c, free);
    if (!m) return NULL;
    nn_tensor *weight = nn_tensor_new(ctx, NN_F32, 2, (const int64_t[]){num_embeddings, embedding_dim});
    nn_status st = weight ? nn_init_normal(weight, 0.0f, 1.0f) : nn_last_status();
    if (st == NN_OK && padding_idx >= 0) st = zero_row(weight, padding_idx, embedding_dim);
    if (st == NN_OK) st = nn_module_register_parameter(m, "weight", weight);
    nn_tensor_free(weight);
    if (st != NN_OK) {
        nn_module_free(m);
        return NULL;
    }
    return m;
}
