/* Operations that move elements without changing them: permute (and
 * transpose), slice and select along a dimension, cat (and stack), expand;
 * squeeze and unsqueeze are reshapes. Each forward is one STRIDED_COPY (a
 * BROADCAST copy for expand) into a dense result; each backward the copy
 * the other way (a sum for expand). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/onnx_graph.h"
#include "ops.h"
#include "strided.h"

static int normalize_dim(int dim, int ndim) { return dim < 0 ? dim + ndim : dim; }

static nn_status check_dim(const char *op, const char *what, const nn_tensor *x, int dim, int ndim) {
    if (dim < -ndim || dim >= ndim) {
        char sx[96];
        return nn_set_error(NN_ERR_SHAPE, "%s: %s %d is out of range for x %s (dimensions %d to %d)", op, what, dim,
                            nn_format_shape(x->ndim, x->shape, sx, sizeof sx), -ndim, ndim - 1);
    }
    return NN_OK;
}

/* ---- permute ---- */

typedef struct permute_node {
    int32_t perm[NN_MAX_DIMS];
} permute_node;

static nn_status permute_forward(nn_node *node) {
    const int32_t *perm = NN_NODE_PARAMS(node, permute_node)->perm;
    nn_tensor *x = node->inputs[0], *y = node->output;
    const nn_strided_view dense = nn_dense_view(x), to = nn_dense_view(y);
    nn_strided_view from = {.ndim = x->ndim};
    for (int d = 0; d < x->ndim; d++) from.shape[d] = x->shape[perm[d]], from.stride[d] = dense.stride[perm[d]];
    return nn_run_strided_copy(x->ctx, x, &from, y, &to, 0);
}

static nn_status permute_backward(nn_node *node) {
    const int32_t *perm = NN_NODE_PARAMS(node, permute_node)->perm;
    nn_tensor *x = node->inputs[0], *dy = node->output->grad, *grad;
    int32_t acc;
    NN_TRY(nn_grad_target(x, &grad, &acc));
    const nn_strided_view dense = nn_dense_view(x), from = nn_dense_view(dy);
    nn_strided_view to = {.ndim = x->ndim};
    for (int d = 0; d < x->ndim; d++) to.shape[d] = dy->shape[d], to.stride[d] = dense.stride[perm[d]];
    return nn_run_strided_copy(x->ctx, dy, &from, grad, &to, acc);
}

static nn_status permute_onnx(exporter *x, op_io *io, const char *out) {
    const int32_t *perm = NN_NODE_PARAMS(io->node, permute_node)->perm;
    NN_TRY(nn_onnx_only_input_carries_batch(x, io, 0));
    if (x->dynamic && io->in[0]->batch && perm[0] != 0) return nn_onnx_refuse_batch(x, io, "moves dimension 0 (the batch)");
    int64_t perm64[NN_MAX_DIMS];
    for (int d = 0; d < io->node->inputs[0]->ndim; d++) perm64[d] = perm[d];
    nn_onnx_node n;
    nn_onnx_begin(x, &n, "Transpose", io);
    nn_onnx_inputs(&n, io, 1);
    nn_onnx_node_output(&n, out);
    nn_onnx_attr_ints(&n, "perm", perm64, io->node->inputs[0]->ndim);
    nn_onnx_node_end(&n, &x->graph);
    return NN_OK;
}

const nn_op nn_op_permute = {
    .name = "nn_permute", .forward = permute_forward, .backward = permute_backward, .to_onnx = permute_onnx};

