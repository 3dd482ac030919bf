/* Reductions: sum and mean over all elements (backward broadcasts the
 * scalar gradient); sum, mean, max, min, argmax, argmin and var over given
 * dimensions (REDUCE_DIMS; max and min pass the gradient to each output's
 * winner, as PyTorch's max(dim) does). Sums of int32 tensors, over all
 * elements or dimensions, are REDUCE_DIMS's exact integer sums (wrapping
 * modulo 2^32), with no gradient. */
#include <stdio.h>

#include "io/onnx_graph.h"
#include "ops.h"
#include "strided.h"

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

nn_tensor *nn_mean(nn_tensor *x) {
    if (nn_check_tensor("nn_mean", "x", x, NN_F32)) return NULL;
    return reduce_all(&nn_op_mean, x, (float)(1.0 / (double)x->numel));
}

/* ---- reductions over given dimensions ---- */

typedef struct reduce_dims_node {
    int32_t op;       /* nn_reduce_op */
    uint32_t reduced; /* bit d: dimension d is reduced */
    int32_t keepdim;
    float alpha; /* 1, or 1 / count for the mean */
} reduce_dims_node;

static nn_status reduce_dims_forward(nn_node *node) {
    const reduce_dims_node *r = NN_NODE_PARAMS(node, reduce_dims_node);
    nn_tensor *x = node->inputs[0];
    nn_reduce_dims_params p;
    NN_TRY(nn_reduce_dims_plan(x, r->reduced, (nn_reduce_op)r->op, r->alpha, &p));
    p.integer = x->dtype == NN_I32;
    nn_tensor *winners = NULL;
    if (r->op != NN_REDUCE_SUM && !(winners = nn_node_save_new(node, NN_I32, node->output->ndim, node->output->shape)))
        return nn_last_status();
    nn_buffer_ref args[3] = {nn_tensor_ref(x), nn_tensor_ref(node->output), nn_optional_ref(winners)};
    return nn_ctx_run(x->ctx, NN_KERNEL_REDUCE_DIMS, args, 3, &p);
}

/* x's shape with the reduced dimensions as 1: dy seen that way broadcasts to x. */
static nn_tensor *keepdim_view(const nn_node *node, nn_tensor *dy) {
    const reduce_dims_node *r = NN_NODE_PARAMS(node, reduce_dims_node);
    const nn_tensor *x = node->inputs[0];
    int64_t shape[NN_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) shape[d] = r->reduced & (1u << d) ? 1 : x->shape[d];
    return nn_tensor_view_at(dy, 0, x->ndim, shape);
}

static nn_status reduce_dims_backward(nn_node *node) {
    const reduce_dims_node *r = NN_NODE_PARAMS(node, reduce_dims_node);
    nn_tensor *x = node->inputs[0], *dy = node->output->grad, *grad;
    int32_t acc;
    NN_TRY(nn_grad_target(x, &grad, &acc));
    if (r->op == NN_REDUCE_SUM) {
        nn_tensor *spread = keepdim_view(node, dy);
        if (!spread) return nn_last_status();
        nn_status st = nn_run_broadcast(x->ctx, NN_BROADCAST_COPY, r->alpha, acc, grad, spread, NULL, NULL);
        nn_tensor_release(spread);
        return st;
    }
    /* max and min: dy goes to each output's winner, zeros elsewhere */
    if (!acc) NN_TRY(nn_ctx_fill(x->ctx, nn_tensor_ref(grad), 0.0f, (size_t)grad->numel));
    nn_reduce_dims_params p;
    NN_TRY(nn_reduce_dims_plan(x, r->reduced, (nn_reduce_op)r->op, 1.0f, &p));
    nn_buffer_ref args[3] = {nn_tensor_ref(dy), nn_tensor_ref(node->saved[0]), nn_tensor_ref(grad)};
    return nn_ctx_run(x->ctx, NN_KERNEL_REDUCE_DIMS_SCATTER, args, 3, &p);
}

/* The axes of a reduction node, as ONNX lists them. */
static int reduced_axes(const nn_node *node, int64_t *axes) {
    const reduce_dims_node *r = NN_NODE_PARAMS(node, reduce_dims_node);
    int count = 0;
    for (int d = 0; d < node->inputs[0]->ndim; d++)
        if (r->reduced & (1u << d)) axes[count++] = d;
    return count;
}

/* A reduction's output carries the batch when dimension 0 is kept. Every
 * dimension reduced without keepdim: ONNX's scalar, reshaped to [1]. */
