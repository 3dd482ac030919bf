/* Self-attention of packed projections (nn_ops.h's nn_attention_qkv_packed):
 * qkv [N, T, 3 W], the queries, keys and values side by side as one Linear
 * makes them, each W = H D wide as H heads of D. The ATTENTION kernels read
 * the heads in place (rows 3 W apart: qkv_row) and write them merged into
 * out [N, T, W] (out_row), and the gradient lands in qkv's as one block:
 * the head split and merge copy nothing and keep nothing. Where the kernels
 * cannot take the sizes, and while an ONNX export traces, it is the
 * composition (split, nn_scaled_dot_product_attention, merge), which
 * exports. */
#include <math.h>
#include <stdio.h>

#include "io/onnx_graph.h"
#include "ops.h"

enum { MAX_HEAD = 256 }; /* the Vulkan kernels' widest head (attention.c) */

typedef struct qkv_node {
    nn_attention_params p;
    int64_t width; /* W: the offset of k in a row, and of v past it */
} qkv_node;

/* qkv's third of `which` (0 q, 1 k, 2 v): the same buffer from its first column. */
static nn_buffer_ref third(const nn_tensor *qkv, const qkv_node *n, int which) {
    nn_buffer_ref ref = nn_tensor_ref(qkv);
    ref.offset += (size_t)(which * n->width) * sizeof(float);
    return ref;
}

static nn_status qkv_forward(nn_node *node) {
    const qkv_node *n = NN_NODE_PARAMS(node, qkv_node);
    nn_tensor *qkv = node->inputs[0];
    nn_tensor *lse = nn_node_save_new(node, NN_F32, 1, (const int64_t[]){(int64_t)n->p.groups * n->p.heads *
                                                                         n->p.queries});
    if (!lse) return nn_last_status();
    nn_buffer_ref args[6] = {third(qkv, n, 0), third(qkv, n, 1), third(qkv, n, 2), {NULL, 0, 0},
                             nn_tensor_ref(node->output), nn_tensor_ref(lse)};
    nn_attention_params p = n->p;
    p.precision = qkv->ctx->launch_precision; /* the node's (nn_attention_params) */
    return nn_ctx_run(qkv->ctx, NN_KERNEL_ATTENTION_FORWARD, args, 6, &p);
}

/* dq, dk and dv into their thirds of qkv's gradient: each written once. */
static nn_status qkv_backward(nn_node *node) {
    const qkv_node *n = NN_NODE_PARAMS(node, qkv_node);
    nn_tensor *qkv = node->inputs[0], *out = node->output, *grad;
    if (!nn_wants_grad(qkv)) return NN_OK;
    int32_t accumulate;
    NN_TRY(nn_grad_target(qkv, &grad, &accumulate));
    nn_ctx *ctx = qkv->ctx;
    nn_tensor *delta =
        nn_op_scratch(ctx, NN_F32, 1, (const int64_t[]){(int64_t)n->p.groups * n->p.heads * n->p.queries});
    if (!delta) return nn_last_status();
    nn_attention_params p = n->p;
    p.precision = ctx->launch_precision; /* the node's */
    p.accumulate = p.accumulate_v = accumulate;
    const nn_buffer_ref q = third(qkv, n, 0), k = third(qkv, n, 1), v = third(qkv, n, 2), none = {NULL, 0, 0};
    const nn_buffer_ref dout = nn_tensor_ref(out->grad), lse = nn_tensor_ref(node->saved[0]);
    nn_buffer_ref query[9] = {q, k, v, none, nn_tensor_ref(out), dout, lse, nn_tensor_ref(delta), third(grad, n, 0)};
    nn_status st = nn_ctx_run(ctx, NN_KERNEL_ATTENTION_BACKWARD_QUERY, query, 9, &p);
    if (st == NN_OK) {
        nn_buffer_ref keys[9] = {q, k, v, none, dout, lse, nn_tensor_ref(delta), third(grad, n, 1), third(grad, n, 2)};
        st = nn_ctx_run(ctx, NN_KERNEL_ATTENTION_BACKWARD_KEYS, keys, 9, &p);
    }
    nn_tensor_release(delta);
    return st;
}

/* Reshape to [N, T, 3, H, D], Transpose to [N, 3, H, T, D], Gather q, k
 * and v on axis 1, the attention composition, Transpose to [N, T, H, D],
 * Reshape to [N, T, W] (0 keeps the batch, whatever it is). */