nn_tensor *nn_permute(nn_tensor *x, const int *perm, int ndim) {
    const char *op = "nn_permute";
    if (nn_check_tensor(op, "x", x, NN_F32)) return NULL;
    char sx[96];
    if (!perm || ndim != x->ndim)
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: the permutation must list all %d dimensions of x %s, got %d", op,
                            x->ndim, nn_format_shape(x->ndim, x->shape, sx, sizeof sx), perm ? ndim : 0);
    permute_node p;
    uint32_t seen = 0;
    int64_t shape[NN_MAX_DIMS];
    for (int d = 0; d < ndim; d++) {
        if (check_dim(op, "permutation entry", x, perm[d], x->ndim)) return NULL;
        p.perm[d] = normalize_dim(perm[d], x->ndim);
        if (seen & (1u << p.perm[d]))
            return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: dimension %d appears twice in the permutation", op, p.perm[d]);
        seen |= 1u << p.perm[d];
        shape[d] = x->shape[p.perm[d]];
    }
    return nn_op_result(&nn_op_permute, &x, 1, &p, sizeof p, ndim, shape);
}

nn_tensor *nn_transpose(nn_tensor *x, int dim0, int dim1) {
    const char *op = "nn_transpose";
    if (nn_check_tensor(op, "x", x, NN_F32) || check_dim(op, "dim0", x, dim0, x->ndim) ||
        check_dim(op, "dim1", x, dim1, x->ndim))
        return NULL;
    int perm[NN_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) perm[d] = d;
    perm[normalize_dim(dim0, x->ndim)] = normalize_dim(dim1, x->ndim);
    perm[normalize_dim(dim1, x->ndim)] = normalize_dim(dim0, x->ndim);
    return nn_permute(x, perm, x->ndim);
}

/* ---- slice and select ---- */

typedef struct slice_node {
    int32_t dim;
    int64_t start, step;
    int32_t select; /* the dimension is dropped (integer indexing) */
} slice_node;

/* x's elements the slice reads, over the output's shape with the sliced
 * dimension kept (size 1 when selected). */
static nn_strided_view slice_view(const nn_node *node) {
    const slice_node *s = NN_NODE_PARAMS(node, slice_node);
    const nn_tensor *x = node->inputs[0], *y = node->output;
    nn_strided_view v = nn_dense_view(x);
    v.offset = s->start * v.stride[s->dim];
    v.stride[s->dim] *= s->step;
    for (int d = 0, yd = 0; d < x->ndim; d++)
        v.shape[d] = d == s->dim ? (s->select ? 1 : y->shape[yd++]) : y->shape[yd++];
    return v;
}

/* The dense layout of a view's shape: the output's (or its gradient's),
 * with a selected dimension kept as size 1. */
static nn_strided_view dense_like(const nn_strided_view *v) {
    nn_strided_view dense = {.ndim = v->ndim};
    int64_t step = 1;
    for (int d = v->ndim - 1; d >= 0; d--) dense.shape[d] = v->shape[d], dense.stride[d] = step, step *= v->shape[d];
    return dense;
}

static nn_status slice_forward(nn_node *node) {
    nn_tensor *x = node->inputs[0];
    const nn_strided_view from = slice_view(node), to = dense_like(&from);
    return nn_run_strided_copy(x->ctx, x, &from, node->output, &to, 0);
}

static nn_status slice_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *dy = node->output->grad, *grad;
    int32_t acc;
    NN_TRY(nn_grad_target(x, &grad, &acc));
    if (!acc) NN_TRY(nn_ctx_fill(x->ctx, nn_tensor_ref(grad), 0.0f, (size_t)grad->numel));
    const nn_strided_view to = slice_view(node), from = dense_like(&to);
    return nn_run_strided_copy(x->ctx, dy, &from, grad, &to, 1);
}

/* Slice with constant starts, ends, axes and steps; select is a Gather of
 * one index, which drops the dimension. */
