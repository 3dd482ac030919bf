/* flatten and reshape: views that share their source's storage. The
 * gradient of a view is its output gradient with the source's shape. */
#include "op_common.h"

static nn_status view_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0];
    nn_tensor *dy = node->output->grad;
    /* A computed source whose gradient nothing has written yet takes the
     * view's gradient as its own, seen in its shape: no copy, and on a GPU
     * no dispatch and no barrier (LeNet-5's flatten). The view's gradient
     * is not written again: every rule that writes it has run. */
    if (x->grad_fn && !x->grad) {
        x->grad = nn_tensor_view_at(dy, 0, x->ndim, x->shape);
        if (!x->grad) return nn_last_status();
        x->grad_written = true;
        return NN_OK;
    }
    nn_tensor *grad;
    int32_t acc;
    NN_TRY(nn_grad_target(x, &grad, &acc));
    return nn_run_scale(x->ctx, nn_tensor_ref(dy), nn_tensor_ref(grad), x->numel, 1.0f, acc);
}

static nn_tensor *make_view(const char *op, nn_tensor *x, int ndim, const int64_t *shape) {
    nn_tensor *y = nn_tensor_view(x, ndim, shape);
    if (!y) return NULL;
    return nn_op_finish(y, op, view_backward, &x, 1, NULL, 0, NULL);
}

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
    return make_view(op, x, ndim, resolved);
}

nn_tensor *nn_flatten(nn_tensor *x) {
    if (!x) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_flatten: x is NULL");
    int64_t shape[2] = {x->shape[0], x->numel / x->shape[0]};
    return make_view("nn_flatten", x, 2, shape);
}
