/* The ONNX operators the importer runs (onnx_import.h), each as the
 * engine's operations, and the table of every operator it knows; those on
 * shapes and layouts are onnx_import_shape_ops.c's. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "onnx_import.h"
#include "onnx_import_values.h"

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

static nn_status op_dropout(node_run *r) {
    nn_tensor *x = nn_onnx_device_in(r, 0);
    if (!x) return nn_last_status();
    NN_TRY(only_first_output(r));
    float p = 0.5f;
    if (nn_onnx_in(r, 1) && !host_scalar(r, 1, &p)) return nn_onnx_refuse(r, "ratio must be a constant scalar");
    if (!(p >= 0.0f && p < 1.0f)) return nn_onnx_refuse(r, "ratio %g is not in [0, 1)", p);
    return nn_onnx_set_out(r, 0, nn_dropout(x, p, nn_module_is_training(r->module)));
}

static nn_status op_softmax(node_run *r) {
    nn_tensor *x = nn_onnx_device_in(r, 0);
    if (!x) return nn_last_status();
    int axis;
    NN_TRY(check_axis(r, attr_int(r->node, "axis", -1), nn_tensor_ndim(x), &axis));
    const bool log = strcmp(r->node->op_type, "LogSoftmax") == 0;
    return nn_onnx_set_out(r, 0, log ? nn_log_softmax(x, axis) : nn_softmax_dim(x, axis));
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
    {"Flatten", nn_onnx_op_flatten, 0, 0, 0},
    {"Reshape", nn_onnx_op_reshape, 0x2, 0, 0},
    {"Identity", nn_onnx_op_identity, 0, 0, 0},
    {"Dropout", op_dropout, 0x6, 0, 0},
    {"Constant", nn_onnx_op_constant, 0, 0, 0},
    {"Softmax", op_softmax, 0, 0, 0},
    {"LogSoftmax", op_softmax, 0, 0, 0},
    {"Concat", nn_onnx_op_concat, 0, 0, 0},
    {"Transpose", nn_onnx_op_transpose, 0, 0, 0},
    {"Shape", nn_onnx_op_shape, 0x1, 0, 0},
    {"Gather", nn_onnx_op_gather, 0x2, 0, 0},
    {"Unsqueeze", nn_onnx_op_squeeze, 0x2, 0, 0},
    {"Squeeze", nn_onnx_op_squeeze, 0x2, 0, 0},
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
    {"Expand", nn_onnx_op_expand, 0x2, 0, 0},
    {"Split", nn_onnx_op_split, 0x2, 0, 0},
    {"InstanceNormalization", op_group_norm, 0, 0x6, 0},
    {"GroupNormalization", op_group_norm, 0, 0x6, 0},
    {"ArgMax", op_arg_extreme, 0, 0, 0},
    {"ArgMin", op_arg_extreme, 0, 0, 0},
    {"LayerNormalization", op_layer_norm, 0, 0x6, 0},
    {"Slice", nn_onnx_op_slice, 0x1e, 0, 0},
    {"Cast", nn_onnx_op_cast, 0, 0, 0},
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
