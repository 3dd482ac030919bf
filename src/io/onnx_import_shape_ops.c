/* The ONNX operators on shapes and layouts (onnx_import.h): reshapes,
 * views, concatenation, slicing and the integer lists exporters compute on
 * shapes (Shape, Gather, Concat, Unsqueeze, Slice, Cast of integers),
 * which run on the host. */
#include <stdlib.h>
#include <string.h>

#include "onnx_import_values.h"

nn_status nn_onnx_op_flatten(node_run *r) {
    nn_tensor *x = nn_onnx_device_in(r, 0);
    if (!x) return nn_last_status();
    const int ndim = nn_tensor_ndim(x);
    int axis = norm_axis(attr_int(r->node, "axis", 1), ndim);
    if (axis < 0 || axis > ndim) return nn_onnx_refuse(r, "axis out of range for %d dimensions", ndim);
    int64_t shape[2] = {1, 1};
    for (int d = 0; d < ndim; d++) shape[d >= axis] *= nn_tensor_dim(x, d);
    return nn_onnx_set_out(r, 0, nn_reshape(x, 2, shape));
}

nn_status nn_onnx_op_reshape(node_run *r) {
    nn_tensor *x = nn_onnx_device_in(r, 0);
    if (!x) return nn_last_status();
    int64_t shape[NN_MAX_DIMS];
    int n;
    NN_TRY(host_ints(r, 1, shape, NN_MAX_DIMS, &n));
    const bool allowzero = attr_int(r->node, "allowzero", 0) != 0;
    for (int d = 0; d < n; d++) {
        if (shape[d] == 0 && !allowzero) {
            if (d >= nn_tensor_ndim(x)) return nn_onnx_refuse(r, "a 0 in the shape past the input's dimensions");
            shape[d] = nn_tensor_dim(x, d);
        }
    }
    /* nn_reshape infers a single -1 itself */
    return nn_onnx_set_out(r, 0, nn_reshape(x, n, shape));
}

nn_status nn_onnx_op_identity(node_run *r) {
    slot *s = nn_onnx_in(r, 0);
    if (!s || (!s->t && !s->host)) return nn_onnx_refuse(r, "its input is missing");
    const int v = r->im->node_outputs[r->node - r->im->model.nodes][0];
    if (v >= 0) r->slots[v].t = s->t, r->slots[v].host = s->host;
    return NN_OK;
}

nn_status nn_onnx_op_constant(node_run *r) {
    const onnx_node *n = r->node;
    const int v = r->im->node_outputs[n - r->im->model.nodes][0];
    if (v < 0) return NN_OK;
    const onnx_attr *a = nn_onnx_attr(n, "value");
    if (a && a->t) { r->slots[v].host = a->t; return NN_OK; }
    if ((a = nn_onnx_attr(n, "value_ints"))) return set_host_out(r, 0, a->ints, (int)a->n_ints, false);
    if ((a = nn_onnx_attr(n, "value_int"))) return set_host_out(r, 0, &a->i, 1, true);
    onnx_tensor *t = &r->slots[v].owned;
    const float *values = NULL;
    int64_t count = 0;
    if ((a = nn_onnx_attr(n, "value_float"))) values = &a->f, count = 1, t->ndim = 0;
    else if ((a = nn_onnx_attr(n, "value_floats"))) values = a->floats, count = a->n_floats, t->ndim = 1;
    else return nn_onnx_refuse(r, "only value, value_int(s) and value_float(s) are supported");
    t->data_type = ONNX_FLOAT, t->dims[0] = count, t->numel = count;
    if (!(t->floats = malloc(((size_t)count + 1) * sizeof *t->floats)))
        return nn_set_error(NN_ERR_MEMORY, "imported ONNX graph: out of host memory");
    memcpy(t->floats, values, (size_t)count * sizeof *values);
    r->slots[v].host = t;
    return NN_OK;
}

nn_status nn_onnx_op_concat(node_run *r) {
    const int64_t axis = attr_int(r->node, "axis", 0);
    bool host = true;
    for (int i = 0; i < r->n_in; i++) host = host && host_in(r, i) && host_in(r, i)->ints;
    if (host) { /* shapes being assembled */
        int64_t out[NN_MAX_DIMS * 4];
        int n = 0;
        for (int i = 0; i < r->n_in; i++) {
            const onnx_tensor *h = host_in(r, i);
            if (n + h->numel > (int64_t)(sizeof out / sizeof *out)) return nn_onnx_refuse(r, "integer lists longer than 24 values");
            for (int64_t k = 0; k < h->numel; k++) out[n++] = h->ints[k];
        }
        return set_host_out(r, 0, out, n, false);
    }
    nn_tensor *parts[64];
    if (r->n_in > 64 || r->n_in < 1) return nn_onnx_refuse(r, "1 to 64 inputs are supported");
    for (int i = 0; i < r->n_in; i++)
        if (!(parts[i] = nn_onnx_device_in(r, i))) return nn_last_status();
    int dim;
    NN_TRY(check_axis(r, axis, nn_tensor_ndim(parts[0]), &dim));
    return nn_onnx_set_out(r, 0, nn_cat(parts, r->n_in, dim));
}