static nn_status reduce_dims_onnx(exporter *x, op_io *io, const char *out, const char *op_type, bool axes_input) {
    NN_TRY(nn_onnx_only_input_carries_batch(x, io, 0));
    const reduce_dims_node *r = NN_NODE_PARAMS(io->node, reduce_dims_node);
    int64_t axes[NN_MAX_DIMS];
    const int count = reduced_axes(io->node, axes);
    io->out_batch = io->in[0]->batch && !(r->reduced & 1u);
    const bool scalar = !r->keepdim && count == io->node->inputs[0]->ndim;
    nn_onnx_reserve_name(x, op_type, io);
    char axes_name[80], scalar_name[80];
    snprintf(axes_name, sizeof axes_name, "%s_axes", io->name);
    snprintf(scalar_name, sizeof scalar_name, "%s_out", io->name);
    const char *axes_value = NULL;
    if (axes_input &&
        !(axes_value = nn_onnx_add_constant(x, axes_name, NN_ONNX_INT64, (int64_t[]){count}, 1, axes,
                                            sizeof(int64_t) * (size_t)count)))
        return nn_last_status();
    if (scalar && !nn_onnx_add_value(x, NULL, scalar_name, false)) return nn_last_status();
    nn_onnx_node n;
    nn_onnx_node_begin(&n, op_type, io->name);
    nn_onnx_node_input(&n, io->in[0]->name);
    if (axes_value) nn_onnx_node_input(&n, axes_value);
    nn_onnx_node_output(&n, scalar ? scalar_name : out);
    if (!axes_input) nn_onnx_attr_ints(&n, "axes", axes, count);
    nn_onnx_attr_int(&n, "keepdims", r->keepdim);
    nn_onnx_node_end(&n, &x->graph);
    if (!scalar) return NN_OK;
    char reshape_name[48];
    snprintf(reshape_name, sizeof reshape_name, "Reshape_%d", x->nodes_made++);
    int64_t one = 1;
    return nn_onnx_reshape_to(x, reshape_name, scalar_name, &one, 1, out);
}

/* opset 17: ReduceSum takes its axes as an input, the others as an attribute */
static nn_status sum_dims_onnx(exporter *x, op_io *io, const char *out) {
    return reduce_dims_onnx(x, io, out, "ReduceSum", true);
}
static nn_status mean_dims_onnx(exporter *x, op_io *io, const char *out) {
    return reduce_dims_onnx(x, io, out, "ReduceMean", false);
}
static nn_status max_dims_onnx(exporter *x, op_io *io, const char *out) {
    return reduce_dims_onnx(x, io, out, "ReduceMax", false);
}
static nn_status min_dims_onnx(exporter *x, op_io *io, const char *out) {
    return reduce_dims_onnx(x, io, out, "ReduceMin", false);
}

const nn_op nn_op_sum_dims = {
    .name = "nn_sum_dims", .forward = reduce_dims_forward, .backward = reduce_dims_backward, .to_onnx = sum_dims_onnx};
const nn_op nn_op_mean_dims = {
    .name = "nn_mean_dims", .forward = reduce_dims_forward, .backward = reduce_dims_backward, .to_onnx = mean_dims_onnx};
const nn_op nn_op_max_dims = {
    .name = "nn_max_dims", .forward = reduce_dims_forward, .backward = reduce_dims_backward, .to_onnx = max_dims_onnx};
const nn_op nn_op_min_dims = {
    .name = "nn_min_dims", .forward = reduce_dims_forward, .backward = reduce_dims_backward, .to_onnx = min_dims_onnx};
/* int32 sums: over all elements as over every dimension (a [1] result either way). */
static const nn_op nn_op_sum_int = {
    .name = "nn_sum", .forward = reduce_dims_forward, .backward = nn_no_gradient, .to_onnx = sum_dims_onnx};
static const nn_op nn_op_sum_dims_int = {
    .name = "nn_sum_dims", .forward = reduce_dims_forward, .backward = nn_no_gradient, .to_onnx = sum_dims_onnx};

/* The reduced dimensions' bits from a list (negative: from the end; none:
 * all), refusing repeats and dimensions x lacks; the output's shape. */
static nn_status reduction_shape(const char *op, const nn_tensor *x, const int *dims, int count, bool keepdim,
                                 uint32_t *reduced, int *ndim, int64_t *shape, int64_t *elements) {
    char sx[96];
    if (count < 0 || (count > 0 && !dims))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: %d dimensions listed%s", op, count, dims ? "" : " but dims is NULL");
    *reduced = 0;
    for (int i = 0; i < count; i++) {
        const int d = dims[i] < 0 ? dims[i] + x->ndim : dims[i];
        if (d < 0 || d >= x->ndim)
            return nn_set_error(NN_ERR_SHAPE, "%s: dimension %d is out of range for x %s", op, dims[i],
                                nn_format_shape(x->ndim, x->shape, sx, sizeof sx));
        if (*reduced & (1u << d)) return nn_set_error(NN_ERR_ARGUMENT, "%s: dimension %d is listed twice", op, d);
        *reduced |= 1u << d;
    }
    if (count == 0) *reduced = (1u << x->ndim) - 1;
    *ndim = 0;
    *elements = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (*reduced & (1u << d)) *elements *= x->shape[d];
        if (!(*reduced & (1u << d))) shape[(*ndim)++] = x->shape[d];
        else if (keepdim) shape[(*ndim)++] = 1;
    }
    if (*ndim == 0) shape[(*ndim)++] = 1;
    return NN_OK;
}

