/* embedding: rows of weight [num, dim] picked by int32 indices of any
 * shape, [..., dim]. The gradient into weight is the deterministic
 * EMBEDDING_BACKWARD (each row sums its positions in index order); row
 * padding_idx gets none. ONNX: Gather along axis 0. */
#include <string.h>

#include "io/onnx_graph.h"
#include "ops.h"

typedef struct embedding_node {
    int32_t padding_idx;
} embedding_node;

static nn_embedding_params params_of(const nn_node *node, int32_t accumulate) {
    const nn_tensor *indices = node->inputs[0], *weight = node->inputs[1];
    return (nn_embedding_params){.count = indices->numel, .num = (int32_t)weight->shape[0],
                                 .dim = (int32_t)weight->shape[1],
                                 .padding_idx = NN_NODE_PARAMS(node, embedding_node)->padding_idx,
                                 .accumulate = accumulate};
}

static nn_status embedding_forward(nn_node *node) {
    const nn_embedding_params p = params_of(node, 0);
    nn_buffer_ref args[3] = {nn_tensor_ref(node->inputs[0]), nn_tensor_ref(node->inputs[1]),
                             nn_tensor_ref(node->output)};
    return nn_ctx_run(node->output->ctx, NN_KERNEL_EMBEDDING_FORWARD, args, 3, &p);
}

static nn_status embedding_backward(nn_node *node) {
    nn_tensor *weight = node->inputs[1], *grad;
    if (!nn_wants_grad(weight)) return NN_OK;
    int32_t acc;
    NN_TRY(nn_grad_target(weight, &grad, &acc));
    const nn_embedding_params p = params_of(node, acc);
    nn_buffer_ref args[3] = {nn_tensor_ref(node->inputs[0]), nn_tensor_ref(node->output->grad), nn_tensor_ref(grad)};
    return nn_ctx_run(weight->ctx, NN_KERNEL_EMBEDDING_BACKWARD, args, 3, &p);
}

static nn_status embedding_onnx(exporter *x, op_io *io, const char *out) {
    NN_TRY(nn_onnx_only_input_carries_batch(x, io, 0));
    nn_onnx_node n;
    nn_onnx_begin(x, &n, "Gather", io);
    nn_onnx_node_input(&n, io->in[1]->name);
    nn_onnx_node_input(&n, io->in[0]->name);
    nn_onnx_node_output(&n, out);
    nn_onnx_attr_int(&n, "axis", 0);
    nn_onnx_node_end(&n, &x->graph);
    return NN_OK;
}

const nn_op nn_op_embedding = {
    .name = "nn_embedding", .forward = embedding_forward, .backward = embedding_backward, .to_onnx = embedding_onnx};

nn_tensor *nn_embedding(nn_tensor *indices, nn_tensor *weight, int padding_idx) {
    const char *op = "nn_embedding";
    if (nn_check_tensor(op, "indices", indices, NN_I32) || nn_check_tensor_ndim(op, "weight", weight, NN_F32, 2) ||
        nn_check_same_ctx(op, "indices", indices, "weight", weight))
        return NULL;
    char si[96];
    if (indices->ndim >= NN_MAX_DIMS)
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: indices %s have %d dimensions; the result's would be more than %d", op,
                            nn_format_shape(indices->ndim, indices->shape, si, sizeof si), indices->ndim,
                            NN_MAX_DIMS);
    if (padding_idx < -1 || padding_idx >= weight->shape[0])
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: padding_idx %d is outside [0, %lld) (or -1 for none)", op,
                            padding_idx, (long long)weight->shape[0]);
    if (nn_check_int32(op, "num_embeddings", weight->shape[0]) ||
        nn_check_int32(op, "embedding_dim", weight->shape[1]) || nn_check_int32(op, "elements of weight", weight->numel) ||
        nn_check_int32(op, "elements of the result", indices->numel * weight->shape[1]))
        return NULL;
    int64_t shape[NN_MAX_DIMS];
    memcpy(shape, indices->shape, sizeof(int64_t) * (size_t)indices->ndim);
    shape[indices->ndim] = weight->shape[1];
    const embedding_node p = {padding_idx};
    nn_tensor *inputs[2] = {indices, weight};
    return nn_op_result(&nn_op_embedding, inputs, 2, &p, sizeof p, indices->ndim + 1, shape);
}
