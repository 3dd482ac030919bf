/* Scaled dot-product attention, softmax(q k^T * scale + mask) v, as the
 * ATTENTION kernels (kernels.h): a row block at a time, so memory grows
 * with the sequence, not its square. The batch dimensions (every one
 * before the last two) broadcast; the kernels see them as [groups, heads]
 * with two strides per operand. Where that cannot describe the broadcast,
 * a head is wider than 256, or the mask wants a gradient, attention is the
 * composition of recorded operations (nn_matmul_batched, nn_mul_scalar,
 * nn_add, nn_softmax), whose gradients are theirs. Either way the ONNX
 * export is that composition. The causal mask hides key j from query i
 * when j > i, as torch's tril(ones(L, S)). A query whose keys are all
 * hidden gets 0 from the kernels (torch's safe softmax), NaN composed. */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "io/onnx_graph.h"
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
static nn_status check_mask(const char *op, const nn_tensor *q, const nn_tensor *mask, int scores_ndim,
                            const int64_t *scores_shape) {
    NN_TRY(nn_check_tensor(op, "mask", mask, NN_F32));
    NN_TRY(nn_check_same_ctx(op, "q", q, "mask", mask));
    int ndim;
    int64_t shape[NN_MAX_DIMS];
    char sm[96], ss[96];
    nn_format_shape(mask->ndim, mask->shape, sm, sizeof sm);
    nn_format_shape(scores_ndim, scores_shape, ss, sizeof ss);
    if (nn_broadcast_shapes(op, mask->ndim, mask->shape, scores_ndim, scores_shape, &ndim, shape) != NN_OK ||
        ndim != scores_ndim || memcmp(shape, scores_shape, sizeof(int64_t) * (size_t)ndim) != 0)
        return nn_set_error(NN_ERR_SHAPE, "%s: mask %s does not broadcast to the attention scores %s", op, sm, ss);
    return NN_OK;
}

static nn_tensor *composed(nn_tensor *q, nn_tensor *k, nn_tensor *v, nn_tensor *mask, bool is_causal, float scale) {
    nn_tensor *scores = nn_matmul_batched(q, nn_transpose(k, -1, -2));
    scores = scores ? nn_mul_scalar(scores, scale) : NULL;
    if (!scores) return NULL;
    if (is_causal) {
        mask = causal_mask(q->ctx, q->shape[q->ndim - 2], k->shape[k->ndim - 2]);
        scores = mask ? nn_add(scores, mask) : NULL;
        nn_tensor_free(mask); /* the recorded add holds it */
    } else if (mask) {
        scores = nn_add(scores, mask);
    }
    return scores ? nn_matmul_batched(nn_softmax(scores), v) : NULL;
}

/* ---- the fused operation ---- */

enum { IN_Q, IN_K, IN_V, IN_MASK };
enum { MAX_HEAD = 256 }; /* the Vulkan kernels' widest head */

typedef struct attention_node {
    nn_attention_params p;
    int32_t batch_ndim; /* the output's batch dimensions */
} attention_node;

static int64_t batch_of(const nn_attention_params *p) { return (int64_t)p->groups * p->heads; }

static nn_tensor *mask_input(const nn_node *node) { return node->input_count > IN_MASK ? node->inputs[IN_MASK] : NULL; }

static nn_status attention_forward(nn_node *node) {
    const attention_node *n = NN_NODE_PARAMS(node, attention_node);
    nn_tensor *lse = nn_node_save_new(node, NN_F32, 1, (const int64_t[]){batch_of(&n->p) * n->p.queries});
    if (!lse) return nn_last_status();
    nn_buffer_ref args[6] = {nn_tensor_ref(node->inputs[IN_Q]), nn_tensor_ref(node->inputs[IN_K]),
                             nn_tensor_ref(node->inputs[IN_V]), nn_optional_ref(mask_input(node)),
                             nn_tensor_ref(node->output), nn_tensor_ref(lse)};
    nn_attention_params p = n->p;
    p.precision = node->output->ctx->launch_precision; /* the node's (nn_attention_params) */
    return nn_ctx_run(node->output->ctx, NN_KERNEL_ATTENTION_FORWARD, args, 6, &p);
}

/* Where the kernels write input i's gradient: its own gradient when its
 * batch is the whole batch, else a temporary over the whole batch (*temp)
 * summed into it afterwards, and a temporary alone when no gradient is
 * wanted. */