nn_status nn_onnx_op_transpose(node_run *r) {
    nn_tensor *x = nn_onnx_device_in(r, 0);
    if (!x) return nn_last_status();
    const int ndim = nn_tensor_ndim(x);
    int64_t perm[NN_MAX_DIMS];
    int count, p[NN_MAX_DIMS];
    if (!attr_ints(r->node, "perm", perm, NN_MAX_DIMS, &count) || (count && count != ndim))
        return nn_onnx_refuse(r, "perm must list the %d dimensions", ndim);
    for (int d = 0; d < ndim; d++) p[d] = count ? (int)perm[d] : ndim - 1 - d;
    return nn_onnx_set_out(r, 0, nn_permute(x, p, ndim));
}

nn_status nn_onnx_op_shape(node_run *r) {
    slot *s = nn_onnx_in(r, 0);
    if (!s || (!s->t && !s->host)) return nn_onnx_refuse(r, "its input is missing");
    int64_t dims[NN_MAX_DIMS];
    const int ndim = s->t ? nn_tensor_shape(s->t, dims) : s->host->ndim;
    if (!s->t) memcpy(dims, s->host->dims, sizeof dims);
    int start = norm_axis(attr_int(r->node, "start", 0), ndim), end = norm_axis(attr_int(r->node, "end", ndim), ndim);
    start = start < 0 ? 0 : start > ndim ? ndim : start;
    end = end < start ? start : end > ndim ? ndim : end;
    return set_host_out(r, 0, dims + start, end - start, false);
}

/* Gather on the device: rows of a matrix picked by integer indices from
 * the graph's input (an embedding), or constant indices along any axis. */
static nn_status gather_device(node_run *r) {
    nn_tensor *data = nn_onnx_device_in(r, 0);
    if (!data) return nn_last_status();
    int axis;
    NN_TRY(check_axis(r, attr_int(r->node, "axis", 0), nn_tensor_ndim(data), &axis));
    slot *s = nn_onnx_in(r, 1);
    if (s && s->t) {
        if (nn_tensor_dtype(s->t) != NN_I32 || axis != 0 || nn_tensor_ndim(data) != 2)
            return nn_onnx_refuse(r, "indices from the graph pick rows of a matrix (an embedding): integer indices, "
                                     "axis 0, 2-D data");
        return nn_onnx_set_out(r, 0, nn_embedding(s->t, data, -1));
    }
    const onnx_tensor *index = host_in(r, 1);
    if (!index || !index->ints || index->ndim > 1 || index->numel < 1 || index->numel > 64)
        return nn_onnx_refuse(r, "indices must be the graph's integers or a constant scalar or list of up to 64");
    nn_tensor *parts[64];
    const int64_t size = nn_tensor_dim(data, axis);
    for (int64_t i = 0; i < index->numel; i++) {
        const int64_t k = index->ints[i] < 0 ? index->ints[i] + size : index->ints[i];
        if (k < 0 || k >= size) return nn_onnx_refuse(r, "index %lld is out of range", (long long)index->ints[i]);
        parts[i] = index->ndim == 0 ? nn_select(data, axis, k) : nn_slice(data, axis, k, k + 1, 1);
        if (!parts[i]) return nn_last_status();
    }
    return nn_onnx_set_out(r, 0, index->ndim == 0 || index->numel == 1 ? parts[0] : nn_cat(parts, (int)index->numel, axis));
}

nn_status nn_onnx_op_gather(node_run *r) {
    const onnx_tensor *data = host_in(r, 0), *index = host_in(r, 1);
    if (!data || !data->ints) return gather_device(r);
    if (!index || !index->ints || data->ndim != 1 || index->numel > NN_MAX_DIMS)
        return nn_onnx_refuse(r, "integer lists (shapes) are gathered with constant indices");
    int64_t out[NN_MAX_DIMS];
    for (int64_t i = 0; i < index->numel; i++) {
        int64_t k = index->ints[i] < 0 ? index->ints[i] + data->numel : index->ints[i];
        if (k < 0 || k >= data->numel) return nn_onnx_refuse(r, "index %lld is out of range", (long long)index->ints[i]);
        out[i] = data->ints[k];
    }
    return set_host_out(r, 0, out, (int)index->numel, index->ndim == 0);
}