static nn_tensor *reduce_dims(const nn_op *op, nn_reduce_op kind, bool mean, nn_tensor *x, const int *dims,
                              int count, bool keepdim) {
    const bool integer = op == &nn_op_sum_int || op == &nn_op_sum_dims_int;
    if (nn_check_tensor(op->name, "x", x, integer ? NN_I32 : NN_F32)) return NULL;
    reduce_dims_node p = {.op = kind, .keepdim = keepdim, .alpha = 1.0f};
    int ndim;
    int64_t shape[NN_MAX_DIMS], elements;
    if (reduction_shape(op->name, x, dims, count, keepdim, &p.reduced, &ndim, shape, &elements)) return NULL;
    if (mean) p.alpha = (float)(1.0 / (double)elements);
    return nn_op_record(op, &x, 1, &p, sizeof p, x->dtype, ndim, shape);
}

/* An int32 sum over every element is one over every dimension. */
nn_tensor *nn_sum(nn_tensor *x) {
    if (x && x->dtype == NN_I32) return reduce_dims(&nn_op_sum_int, NN_REDUCE_SUM, false, x, NULL, 0, false);
    if (nn_check_tensor("nn_sum", "x", x, NN_F32)) return NULL;
    return reduce_all(&nn_op_sum, x, 1.0f);
}

nn_tensor *nn_sum_dims(nn_tensor *x, const int *dims, int count, bool keepdim) {
    const nn_op *op = x && x->dtype == NN_I32 ? &nn_op_sum_dims_int : &nn_op_sum_dims;
    return reduce_dims(op, NN_REDUCE_SUM, false, x, dims, count, keepdim);
}
nn_tensor *nn_mean_dims(nn_tensor *x, const int *dims, int count, bool keepdim) {
    return reduce_dims(&nn_op_mean_dims, NN_REDUCE_SUM, true, x, dims, count, keepdim);
}
nn_tensor *nn_max_dims(nn_tensor *x, const int *dims, int count, bool keepdim) {
    return reduce_dims(&nn_op_max_dims, NN_REDUCE_MAX, false, x, dims, count, keepdim);
}
nn_tensor *nn_min_dims(nn_tensor *x, const int *dims, int count, bool keepdim) {
    return reduce_dims(&nn_op_min_dims, NN_REDUCE_MIN, false, x, dims, count, keepdim);
}

/* ---- argmax and argmin: the winners' positions (int32, no gradient) ---- */

static nn_status arg_forward(nn_node *node) {
    const reduce_dims_node *r = NN_NODE_PARAMS(node, reduce_dims_node);
    nn_tensor *x = node->inputs[0];
    nn_reduce_dims_params p;
    NN_TRY(nn_reduce_dims_plan(x, r->reduced, (nn_reduce_op)r->op, 1.0f, &p));
    nn_tensor *values = nn_node_save_new(node, NN_F32, node->output->ndim, node->output->shape);
    if (!values) return nn_last_status();
    nn_buffer_ref args[3] = {nn_tensor_ref(x), nn_tensor_ref(values), nn_tensor_ref(node->output)};
    return nn_ctx_run(x->ctx, NN_KERNEL_REDUCE_DIMS, args, 3, &p);
}

/* ONNX's ArgMax has one axis: every dimension is a flattened input's axis 0.
 * Its int64 result is cast to the engine's int32. */