static nn_tensor *gradient_buffer(nn_node *node, int i, nn_tensor **temp, nn_tensor **grad, int32_t *accumulate) {
    const attention_node *n = NN_NODE_PARAMS(node, attention_node);
    nn_tensor *x = node->inputs[i];
    *temp = *grad = NULL;
    *accumulate = 0;
    const int64_t rows = x->shape[x->ndim - 2], cols = x->shape[x->ndim - 1];
    if (nn_wants_grad(x)) {
        if (nn_grad_target(x, grad, accumulate) != NN_OK) return NULL;
        if (x->numel == batch_of(&n->p) * rows * cols) return *grad;
    }
    int64_t shape[NN_MAX_DIMS];
    memcpy(shape, node->output->shape, sizeof(int64_t) * (size_t)n->batch_ndim);
    shape[n->batch_ndim] = rows;
    shape[n->batch_ndim + 1] = cols;
    *temp = nn_op_scratch(x->ctx, NN_F32, n->batch_ndim + 2, shape);
    return *temp;
}

static nn_status attention_backward(nn_node *node) {
    const attention_node *n = NN_NODE_PARAMS(node, attention_node);
    nn_tensor *out = node->output, *temp[3], *grad[3], *target[3];
    nn_ctx *ctx = out->ctx;
    int32_t accumulate[3];
    nn_tensor *delta = nn_op_scratch(ctx, NN_F32, 1, (const int64_t[]){batch_of(&n->p) * n->p.queries});
    if (!delta) return nn_last_status();
    nn_status st = NN_OK;
    for (int i = 0; i < 3; i++) temp[i] = grad[i] = target[i] = NULL;
    for (int i = 0; i < 3 && st == NN_OK; i++)
        if (!(target[i] = gradient_buffer(node, i, &temp[i], &grad[i], &accumulate[i]))) st = nn_last_status();
    nn_attention_params p = n->p;
    p.precision = ctx->launch_precision; /* the node's */
    const nn_buffer_ref q = nn_tensor_ref(node->inputs[IN_Q]), k = nn_tensor_ref(node->inputs[IN_K]);
    const nn_buffer_ref v = nn_tensor_ref(node->inputs[IN_V]), mask = nn_optional_ref(mask_input(node));
    const nn_buffer_ref dout = nn_tensor_ref(out->grad), lse = nn_tensor_ref(node->saved[0]);
    if (st == NN_OK) {
        p.accumulate = temp[IN_Q] ? 0 : accumulate[IN_Q];
        nn_buffer_ref args[9] = {q, k, v, mask, nn_tensor_ref(out), dout, lse, nn_tensor_ref(delta),
                                 nn_tensor_ref(target[IN_Q])};
        st = nn_ctx_run(ctx, NN_KERNEL_ATTENTION_BACKWARD_QUERY, args, 9, &p);
    }
    if (st == NN_OK) {
        p.accumulate = temp[IN_K] ? 0 : accumulate[IN_K];
        p.accumulate_v = temp[IN_V] ? 0 : accumulate[IN_V];
        nn_buffer_ref args[9] = {q, k, v, mask, dout, lse, nn_tensor_ref(delta), nn_tensor_ref(target[IN_K]),
                                 nn_tensor_ref(target[IN_V])};
        st = nn_ctx_run(ctx, NN_KERNEL_ATTENTION_BACKWARD_KEYS, args, 9, &p);
    }
    for (int i = 0; i < 3 && st == NN_OK; i++)
        if (temp[i] && grad[i]) st = nn_run_sum_to(ctx, temp[i], grad[i], accumulate[i]);
    for (int i = 0; i < 3; i++)
        if (temp[i]) nn_tensor_release(temp[i]);
    nn_tensor_release(delta);
    return st;
}

