/* Convolution through the backend's convolution kernels (kernels.h,
 * nn_conv_params): forward, and the two backward products, each one kernel
 * that computes what im2col + GEMM (+ col2im) would. Where the backend
 * takes the column route for a layer's forward (the CPU always; Vulkan by
 * default beyond its small layers) it asks for the column matrix to be
 * kept from forward to backward, so the weight gradient needs no second
 * im2col; otherwise the Vulkan backend multiplies straight from the image
 * (small layers' latency kernels, and the implicit GEMM under
 * NN_ENGINE_VULKAN_CONV=implicit|auto), with no column matrix at all. The bias is the forward kernel's epilogue (and a ReLU
 * after it, fused: src/fusion/epilogue_relu.c). */
#include "io/onnx_graph.h"
#include "ops.h"

nn_conv_params nn_conv2d_params_of(const nn_node *conv, int32_t epilogue) {
    const nn_conv2d_node *c = NN_NODE_PARAMS(conv, nn_conv2d_node);
    return (nn_conv_params){.g = c->g, .filters = c->filters, .groups = c->groups,
                            .epilogue = (conv->inputs[2] ? NN_EPI_BIAS_ROWS : 0) | epilogue,
                            .precision = conv->precision, .image_layout = conv->inputs[0]->layout,
                            .output_layout = conv->output->layout};
}

bool nn_conv2d_is_plain(const nn_node *conv) {
    const nn_conv2d_node *c = NN_NODE_PARAMS(conv, nn_conv2d_node);
    return c->groups == 1 && c->g.dilation_h == 1 && c->g.dilation_w == 1;
}

nn_tensor *nn_conv2d_columns(nn_node *conv, const nn_conv_params *p, nn_status *status) {
    *status = NN_OK;
    nn_ctx *ctx = conv->output->ctx;
    if (conv->tape_index < 0 || !nn_wants_grad(conv->inputs[1]) || nn_conv_is_depthwise(p) ||
        !nn_ctx_conv_keeps_columns(ctx, p))
        return NULL;
    const nn_conv_geometry *g = &p->g;
    const int64_t shape[3] = {g->batch, (int64_t)g->channels * g->kernel_h * g->kernel_w, (int64_t)g->out_h * g->out_w};
    nn_tensor *cols = nn_node_save_new(conv, NN_F32, 3, shape);
    if (!cols) *status = nn_last_status();
    return cols;
}

static nn_status conv_forward(nn_node *node) {
    nn_tensor *x = node->inputs[0];
    const nn_conv_params p = nn_conv2d_params_of(node, 0);
    nn_status st;
    nn_tensor *cols = nn_conv2d_columns(node, &p, &st);
    NN_TRY(st);
    return nn_conv_run_forward(x->ctx, &p, nn_tensor_ref(x), nn_tensor_ref(node->inputs[1]),
                               nn_tensor_ref(node->output), nn_optional_ref(node->inputs[2]), nn_optional_ref(cols));
}

static nn_status conv_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *w = node->inputs[1], *bias = node->inputs[2];
    nn_tensor *dy = node->output->grad;
    nn_ctx *ctx = x->ctx;
    nn_conv_params p = nn_conv2d_params_of(node, 0);
    const int32_t positions = p.g.out_h * p.g.out_w;
    nn_tensor *grad;
    int32_t acc;

    if (nn_wants_grad(w)) {
        NN_TRY(nn_grad_target(w, &grad, &acc));
        p.g.accumulate = acc;
        NN_TRY(nn_conv_run_weight(ctx, &p, nn_tensor_ref(dy), nn_tensor_ref(x), nn_tensor_ref(grad),
                                  nn_optional_ref(node->saved_count > 0 ? node->saved[0] : NULL)));
    }
    if (nn_wants_grad(bias)) {
        NN_TRY(nn_grad_target(bias, &grad, &acc));
        nn_bias_params b = {.outer = p.g.batch, .channels = p.filters, .inner = positions, .accumulate = acc};
        if (p.output_layout == NN_LAYOUT_CHANNELS_LAST) b.outer *= positions, b.inner = 1; /* dy [N * P, filters] */
        nn_buffer_ref args[2] = {nn_tensor_ref(dy), nn_tensor_ref(grad)};
        NN_TRY(nn_ctx_run(ctx, NN_KERNEL_BIAS_GRAD, args, 2, &b));
    }
    if (nn_wants_grad(x)) {
        NN_TRY(nn_grad_target(x, &grad, &acc));
        p.g.accumulate = acc;
        NN_TRY(nn_conv_run_data(ctx, &p, nn_tensor_ref(dy), nn_tensor_ref(w), nn_tensor_ref(grad)));
    }
    return NN_OK;
}