static nn_status slice_onnx(exporter *x, op_io *io, const char *out) {
    const slice_node *s = NN_NODE_PARAMS(io->node, slice_node);
    NN_TRY(nn_onnx_only_input_carries_batch(x, io, 0));
    if (x->dynamic && io->in[0]->batch && s->dim == 0) return nn_onnx_refuse_batch(x, io, "slices dimension 0 (the batch)");
    const int64_t size = s->select ? 1 : io->node->output->shape[s->dim];
    nn_onnx_reserve_name(x, s->select ? "Gather" : "Slice", io);
    char name[5][96];
    const char *input[4];
    const int64_t start = s->start, end = s->start + (size - 1) * s->step + 1, axis = s->dim, step = s->step;
    const int64_t *values[4] = {&start, &end, &axis, &step};
    const char *suffix[4] = {"starts", "ends", "axes", "steps"};
    nn_onnx_node n;
    if (s->select) {
        snprintf(name[0], sizeof name[0], "%s_index", io->name);
        if (!(input[0] = nn_onnx_add_constant(x, name[0], NN_ONNX_INT64, NULL, 0, &start, sizeof start)))
            return nn_last_status();
        nn_onnx_node_begin(&n, "Gather", io->name);
        nn_onnx_node_input(&n, io->in[0]->name);
        nn_onnx_node_input(&n, input[0]);
        nn_onnx_node_output(&n, out);
        nn_onnx_attr_int(&n, "axis", axis);
        nn_onnx_node_end(&n, &x->graph);
        return NN_OK;
    }
    for (int i = 0; i < 4; i++) {
        snprintf(name[i], sizeof name[i], "%s_%s", io->name, suffix[i]);
        if (!(input[i] = nn_onnx_add_constant(x, name[i], NN_ONNX_INT64, (int64_t[]){1}, 1, values[i], sizeof(int64_t))))
            return nn_last_status();
    }
    nn_onnx_node_begin(&n, "Slice", io->name);
    nn_onnx_node_input(&n, io->in[0]->name);
    for (int i = 0; i < 4; i++) nn_onnx_node_input(&n, input[i]);
    nn_onnx_node_output(&n, out);
    nn_onnx_node_end(&n, &x->graph);
    return NN_OK;
}

const nn_op nn_op_slice = {
    .name = "nn_slice", .forward = slice_forward, .backward = slice_backward, .to_onnx = slice_onnx};

/* PyTorch's slice rules: negative start and end count from the end, and
 * both are clamped to the dimension; the result must not be empty. */
/* Slices and selections move 32-bit words: float32 and int32 tensors alike. */
static nn_status check_words(const char *op, const nn_tensor *x) {
    return x && x->dtype == NN_I32 ? NN_OK : nn_check_tensor(op, "x", x, NN_F32);
}

nn_tensor *nn_slice(nn_tensor *x, int dim, int64_t start, int64_t end, int64_t step) {
    const char *op = "nn_slice";
    if (check_words(op, x) || check_dim(op, "dim", x, dim, x->ndim)) return NULL;
    if (step < 1) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: step must be >= 1, got %lld", op, (long long)step);
    const int d = normalize_dim(dim, x->ndim);
    const int64_t size = x->shape[d];
    if (start < 0) start += size;
    if (end < 0) end += size;
    start = start < 0 ? 0 : start > size ? size : start;
    end = end < start ? start : end > size ? size : end;
    if (end == start) {
        char sx[96];
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: the slice of dimension %d of x %s is empty (tensors have no empty dimensions)",
                            op, dim, nn_format_shape(x->ndim, x->shape, sx, sizeof sx));
    }
    int64_t shape[NN_MAX_DIMS];
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    shape[d] = 1 + (end - start - 1) / step; /* not (end - start + step - 1) / step: overflows for huge steps */
    const slice_node p = {.dim = d, .start = start, .step = step};
    return nn_op_record(&nn_op_slice, &x, 1, &p, sizeof p, x->dtype, x->ndim, shape);
}

