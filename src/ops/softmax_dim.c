/* softmax and log_softmax along any dimension (SOFTMAX_DIM_* kernels): x
 * seen as [outer, size, inner] around the dimension. Their backward reads
 * the output. nn_softmax_dim over the last dimension is nn_softmax, so the
 * fused patterns that contain it keep matching. */
#include "io/onnx_graph.h"
#include "ops.h"

typedef struct softmax_dim_node {
    nn_softmax_dim_params p;
    int32_t axis; /* the dimension, from 0 */
} softmax_dim_node;

static nn_status softmax_dim_forward(nn_node *node) {
    return nn_run_forward(node, NN_KERNEL_SOFTMAX_DIM_FORWARD, &NN_NODE_PARAMS(node, softmax_dim_node)->p);
}

static nn_status softmax_dim_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *y = node->output;
    nn_tensor *grad;
    int32_t acc;
    NN_TRY(nn_grad_target(x, &grad, &acc));
    nn_softmax_dim_params p = NN_NODE_PARAMS(node, softmax_dim_node)->p;
    p.accumulate = acc;
    nn_buffer_ref args[3] = {nn_tensor_ref(y), nn_tensor_ref(y->grad), nn_tensor_ref(grad)};
    return nn_ctx_run(x->ctx, NN_KERNEL_SOFTMAX_DIM_BACKWARD, args, 3, &p);
}

static nn_status softmax_dim_onnx(exporter *x, op_io *io, const char *out) {
    const softmax_dim_node *n = NN_NODE_PARAMS(io->node, softmax_dim_node);
    return nn_onnx_along_axis(x, io, out, n->p.log ? "LogSoftmax" : "Softmax", n->axis);
}

const nn_op nn_op_softmax_dim = {.name = "nn_softmax_dim",
                                 .forward = softmax_dim_forward,
                                 .backward = softmax_dim_backward,
                                 .to_onnx = softmax_dim_onnx};
const nn_op nn_op_log_softmax = {.name = "nn_log_softmax",
                                 .forward = softmax_dim_forward,
                                 .backward = softmax_dim_backward,
                                 .to_onnx = softmax_dim_onnx};

static nn_tensor *along(const char *op, const nn_op *desc, nn_tensor *x, int dim, bool log) {
    if (nn_check_tensor(op, "x", x, NN_F32) || nn_check_int32(op, "elements", x->numel)) return NULL;
    char sx[96];
    if (dim < -x->ndim || dim >= x->ndim)
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: dim %d is out of range for x %s (dimensions %d to %d)", op, dim,
                            nn_format_shape(x->ndim, x->shape, sx, sizeof sx), -x->ndim, x->ndim - 1);
    if (x->numel == 0)
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: x %s has no elements", op,
                            nn_format_shape(x->ndim, x->shape, sx, sizeof sx));
    const int axis = dim < 0 ? dim + x->ndim : dim;
    softmax_dim_node n = {.p = {.outer = 1, .size = (int32_t)x->shape[axis], .inner = 1, .log = log}, .axis = axis};
    for (int d = 0; d < axis; d++) n.p.outer *= (int32_t)x->shape[d];
    for (int d = axis + 1; d < x->ndim; d++) n.p.inner *= (int32_t)x->shape[d];
    return nn_op_result(desc, &x, 1, &n, sizeof n, x->ndim, x->shape);
}

nn_tensor *nn_softmax_dim(nn_tensor *x, int dim) {
    if (x && x->dtype == NN_F32 && dim >= -x->ndim && dim < x->ndim && (dim == -1 || dim == x->ndim - 1)) return nn_softmax(x);
    return along("nn_softmax_dim", &nn_op_softmax_dim, x, dim, false);
}

nn_tensor *nn_log_softmax(nn_tensor *x, int dim) { return along("nn_log_softmax", &nn_op_log_softmax, x, dim, true); }