static nn_status conv_onnx(exporter *x, op_io *io, const char *out) {
    NN_TRY(nn_onnx_only_input_carries_batch(x, io, 0));
    const nn_conv2d_node *c = NN_NODE_PARAMS(io->node, nn_conv2d_node);
    const nn_conv_geometry *g = &c->g;
    int64_t kernel[2] = {g->kernel_h, g->kernel_w}, strides[2] = {g->stride_h, g->stride_w};
    int64_t pads[4] = {g->pad_h, g->pad_w, g->pad_h, g->pad_w}, dilations[2] = {g->dilation_h, g->dilation_w};
    nn_onnx_node n;
    nn_onnx_begin_window(x, &n, "Conv", io, 3, out, kernel, strides, pads);
    nn_onnx_attr_ints(&n, "dilations", dilations, 2);
    nn_onnx_attr_int(&n, "group", c->groups);
    nn_onnx_node_end(&n, &x->graph);
    return NN_OK;
}

/* x is read in its layout (the kernels take either); the output's is the
 * context's memory format, or under AUTO the backend's choice. */
static nn_layout conv_layouts(nn_tensor *const *inputs, int count, const void *params, int ndim,
                              const int64_t *shape, nn_layout *input_layouts) {
    const nn_conv2d_node *c = params;
    nn_ctx *ctx = inputs[0]->ctx;
    input_layouts[0] = inputs[0]->layout;
    switch ((nn_memory_format)ctx->memory_format) {
    case NN_MEMORY_FORMAT_CHANNELS_LAST: return NN_LAYOUT_CHANNELS_LAST;
    case NN_MEMORY_FORMAT_CONTIGUOUS: return NN_LAYOUT_DENSE;
    case NN_MEMORY_FORMAT_AUTO: break;
    }
    if (!ctx->backend->conv_layout) return NN_LAYOUT_DENSE;
    const nn_conv_params p = {.g = c->g, .filters = c->filters, .groups = c->groups, .precision = ctx->precision,
                              .image_layout = inputs[0]->layout};
    return ctx->backend->conv_layout(ctx->backend, &p);
}

const nn_op nn_op_conv2d = {.name = "nn_conv2d", .forward = conv_forward, .backward = conv_backward,
                            .to_onnx = conv_onnx, .layouts = conv_layouts};

nn_conv2d_params nn_conv2d_params_normalised(const nn_conv2d_params *params) {
    nn_conv2d_params p = *params;
    if (p.dilation_h == 0) p.dilation_h = 1;
    if (p.dilation_w == 0) p.dilation_w = 1;
    if (p.groups == 0) p.groups = 1;
    return p;
}