nn_status nn_attention_onnx_composition(exporter *x, op_io *io, const char *q, const char *k, int k_ndim,
                                        const char *v, const char *mask, const nn_attention_params *p,
                                        const char *out) {
    char kt[80], scores[80], scaled[80], masked[80], probs[80], name[96];
    if (!nn_onnx_fresh_value(x, io, "keys_t", kt, sizeof kt) || !nn_onnx_fresh_value(x, io, "scores", scores, sizeof scores) ||
        !nn_onnx_fresh_value(x, io, "scaled", scaled, sizeof scaled) || !nn_onnx_fresh_value(x, io, "probs", probs, sizeof probs))
        return nn_last_status();
    int64_t perm[NN_MAX_DIMS];
    for (int d = 0; d < k_ndim; d++) perm[d] = d;
    perm[k_ndim - 2] = k_ndim - 1;
    perm[k_ndim - 1] = k_ndim - 2;
    nn_onnx_node t;
    snprintf(name, sizeof name, "%s_transpose", io->name);
    nn_onnx_node_begin(&t, "Transpose", name);
    nn_onnx_node_input(&t, k);
    nn_onnx_node_output(&t, kt);
    nn_onnx_attr_ints(&t, "perm", perm, k_ndim);
    nn_onnx_node_end(&t, &x->graph);
    snprintf(name, sizeof name, "%s_scores", io->name);
    nn_onnx_pair(x, "MatMul", name, q, kt, scores);
    snprintf(name, sizeof name, "%s_scale", io->name);
    const char *scale = nn_onnx_add_constant(x, name, NN_ONNX_FLOAT, NULL, 0, &p->scale, sizeof(float));
    if (!scale) return nn_last_status();
    nn_onnx_pair(x, "Mul", name, scores, scale, scaled);
    const char *logits = scaled;
    if (p->causal || mask) {
        if (!nn_onnx_fresh_value(x, io, "masked", masked, sizeof masked)) return nn_last_status();
        const char *additive = mask;
        if (!additive) {
            const int64_t L = p->queries, S = p->keys, dims[2] = {L, S};
            float *hide = malloc(sizeof(float) * (size_t)(L * S));
            if (!hide) return nn_set_error(NN_ERR_MEMORY, "ONNX export: out of memory for the causal mask");
            for (int64_t i = 0; i < L; i++)
                for (int64_t j = 0; j < S; j++) hide[i * S + j] = j <= i ? 0.0f : -INFINITY;
            snprintf(name, sizeof name, "%s_causal", io->name);
            additive = nn_onnx_add_constant(x, name, NN_ONNX_FLOAT, dims, 2, hide, sizeof(float) * (size_t)(L * S));
            free(hide);
            if (!additive) return nn_last_status();
        }
        snprintf(name, sizeof name, "%s_mask", io->name);
        nn_onnx_pair(x, "Add", name, scaled, additive, masked);
        logits = masked;
    }
    nn_onnx_node sm;
    snprintf(name, sizeof name, "%s_softmax", io->name);
    nn_onnx_node_begin(&sm, "Softmax", name);
    nn_onnx_node_input(&sm, logits);
    nn_onnx_node_output(&sm, probs);
    nn_onnx_attr_int(&sm, "axis", -1);
    nn_onnx_node_end(&sm, &x->graph);
    nn_onnx_pair(x, "MatMul", io->name, probs, v, out);
    return NN_OK;
}

static nn_status attention_onnx(exporter *x, op_io *io, const char *out) {
    const attention_node *n = NN_NODE_PARAMS(io->node, attention_node);
    bool batch = false;
    for (int i = 0; i < io->node->input_count; i++) batch = batch || (io->in[i] && io->in[i]->batch);
    if (batch)
        for (int i = IN_Q; i <= IN_V; i++)
            if (io->node->inputs[i]->ndim < 3 || !io->in[i]->batch)
                return nn_onnx_refuse_batch(x, io, "attention's q, k and v must all carry the batch in dimension 0");
    io->out_batch = batch;
    nn_onnx_reserve_name(x, "Attention", io);
    return nn_attention_onnx_composition(x, io, io->in[IN_Q]->name, io->in[IN_K]->name, io->node->inputs[IN_K]->ndim,
                                         io->in[IN_V]->name, io->in[IN_MASK] ? io->in[IN_MASK]->name : NULL, &n->p,
                                         out);
}

const nn_op nn_op_attention = {.name = "nn_scaled_dot_product_attention",
                               .forward = attention_forward,
                               .backward = attention_backward,
                               .to_onnx = attention_onnx};

/* t's strides along the output's batch seen as [groups, heads]: its last
 * two dimensions (or fewer, a mask's) are its matrix of `matrix` elements,
 * the ones before them its batch. False when the dimensions before the
 * last batch one do not step by one stride (then attention is composed). */
