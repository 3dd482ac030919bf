/* sum and mean over all elements; backward broadcasts the scalar gradient. */
#include <stdio.h>

#include "io/onnx_graph.h"
#include "ops.h"

typedef struct reduce_node {
    float factor; /* 1 for sum, 1 / numel for mean */
} reduce_node;

static nn_status reduce_forward(nn_node *node) {
    nn_tensor *x = node->inputs[0];
    nn_pointwise_params p = {.n = x->numel, .alpha = NN_NODE_PARAMS(node, reduce_node)->factor};
    return nn_run_forward(node, NN_KERNEL_REDUCE_SUM, &p);
}

static nn_status reduce_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *grad;
    int32_t acc;
    NN_TRY(nn_grad_target(x, &grad, &acc));
    nn_pointwise_params p = {.n = x->numel, .accumulate = acc, .alpha = NN_NODE_PARAMS(node, reduce_node)->factor};
    nn_buffer_ref args[2] = {nn_tensor_ref(node->output->grad), nn_tensor_ref(grad)};
    return nn_ctx_run(x->ctx, NN_KERNEL_BROADCAST_SCALAR, args, 2, &p);
}

/* Everything reduced: a scalar, then [1] as nn-engine returns. */
static nn_status reduce_onnx(exporter *x, op_io *io, const char *out, const char *op_type) {
    NN_TRY(nn_onnx_only_input_carries_batch(x, io, 0));
    io->out_batch = false;
    nn_onnx_node n;
    nn_onnx_begin(x, &n, op_type, io);
    char scalar[80];
    snprintf(scalar, sizeof scalar, "%s_out", io->name);
    if (!nn_onnx_add_value(x, NULL, scalar, false)) {
        nn_pb_free(&n.pb);
        return nn_last_status();
    }
    nn_onnx_inputs(&n, io, 1);
    nn_onnx_node_output(&n, scalar);
    nn_onnx_attr_int(&n, "keepdims", 0);
    nn_onnx_node_end(&n, &x->graph);
    char reshape_name[48];
    snprintf(reshape_name, sizeof reshape_name, "Reshape_%d", x->nodes_made++);
    int64_t one = 1;
    return nn_onnx_reshape_to(x, reshape_name, scalar, &one, 1, out);
}

static nn_status sum_onnx(exporter *x, op_io *io, const char *out) { return reduce_onnx(x, io, out, "ReduceSum"); }
static nn_status mean_onnx(exporter *x, op_io *io, const char *out) { return reduce_onnx(x, io, out, "ReduceMean"); }

const nn_op nn_op_sum = {
    .name = "nn_sum", .forward = reduce_forward, .backward = reduce_backward, .to_onnx = sum_onnx};
const nn_op nn_op_mean = {
    .name = "nn_mean", .forward = reduce_forward, .backward = reduce_backward, .to_onnx = mean_onnx};

static nn_tensor *reduce_all(const nn_op *op, nn_tensor *x, float factor) {
    const int64_t one = 1;
    const reduce_node p = {factor};
    return nn_op_result(op, &x, 1, &p, sizeof p, 1, &one);
}

nn_tensor *nn_sum(nn_tensor *x) {
    if (nn_check_tensor("nn_sum", "x", x, NN_F32)) return NULL;
    return reduce_all(&nn_op_sum, x, 1.0f);
}

nn_tensor *nn_mean(nn_tensor *x) {
    if (nn_check_tensor("nn_mean", "x", x, NN_F32)) return NULL;
    return reduce_all(&nn_op_mean, x, (float)(1.0 / (double)x->numel));
}