nn_status nn_conv2d_check_args(const char *op, nn_tensor *x, nn_tensor *w, nn_tensor *bias,
                               const nn_conv2d_params *params) {
    NN_TRY(nn_check_tensor_ndim(op, "x", x, NN_F32, 4));
    NN_TRY(nn_check_tensor_ndim(op, "weight", w, NN_F32, 4));
    NN_TRY(nn_check_same_ctx(op, "x", x, "weight", w));
    if (!params) return nn_set_error(NN_ERR_ARGUMENT, "%s: params is NULL", op);
    const nn_conv2d_params p = nn_conv2d_params_normalised(params);
    char sx[96], sw[96], sb[96];
    nn_format_shape(4, x->shape, sx, sizeof sx);
    nn_format_shape(4, w->shape, sw, sizeof sw);
    if (p.groups < 1)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: groups must be >= 1, got %d", op, p.groups);
    if (x->shape[1] % p.groups != 0 || w->shape[0] % p.groups != 0)
        return nn_set_error(NN_ERR_SHAPE, "%s: groups %d must divide the input channels (x %s) and the filters "
                            "(weight %s)", op, p.groups, sx, sw);
    if (x->shape[1] != w->shape[1] * p.groups)
        return nn_set_error(NN_ERR_SHAPE, "%s: x %s has %lld channels, weight %s with groups %d expects %lld", op,
                            sx, (long long)x->shape[1], sw, p.groups, (long long)(w->shape[1] * p.groups));
    if (p.stride_h < 1 || p.stride_w < 1)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: stride must be >= 1, got %dx%d", op, p.stride_h, p.stride_w);
    if (p.pad_h < 0 || p.pad_w < 0)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: padding must be >= 0, got %dx%d", op, p.pad_h, p.pad_w);
    if (p.dilation_h < 1 || p.dilation_w < 1)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: dilation must be >= 1, got %dx%d", op, p.dilation_h,
                            p.dilation_w);
    /* Every size below is computed in 64 bits from sizes that fit 32. */
    NN_TRY(nn_check_int32(op, "height", x->shape[2]));
    NN_TRY(nn_check_int32(op, "width", x->shape[3]));
    NN_TRY(nn_check_int32(op, "kernel height", w->shape[2]));
    NN_TRY(nn_check_int32(op, "kernel width", w->shape[3]));
    NN_TRY(nn_check_padded(op, "height", x->shape[2], p.pad_h));
    NN_TRY(nn_check_padded(op, "width", x->shape[3], p.pad_w));
    /* The window's extent: dilation * (kernel - 1) + 1 pixels. */
    const int64_t extent_h = (int64_t)p.dilation_h * (w->shape[2] - 1) + 1;
    const int64_t extent_w = (int64_t)p.dilation_w * (w->shape[3] - 1) + 1;
    if (x->shape[2] + 2 * (int64_t)p.pad_h < extent_h || x->shape[3] + 2 * (int64_t)p.pad_w < extent_w)
        return nn_set_error(NN_ERR_SHAPE, "%s: kernel %lldx%lld (dilation %dx%d: %lldx%lld pixels) is larger than "
                            "the padded input %s (padding %dx%d)", op, (long long)w->shape[2],
                            (long long)w->shape[3], p.dilation_h, p.dilation_w, (long long)extent_h,
                            (long long)extent_w, sx, p.pad_h, p.pad_w);
    if (bias) {
        NN_TRY(nn_check_tensor_ndim(op, "bias", bias, NN_F32, 1));
        NN_TRY(nn_check_same_ctx(op, "x", x, "bias", bias));
        if (bias->shape[0] != w->shape[0])
            return nn_set_error(NN_ERR_SHAPE, "%s: bias %s does not match weight %s (%lld filters)",
                                op, nn_format_shape(1, bias->shape, sb, sizeof sb), sw,
                                (long long)w->shape[0]);
    }
    /* Every size a kernel sees must fit int32, including the column matrix. */
    NN_TRY(nn_check_int32(op, "kernel area", w->shape[2] * w->shape[3]));
    int64_t k = x->shape[1] * (w->shape[2] * w->shape[3]);
    NN_TRY(nn_check_int32(op, "batch", x->shape[0]));
    NN_TRY(nn_check_int32(op, "channels", x->shape[1]));
    NN_TRY(nn_check_int32(op, "filters", w->shape[0]));
    int64_t positions = ((x->shape[2] + 2 * (int64_t)p.pad_h - extent_h) / p.stride_h + 1) *
                        ((x->shape[3] + 2 * (int64_t)p.pad_w - extent_w) / p.stride_w + 1);
    NN_TRY(nn_check_int32(op, "channels x kernel", k));
    NN_TRY(nn_check_int32(op, "output positions", positions));
    return NN_OK;
}

nn_conv_geometry nn_conv2d_geometry(const nn_tensor *x, const nn_tensor *w, const nn_conv2d_params *params) {
    const nn_conv2d_params p = nn_conv2d_params_normalised(params);
    nn_conv_geometry g = {
        .batch = (int32_t)x->shape[0], .channels = (int32_t)x->shape[1],
        .height = (int32_t)x->shape[2], .width = (int32_t)x->shape[3],
        .kernel_h = (int32_t)w->shape[2], .kernel_w = (int32_t)w->shape[3],
        .stride_h = p.stride_h, .stride_w = p.stride_w,
        .pad_h = p.pad_h, .pad_w = p.pad_w,
        .dilation_h = p.dilation_h, .dilation_w = p.dilation_w,
    };
    /* In 64 bits: the checks bounded the result, not every term. */
    g.out_h = (int32_t)(((int64_t)g.height + 2 * (int64_t)g.pad_h - (int64_t)g.dilation_h * (g.kernel_h - 1) - 1) /
                        g.stride_h + 1);
    g.out_w = (int32_t)(((int64_t)g.width + 2 * (int64_t)g.pad_w - (int64_t)g.dilation_w * (g.kernel_w - 1) - 1) /
                        g.stride_w + 1);
    return g;
}

nn_tensor *nn_conv2d_ex(nn_tensor *x, nn_tensor *weight, nn_tensor *bias, const nn_conv2d_params *params) {
    const char *op = "nn_conv2d";
    if (nn_conv2d_check_args(op, x, weight, bias, params) != NN_OK) return NULL;
    const nn_conv2d_node p = {.g = nn_conv2d_geometry(x, weight, params), .filters = (int32_t)weight->shape[0],
                              .groups = nn_conv2d_params_normalised(params).groups};
    const int64_t shape[4] = {p.g.batch, p.filters, p.g.out_h, p.g.out_w};
    nn_tensor *inputs[3] = {x, weight, bias};
    return nn_op_result(&nn_op_conv2d, inputs, 3, &p, sizeof p, 4, shape);
}

nn_tensor *nn_conv2d(nn_tensor *x, nn_tensor *weight, nn_tensor *bias, int stride, int padding) {
    nn_conv2d_params params = {.stride_h = stride, .stride_w = stride, .pad_h = padding, .pad_w = padding};
    return nn_conv2d_ex(x, weight, bias, &params);
}