nn_tensor *nn_select(nn_tensor *x, int dim, int64_t index) {
    const char *op = "nn_select";
    if (check_words(op, x) || check_dim(op, "dim", x, dim, x->ndim)) return NULL;
    const int d = normalize_dim(dim, x->ndim);
    char sx[96];
    if (index < -x->shape[d] || index >= x->shape[d])
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: index %lld is out of range for dimension %d of x %s", op,
                            (long long)index, dim, nn_format_shape(x->ndim, x->shape, sx, sizeof sx));
    if (index < 0) index += x->shape[d];
    int64_t shape[NN_MAX_DIMS];
    int ndim = 0;
    for (int i = 0; i < x->ndim; i++)
        if (i != d) shape[ndim++] = x->shape[i];
    if (ndim == 0) shape[ndim++] = 1; /* a one-element result, as nn_sum's */
    const slice_node p = {.dim = d, .start = index, .step = 1, .select = 1};
    return nn_op_record(&nn_op_slice, &x, 1, &p, sizeof p, x->dtype, ndim, shape);
}

/* ---- cat and stack ---- */

typedef struct cat_node {
    int32_t dim;
} cat_node;

/* Input i's place in the output: the output's dense view from the sum of
 * the earlier inputs' sizes along dim. */
static nn_strided_view cat_part(const nn_node *node, int i) {
    const int dim = NN_NODE_PARAMS(node, cat_node)->dim;
    nn_strided_view v = nn_dense_view(node->output);
    int64_t before = 0;
    for (int k = 0; k < i; k++) before += node->inputs[k]->shape[dim];
    v.offset = before * v.stride[dim];
    v.shape[dim] = node->inputs[i]->shape[dim];
    return v;
}

static nn_status cat_forward(nn_node *node) {
    for (int i = 0; i < node->input_count; i++) {
        nn_tensor *x = node->inputs[i];
        const nn_strided_view from = nn_dense_view(x), to = cat_part(node, i);
        NN_TRY(nn_run_strided_copy(x->ctx, x, &from, node->output, &to, 0));
    }
    return NN_OK;
}

static nn_status cat_backward(nn_node *node) {
    nn_tensor *dy = node->output->grad;
    for (int i = 0; i < node->input_count; i++) {
        nn_tensor *x = node->inputs[i], *grad;
        int32_t acc;
        if (!nn_wants_grad(x)) continue;
        NN_TRY(nn_grad_target(x, &grad, &acc));
        const nn_strided_view from = cat_part(node, i), to = nn_dense_view(x);
        NN_TRY(nn_run_strided_copy(x->ctx, dy, &from, grad, &to, acc));
    }
    return NN_OK;
}

static nn_status cat_onnx(exporter *x, op_io *io, const char *out) {
    const int dim = NN_NODE_PARAMS(io->node, cat_node)->dim;
    bool batch = false, all = true;
    for (int i = 0; i < io->node->input_count; i++) batch |= io->in[i]->batch, all &= io->in[i]->batch;
    if (x->dynamic && batch && (!all || dim == 0))
        return nn_onnx_refuse_batch(x, io, dim == 0 ? "joins along dimension 0 (the batch)" : "joins batch values with constants");
    io->out_batch = batch;
    nn_onnx_node n;
    nn_onnx_begin(x, &n, "Concat", io);
    nn_onnx_inputs(&n, io, io->node->input_count);
    nn_onnx_node_output(&n, out);
    nn_onnx_attr_int(&n, "axis", dim);
    nn_onnx_node_end(&n, &x->graph);
    return NN_OK;
}

const nn_op nn_op_cat = {.name = "nn_cat", .forward = cat_forward, .backward = cat_backward, .to_onnx = cat_onnx};

/* A node holds NN_NODE_MAX_TENSORS inputs: longer lists join in groups. */
/* More tensors than a node holds: concatenations of NN_NODE_MAX_TENSORS at
 * a time, level by level (each level's results are the next one's inputs),
 * so the depth is logarithmic and the work linear in the count. The
 * inputs were checked by the caller. */
