/* The 2-D pooling operations' shared argument checks, geometry, recording
 * and ONNX nodes (pool2d.h). The rules are PyTorch's (pooling_output_shape
 * and pool2d_shape_check): padding at most half the kernel, outputs of at
 * least one element, and with ceil_mode no window starting in the right or
 * bottom padding (one may end past it). */
#include <stdio.h>

#include "base/error.h"
#include "pool2d.h"

static nn_status check_input(const char *op, const nn_tensor *x) {
    NN_TRY(nn_check_tensor(op, "x", x, NN_F32));
    char sx[96];
    if (x->ndim != 3 && x->ndim != 4)
        return nn_set_error(NN_ERR_SHAPE, "%s: x must be [N, C, H, W] or [C, H, W], got shape %s", op,
                            nn_format_shape(x->ndim, x->shape, sx, sizeof sx));
    for (int i = 0; i < x->ndim; i++) NN_TRY(nn_check_int32(op, "a dimension of x", x->shape[i]));
    if (x->shape[x->ndim - 1] < 1 || x->shape[x->ndim - 2] < 1)
        return nn_set_error(NN_ERR_SHAPE, "%s: x's height and width must be >= 1, got shape %s", op,
                            nn_format_shape(x->ndim, x->shape, sx, sizeof sx));
    return NN_OK;
}

static void fill_planes(const nn_tensor *x, nn_pool2d_geometry *g) {
    const bool batched = x->ndim == 4;
    g->batch = batched ? (int32_t)x->shape[0] : 1;
    g->channels = (int32_t)x->shape[batched ? 1 : 0];
    g->height = (int32_t)x->shape[x->ndim - 2];
    g->width = (int32_t)x->shape[x->ndim - 1];
}

/* One axis of a sliding window: its checks and output size. */
static nn_status window_axis(const char *op, const char *axis, int64_t size, int kernel, int stride, int pad,
                             int dilation, bool ceil_mode, int32_t *out) {
    if (kernel < 1 || stride < 1 || dilation < 1 || pad < 0)
        return nn_set_error(NN_ERR_ARGUMENT,
                            "%s: the %s kernel, stride and dilation must be >= 1 and the padding >= 0, got kernel %d "
                            "stride %d dilation %d padding %d", op, axis, kernel, stride, dilation, pad);
    if (pad > kernel / 2)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: the %s padding must be at most half the kernel (%d / 2 = %d), got %d",
                            op, axis, kernel, kernel / 2, pad);
    NN_TRY(nn_check_padded(op, axis, size, pad));
    const int64_t reach = (int64_t)dilation * (kernel - 1) + 1, padded = size + 2 * (int64_t)pad;
    /* Rounded down, as PyTorch's div_rtn: with ceil_mode a window may reach
     * past the padded edge (x 2 wide, kernel 3, stride 2: one output). */
    const int64_t span = padded - reach + (ceil_mode ? stride - 1 : 0);
    int64_t n = (span >= 0 ? span / stride : -((-span + stride - 1) / stride)) + 1;
    if (ceil_mode && (n - 1) * stride >= size + pad) n--; /* the last window would start in the padding */
    if (n < 1)
        return nn_set_error(NN_ERR_SHAPE, "%s: the %s window reaches %lld (kernel %d, dilation %d) past the padded %s "
                            "of %lld", op, axis, (long long)reach, kernel, dilation, axis, (long long)padded);
    NN_TRY(nn_check_int32(op, "the output size", n));
    *out = (int32_t)n;
    return NN_OK;
}

nn_status nn_pool2d_window_geometry(const char *op, const nn_tensor *x, const nn_pool2d_params *window,
                                    bool dilation, nn_pool2d_geometry *g) {
    NN_TRY(check_input(op, x));
    if (!window) return nn_set_error(NN_ERR_ARGUMENT, "%s: window is NULL", op);
    nn_pool2d_params w = *window;
    if (w.stride_h == 0) w.stride_h = w.kernel_h; /* PyTorch's default stride: the kernel */
    if (w.stride_w == 0) w.stride_w = w.kernel_w;
    if (w.dilation_h == 0) w.dilation_h = 1;
    if (w.dilation_w == 0) w.dilation_w = 1;
    if (!dilation && (w.dilation_h != 1 || w.dilation_w != 1))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: dilation must be 1 (average pooling has none), got %dx%d", op,
                            w.dilation_h, w.dilation_w);
    *g = (nn_pool2d_geometry){.kernel_h = w.kernel_h, .kernel_w = w.kernel_w, .stride_h = w.stride_h,
                              .stride_w = w.stride_w, .pad_h = w.pad_h, .pad_w = w.pad_w,
                              .dilation_h = w.dilation_h, .dilation_w = w.dilation_w};
    fill_planes(x, g);
    NN_TRY(window_axis(op, "height", g->height, w.kernel_h, w.stride_h, w.pad_h, w.dilation_h, w.ceil_mode, &g->out_h));
    NN_TRY(window_axis(op, "width", g->width, w.kernel_w, w.stride_w, w.pad_w, w.dilation_w, w.ceil_mode, &g->out_w));
    return NN_OK;
}