static nn_status qkv_onnx(exporter *x, op_io *io, const char *out) {
    const qkv_node *n = NN_NODE_PARAMS(io->node, qkv_node);
    const int64_t t = n->p.queries, heads = n->p.heads, d = n->p.head_dim;
    io->out_batch = io->in[0]->batch;
    nn_onnx_reserve_name(x, "SelfAttention", io);
    char split[80], moved[80], part[3][80], heads_out[80], merged[80], name[112];
    if (!nn_onnx_fresh_value(x, io, "split", split, sizeof split) ||
        !nn_onnx_fresh_value(x, io, "moved", moved, sizeof moved) ||
        !nn_onnx_fresh_value(x, io, "heads_out", heads_out, sizeof heads_out) ||
        !nn_onnx_fresh_value(x, io, "merged", merged, sizeof merged))
        return nn_last_status();
    snprintf(name, sizeof name, "%s_split", io->name);
    NN_TRY(nn_onnx_reshape_to(x, name, io->in[0]->name, (const int64_t[]){0, t, 3, heads, d}, 5, split));
    nn_onnx_node node;
    snprintf(name, sizeof name, "%s_move", io->name);
    nn_onnx_node_begin(&node, "Transpose", name);
    nn_onnx_node_input(&node, split);
    nn_onnx_node_output(&node, moved);
    nn_onnx_attr_ints(&node, "perm", (const int64_t[]){0, 2, 3, 1, 4}, 5);
    nn_onnx_node_end(&node, &x->graph);
    static const char *const what[3] = {"queries", "keys", "values"};
    for (int i = 0; i < 3; i++) {
        const int64_t index = i;
        snprintf(name, sizeof name, "%s_%s_index", io->name, what[i]);
        const char *at = nn_onnx_add_constant(x, name, NN_ONNX_INT64, NULL, 0, &index, sizeof index);
        if (!at || !nn_onnx_fresh_value(x, io, what[i], part[i], sizeof part[i])) return nn_last_status();
        snprintf(name, sizeof name, "%s_%s", io->name, what[i]);
        nn_onnx_node_begin(&node, "Gather", name);
        nn_onnx_node_input(&node, moved);
        nn_onnx_node_input(&node, at);
        nn_onnx_node_output(&node, part[i]);
        nn_onnx_attr_int(&node, "axis", 1);
        nn_onnx_node_end(&node, &x->graph);
    }
    NN_TRY(nn_attention_onnx_composition(x, io, part[0], part[1], 4, part[2], NULL, &n->p, heads_out));
    snprintf(name, sizeof name, "%s_merge", io->name);
    nn_onnx_node_begin(&node, "Transpose", name);
    nn_onnx_node_input(&node, heads_out);
    nn_onnx_node_output(&node, merged);
    nn_onnx_attr_ints(&node, "perm", (const int64_t[]){0, 2, 1, 3}, 4);
    nn_onnx_node_end(&node, &x->graph);
    snprintf(name, sizeof name, "%s_rows", io->name);
    return nn_onnx_reshape_to(x, name, merged, (const int64_t[]){0, t, heads * d}, 3, out);
}

static const nn_op kAttentionQkv = {.name = "nn_attention_qkv_packed", .forward = qkv_forward,
                                    .backward = qkv_backward, .to_onnx = qkv_onnx};

/* The same from recorded operations: [N, T, 3, H, D] -> [N, 3, H, T, D]
 * (the batch first, as the export needs), the three selected, attention,
 * the heads back side by side. */
static nn_tensor *composed(nn_tensor *qkv, int64_t heads, bool causal) {
    const int64_t n = qkv->shape[0], t = qkv->shape[1], width = qkv->shape[2] / 3, d = width / heads;
    nn_tensor *split = nn_permute(nn_reshape(qkv, 5, (const int64_t[]){n, t, 3, heads, d}),
                                  (const int[]){0, 2, 3, 1, 4}, 5);
    nn_tensor *q = nn_select(split, 1, 0), *k = nn_select(split, 1, 1), *v = nn_select(split, 1, 2);
    nn_tensor *out = nn_scaled_dot_product_attention(q, k, v, NULL, causal, 0.0f);
    return nn_reshape(nn_transpose(out, 1, 2), 3, (const int64_t[]){n, t, width});
}

nn_tensor *nn_attention_qkv_packed(nn_tensor *qkv, int heads, bool is_causal) {
    const char *op = "nn_attention_qkv_packed";
    if (nn_check_tensor(op, "qkv", qkv, NN_F32)) return NULL;
    char shape[96];
    if (heads < 1 || qkv->ndim != 3 || qkv->shape[2] == 0 || qkv->shape[2] % (3 * (int64_t)heads) != 0)
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: qkv %s must be [N, T, 3 x heads x head size] with heads >= 1 (heads %d)",
                            op, nn_format_shape(qkv->ndim, qkv->shape, shape, sizeof shape), heads);
    const int64_t n = qkv->shape[0], t = qkv->shape[1], width = qkv->shape[2] / 3, d = width / heads;
    if (n == 0 || t == 0 || d > MAX_HEAD || n * t * qkv->shape[2] > INT32_MAX)
        return composed(qkv, heads, is_causal);
    const qkv_node node = {
        .p = {.groups = (int32_t)n, .heads = heads, .queries = (int32_t)t, .keys = (int32_t)t,
              .head_dim = (int32_t)d, .value_dim = (int32_t)d, .causal = is_causal,
              .scale = 1.0f / sqrtf((float)d), .group_stride = {(int32_t)(t * 3 * width), (int32_t)(t * 3 * width),
                                                                 (int32_t)(t * 3 * width), 0},
              .head_stride = {(int32_t)d, (int32_t)d, (int32_t)d, 0}, .qkv_row = (int32_t)(3 * width),
              .out_row = (int32_t)width},
        .width = width};
    return nn_op_result(&kAttentionQkv, &qkv, 1, &node, sizeof node, 3, (const int64_t[]){n, t, width});
}
