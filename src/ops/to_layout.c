/* The layout conversion (core/layout.h): recording puts one before an
 * operation that reads an input in another layout than the input's. Its
 * forward and backward are one STRIDED_COPY each, between the two
 * layouts' strides; in ONNX, where tensors have no layout, the identity. */
#include "core/layout.h"
#include "io/onnx_graph.h"
#include "ops.h"
#include "strided.h"

/* t's elements as its storage holds them. */
static nn_strided_view storage_view(const nn_tensor *t) {
    nn_strided_view v = {.ndim = t->ndim};
    for (int d = 0; d < t->ndim; d++) v.shape[d] = t->shape[d];
    nn_layout_strides(t, v.stride);
    return v;
}

static nn_status to_layout_forward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *y = node->output;
    const nn_strided_view from = storage_view(x), to = storage_view(y);
    return nn_run_strided_copy(x->ctx, x, &from, y, &to, 0);
}

static nn_status to_layout_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *dy = node->output->grad, *grad;
    int32_t acc;
    NN_TRY(nn_grad_target(x, &grad, &acc));
    const nn_strided_view from = storage_view(dy), to = storage_view(grad);
    return nn_run_strided_copy(x->ctx, dy, &from, grad, &to, acc);
}

static nn_status to_layout_onnx(exporter *x, op_io *io, const char *out) {
    return nn_onnx_elementwise(x, io, out, "Identity");
}

/* The input as it is; the output in the node's layout. */
static nn_layout to_layout_layouts(nn_tensor *const *inputs, int count, const void *params, int ndim,
                                   const int64_t *shape, nn_layout *input_layouts) {
    input_layouts[0] = inputs[0]->layout;
    return (nn_layout)((const nn_to_layout_node *)params)->layout;
}

const nn_op nn_op_to_layout = {.name = "nn_to_layout", .forward = to_layout_forward, .backward = to_layout_backward,
                               .to_onnx = to_layout_onnx, .layouts = to_layout_layouts};