nn_status nn_pool2d_adaptive_geometry(const char *op, const nn_tensor *x, int out_h, int out_w,
                                      nn_pool2d_geometry *g) {
    NN_TRY(check_input(op, x));
    if (out_h < 1 || out_w < 1)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: the output size must be >= 1, got %dx%d", op, out_h, out_w);
    *g = (nn_pool2d_geometry){.out_h = out_h, .out_w = out_w, .kernel_h = 1, .kernel_w = 1, .stride_h = 1,
                              .stride_w = 1, .dilation_h = 1, .dilation_w = 1, .adaptive = 1};
    fill_planes(x, g);
    /* The windows' bounds are computed as (o + 1) * size + out in 32 bits. */
    if ((int64_t)out_h * (g->height + 1) > INT32_MAX || (int64_t)out_w * (g->width + 1) > INT32_MAX)
        return nn_set_error(NN_ERR_SHAPE, "%s: output %dx%d of a %dx%d input is too large (output x (input + 1) must "
                            "fit 32 bits)", op, out_h, out_w, g->height, g->width);
    return NN_OK;
}

nn_tensor *nn_pool2d_record(const nn_op *op, nn_tensor *x, const nn_pool2d_geometry *g) {
    int64_t shape[4];
    for (int i = 0; i < x->ndim - 2; i++) shape[i] = x->shape[i];
    shape[x->ndim - 2] = g->out_h;
    shape[x->ndim - 1] = g->out_w;
    return nn_op_result(op, &x, 1, g, sizeof *g, x->ndim, shape);
}

/* ---- ONNX ---- */

nn_status nn_pool2d_onnx_begin(exporter *x, op_io *io) {
    const nn_tensor *in = io->node->inputs[0];
    if (in->ndim != 4)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: %s takes an unbatched %d-D input; ONNX pooling needs [N, C, H, W]",
                            x->who, io->node->op->name, in->ndim);
    return nn_onnx_only_input_carries_batch(x, io, 0);
}

/* Whether the output size is the floor rule's: ceil_mode changed nothing. */
static bool floor_size(int32_t size, int32_t out, int32_t kernel, int32_t stride, int32_t pad, int32_t dilation) {
    return out == (size + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}

void nn_pool2d_onnx_window(exporter *x, nn_onnx_node *n, const char *op_type, op_io *io, const char *out,
                           const nn_pool2d_geometry *g) {
    const int64_t kernel[2] = {g->kernel_h, g->kernel_w}, strides[2] = {g->stride_h, g->stride_w};
    const int64_t pads[4] = {g->pad_h, g->pad_w, g->pad_h, g->pad_w};
    nn_onnx_begin_window(x, n, op_type, io, 1, out, kernel, strides, pads);
    if (!floor_size(g->height, g->out_h, g->kernel_h, g->stride_h, g->pad_h, g->dilation_h) ||
        !floor_size(g->width, g->out_w, g->kernel_w, g->stride_w, g->pad_w, g->dilation_w))
        nn_onnx_attr_int(n, "ceil_mode", 1);
}

nn_status nn_pool2d_onnx_adaptive(exporter *x, op_io *io, const char *out, const char *op_type,
                                  const char *global_type) {
    const nn_pool2d_geometry *g = NN_NODE_PARAMS(io->node, nn_pool2d_geometry);
    nn_onnx_node n;
    if (g->out_h == 1 && g->out_w == 1) {
        nn_onnx_begin(x, &n, global_type, io);
        nn_onnx_inputs(&n, io, 1);
        nn_onnx_node_output(&n, out);
    } else if (g->height % g->out_h == 0 && g->width % g->out_w == 0) {
        const int64_t kernel[2] = {g->height / g->out_h, g->width / g->out_w}, pads[4] = {0, 0, 0, 0};
        nn_onnx_begin_window(x, &n, op_type, io, 1, out, kernel, kernel, pads);
    } else {
        return nn_set_error(NN_ERR_ARGUMENT,
                            "%s: %s to %dx%d from %dx%d has no ONNX form: ONNX has no adaptive pooling, so the output "
                            "must be 1x1 or divide the input", x->who, io->node->op->name, g->out_h, g->out_w,
                            g->height, g->width);
    }
    nn_onnx_node_end(&n, &x->graph);
    return NN_OK;
}