/* Unsqueeze / Squeeze: axes from input 1 (opset 13 on). */
nn_status nn_onnx_op_squeeze(node_run *r) {
    const bool un = r->node->op_type[0] == 'U';
    int64_t axes[NN_MAX_DIMS];
    int count = 0;
    if (nn_onnx_in(r, 1)) NN_TRY(host_ints(r, 1, axes, NN_MAX_DIMS, &count));
    else if (un) return nn_onnx_refuse(r, "axes are required");
    const onnx_tensor *h = host_in(r, 0);
    if (h && h->ints && un && h->ndim == 0 && count == 1) return set_host_out(r, 0, h->ints, 1, false); /* scalar -> [1] */
    nn_tensor *x = nn_onnx_device_in(r, 0);
    if (!x) return nn_last_status();
    int ndim = nn_tensor_ndim(x) + (un ? count : 0);
    bool chosen[NN_MAX_DIMS + 1] = {false};
    if (!un && count == 0)
        for (int d = 0; d < ndim; d++) chosen[d] = nn_tensor_dim(x, d) == 1;
    for (int i = 0; i < count; i++) {
        const int d = norm_axis(axes[i], ndim);
        if (d < 0 || d >= ndim || d > NN_MAX_DIMS) return nn_onnx_refuse(r, "axis %lld is out of range", (long long)axes[i]);
        chosen[d] = true;
    }
    nn_tensor *y = x;
    if (un) {
        for (int d = 0; y && d < ndim; d++)
            if (chosen[d]) y = nn_unsqueeze(y, d);
    } else {
        for (int d = ndim - 1; y && d >= 0; d--)
            if (chosen[d]) y = nn_squeeze(y, d);
    }
    return nn_onnx_set_out(r, 0, y);
}

/* Slice (opset 13): starts, ends, axes and steps are constants; positive
 * steps. Host integer lists (shapes) are sliced on the host. */
nn_status nn_onnx_op_slice(node_run *r) {
    int64_t starts[NN_MAX_DIMS], ends[NN_MAX_DIMS], axes[NN_MAX_DIMS], steps[NN_MAX_DIMS];
    int n, n_ends, n_axes = 0, n_steps = 0;
    NN_TRY(host_ints(r, 1, starts, NN_MAX_DIMS, &n));
    NN_TRY(host_ints(r, 2, ends, NN_MAX_DIMS, &n_ends));
    if (nn_onnx_in(r, 3)) NN_TRY(host_ints(r, 3, axes, NN_MAX_DIMS, &n_axes));
    if (nn_onnx_in(r, 4)) NN_TRY(host_ints(r, 4, steps, NN_MAX_DIMS, &n_steps));
    if (n_ends != n || (n_axes && n_axes != n) || (n_steps && n_steps != n))
        return nn_onnx_refuse(r, "starts, ends, axes and steps must have one entry per sliced axis");
    const onnx_tensor *h = host_in(r, 0);
    if (h && h->ints && h->ndim == 1) {
        if (n != 1 || (n_axes && axes[0] != 0 && axes[0] != -1) || (n_steps && steps[0] != 1))
            return nn_onnx_refuse(r, "an integer list is sliced along its one axis with step 1");
        int64_t begin = starts[0] < 0 ? starts[0] + h->numel : starts[0], end = ends[0] < 0 ? ends[0] + h->numel : ends[0];
        begin = begin < 0 ? 0 : begin > h->numel ? h->numel : begin;
        end = end < begin ? begin : end > h->numel ? h->numel : end;
        return set_host_out(r, 0, h->ints + begin, (int)(end - begin), false);
    }
    nn_tensor *y = nn_onnx_device_in(r, 0);
    if (!y) return nn_last_status();
    for (int i = 0; i < n && y; i++) {
        int axis;
        NN_TRY(check_axis(r, n_axes ? axes[i] : i, nn_tensor_ndim(y), &axis));
        const int64_t step = n_steps ? steps[i] : 1;
        if (step < 1) return nn_onnx_refuse(r, "step %lld: only positive steps are supported", (long long)step);
        y = nn_slice(y, axis, starts[i], ends[i], step);
    }
    return nn_onnx_set_out(r, 0, y);
}

