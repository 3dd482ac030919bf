/* Scaled dot-product attention as a composition of recorded operations:
 * softmax(q k^T * scale + mask) v, with nn_matmul_batched, nn_mul_scalar,
 * nn_add and nn_softmax, so its gradient and ONNX export are theirs. The
 * causal mask is a constant [L, S] of 0 (key j <= query i) and -infinity,
 * as torch's tril(ones(L, S)). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "strided.h"

static nn_tensor *causal_mask(nn_ctx *ctx, int64_t queries, int64_t keys) {
    float *data = malloc(sizeof(float) * (size_t)(queries * keys));
    if (!data) return NN_FAIL_NULL(NN_ERR_MEMORY, "nn_scaled_dot_product_attention: out of host memory");
    for (int64_t i = 0; i < queries; i++)
        for (int64_t j = 0; j < keys; j++) data[i * keys + j] = j <= i ? 0.0f : -INFINITY;
    nn_tensor *mask = nn_tensor_from_data(ctx, NN_F32, 2, (const int64_t[]){queries, keys}, data);
    free(data);
    return mask;
}

/* q [..., L, E], k [..., S, E], v [..., S, Ev]: matching E and S. */
static nn_status check_shapes(const char *op, const nn_tensor *q, const nn_tensor *k, const nn_tensor *v) {
    NN_TRY(nn_check_tensor(op, "query", q, NN_F32));
    NN_TRY(nn_check_tensor(op, "key", k, NN_F32));
    NN_TRY(nn_check_tensor(op, "value", v, NN_F32));
    NN_TRY(nn_check_same_ctx(op, "q", q, "k", k));
    NN_TRY(nn_check_same_ctx(op, "q", q, "v", v));
    char sq[96], sk[96], sv[96];
    nn_format_shape(q->ndim, q->shape, sq, sizeof sq);
    nn_format_shape(k->ndim, k->shape, sk, sizeof sk);
    nn_format_shape(v->ndim, v->shape, sv, sizeof sv);
    if (q->ndim < 2 || k->ndim < 2 || v->ndim < 2)
        return nn_set_error(NN_ERR_SHAPE, "%s: query %s, key %s and value %s need 2 dimensions at least", op, sq, sk,
                            sv);
    if (q->shape[q->ndim - 1] != k->shape[k->ndim - 1])
        return nn_set_error(NN_ERR_SHAPE, "%s: query %s and key %s differ in their last dimension (%lld and %lld)", op,
                            sq, sk, (long long)q->shape[q->ndim - 1], (long long)k->shape[k->ndim - 1]);
    if (k->shape[k->ndim - 2] != v->shape[v->ndim - 2])
        return nn_set_error(NN_ERR_SHAPE, "%s: key %s and value %s have different sequence lengths (%lld and %lld)", op,
                            sk, sv, (long long)k->shape[k->ndim - 2], (long long)v->shape[v->ndim - 2]);
    return NN_OK;
}

/* The mask broadcasts to the scores' shape without growing it. */
static nn_status check_mask(const char *op, const nn_tensor *mask, const nn_tensor *scores) {
    NN_TRY(nn_check_tensor(op, "mask", mask, NN_F32));
    NN_TRY(nn_check_same_ctx(op, "q", scores, "mask", mask));
    int ndim;
    int64_t shape[NN_MAX_DIMS];
    char sm[96], ss[96];
    nn_format_shape(mask->ndim, mask->shape, sm, sizeof sm);
    nn_format_shape(scores->ndim, scores->shape, ss, sizeof ss);
    if (nn_broadcast_shapes(op, mask->ndim, mask->shape, scores->ndim, scores->shape, &ndim, shape) != NN_OK ||
        ndim != scores->ndim || memcmp(shape, scores->shape, sizeof(int64_t) * (size_t)ndim) != 0)
        return nn_set_error(NN_ERR_SHAPE, "%s: mask %s does not broadcast to the attention scores %s", op, sm, ss);
    return NN_OK;
}

nn_tensor *nn_scaled_dot_product_attention(nn_tensor *q, nn_tensor *k, nn_tensor *v, nn_tensor *mask, bool is_causal,
                                           float scale) {
    const char *op = "nn_scaled_dot_product_attention";
    if (check_shapes(op, q, k, v)) return NULL;
    if (mask && is_causal)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: give a mask or is_causal, not both", op);
    if (!isfinite(scale) || scale < 0.0f)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: scale %g must be finite and > 0 (0: 1 / sqrt(E))", op,
                            (double)scale);
    if (scale == 0.0f) scale = 1.0f / sqrtf((float)q->shape[q->ndim - 1]);
    nn_tensor *scores = nn_matmul_batched(q, nn_transpose(k, -1, -2));
    scores = scores ? nn_mul_scalar(scores, scale) : NULL;
    if (!scores) return NULL;
    if (is_causal) {
        mask = causal_mask(q->ctx, q->shape[q->ndim - 2], k->shape[k->ndim - 2]);
        scores = mask ? nn_add(scores, mask) : NULL;
        nn_tensor_free(mask); /* the recorded add holds it */
    } else if (mask) {
        scores = check_mask(op, mask, scores) == NN_OK ? nn_add(scores, mask) : NULL;
    }
    return scores ? nn_matmul_batched(nn_softmax(scores), v) : NULL;
}
