/* What the ONNX importer's operators (onnx_import_ops.c,
 * onnx_import_shape_ops.c) read from a node: its attributes, and the host
 * values of its inputs (constants, and the integer lists that shapes
 * compute), and how they write host outputs. */
#ifndef NN_IO_ONNX_IMPORT_VALUES_H
#define NN_IO_ONNX_IMPORT_VALUES_H

#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "onnx_import.h"

static inline int64_t attr_int(const onnx_node *n, const char *name, int64_t fallback) {
    const onnx_attr *a = nn_onnx_attr(n, name);
    return a ? a->i : fallback;
}
static inline float attr_float(const onnx_node *n, const char *name, float fallback) {
    const onnx_attr *a = nn_onnx_attr(n, name);
    return a ? a->f : fallback;
}
/* An INTS attribute into out[max] (count in *count); false when longer. */
static inline bool attr_ints(const onnx_node *n, const char *name, int64_t *out, int max, int *count) {
    const onnx_attr *a = nn_onnx_attr(n, name);
    *count = a ? (int)a->n_ints : 0;
    if (a && a->n_ints > max) return false;
    for (int i = 0; i < *count; i++) out[i] = a->ints[i];
    return true;
}

/* Input i's host values (a constant, or what shapes computed; NULL for a
 * tensor computed on the device). A constant keeps them after a node
 * copied it to the device. */
static inline const onnx_tensor *host_in(node_run *r, int i) {
    slot *s = nn_onnx_in(r, i);
    return s ? s->host : NULL;
}

/* Input i as host integers of at most `max` values, into out. */
static inline nn_status host_ints(node_run *r, int i, int64_t *out, int max, int *count) {
    const onnx_tensor *h = host_in(r, i);
    *count = 0;
    if (!h || !h->ints) return nn_onnx_refuse(r, "input %d must be a constant list of integers", i);
    if (h->numel > max) return nn_onnx_refuse(r, "input %d holds more than %d values", i, max);
    for (int k = 0; k < h->numel; k++) out[k] = h->ints[k];
    *count = (int)h->numel;
    return NN_OK;
}

/* Input i as a host scalar (float or integer): false when absent. */
static inline bool host_scalar(node_run *r, int i, float *value) {
    const onnx_tensor *h = host_in(r, i);
    if (!h || h->numel != 1) return false;
    *value = h->floats ? h->floats[0] : (float)h->ints[0];
    return true;
}

/* Output i as an owned host tensor of integers. */
static inline nn_status set_host_out(node_run *r, int i, const int64_t *values, int count, bool scalar) {
    const int v = r->im->node_outputs[r->node - r->im->model.nodes][i];
    if (v < 0) return NN_OK;
    onnx_tensor *t = &r->slots[v].owned;
    t->data_type = ONNX_INT64;
    t->ndim = scalar ? 0 : 1;
    t->dims[0] = count;
    t->numel = count;
    t->ints = malloc(((size_t)count + 1) * sizeof *t->ints);
    if (!t->ints) return nn_set_error(NN_ERR_MEMORY, "imported ONNX graph: out of host memory");
    memcpy(t->ints, values, (size_t)count * sizeof *values);
    r->slots[v].host = t;
    return NN_OK;
}

static inline int norm_axis(int64_t axis, int ndim) { return (int)(axis < 0 ? axis + ndim : axis); }

static inline nn_status check_axis(node_run *r, int64_t axis, int ndim, int *out) {
    *out = norm_axis(axis, ndim);
    if (*out < 0 || *out >= ndim) return nn_onnx_refuse(r, "axis %lld is out of range for %d dimensions", (long long)axis, ndim);
    return NN_OK;
}

#endif
