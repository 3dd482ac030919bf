/* The ONNX operators the importer runs (onnx_import.h), each as the
 * engine's operations; shapes, axes and the arithmetic exporters write on
 * shapes (Shape, Gather, Concat, Unsqueeze of integers) run on the host. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "onnx_import.h"

/* ---- attributes and host values ---- */

static int64_t attr_int(const onnx_node *n, const char *name, int64_t fallback) {
    const onnx_attr *a = nn_onnx_attr(n, name);
    return a ? a->i : fallback;
}
static float attr_float(const onnx_node *n, const char *name, float fallback) {
    const onnx_attr *a = nn_onnx_attr(n, name);
    return a ? a->f : fallback;
}
/* An INTS attribute into out[max] (count in *count); false when longer. */
static bool attr_ints(const onnx_node *n, const char *name, int64_t *out, int max, int *count) {
    const onnx_attr *a = nn_onnx_attr(n, name);
    *count = a ? (int)a->n_ints : 0;
    if (a && a->n_ints > max) return false;
    for (int i = 0; i < *count; i++) out[i] = a->ints[i];
    return true;
}

/* Input i's host values (a constant, or what shapes computed; NULL for a
 * tensor computed on the device). A constant keeps them after a node
 * copied it to the device. */
static const onnx_tensor *host_in(node_run *r, int i) {
    slot *s = nn_onnx_in(r, i);
    return s ? s->host : NULL;
}

/* Input i as host integers of at most `max` values, into out. */
static nn_status host_ints(node_run *r, int i, int64_t *out, int max, int *count) {
    const onnx_tensor *h = host_in(r, i);
    *count = 0;
    if (!h || !h->ints) return nn_onnx_refuse(r, "input %d must be a constant list of integers", i);
    if (h->numel > max) return nn_onnx_refuse(r, "input %d holds more than %d values", i, max);
    for (int k = 0; k < h->numel; k++) out[k] = h->ints[k];
    *count = (int)h->numel;
    return NN_OK;
}

/* Input i as a host scalar (float or integer): false when absent. */
static bool host_scalar(node_run *r, int i, float *value) {
    const onnx_tensor *h = host_in(r, i);
    if (!h || h->numel != 1) return false;
    *value = h->floats ? h->floats[0] : (float)h->ints[0];
    return true;
}

