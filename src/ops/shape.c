/* flatten and reshape: views that share their source's storage (no kernel;
 * view operations, core/graph.h). The gradient of a view is its output
 * gradient with the source's shape. */
#include <string.h>

#include "io/onnx_graph.h"
#include "ops.h"

static nn_status view_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0];
    nn_tensor *dy = node->output->grad;
    /* The view's gradient is not written again: every rule that writes it has run. */
    bool shared;
    NN_TRY(nn_grad_share(x, dy, &shared));
    if (shared) return NN_OK;
    nn_tensor *grad;
    int32_t acc;
    NN_TRY(nn_grad_target(x, &grad, &acc));
    return nn_run_scale(x->ctx, nn_tensor_ref(dy), nn_tensor_ref(grad), x->numel, 1.0f, acc);
}

/* Flatten keeps dimension 0 (the batch) and joins the rest: ONNX Flatten axis 1. */
static nn_status flatten_onnx(exporter *x, op_io *io, const char *out) {
    return nn_onnx_along_axis(x, io, out, "Flatten", 1);
}

/* The recorded output shape; with a dynamic batch, dimension 0 is written
 * as 0 ("copy from the input") and must be the batch on both sides. */
static nn_status reshape_onnx(exporter *x, op_io *io, const char *out) {
    NN_TRY(nn_onnx_only_input_carries_batch(x, io, 0));
    const nn_tensor *from = io->node->inputs[0], *to = io->node->output;
    int64_t dims[NN_MAX_DIMS];
    memcpy(dims, to->shape, sizeof(int64_t) * (size_t)to->ndim);
    if (x->dynamic && io->in[0]->batch) {
        if (to->shape[0] != from->shape[0]) return nn_onnx_refuse_batch(x, io, "changes dimension 0 (the batch)");
        dims[0] = 0;
    }
    nn_onnx_reserve_name(x, "Reshape", io);
    return nn_onnx_reshape_to(x, io->name, io->in[0]->name, dims, to->ndim, out);
}

const nn_op nn_op_flatten = {
    .name = "nn_flatten", .forward = NULL, .backward = view_backward, .to_onnx = flatten_onnx, .view = true};
const nn_op nn_op_reshape = {
    .name = "nn_reshape", .forward = NULL, .backward = view_backward, .to_onnx = reshape_onnx, .view = true};

nn_tensor *nn_reshape(nn_tensor *x, int ndim, const int64_t *shape) {
    const char *op = "nn_reshape";
    if (!x) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: x is NULL", op);
    if (!shape) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: shape is NULL", op);
    if (ndim < 1 || ndim > NN_MAX_DIMS)
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: ndim must be 1..%d, got %d", op, NN_MAX_DIMS, ndim);
    int64_t resolved[NN_MAX_DIMS];
    int inferred = -1;
    int64_t known = 1;
    bool too_many = false;
    char sx[96], ss[96];
    nn_format_shape(x->ndim, x->shape, sx, sizeof sx);
    nn_format_shape(ndim, shape, ss, sizeof ss);
    for (int i = 0; i < ndim; i++) {
        resolved[i] = shape[i];
        if (shape[i] == -1) {
            if (inferred >= 0)
                return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: only one dimension of %s may be -1", op, ss);
            inferred = i;
        } else if (shape[i] < 1) {
            return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: dimension %d of %s must be >= 1 or -1", op, i, ss);
        } else if (shape[i] > x->numel / known) {
            too_many = true; /* more elements than x has (and no overflow) */
        } else {
            known *= shape[i];
        }
    }
    if (too_many) {
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: cannot view x %s (%lld elements) as %s", op, sx,
                            (long long)x->numel, ss);
    } else if (inferred >= 0) {
        if (x->numel % known != 0)
            return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: cannot view x %s (%lld elements) as %s", op, sx,
                                (long long)x->numel, ss);
        resolved[inferred] = x->numel / known;
    } else if (known != x->numel) {
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: cannot view x %s (%lld elements) as %s", op, sx,
                            (long long)x->numel, ss);
    }
    return nn_op_record(&nn_op_reshape, &x, 1, NULL, 0, x->dtype, ndim, resolved);
}

nn_tensor *nn_flatten(nn_tensor *x) {
    if (!x) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_flatten: x is NULL");
    int64_t shape[2] = {x->shape[0], x->numel / x->shape[0]};
    return nn_op_record(&nn_op_flatten, &x, 1, NULL, 0, x->dtype, 2, shape);
}
