/* The Dropout layer: nn_dropout in training mode, the identity in eval. */
#include "module.h"

/* p = 0 (the transformers' default) is the identity: no node, no mask. */
static nn_tensor *dropout_forward(nn_module *m, nn_tensor *x) {
    return m->p == 0.0f ? x : nn_dropout(x, m->p, m->training);
}

nn_module *nn_dropout_layer(nn_ctx *ctx, float p) {
    if (!ctx) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_dropout_layer: ctx is NULL");
    if (!(p >= 0.0f && p < 1.0f))
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_dropout_layer: p must be in [0, 1), got %g", (double)p);
    nn_module *m = nn_module_alloc(ctx, "Dropout", dropout_forward);
    if (m) m->p = p;
    return m;
}