/* Output i as an owned host tensor of integers. */
static nn_status set_host_out(node_run *r, int i, const int64_t *values, int count, bool scalar) {
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

static int norm_axis(int64_t axis, int ndim) { return (int)(axis < 0 ? axis + ndim : axis); }

static nn_status check_axis(node_run *r, int64_t axis, int ndim, int *out) {
    *out = norm_axis(axis, ndim);
    if (*out < 0 || *out >= ndim) return nn_onnx_refuse(r, "axis %lld is out of range for %d dimensions", (long long)axis, ndim);
    return NN_OK;
}

/* Inputs 0 and 1 on the device and input 2, optional, there too (NULL
 * when omitted): a weighted operation's x, weight and bias (Conv,
 * ConvTranspose, LayerNormalization; Gemm's A, B and C). */
static nn_status weighted_inputs(node_run *r, nn_tensor **x, nn_tensor **w, nn_tensor **b) {
    *x = nn_onnx_device_in(r, 0);
    *w = *x ? nn_onnx_device_in(r, 1) : NULL;
    *b = *w && nn_onnx_in(r, 2) ? nn_onnx_device_in(r, 2) : NULL;
    return !*w || (nn_onnx_in(r, 2) && !*b) ? nn_last_status() : NN_OK;
}

/* ---- windows (Conv, pools) ---- */

typedef struct window {
    int64_t kernel[2], strides[2], dilations[2], pads[2];
} window;

/* The 2-D window of node r over x [N, C, H, W]: kernel (from kernel_shape
 * or `kernel`), strides, dilations and symmetric padding (auto_pad's SAME
 * forms computed from x's size). */
static nn_status read_window(node_run *r, nn_tensor *x, const int64_t *kernel, window *w) {
    const onnx_node *n = r->node;
    int count;
    int64_t pads[4] = {0, 0, 0, 0}, v[4];
    if (nn_tensor_ndim(x) != 4) return nn_onnx_refuse(r, "only 2-D windows over [N, C, H, W] inputs are supported");
    if (!attr_ints(n, "kernel_shape", v, 2, &count) || (count != 2 && (count || !kernel)))
        return nn_onnx_refuse(r, "kernel_shape must have 2 entries");
    for (int d = 0; d < 2; d++) w->kernel[d] = count ? v[d] : kernel[d];
    if (!attr_ints(n, "strides", v, 2, &count) || (count && count != 2)) return nn_onnx_refuse(r, "strides must have 2 entries");
    for (int d = 0; d < 2; d++) w->strides[d] = count ? v[d] : 1;
    if (!attr_ints(n, "dilations", v, 2, &count) || (count && count != 2)) return nn_onnx_refuse(r, "dilations must have 2 entries");
    for (int d = 0; d < 2; d++) w->dilations[d] = count ? v[d] : 1;
    if (!attr_ints(n, "pads", pads, 4, &count) || (count && count != 4)) return nn_onnx_refuse(r, "pads must have 4 entries");
    const onnx_attr *auto_pad = nn_onnx_attr(n, "auto_pad");
    const char *mode = auto_pad && auto_pad->s ? auto_pad->s : "NOTSET";
    if (strcmp(mode, "VALID") == 0) {
        memset(pads, 0, sizeof pads);
    } else if (strcmp(mode, "SAME_UPPER") == 0 || strcmp(mode, "SAME_LOWER") == 0) {
        for (int d = 0; d < 2; d++) {
            const int64_t in = nn_tensor_dim(x, 2 + d), s = w->strides[d];
            const int64_t out = (in + s - 1) / s, extent = (w->kernel[d] - 1) * w->dilations[d] + 1;
            const int64_t total = (out - 1) * s + extent - in > 0 ? (out - 1) * s + extent - in : 0;
            const int64_t small = total / 2, large = total - small;
            pads[d] = mode[5] == 'U' ? small : large;
            pads[d + 2] = mode[5] == 'U' ? large : small;
        }
    } else if (strcmp(mode, "NOTSET") != 0) {
        return nn_onnx_refuse(r, "auto_pad '%s' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER", mode);
    }
    for (int d = 0; d < 2; d++) {
        if (pads[d] != pads[d + 2])
            return nn_onnx_refuse(r, "padding %lld before and %lld after a dimension: only equal padding is supported",
                                  (long long)pads[d], (long long)pads[d + 2]);
        w->pads[d] = pads[d];
        if (w->kernel[d] < 1 || w->strides[d] < 1 || w->dilations[d] < 1 || pads[d] < 0 || w->kernel[d] > INT32_MAX ||
            w->strides[d] > INT32_MAX || w->dilations[d] > INT32_MAX || pads[d] > INT32_MAX)
            return nn_onnx_refuse(r, "a kernel, stride, dilation or padding out of range");
    }
    return NN_OK;
}

static nn_status op_conv(node_run *r) {
    nn_tensor *x, *w, *b;
    NN_TRY(weighted_inputs(r, &x, &w, &b));
    if (nn_tensor_ndim(w) != 4) return nn_onnx_refuse(r, "only 2-D convolutions (a 4-D weight) are supported");
    window win;
    const int64_t kernel[2] = {nn_tensor_dim(w, 2), nn_tensor_dim(w, 3)};
    NN_TRY(read_window(r, x, kernel, &win));
    const int64_t group = attr_int(r->node, "group", 1);
    if (group < 1 || group > INT32_MAX) return nn_onnx_refuse(r, "group %lld is out of range", (long long)group);
    const nn_conv2d_params p = {.stride_h = (int)win.strides[0], .stride_w = (int)win.strides[1],
                                .pad_h = (int)win.pads[0], .pad_w = (int)win.pads[1],
                                .dilation_h = (int)win.dilations[0], .dilation_w = (int)win.dilations[1],
                                .groups = (int)group};
    return nn_onnx_set_out(r, 0, nn_conv2d_ex(x, w, b, &p));
}

/* Outputs past the first (MaxPool's indices, Dropout's mask) are not made:
 * refused where the graph reads them. */
static nn_status only_first_output(node_run *r) {
    const imported *im = r->im;
    for (int i = 1; i < r->node->n_outputs; i++) {
        const int v = im->node_outputs[r->node - im->model.nodes][i];
        if (v >= 0 && im->readers[v] > 0)
            return nn_onnx_refuse(r, "output %d ('%s') is not supported", i, r->node->outputs[i]);
    }
    return NN_OK;
}

static nn_status op_pool(node_run *r) {
    nn_tensor *x = nn_onnx_device_in(r, 0);
    if (!x) return nn_last_status();
    NN_TRY(only_first_output(r));
    window win;
    NN_TRY(read_window(r, x, NULL, &win));
    const bool max = strcmp(r->node->op_type, "MaxPool") == 0;
    const nn_pool2d_params p = {.kernel_h = (int)win.kernel[0], .kernel_w = (int)win.kernel[1],
                                .stride_h = (int)win.strides[0], .stride_w = (int)win.strides[1],
                                .pad_h = (int)win.pads[0], .pad_w = (int)win.pads[1],
                                .dilation_h = (int)win.dilations[0], .dilation_w = (int)win.dilations[1],
                                .ceil_mode = attr_int(r->node, "ceil_mode", 0) != 0};
    if (max) return nn_onnx_set_out(r, 0, nn_maxpool2d_window(x, &p));
    return nn_onnx_set_out(r, 0, nn_avgpool2d(x, &p, attr_int(r->node, "count_include_pad", 0) != 0, 0));
}

static nn_status op_global_pool(node_run *r) {
    nn_tensor *x = nn_onnx_device_in(r, 0);
    if (!x) return nn_last_status();
    if (nn_tensor_ndim(x) != 4) return nn_onnx_refuse(r, "only [N, C, H, W] inputs are supported");
    const bool max = strcmp(r->node->op_type, "GlobalMaxPool") == 0;
    return nn_onnx_set_out(r, 0, max ? nn_adaptive_maxpool2d(x, 1, 1) : nn_adaptive_avgpool2d(x, 1, 1));
}

/* BatchNormalization: the module's mode decides, as PyTorch's BatchNorm
 * (training_mode in the file says how it was exported). ONNX's momentum
 * weighs the running value, PyTorch's the batch's. Outputs 1 and 2 of a
 * training-mode export are the running statistics. */
static nn_status op_batch_norm(node_run *r) {
    nn_tensor *in[5];
    for (int i = 0; i < 5; i++)
        if (!(in[i] = nn_onnx_device_in(r, i))) return nn_last_status();
    const float momentum = 1.0f - attr_float(r->node, "momentum", 0.9f);
    const float eps = attr_float(r->node, "epsilon", 1e-5f);
    if (!(momentum >= 0.0f && momentum <= 1.0f)) return nn_onnx_refuse(r, "momentum must be in [0, 1]");
    nn_tensor *y = nn_batch_norm(in[0], in[3], in[4], in[1], in[2], nn_module_is_training(r->module), momentum, eps);
    NN_TRY(nn_onnx_set_out(r, 0, y));
    if (r->node->n_outputs > 1) NN_TRY(nn_onnx_set_out(r, 1, in[3]));
    if (r->node->n_outputs > 2) NN_TRY(nn_onnx_set_out(r, 2, in[4]));
    return NN_OK;
}

static nn_status op_unary(node_run *r) {
    nn_tensor *x = nn_onnx_device_in(r, 0);
    if (!x) return nn_last_status();
    const onnx_node *n = r->node;
    const char *op = n->op_type;
    nn_tensor *y = NULL;
    if (strcmp(op, "Relu") == 0) y = nn_relu(x);
    else if (strcmp(op, "Sigmoid") == 0) y = nn_sigmoid(x);
    else if (strcmp(op, "Tanh") == 0) y = nn_tanh(x);
    else if (strcmp(op, "Exp") == 0) y = nn_exp(x);
    else if (strcmp(op, "Log") == 0) y = nn_log(x);
    else if (strcmp(op, "Sqrt") == 0) y = nn_sqrt(x);
    else if (strcmp(op, "Abs") == 0) y = nn_abs(x);
    else if (strcmp(op, "Neg") == 0) y = nn_neg(x);
    else if (strcmp(op, "Softsign") == 0) y = nn_softsign(x);
    else if (strcmp(op, "HardSwish") == 0) y = nn_hardswish(x);
    else if (strcmp(op, "Softplus") == 0) y = nn_softplus(x, 1.0f, INFINITY);
    else if (strcmp(op, "LeakyRelu") == 0) y = nn_leaky_relu(x, attr_float(n, "alpha", 0.01f));
    else if (strcmp(op, "Elu") == 0) y = nn_elu(x, attr_float(n, "alpha", 1.0f));
    else if (strcmp(op, "HardSigmoid") == 0) {
        const float alpha = attr_float(n, "alpha", 0.2f), beta = attr_float(n, "beta", 0.5f);
        if (fabsf(alpha - 1.0f / 6.0f) > 1e-6f || beta != 0.5f)
            return nn_onnx_refuse(r, "alpha %g and beta %g: only PyTorch's hardsigmoid (1/6, 0.5) is supported", alpha, beta);
        y = nn_hardsigmoid(x);
    } else if (strcmp(op, "Gelu") == 0) {
        const onnx_attr *a = nn_onnx_attr(n, "approximate");
        const bool tanh_form = a && a->s && strcmp(a->s, "tanh") == 0;
        if (a && a->s && !tanh_form && strcmp(a->s, "none") != 0) return nn_onnx_refuse(r, "approximate '%s' is unknown", a->s);
        y = nn_gelu(x, tanh_form);
    }
    return nn_onnx_set_out(r, 0, y);
}

static nn_status op_clip(node_run *r) {
    nn_tensor *x = nn_onnx_device_in(r, 0);
    if (!x) return nn_last_status();
    float lo = -FLT_MAX, hi = FLT_MAX;
    if ((nn_onnx_in(r, 1) && !host_scalar(r, 1, &lo)) || (nn_onnx_in(r, 2) && !host_scalar(r, 2, &hi)))
        return nn_onnx_refuse(r, "min and max must be constant scalars");
    if (lo == 0.0f && hi == 6.0f) return nn_onnx_set_out(r, 0, nn_relu6(x));
    if (lo == 0.0f && hi == FLT_MAX) return nn_onnx_set_out(r, 0, nn_relu(x));
    return nn_onnx_set_out(r, 0, nn_clamp(x, lo, hi));
}

static nn_status op_pow(node_run *r) {
    nn_tensor *x = nn_onnx_device_in(r, 0);
    float e;
    if (!x) return nn_last_status();
    if (!host_scalar(r, 1, &e)) return nn_onnx_refuse(r, "only a constant scalar exponent is supported");
    return nn_onnx_set_out(r, 0, nn_pow_scalar(x, e));
}

/* Add, Sub, Mul, Div: on the device (broadcasting), with a scalar constant
 * as the scalar operations, or on host integers (shape arithmetic). */
static nn_status op_binary(node_run *r) {
    const char op = r->node->op_type[0];
    const onnx_tensor *ha = host_in(r, 0), *hb = host_in(r, 1);
    if (ha && hb && ha->ints && hb->ints) {
        if (ha->numel != hb->numel && ha->numel != 1 && hb->numel != 1)
            return nn_onnx_refuse(r, "integer operands of %lld and %lld values", (long long)ha->numel, (long long)hb->numel);
        const int64_t n = ha->numel > hb->numel ? ha->numel : hb->numel;
        int64_t out[NN_MAX_DIMS * 4];
        if (n > (int64_t)(sizeof out / sizeof *out)) return nn_onnx_refuse(r, "integer operands longer than 24 values");
        for (int64_t i = 0; i < n; i++) {
            const int64_t a = ha->ints[ha->numel == 1 ? 0 : i], b = hb->ints[hb->numel == 1 ? 0 : i];
            if (op == 'D' && b == 0) return nn_onnx_refuse(r, "integer division by zero");
            out[i] = op == 'A' ? a + b : op == 'S' ? a - b : op == 'M' ? a * b : a / b;
        }
        return set_host_out(r, 0, out, (int)n, ha->ndim == 0 && hb->ndim == 0);
    }
    float s;
    if (!ha && host_scalar(r, 1, &s) && hb->floats) {
        nn_tensor *x = nn_onnx_device_in(r, 0);
        if (!x) return nn_last_status();
        return nn_onnx_set_out(r, 0, op == 'A' ? nn_add_scalar(x, s) : op == 'S' ? nn_add_scalar(x, -s)
                                     : op == 'M' ? nn_mul_scalar(x, s) : nn_mul_scalar(x, 1.0f / s));
    }
    if (!hb && host_scalar(r, 0, &s) && ha->floats) {
        nn_tensor *x = nn_onnx_device_in(r, 1);
        if (!x) return nn_last_status();
        return nn_onnx_set_out(r, 0, op == 'A' ? nn_add_scalar(x, s) : op == 'S' ? nn_rsub_scalar(x, s)
                                     : op == 'M' ? nn_mul_scalar(x, s) : nn_rdiv_scalar(x, s));
    }
    nn_tensor *a = nn_onnx_device_in(r, 0), *b = a ? nn_onnx_device_in(r, 1) : NULL;
    if (!b) return nn_last_status();
    return nn_onnx_set_out(r, 0, op == 'A' ? nn_add(a, b) : op == 'S' ? nn_sub(a, b) : op == 'M' ? nn_mul(a, b) : nn_div(a, b));
}

static nn_status op_gemm(node_run *r) {
    nn_tensor *a, *b, *c;
    NN_TRY(weighted_inputs(r, &a, &b, &c));
    const bool ta = attr_int(r->node, "transA", 0) != 0, tb = attr_int(r->node, "transB", 0) != 0;
    const float alpha = attr_float(r->node, "alpha", 1.0f), beta = attr_float(r->node, "beta", 1.0f);
    if (nn_tensor_ndim(a) != 2 || nn_tensor_ndim(b) != 2) return nn_onnx_refuse(r, "A and B must be matrices");
    if (!ta && tb && alpha == 1.0f && beta == 1.0f && (!c || (nn_tensor_ndim(c) == 1 && nn_tensor_dim(c, 0) == nn_tensor_dim(b, 0))))
        return nn_onnx_set_out(r, 0, nn_linear(a, b, c)); /* PyTorch's Linear */
    nn_tensor *y = nn_matmul(a, b, ta, tb);
    if (y && alpha != 1.0f) y = nn_mul_scalar(y, alpha);
    if (y && c) y = nn_add(y, beta != 1.0f ? nn_mul_scalar(c, beta) : c);
    return nn_onnx_set_out(r, 0, y);
}

static nn_status op_matmul(node_run *r) {
    nn_tensor *a = nn_onnx_device_in(r, 0), *b = a ? nn_onnx_device_in(r, 1) : NULL;
    if (!b) return nn_last_status();
    if (nn_tensor_ndim(a) == 2 && nn_tensor_ndim(b) == 2) return nn_onnx_set_out(r, 0, nn_matmul(a, b, false, false));
    return nn_onnx_set_out(r, 0, nn_matmul_batched(a, b));
}

static nn_status op_flatten(node_run *r) {
    nn_tensor *x = nn_onnx_device_in(r, 0);
    if (!x) return nn_last_status();
    const int ndim = nn_tensor_ndim(x);
    int axis = norm_axis(attr_int(r->node, "axis", 1), ndim);
    if (axis < 0 || axis > ndim) return nn_onnx_refuse(r, "axis out of range for %d dimensions", ndim);
    int64_t shape[2] = {1, 1};
    for (int d = 0; d < ndim; d++) shape[d >= axis] *= nn_tensor_dim(x, d);
    return nn_onnx_set_out(r, 0, nn_reshape(x, 2, shape));
}

static nn_status op_reshape(node_run *r) {
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

static nn_status op_identity(node_run *r) {
    slot *s = nn_onnx_in(r, 0);
    if (!s || (!s->t && !s->host)) return nn_onnx_refuse(r, "its input is missing");
    const int v = r->im->node_outputs[r->node - r->im->model.nodes][0];
    if (v >= 0) r->slots[v].t = s->t, r->slots[v].host = s->host;
    return NN_OK;
}

static nn_status op_dropout(node_run *r) {
    nn_tensor *x = nn_onnx_device_in(r, 0);
    if (!x) return nn_last_status();
    NN_TRY(only_first_output(r));
    float p = 0.5f;
    if (nn_onnx_in(r, 1) && !host_scalar(r, 1, &p)) return nn_onnx_refuse(r, "ratio must be a constant scalar");
    if (!(p >= 0.0f && p < 1.0f)) return nn_onnx_refuse(r, "ratio %g is not in [0, 1)", p);
    return nn_onnx_set_out(r, 0, nn_dropout(x, p, nn_module_is_training(r->module)));
}

static nn_status op_constant(node_run *r) {
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

static nn_status op_softmax(node_run *r) {
    nn_tensor *x = nn_onnx_device_in(r, 0);
    if (!x) return nn_last_status();
    int axis;
    NN_TRY(check_axis(r, attr_int(r->node, "axis", -1), nn_tensor_ndim(x), &axis));
    const bool log = strcmp(r->node->op_type, "LogSoftmax") == 0;
    return nn_onnx_set_out(r, 0, log ? nn_log_softmax(x, axis) : nn_softmax_dim(x, axis));
}

static nn_status op_concat(node_run *r) {
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

static nn_status op_transpose(node_run *r) {
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

static nn_status op_shape(node_run *r) {
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

static nn_status op_gather(node_run *r) {
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
static nn_status op_squeeze(node_run *r) {
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

/* ReduceMean, ReduceSum, ReduceMax, ReduceMin: axes from an attribute, or
 * from input 1 (ReduceSum from opset 13, the others from 18). */
static nn_status op_reduce(node_run *r) {
    nn_tensor *x = nn_onnx_device_in(r, 0);
    if (!x) return nn_last_status();
    const char *op = r->node->op_type + 6; /* after "Reduce" */
    int64_t axes[NN_MAX_DIMS];
    int count = 0;
    const bool axes_input = strcmp(op, "Sum") == 0 || r->im->model.opset >= 18;
    if (axes_input) {
        if (nn_onnx_in(r, 1)) NN_TRY(host_ints(r, 1, axes, NN_MAX_DIMS, &count));
    } else if (!attr_ints(r->node, "axes", axes, NN_MAX_DIMS, &count)) {
        return nn_onnx_refuse(r, "more axes than dimensions");
    }
    const int ndim = nn_tensor_ndim(x);
    int dims[NN_MAX_DIMS];
    if (count == 0 && attr_int(r->node, "noop_with_empty_axes", 0)) return nn_onnx_set_out(r, 0, x);
    if (count == 0)
        for (int d = 0; d < ndim; d++) dims[count++] = d;
    else
        for (int i = 0; i < count; i++) NN_TRY(check_axis(r, axes[i], ndim, &dims[i]));
    const bool keep = attr_int(r->node, "keepdims", 1) != 0;
    nn_tensor *y = strcmp(op, "Mean") == 0  ? nn_mean_dims(x, dims, count, keep)
                   : strcmp(op, "Sum") == 0 ? nn_sum_dims(x, dims, count, keep)
                   : strcmp(op, "Max") == 0 ? nn_max_dims(x, dims, count, keep)
                                            : nn_min_dims(x, dims, count, keep);
    return nn_onnx_set_out(r, 0, y);
}

/* LayerNormalization (opset 17): over the dimensions from axis on. Its
 * optional Mean and InvStdDev outputs are not made. */
static nn_status op_layer_norm(node_run *r) {
    nn_tensor *x, *w, *b;
    NN_TRY(weighted_inputs(r, &x, &w, &b));
    NN_TRY(only_first_output(r));
    const int ndim = nn_tensor_ndim(x);
    int axis;
    NN_TRY(check_axis(r, attr_int(r->node, "axis", -1), ndim, &axis));
    int64_t shape[NN_MAX_DIMS];
    for (int d = axis; d < ndim; d++) shape[d - axis] = nn_tensor_dim(x, d);
    return nn_onnx_set_out(r, 0, nn_layer_norm(x, ndim - axis, shape, w, b, attr_float(r->node, "epsilon", 1e-5f)));
}

/* Slice (opset 13): starts, ends, axes and steps are constants; positive
 * steps. Host integer lists (shapes) are sliced on the host. */
static nn_status op_slice(node_run *r) {
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
static nn_status op_cast(node_run *r) {
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

/* Erf appears only inside the exporters' GELU, x * 0.5 * (1 + erf(x / sqrt(2))),
 * which onnx_import.c finds at import and runs as one GELU at the chain's
 * last node; a graph with any other Erf is refused there. */
static nn_status op_fused_away(node_run *r) {
    (void)r;
    return NN_OK;
}

/* ConvTranspose: 2-D, explicit padding (or VALID), no output_shape. */
static nn_status op_conv_transpose(node_run *r) {
    nn_tensor *x, *w, *b;
    NN_TRY(weighted_inputs(r, &x, &w, &b));
    if (nn_tensor_ndim(w) != 4) return nn_onnx_refuse(r, "only 2-D transposed convolutions (a 4-D weight) are supported");
    const onnx_attr *auto_pad = nn_onnx_attr(r->node, "auto_pad");
    if ((auto_pad && auto_pad->s && strcmp(auto_pad->s, "NOTSET") != 0 && strcmp(auto_pad->s, "VALID") != 0) ||
        nn_onnx_attr(r->node, "output_shape"))
        return nn_onnx_refuse(r, "auto_pad SAME and output_shape are not supported; give pads");
    window win;
    const int64_t kernel[2] = {nn_tensor_dim(w, 2), nn_tensor_dim(w, 3)};
    NN_TRY(read_window(r, x, kernel, &win));
    int64_t extra[2] = {0, 0};
    int count;
    if (!attr_ints(r->node, "output_padding", extra, 2, &count) || (count && count != 2))
        return nn_onnx_refuse(r, "output_padding must have 2 entries");
    const int64_t group = attr_int(r->node, "group", 1);
    if (group < 1 || group > INT32_MAX || extra[0] < 0 || extra[1] < 0 || extra[0] > INT32_MAX || extra[1] > INT32_MAX)
        return nn_onnx_refuse(r, "group or output_padding out of range");
    const nn_conv_transpose2d_params p = {.stride_h = (int)win.strides[0], .stride_w = (int)win.strides[1],
                                          .pad_h = (int)win.pads[0], .pad_w = (int)win.pads[1],
                                          .output_pad_h = (int)extra[0], .output_pad_w = (int)extra[1],
                                          .dilation_h = (int)win.dilations[0], .dilation_w = (int)win.dilations[1],
                                          .groups = (int)group};
    return nn_onnx_set_out(r, 0, nn_conv_transpose2d(x, w, b, &p));
}

/* Resize of [N, C, H, W] over H and W, in the forms PyTorch's interpolate
 * exports: nearest (asymmetric, floor) and linear (half-pixel or
 * align_corners), by scales or by sizes. */
static nn_status op_resize(node_run *r) {
    nn_tensor *x = nn_onnx_device_in(r, 0);
    if (!x) return nn_last_status();
    if (nn_tensor_ndim(x) != 4) return nn_onnx_refuse(r, "only [N, C, H, W] inputs are supported");
    const onnx_attr *a = nn_onnx_attr(r->node, "mode"), *c = nn_onnx_attr(r->node, "coordinate_transformation_mode");
    const onnx_attr *nearest = nn_onnx_attr(r->node, "nearest_mode");
    const char *mode = a && a->s ? a->s : "nearest", *coords = c && c->s ? c->s : "half_pixel";
    const char *rounding = nearest && nearest->s ? nearest->s : "round_prefer_floor";
    nn_interpolate_mode m;
    bool corners = false;
    if (strcmp(mode, "nearest") == 0 && strcmp(coords, "asymmetric") == 0 && strcmp(rounding, "floor") == 0) {
        m = NN_INTERPOLATE_NEAREST;
    } else if (strcmp(mode, "linear") == 0 && (!strcmp(coords, "half_pixel") || !strcmp(coords, "pytorch_half_pixel") ||
                                               !strcmp(coords, "align_corners"))) {
        m = NN_INTERPOLATE_BILINEAR, corners = strcmp(coords, "align_corners") == 0;
    } else {
        return nn_onnx_refuse(r, "mode '%s' with coordinate_transformation_mode '%s' (nearest_mode '%s') is not one "
                                 "of PyTorch's interpolate forms", mode, coords, rounding);
    }
    const onnx_attr *policy = nn_onnx_attr(r->node, "keep_aspect_ratio_policy"), *axes = nn_onnx_attr(r->node, "axes");
    if (attr_int(r->node, "antialias", 0) || (policy && policy->s && strcmp(policy->s, "stretch") != 0) || axes)
        return nn_onnx_refuse(r, "antialias, keep_aspect_ratio_policy and axes (opsets 18 and 19) are not supported");
    const onnx_tensor *scales = nn_onnx_in(r, 2) ? host_in(r, 2) : NULL, *sizes = nn_onnx_in(r, 3) ? host_in(r, 3) : NULL;
    if (scales && scales->numel == 0) scales = NULL;
    if (sizes && sizes->numel == 4 && sizes->ints) {
        if (sizes->ints[0] != nn_tensor_dim(x, 0) || sizes->ints[1] != nn_tensor_dim(x, 1) || sizes->ints[2] < 1 ||
            sizes->ints[3] < 1 || sizes->ints[2] > INT32_MAX || sizes->ints[3] > INT32_MAX)
            return nn_onnx_refuse(r, "sizes must keep N and C and give positive H and W");
        return nn_onnx_set_out(r, 0, nn_interpolate(x, (int)sizes->ints[2], (int)sizes->ints[3], 0, 0, m, corners));
    }
    if (!scales || scales->numel != 4 || !scales->floats || scales->floats[0] != 1.0f || scales->floats[1] != 1.0f ||
        !(scales->floats[2] > 0.0f) || !(scales->floats[3] > 0.0f))
        return nn_onnx_refuse(r, "constant scales [1, 1, h, w] or sizes [N, C, H, W] are required");
    return nn_onnx_set_out(r, 0, nn_interpolate(x, 0, 0, scales->floats[2], scales->floats[3], m, corners));
}

/* Max, Min, Sum, Mean of any number of inputs, broadcasting. */
static nn_status op_variadic(node_run *r) {
    const char *op = r->node->op_type;
    nn_tensor *y = r->n_in > 0 ? nn_onnx_device_in(r, 0) : NULL;
    if (!y) return r->n_in > 0 ? nn_last_status() : nn_onnx_refuse(r, "it needs an input");
    for (int i = 1; i < r->n_in && y; i++) {
        nn_tensor *x = nn_onnx_device_in(r, i);
        if (!x) return nn_last_status();
        y = !strcmp(op, "Max") ? nn_maximum(y, x) : !strcmp(op, "Min") ? nn_minimum(y, x) : nn_add(y, x); /* Sum, Mean */
    }
    if (y && strcmp(op, "Mean") == 0 && r->n_in > 1) y = nn_mul_scalar(y, 1.0f / (float)r->n_in);
    return nn_onnx_set_out(r, 0, y);
}

static nn_status op_reciprocal(node_run *r) {
    nn_tensor *x = nn_onnx_device_in(r, 0);
    return x ? nn_onnx_set_out(r, 0, nn_rdiv_scalar(x, 1.0f)) : nn_last_status();
}

/* PRelu: relu(x) - slope * relu(-x), slope broadcast. Selu: gamma * elu(x, alpha). */
static nn_status op_prelu(node_run *r) {
    nn_tensor *x = nn_onnx_device_in(r, 0), *slope = x ? nn_onnx_device_in(r, 1) : NULL;
    if (!slope) return nn_last_status();
    return nn_onnx_set_out(r, 0, nn_sub(nn_relu(x), nn_mul(slope, nn_relu(nn_neg(x)))));
}

static nn_status op_selu(node_run *r) {
    nn_tensor *x = nn_onnx_device_in(r, 0);
    if (!x) return nn_last_status();
    const float alpha = attr_float(r->node, "alpha", 1.67326319217681884765625f);
    const float gamma = attr_float(r->node, "gamma", 1.05070102214813232421875f);
    return nn_onnx_set_out(r, 0, nn_mul_scalar(nn_elu(x, alpha), gamma));
}

/* Expand: x broadcast to the shape (NumPy's rule: a 1 in either keeps the other). */
static nn_status op_expand(node_run *r) {
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
static nn_status op_split(node_run *r) {
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

/* InstanceNormalization: a group per channel. GroupNormalization (opset
 * 18): scale and bias per group up to opset 20 (spread over the group's
 * channels here), per channel from 21. */
static nn_status op_group_norm(node_run *r) {
    nn_tensor *x = nn_onnx_device_in(r, 0), *w = x ? nn_onnx_device_in(r, 1) : NULL;
    nn_tensor *b = w ? nn_onnx_device_in(r, 2) : NULL;
    if (!b) return nn_last_status();
    const float eps = attr_float(r->node, "epsilon", 1e-5f);
    if (nn_tensor_ndim(x) < 3) return nn_onnx_refuse(r, "the input needs [N, C, ...] with at least one more dimension");
    const int64_t channels = nn_tensor_dim(x, 1);
    if (r->node->op_type[0] == 'I') return nn_onnx_set_out(r, 0, nn_group_norm(x, (int)channels, w, b, eps));
    const int64_t groups = attr_int(r->node, "num_groups", 0);
    if (groups < 1 || channels % groups) return nn_onnx_refuse(r, "num_groups must divide the channels");
    if (r->im->model.opset < 21 && groups != channels) {
        const int64_t per_group[2] = {groups, 1}, spread[2] = {groups, channels / groups};
        w = nn_reshape(nn_expand(nn_reshape(w, 2, per_group), 2, spread), 1, &channels);
        b = w ? nn_reshape(nn_expand(nn_reshape(b, 2, per_group), 2, spread), 1, &channels) : NULL;
        if (!b) return nn_last_status();
    }
    return nn_onnx_set_out(r, 0, nn_group_norm(x, (int)groups, w, b, eps));
}

/* ArgMax / ArgMin along one axis: the first extreme (select_last_index 0),
 * as int32 (ONNX's int64 holds the same values). */
static nn_status op_arg_extreme(node_run *r) {
    nn_tensor *x = nn_onnx_device_in(r, 0);
    if (!x) return nn_last_status();
    if (attr_int(r->node, "select_last_index", 0)) return nn_onnx_refuse(r, "select_last_index 1 is not supported");
    int axis;
    NN_TRY(check_axis(r, attr_int(r->node, "axis", 0), nn_tensor_ndim(x), &axis));
    const bool keep = attr_int(r->node, "keepdims", 1) != 0, max = strcmp(r->node->op_type, "ArgMax") == 0;
    return nn_onnx_set_out(r, 0, max ? nn_argmax_dims(x, &axis, 1, keep) : nn_argmin_dims(x, &axis, 1, keep));
}

/* ---- the table ---- */

typedef struct op_entry {
    const char *name;
    nn_status (*run)(node_run *r);
    unsigned host_inputs;  /* bit i: input i is read on the host */
    unsigned state_inputs; /* bit i: input i is learned state whatever its name */
    unsigned buffers;      /* bit i: ... kept as a buffer */
} op_entry;

static const op_entry ops[] = {
    {"Conv", op_conv, 0, 0x6, 0},
    {"BatchNormalization", op_batch_norm, 0, 0x1e, 0x18},
    {"Gemm", op_gemm, 0, 0x6, 0},
    {"MatMul", op_matmul, 0, 0x2, 0}, /* by a learned matrix: a Linear the exporter transposed */
    {"MaxPool", op_pool, 0, 0, 0},
    {"AveragePool", op_pool, 0, 0, 0},
    {"GlobalAveragePool", op_global_pool, 0, 0, 0},
    {"GlobalMaxPool", op_global_pool, 0, 0, 0},
    {"Relu", op_unary, 0, 0, 0},
    {"Sigmoid", op_unary, 0, 0, 0},
    {"Tanh", op_unary, 0, 0, 0},
    {"Exp", op_unary, 0, 0, 0},
    {"Log", op_unary, 0, 0, 0},
    {"Sqrt", op_unary, 0, 0, 0},
    {"Abs", op_unary, 0, 0, 0},
    {"Neg", op_unary, 0, 0, 0},
    {"Softsign", op_unary, 0, 0, 0},
    {"Softplus", op_unary, 0, 0, 0},
    {"LeakyRelu", op_unary, 0, 0, 0},
    {"Elu", op_unary, 0, 0, 0},
    {"HardSigmoid", op_unary, 0, 0, 0},
    {"HardSwish", op_unary, 0, 0, 0},
    {"Gelu", op_unary, 0, 0, 0},
    {"Clip", op_clip, 0x6, 0, 0},
    {"Pow", op_pow, 0x2, 0, 0},
    {"Add", op_binary, 0, 0, 0},
    {"Sub", op_binary, 0, 0, 0},
    {"Mul", op_binary, 0, 0, 0},
    {"Div", op_binary, 0, 0, 0},
    {"Flatten", op_flatten, 0, 0, 0},
    {"Reshape", op_reshape, 0x2, 0, 0},
    {"Identity", op_identity, 0, 0, 0},
    {"Dropout", op_dropout, 0x6, 0, 0},
    {"Constant", op_constant, 0, 0, 0},
    {"Softmax", op_softmax, 0, 0, 0},
    {"LogSoftmax", op_softmax, 0, 0, 0},
    {"Concat", op_concat, 0, 0, 0},
    {"Transpose", op_transpose, 0, 0, 0},
    {"Shape", op_shape, 0x1, 0, 0},
    {"Gather", op_gather, 0x2, 0, 0},
    {"Unsqueeze", op_squeeze, 0x2, 0, 0},
    {"Squeeze", op_squeeze, 0x2, 0, 0},
    {"ReduceMean", op_reduce, 0x2, 0, 0},
    {"ReduceSum", op_reduce, 0x2, 0, 0},
    {"ReduceMax", op_reduce, 0x2, 0, 0},
    {"ReduceMin", op_reduce, 0x2, 0, 0},
    {"ConvTranspose", op_conv_transpose, 0, 0x6, 0},
    {"Resize", op_resize, 0xe, 0, 0},
    {"Max", op_variadic, 0, 0, 0},
    {"Min", op_variadic, 0, 0, 0},
    {"Sum", op_variadic, 0, 0, 0},
    {"Mean", op_variadic, 0, 0, 0},
    {"Reciprocal", op_reciprocal, 0, 0, 0},
    {"PRelu", op_prelu, 0, 0x2, 0},
    {"Selu", op_selu, 0, 0, 0},
    {"Expand", op_expand, 0x2, 0, 0},
    {"Split", op_split, 0x2, 0, 0},
    {"InstanceNormalization", op_group_norm, 0, 0x6, 0},
    {"GroupNormalization", op_group_norm, 0, 0x6, 0},
    {"ArgMax", op_arg_extreme, 0, 0, 0},
    {"ArgMin", op_arg_extreme, 0, 0, 0},
    {"LayerNormalization", op_layer_norm, 0, 0x6, 0},
    {"Slice", op_slice, 0x1e, 0, 0},
    {"Cast", op_cast, 0, 0, 0},
    {"Erf", op_fused_away, 0, 0, 0},
};

static const op_entry *find_op(const char *name) {
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (strcmp(ops[i].name, name) == 0) return &ops[i];
    return NULL;
}

bool nn_onnx_known_op(const char *op_type) { return find_op(op_type) != NULL; }

bool nn_onnx_host_input(const char *op_type, int i) {
    const op_entry *e = find_op(op_type);
    return e && i < 32 && (e->host_inputs >> i & 1);
}

bool nn_onnx_state_input(const char *op_type, int i, bool *buffer) {
    const op_entry *e = find_op(op_type);
    *buffer = e && i < 32 && (e->buffers >> i & 1);
    return e && i < 32 && (e->state_inputs >> i & 1);
}

nn_status nn_onnx_run_node(node_run *r) { return find_op(r->node->op_type)->run(r); }