/* Cast: host values change type; a device tensor only to float, which it is. */
nn_status nn_onnx_op_cast(node_run *r) {
    const int64_t to = attr_int(r->node, "to", 0);
    const onnx_tensor *h = host_in(r, 0);
    const int v = r->im->node_outputs[r->node - r->im->model.nodes][0];
    const bool to_float = to == ONNX_FLOAT || to == ONNX_DOUBLE || to == ONNX_FLOAT16;
    const bool to_int = to == ONNX_INT64 || to == ONNX_INT32 || to == ONNX_INT16 || to == ONNX_INT8 || to == ONNX_UINT8 ||
                        to == ONNX_UINT16 || to == ONNX_BOOL;
    if (!to_float && !to_int) return nn_onnx_refuse(r, "to type %lld is not supported", (long long)to);
    if (!h) {
        if (!to_float) return nn_onnx_refuse(r, "a float tensor on the device cannot become type %lld", (long long)to);
        nn_tensor *x = nn_onnx_device_in(r, 0);
        return x ? nn_onnx_set_out(r, 0, x) : nn_last_status();
    }
    if (v < 0) return NN_OK;
    onnx_tensor *t = &r->slots[v].owned;
    t->data_type = to_float ? ONNX_FLOAT : ONNX_INT64;
    t->ndim = h->ndim, t->numel = h->numel;
    memcpy(t->dims, h->dims, sizeof t->dims);
    if (to_float) t->floats = malloc(((size_t)h->numel + 1) * sizeof *t->floats);
    else t->ints = malloc(((size_t)h->numel + 1) * sizeof *t->ints);
    if (!t->floats && !t->ints) return nn_set_error(NN_ERR_MEMORY, "imported ONNX graph: out of host memory");
    for (int64_t i = 0; i < h->numel; i++) {
        const double value = h->floats ? h->floats[i] : (double)h->ints[i];
        if (to_float) t->floats[i] = (float)value;
        else t->ints[i] = to == ONNX_BOOL ? value != 0 : (int64_t)value;
    }
    r->slots[v].host = t;
    return NN_OK;
}

/* Expand: x broadcast to the shape (NumPy's rule: a 1 in either keeps the other). */
nn_status nn_onnx_op_expand(node_run *r) {
    nn_tensor *x = nn_onnx_device_in(r, 0);
    if (!x) return nn_last_status();
    int64_t shape[NN_MAX_DIMS];
    int n;
    NN_TRY(host_ints(r, 1, shape, NN_MAX_DIMS, &n));
    const int ndim = nn_tensor_ndim(x), out = n > ndim ? n : ndim;
    int64_t target[NN_MAX_DIMS];
    for (int d = 0; d < out; d++) {
        const int64_t a = d - (out - ndim) >= 0 ? nn_tensor_dim(x, d - (out - ndim)) : 1;
        const int64_t b = d - (out - n) >= 0 ? shape[d - (out - n)] : 1;
        if (a != b && a != 1 && b != 1) return nn_onnx_refuse(r, "shape does not broadcast with the input's");
        target[d] = a == 1 ? b : a;
    }
    return nn_onnx_set_out(r, 0, nn_expand(x, out, target));
}

/* Split along axis into the sizes of input 1 (or the num_outputs
 * attribute, opset 18; or equal parts, one per output). */
nn_status nn_onnx_op_split(node_run *r) {
    nn_tensor *x = nn_onnx_device_in(r, 0);
    if (!x) return nn_last_status();
    int axis;
    NN_TRY(check_axis(r, attr_int(r->node, "axis", 0), nn_tensor_ndim(x), &axis));
    const int outputs = r->node->n_outputs;
    const int64_t size = nn_tensor_dim(x, axis);
    int64_t parts[64];
    int n = 0;
    if (outputs > 64) return nn_onnx_refuse(r, "more than 64 outputs");
    if (nn_onnx_in(r, 1)) {
        NN_TRY(host_ints(r, 1, parts, 64, &n));
        if (n != outputs) return nn_onnx_refuse(r, "split gives %d sizes for %d outputs", n, outputs);
    } else {
        const int64_t each = (size + outputs - 1) / outputs; /* the last part takes what is left */
        for (n = 0; n < outputs; n++) parts[n] = n + 1 < outputs ? each : size - each * (outputs - 1);
    }
    int64_t start = 0;
    for (int i = 0; i < n; i++) {
        if (parts[i] < 1 || start + parts[i] > size) return nn_onnx_refuse(r, "split sizes do not fit the axis");
        NN_TRY(nn_onnx_set_out(r, i, nn_slice(x, axis, start, start + parts[i], 1)));
        start += parts[i];
    }
    if (start != size) return nn_onnx_refuse(r, "split sizes sum to %lld, the axis has %lld", (long long)start, (long long)size);
    return NN_OK;
}