static bool batch_strides(const nn_tensor *t, int t_batch_ndim, int64_t matrix, int batch_ndim, const int64_t *batch,
                          int32_t *group_stride, int32_t *head_stride) {
    int64_t stride[NN_MAX_DIMS], step = matrix;
    const int skipped = batch_ndim - t_batch_ndim;
    for (int d = batch_ndim - 1; d >= 0; d--) {
        const int td = d - skipped;
        stride[d] = td < 0 || t->shape[td] == 1 ? 0 : step;
        if (td >= 0) step *= t->shape[td];
    }
    const int64_t heads = batch_ndim >= 1 ? stride[batch_ndim - 1] : 0;
    const int64_t groups = batch_ndim >= 2 ? stride[batch_ndim - 2] : 0;
    int64_t expected = groups;
    for (int d = batch_ndim - 3; d >= 0; d--) {
        expected *= batch[d + 1];
        if (batch[d] != 1 && stride[d] != expected) return false;
    }
    if (step > INT32_MAX) return false;
    *group_stride = (int32_t)groups;
    *head_stride = (int32_t)heads;
    return true;
}

/* The kernels' parameters for this call; false when they cannot take it. */
static bool fused_params(const nn_tensor *q, const nn_tensor *k, const nn_tensor *v, const nn_tensor *mask,
                         bool is_causal, float scale, int batch_ndim, const int64_t *batch, attention_node *n) {
    const int64_t L = q->shape[q->ndim - 2], E = q->shape[q->ndim - 1], S = k->shape[k->ndim - 2];
    const int64_t Ev = v->shape[v->ndim - 1];
    int64_t entries = 1;
    for (int d = 0; d < batch_ndim; d++) entries *= batch[d];
    if (L == 0 || S == 0 || E == 0 || Ev == 0 || E > MAX_HEAD || Ev > MAX_HEAD || (mask && mask->requires_grad) || entries * L * (E > Ev ? E : Ev) > INT32_MAX ||
        entries * S * (E > Ev ? E : Ev) > INT32_MAX || entries * L > INT32_MAX)
        return false;
    *n = (attention_node){.p = {.groups = 1, .heads = 1, .queries = (int32_t)L, .keys = (int32_t)S,
                                .head_dim = (int32_t)E, .value_dim = (int32_t)Ev, .causal = is_causal, .scale = scale},
                          .batch_ndim = batch_ndim};
    if (batch_ndim >= 1) n->p.heads = (int32_t)batch[batch_ndim - 1];
    n->p.groups = (int32_t)(entries / n->p.heads);
    const nn_tensor *operand[3] = {q, k, v};
    for (int i = 0; i < 3; i++) {
        const nn_tensor *t = operand[i];
        if (!batch_strides(t, t->ndim - 2, t->shape[t->ndim - 2] * t->shape[t->ndim - 1], batch_ndim, batch,
                           &n->p.group_stride[i], &n->p.head_stride[i]))
            return false;
    }
    if (mask) {
        const int64_t rows = mask->ndim >= 2 ? mask->shape[mask->ndim - 2] : 1, cols = mask->shape[mask->ndim - 1];
        n->p.mask_row = rows == 1 ? 0 : (int32_t)cols;
        n->p.mask_col = cols == 1 ? 0 : 1;
        if (!batch_strides(mask, mask->ndim > 2 ? mask->ndim - 2 : 0, rows * cols, batch_ndim, batch,
                           &n->p.group_stride[IN_MASK], &n->p.head_stride[IN_MASK]))
            return false;
    }
    return true;
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
    /* the batch: q's, k's and v's batch dimensions broadcast together */
    int qk_ndim, ndim;
    int64_t qk[NN_MAX_DIMS], shape[NN_MAX_DIMS];
    if (nn_broadcast_shapes(op, q->ndim - 2, q->shape, k->ndim - 2, k->shape, &qk_ndim, qk) != NN_OK ||
        nn_broadcast_shapes(op, qk_ndim, qk, v->ndim - 2, v->shape, &ndim, shape) != NN_OK)
        return composed(q, k, v, mask, is_causal, scale); /* which names the mismatch */
    shape[ndim] = q->shape[q->ndim - 2];
    shape[ndim + 1] = k->shape[k->ndim - 2];
    if (mask && check_mask(op, q, mask, ndim + 2, shape)) return NULL;
    attention_node n;
    if (!fused_params(q, k, v, mask, is_causal, scale, ndim, shape, &n)) return composed(q, k, v, mask, is_causal, scale);
    shape[ndim + 1] = v->shape[v->ndim - 1];
    nn_tensor *inputs[4] = {q, k, v, mask};
    return nn_op_result(&nn_op_attention, inputs, mask ? 4 : 3, &n, sizeof n, ndim + 2, shape);
}