static nn_tensor *cat_tree(nn_tensor *const *tensors, int count, int d) {
    const int width = NN_NODE_MAX_TENSORS;
    nn_tensor **level = malloc(sizeof *level * (size_t)((count + width - 1) / width));
    if (!level) return NN_FAIL_NULL(NN_ERR_MEMORY, "nn_cat: out of host memory for %d tensors", count);
    nn_tensor *const *from = tensors;
    int n = count;
    while (n > width) {
        const int groups = (n + width - 1) / width;
        for (int g = 0; g < groups; g++) { /* level[g] is written after from[g * width...], which it never follows */
            const int take = n - g * width < width ? n - g * width : width;
            if (!(level[g] = nn_cat(from + (size_t)g * width, take, d))) {
                free(level);
                return NULL;
            }
        }
        from = level;
        n = groups;
    }
    nn_tensor *out = nn_cat(from, n, d);
    free(level);
    return out;
}

nn_tensor *nn_cat(nn_tensor *const *tensors, int count, int dim) {
    const char *op = "nn_cat";
    if (!tensors || count < 1)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: needs at least one tensor, got %d", op, tensors ? count : 0);
    for (int i = 0; i < count; i++) {
        char what[32];
        snprintf(what, sizeof what, "tensors[%d]", i);
        if (nn_check_tensor(op, what, tensors[i], NN_F32) || nn_check_same_ctx(op, "tensors[0]", tensors[0], what, tensors[i])) return NULL;
    }
    const nn_tensor *first = tensors[0];
    if (check_dim(op, "dim", first, dim, first->ndim)) return NULL;
    const int d = normalize_dim(dim, first->ndim);
    int64_t shape[NN_MAX_DIMS];
    memcpy(shape, first->shape, sizeof(int64_t) * (size_t)first->ndim);
    shape[d] = 0;
    for (int i = 0; i < count; i++) {
        const nn_tensor *t = tensors[i];
        bool fits = t->ndim == first->ndim;
        for (int k = 0; k < first->ndim && fits; k++) fits = k == d || t->shape[k] == first->shape[k];
        if (!fits) {
            char s0[96], si[96];
            return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: tensors[%d] %s does not match tensors[0] %s outside dimension %d", op,
                                i, nn_format_shape(t->ndim, t->shape, si, sizeof si),
                                nn_format_shape(first->ndim, first->shape, s0, sizeof s0), dim);
        }
        if (shape[d] > INT64_MAX - t->shape[d])
            return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: dimension %d of the result (%lld + %lld at tensors[%d]) is too large",
                                op, dim, (long long)shape[d], (long long)t->shape[d], i);
        shape[d] += t->shape[d];
    }
    if (count > NN_NODE_MAX_TENSORS) return cat_tree(tensors, count, d);
    const cat_node p = {d};
    return nn_op_result(&nn_op_cat, tensors, count, &p, sizeof p, first->ndim, shape);
}

nn_tensor *nn_stack(nn_tensor *const *tensors, int count, int dim) {
    const char *op = "nn_stack";
    if (!tensors || count < 1)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: needs at least one tensor, got %d", op, tensors ? count : 0);
    if (nn_check_tensor(op, "tensors[0]", tensors[0], NN_F32)) return NULL;
    const int ndim = tensors[0]->ndim + 1;
    if (ndim > NN_MAX_DIMS)
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: the result would have %d dimensions (at most %d)", op, ndim, NN_MAX_DIMS);
    if (check_dim(op, "dim", tensors[0], dim, ndim)) return NULL;
    const nn_tensor *first = tensors[0];
    const int d = normalize_dim(dim, ndim);
    if (d < first->ndim && first->numel > 0) {
        /* Inside the shape: one concatenation along d, its dimension d then
         * split in two (no view per tensor: a stack of many stays within a
         * step's tensors). */
        for (int i = 1; i < count; i++) {
            char what[32];
            snprintf(what, sizeof what, "tensors[%d]", i);
            if (nn_check_tensor(op, what, tensors[i], NN_F32)) return NULL;
            if (tensors[i]->ndim != first->ndim ||
                memcmp(tensors[i]->shape, first->shape, sizeof(int64_t) * (size_t)first->ndim) != 0) {
                char s0[96], si[96];
                return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: tensors[%d] %s differs from tensors[0] %s", op, i,
                                    nn_format_shape(tensors[i]->ndim, tensors[i]->shape, si, sizeof si),
                                    nn_format_shape(first->ndim, first->shape, s0, sizeof s0));
            }
        }
        nn_tensor *joined = nn_cat(tensors, count, d);
        if (!joined) return NULL;
        int64_t shape[NN_MAX_DIMS];
        for (int k = 0, at = 0; k < ndim; k++) shape[k] = k == d ? count : first->shape[at++];
        return nn_reshape(joined, ndim, shape);
    }
    nn_tensor *parts[64];
    nn_tensor **raised = count <= 64 ? parts : malloc(sizeof *raised * (size_t)count);
    if (!raised) return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", op);
    nn_tensor *out = NULL;
    int i = 0;
    for (; i < count; i++) {
        char what[32];
        snprintf(what, sizeof what, "tensors[%d]", i);
        if (nn_check_tensor(op, what, tensors[i], NN_F32) || !(raised[i] = nn_unsqueeze(tensors[i], dim))) break;
    }
    if (i == count) out = nn_cat(raised, count, dim);
    if (raised != parts) free(raised);
    return out;
}

