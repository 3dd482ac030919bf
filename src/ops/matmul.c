/* matmul with transpose flags: C = op(A) op(B) for 2-D tensors. */
#include "io/onnx_graph.h"
#include "ops.h"

typedef struct matmul_node {
    bool transpose_a, transpose_b;
    int32_t m, n, k;
} matmul_node;

static nn_status matmul_forward(nn_node *node) {
    const matmul_node *p = NN_NODE_PARAMS(node, matmul_node);
    nn_tensor *a = node->inputs[0], *b = node->inputs[1];
    return nn_run_gemm(a->ctx, nn_tensor_ref(a), nn_tensor_ref(b), nn_tensor_ref(node->output), p->m, p->n, p->k,
                       p->transpose_a, p->transpose_b, 0);
}

/* With the flags, each gradient is one more GEMM:
 *   dA = dC op(B)^T      (A not transposed)   dA = op(B) dC^T   (A transposed)
 *   dB = op(A)^T dC      (B not transposed)   dB = dC^T op(A)   (B transposed) */
static nn_status matmul_backward(nn_node *node) {
    const matmul_node *p = NN_NODE_PARAMS(node, matmul_node);
    nn_tensor *a = node->inputs[0], *b = node->inputs[1], *c = node->output;
    const bool ta = p->transpose_a, tb = p->transpose_b;
    const int m = p->m, n = p->n, k = p->k;
    nn_ctx *ctx = c->ctx;
    nn_tensor *grad;
    int32_t acc;
    if (nn_wants_grad(a)) {
        NN_TRY(nn_grad_target(a, &grad, &acc));
        if (!ta)
            NN_TRY(nn_run_gemm(ctx, nn_tensor_ref(c->grad), nn_tensor_ref(b), nn_tensor_ref(grad), m, k, n, false,
                               !tb, acc));
        else
            NN_TRY(nn_run_gemm(ctx, nn_tensor_ref(b), nn_tensor_ref(c->grad), nn_tensor_ref(grad), k, m, n, tb,
                               true, acc));
    }
    if (nn_wants_grad(b)) {
        NN_TRY(nn_grad_target(b, &grad, &acc));
        if (!tb)
            NN_TRY(nn_run_gemm(ctx, nn_tensor_ref(a), nn_tensor_ref(c->grad), nn_tensor_ref(grad), k, n, m, !ta,
                               false, acc));
        else
            NN_TRY(nn_run_gemm(ctx, nn_tensor_ref(c->grad), nn_tensor_ref(a), nn_tensor_ref(grad), n, k, m, true,
                               ta, acc));
    }
    return NN_OK;
}

static nn_status matmul_onnx(exporter *x, op_io *io, const char *out) {
    const matmul_node *p = NN_NODE_PARAMS(io->node, matmul_node);
    if (x->dynamic && io->in[0]->batch && p->transpose_a)
        return nn_onnx_refuse_batch(x, io, "contracts over the batch dimension (a is transposed)");
    NN_TRY(nn_onnx_only_input_carries_batch(x, io, 0));
    nn_onnx_node n;
    nn_onnx_begin(x, &n, "Gemm", io);
    nn_onnx_inputs(&n, io, 2);
    nn_onnx_node_output(&n, out);
    if (p->transpose_a) nn_onnx_attr_int(&n, "transA", 1);
    if (p->transpose_b) nn_onnx_attr_int(&n, "transB", 1);
    nn_onnx_node_end(&n, &x->graph);
    return NN_OK;
}

const nn_op nn_op_matmul = {
    .name = "nn_matmul", .forward = matmul_forward, .backward = matmul_backward, .to_onnx = matmul_onnx};

nn_tensor *nn_matmul(nn_tensor *a, nn_tensor *b, bool transpose_a, bool transpose_b) {
    const char *op = "nn_matmul";
    if (nn_check_tensor_ndim(op, "a", a, NN_F32, 2) || nn_check_tensor_ndim(op, "b", b, NN_F32, 2) ||
        nn_check_same_ctx(op, "a", a, "b", b))
        return NULL;
    int64_t m = transpose_a ? a->shape[1] : a->shape[0];
    int64_t k = transpose_a ? a->shape[0] : a->shape[1];
    int64_t kb = transpose_b ? b->shape[1] : b->shape[0];
    int64_t n = transpose_b ? b->shape[0] : b->shape[1];
    if (k != kb) {
        char sa[96], sb[96];
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: inner dimensions differ: a %s%s has %lld, b %s%s has %lld",
                            op, nn_format_shape(2, a->shape, sa, sizeof sa),
                            transpose_a ? " (transposed)" : "", (long long)k,
                            nn_format_shape(2, b->shape, sb, sizeof sb),
                            transpose_b ? " (transposed)" : "", (long long)kb);
    }
    if (nn_check_int32(op, "m", m) || nn_check_int32(op, "n", n) || nn_check_int32(op, "k", k)) return NULL;
    const matmul_node p = {transpose_a, transpose_b, (int32_t)m, (int32_t)n, (int32_t)k};
    const int64_t shape[2] = {m, n};
    nn_tensor *inputs[2] = {a, b};
    return nn_op_result(&nn_op_matmul, inputs, 2, &p, sizeof p, 2, shape);
}