static nn_status arg_onnx(exporter *x, op_io *io, const char *out, const char *op_type) {
    NN_TRY(nn_onnx_only_input_carries_batch(x, io, 0));
    const reduce_dims_node *r = NN_NODE_PARAMS(io->node, reduce_dims_node);
    const nn_tensor *in = io->node->inputs[0];
    int64_t axes[NN_MAX_DIMS];
    const int count = reduced_axes(io->node, axes);
    const bool all = count == in->ndim;
    if (count != 1 && !all)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: %s over %d of %d dimensions has no ONNX form (one or all)", x->who,
                            io->node->op->name, count, in->ndim);
    io->out_batch = io->in[0]->batch && !(r->reduced & 1u);
    nn_onnx_reserve_name(x, op_type, io);
    char flat[80], wide[80];
    snprintf(flat, sizeof flat, "%s_flat", io->name);
    snprintf(wide, sizeof wide, "%s_int64", io->name);
    const char *source = io->in[0]->name;
    if (all) {
        char reshape_name[48];
        snprintf(reshape_name, sizeof reshape_name, "Reshape_%d", x->nodes_made++);
        if (!nn_onnx_add_value(x, NULL, flat, false)) return nn_last_status();
        int64_t minus_one = -1;
        NN_TRY(nn_onnx_reshape_to(x, reshape_name, source, &minus_one, 1, flat));
        source = flat;
    }
    if (!nn_onnx_add_value(x, NULL, wide, false)) return nn_last_status();
    nn_onnx_node n;
    nn_onnx_node_begin(&n, op_type, io->name);
    nn_onnx_node_input(&n, source);
    nn_onnx_node_output(&n, wide);
    nn_onnx_attr_int(&n, "axis", all ? 0 : axes[0]);
    nn_onnx_attr_int(&n, "keepdims", all ? 1 : r->keepdim);
    nn_onnx_attr_int(&n, "select_last_index", 0);
    nn_onnx_node_end(&n, &x->graph);
    const char *cast_input = wide;
    char shaped[80];
    if (all && r->keepdim && in->ndim > 1) {
        int64_t ones[NN_MAX_DIMS];
        for (int d = 0; d < in->ndim; d++) ones[d] = 1;
        snprintf(shaped, sizeof shaped, "%s_shaped", io->name);
        if (!nn_onnx_add_value(x, NULL, shaped, false)) return nn_last_status();
        char reshape_name[48];
        snprintf(reshape_name, sizeof reshape_name, "Reshape_%d", x->nodes_made++);
        NN_TRY(nn_onnx_reshape_to(x, reshape_name, wide, ones, in->ndim, shaped));
        cast_input = shaped;
    }
    nn_onnx_cast(x, cast_input, NN_ONNX_INT32, out);
    return NN_OK;
}

static nn_status argmax_onnx(exporter *x, op_io *io, const char *out) { return arg_onnx(x, io, out, "ArgMax"); }
static nn_status argmin_onnx(exporter *x, op_io *io, const char *out) { return arg_onnx(x, io, out, "ArgMin"); }

/* Positions carry no gradient (nn_no_gradient). */
const nn_op nn_op_argmax = {
    .name = "nn_argmax", .forward = arg_forward, .backward = nn_no_gradient, .to_onnx = argmax_onnx};
const nn_op nn_op_argmin = {
    .name = "nn_argmin", .forward = arg_forward, .backward = nn_no_gradient, .to_onnx = argmin_onnx};

static nn_tensor *arg_dims(const nn_op *op, nn_reduce_op kind, nn_tensor *x, const int *dims, int count,
                           bool keepdim) {
    if (nn_check_tensor(op->name, "x", x, NN_F32)) return NULL;
    reduce_dims_node p = {.op = kind, .keepdim = keepdim, .alpha = 1.0f};
    int ndim;
    int64_t shape[NN_MAX_DIMS], elements;
    if (reduction_shape(op->name, x, dims, count, keepdim, &p.reduced, &ndim, shape, &elements)) return NULL;
    if (elements > INT32_MAX)
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: %lld elements per output exceed int32 positions", op->name,
                            (long long)elements);
    return nn_op_record(op, &x, 1, &p, sizeof p, NN_I32, ndim, shape);
}

nn_tensor *nn_argmax_dims(nn_tensor *x, const int *dims, int count, bool keepdim) {
    return arg_dims(&nn_op_argmax, NN_REDUCE_MAX, x, dims, count, keepdim);
}
nn_tensor *nn_argmin_dims(nn_tensor *x, const int *dims, int count, bool keepdim) {
    return arg_dims(&nn_op_argmin, NN_REDUCE_MIN, x, dims, count, keepdim);
}

/* ---- variance: a composition whose gradient follows from its parts ---- */

nn_tensor *nn_var_dims(nn_tensor *x, const int *dims, int count, double correction, bool keepdim) {
    const char *op = "nn_var_dims";
    if (nn_check_tensor(op, "x", x, NN_F32)) return NULL;
    uint32_t reduced;
    int ndim;
    int64_t shape[NN_MAX_DIMS], elements;
    if (reduction_shape(op, x, dims, count, keepdim, &reduced, &ndim, shape, &elements)) return NULL;
    if (!(correction >= 0.0))
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: correction must be >= 0, got %g", op, correction);
    nn_tensor *mean = nn_mean_dims(x, dims, count, true);
    nn_tensor *centred = mean ? nn_sub(x, mean) : NULL;
    nn_tensor *squares = centred ? nn_mul(centred, centred) : NULL;
    nn_tensor *total = squares ? nn_sum_dims(squares, dims, count, keepdim) : NULL;
    /* PyTorch: n - correction <= 0 gives inf or NaN, not an error */
    return total ? nn_scale(total, (float)(1.0 / ((double)elements - correction))) : NULL;
}