/* ---- expand ---- */

static nn_status expand_forward(nn_node *node) {
    return nn_run_broadcast(node->output->ctx, NN_BROADCAST_COPY, 1.0f, 0, node->output, node->inputs[0], NULL, NULL);
}

static nn_status expand_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *grad;
    int32_t acc;
    NN_TRY(nn_grad_target(x, &grad, &acc));
    return nn_run_sum_to(x->ctx, node->output->grad, grad, acc);
}

/* A constant of one row (a class token) expanded to as many rows as the
 * traced batch: rows of the batch, as torch.onnx's trace of
 * x.expand(input.shape[0], ...) makes it, the size taken from the graph's
 * input. */
static nn_status expand_to_batch(exporter *x, op_io *io, const char *out) {
    const nn_tensor *y = io->node->output;
    const char *batch = nn_onnx_batch_size(x);
    char rest_name[80], shape_name[80];
    snprintf(rest_name, sizeof rest_name, "%s_rest", io->name);
    snprintf(shape_name, sizeof shape_name, "%s_shape", io->name);
    const int64_t rest_len = y->ndim - 1;
    const char *rest = rest_len > 0 ? nn_onnx_add_constant(x, rest_name, NN_ONNX_INT64, &rest_len, 1, y->shape + 1,
                                                           sizeof(int64_t) * (size_t)rest_len)
                                    : "";
    if (!batch || !rest) return nn_last_status();
    nn_onnx_node n;
    nn_onnx_node_begin(&n, "Concat", shape_name);
    nn_onnx_node_input(&n, batch);
    if (rest_len > 0) nn_onnx_node_input(&n, rest);
    nn_onnx_node_output(&n, shape_name);
    nn_onnx_attr_int(&n, "axis", 0);
    nn_onnx_node_end(&n, &x->graph);
    nn_onnx_pair(x, "Expand", io->name, io->in[0]->name, shape_name, out);
    io->out_batch = true;
    return NN_OK;
}

