/* linear on x of any rank but 2: [..., in] -> [..., out], the leading
 * dimensions read as rows of one matrix (x is dense: no copy), so it runs
 * as the 2-D linear's GEMM with the bias in its epilogue. A separate
 * operation from nn_linear's 2-D one, whose fused patterns (LeNet's head)
 * assume [batch, in]. ONNX: MatMul by the transposed weight, then Add. */
#include <stdio.h>
#include <string.h>

#include "io/onnx_graph.h"
#include "ops.h"

typedef struct linear_nd_node {
    int32_t rows, in, out;
} linear_nd_node;

static nn_status linear_nd_forward(nn_node *node) {
    const linear_nd_node *p = NN_NODE_PARAMS(node, linear_nd_node);
    nn_tensor *x = node->inputs[0];
    const nn_gemm_epilogue_params g = {
        .gemm = {.m = p->rows, .n = p->out, .k = p->in, .trans_b = 1, .lda = p->in, .ldb = p->in, .ldc = p->out,
                 .batch = 1, .alpha = 1.0f, .precision = node->precision},
        .epilogue = node->inputs[2] ? NN_EPI_BIAS_COLS : 0};
    nn_buffer_ref args[4] = {nn_tensor_ref(x), nn_tensor_ref(node->inputs[1]), nn_tensor_ref(node->output),
                             nn_optional_ref(node->inputs[2])};
    return nn_ctx_run(x->ctx, NN_KERNEL_GEMM_EPILOGUE, args, 4, &g);
}

/* dx = dy W; dW and db as the 2-D linear's, over all rows. */
static nn_status linear_nd_backward(nn_node *node) {
    const linear_nd_node *p = NN_NODE_PARAMS(node, linear_nd_node);
    nn_tensor *x = node->inputs[0], *w = node->inputs[1], *dy = node->output->grad;
    if (nn_wants_grad(x)) {
        nn_tensor *grad;
        int32_t acc;
        NN_TRY(nn_grad_target(x, &grad, &acc));
        NN_TRY(nn_run_gemm(x->ctx, nn_tensor_ref(dy), nn_tensor_ref(w), nn_tensor_ref(grad), p->rows, p->in, p->out,
                           false, false, acc));
    }
    return nn_linear_layer_gradients(x->ctx, w, node->inputs[2], dy, x, p->rows, p->out, p->in);
}

static nn_status linear_nd_onnx(exporter *x, op_io *io, const char *out) {
    NN_TRY(nn_onnx_only_input_carries_batch(x, io, 0));
    if (x->dynamic && io->in[0]->batch && io->node->inputs[0]->ndim == 1)
        return nn_onnx_refuse_batch(x, io, "contracts the batch dimension (x is 1-D)");
    nn_onnx_reserve_name(x, "MatMul", io);
    char transposed[64], product[64], add[64];
    snprintf(transposed, sizeof transposed, "%s_weight_t", io->name);
    snprintf(product, sizeof product, "%s_product", io->name);
    snprintf(add, sizeof add, "%s_bias", io->name);
    nn_onnx_node n;
    nn_onnx_node_begin(&n, "Transpose", transposed);
    nn_onnx_node_input(&n, io->in[1]->name);
    nn_onnx_node_output(&n, transposed);
    nn_onnx_attr_ints(&n, "perm", (const int64_t[]){1, 0}, 2);
    nn_onnx_node_end(&n, &x->graph);
    if (!io->in[2]) {
        nn_onnx_pair(x, "MatMul", io->name, io->in[0]->name, transposed, out);
        return NN_OK;
    }
    nn_onnx_pair(x, "MatMul", io->name, io->in[0]->name, transposed, product);
    nn_onnx_pair(x, "Add", add, product, io->in[2]->name, out);
    return NN_OK;
}

const nn_op nn_op_linear_nd = {
    .name = "nn_linear", .forward = linear_nd_forward, .backward = linear_nd_backward, .to_onnx = linear_nd_onnx};

nn_tensor *nn_linear_nd(nn_tensor *x, nn_tensor *weight, nn_tensor *bias) {
    const char *op = "nn_linear";
    const int64_t in = x->shape[x->ndim - 1];
    if (nn_linear_layer_check(op, "linear", x, in, weight, bias)) return NULL;
    const int64_t rows = x->numel / in;
    if (nn_check_int32(op, "rows", rows) || nn_check_int32(op, "in_features", in) ||
        nn_check_int32(op, "elements of the result", rows * weight->shape[0]))
        return NULL;
    const linear_nd_node p = {(int32_t)rows, (int32_t)in, (int32_t)weight->shape[0]};
    int64_t shape[NN_MAX_DIMS];
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    shape[x->ndim - 1] = weight->shape[0];
    nn_tensor *inputs[3] = {x, weight, bias};
    return nn_op_result(&nn_op_linear_nd, inputs, 3, &p, sizeof p, x->ndim, shape);
}