static nn_status expand_onnx(exporter *x, op_io *io, const char *out) {
    NN_TRY(nn_onnx_only_input_carries_batch(x, io, 0));
    const nn_tensor *in = io->node->inputs[0], *y = io->node->output;
    const bool one_row = in->ndim < y->ndim || in->shape[0] == 1;
    if (x->dynamic && !io->in[0]->batch && one_row && y->shape[0] == x->input->shape[0] && y->shape[0] > 1) {
        nn_onnx_reserve_name(x, "Expand", io);
        return expand_to_batch(x, io, out);
    }
    if (x->dynamic && io->in[0]->batch && (y->ndim != in->ndim || in->shape[0] != y->shape[0]))
        return nn_onnx_refuse_batch(x, io, "moves or repeats dimension 0 (the batch)");
    int64_t dims[NN_MAX_DIMS];
    memcpy(dims, y->shape, sizeof(int64_t) * (size_t)y->ndim);
    if (x->dynamic && io->in[0]->batch) dims[0] = 1; /* Expand broadcasts: 1 keeps the input's batch */
    nn_onnx_reserve_name(x, "Expand", io);
    char shape_name[80];
    snprintf(shape_name, sizeof shape_name, "%s_shape", io->name);
    const char *shape = nn_onnx_add_constant(x, shape_name, NN_ONNX_INT64, (int64_t[]){y->ndim}, 1, dims,
                                             sizeof(int64_t) * (size_t)y->ndim);
    if (!shape) return nn_last_status();
    nn_onnx_pair(x, "Expand", io->name, io->in[0]->name, shape, out);
    return NN_OK;
}

const nn_op nn_op_expand = {
    .name = "nn_expand", .forward = expand_forward, .backward = expand_backward, .to_onnx = expand_onnx};

/* PyTorch's expand: new dimensions go in front; -1 keeps a size; only
 * sizes of 1 grow. */
nn_tensor *nn_expand(nn_tensor *x, int ndim, const int64_t *shape) {
    const char *op = "nn_expand";
    if (nn_check_tensor(op, "x", x, NN_F32)) return NULL;
    char sx[96], ss[96];
    if (!shape || ndim < x->ndim || ndim > NN_MAX_DIMS)
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: cannot expand x %s to %d dimensions (%d to %d)", op,
                            nn_format_shape(x->ndim, x->shape, sx, sizeof sx), shape ? ndim : 0, x->ndim, NN_MAX_DIMS);
    int64_t out[NN_MAX_DIMS];
    for (int d = 0; d < ndim; d++) {
        const int xd = d - (ndim - x->ndim);
        const int64_t have = xd >= 0 ? x->shape[xd] : 1;
        out[d] = shape[d] == -1 && xd >= 0 ? have : shape[d];
        if (out[d] < 1 || (have != 1 && out[d] != have))
            return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: cannot expand x %s to %s (dimension %d)", op,
                                nn_format_shape(x->ndim, x->shape, sx, sizeof sx), nn_format_shape(ndim, shape, ss, sizeof ss), d);
    }
    return nn_op_result(&nn_op_expand, &x, 1, NULL, 0, ndim, out);
}

/* ---- squeeze and unsqueeze: reshapes ---- */

nn_tensor *nn_unsqueeze(nn_tensor *x, int dim) {
    const char *op = "nn_unsqueeze";
    if (!x) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: x is NULL", op);
    if (x->ndim == NN_MAX_DIMS)
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: x already has %d dimensions (the most a tensor has)", op, NN_MAX_DIMS);
    if (check_dim(op, "dim", x, dim, x->ndim + 1)) return NULL;
    const int d = normalize_dim(dim, x->ndim + 1);
    int64_t shape[NN_MAX_DIMS];
    for (int i = 0, k = 0; i <= x->ndim; i++) shape[i] = i == d ? 1 : x->shape[k++];
    return nn_reshape(x, x->ndim + 1, shape);
}

/* PyTorch's squeeze(dim): a dimension of size 1 goes, another stays; a
 * one-dimensional x stays as it is (tensors have at least one dimension). */
nn_tensor *nn_squeeze(nn_tensor *x, int dim) {
    const char *op = "nn_squeeze";
    if (!x) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: x is NULL", op);
    if (check_dim(op, "dim", x, dim, x->ndim)) return NULL;
    const int d = normalize_dim(dim, x->ndim);
    int64_t shape[NN_MAX_DIMS];
    int ndim = 0;
    for (int i = 0; i < x->ndim; i++)
        if (i != d || x->shape[i] != 1 || x->ndim == 1) shape[ndim++] = x->shape[i];
    return nn_reshape(x, ndim, shape);
}
