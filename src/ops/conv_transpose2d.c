/* Transposed convolution (PyTorch's conv_transpose2d): the data gradient
 * of the convolution that maps its output back to its input, run by the
 * convolution's kernels (conv_launch.c). In that convolution's view (the
 * node's nn_conv_params) the output y [N, OC, Hout, Wout] is the image,
 * the input x [N, C, H, W] its output, and C its filters; so the forward
 * is the data gradient, the input's gradient a convolution of dy, and the
 * weight's the convolution's weight gradient with x in dy's place. */
#include "io/onnx_graph.h"
#include "ops.h"

typedef struct conv_transpose_node {
    nn_conv_params conv;  /* the convolution's view */
    int32_t output_pad_h, output_pad_w;
} conv_transpose_node;

static nn_status forward(nn_node *node) {
    const conv_transpose_node *c = NN_NODE_PARAMS(node, conv_transpose_node);
    nn_tensor *x = node->inputs[0], *bias = node->inputs[2], *y = node->output;
    NN_TRY(nn_conv_run_data(x->ctx, &c->conv, nn_tensor_ref(x), nn_tensor_ref(node->inputs[1]), nn_tensor_ref(y)));
    if (!bias) return NN_OK;
    nn_bias_params b = {.outer = y->shape[0], .channels = (int32_t)y->shape[1], .inner = y->shape[2] * y->shape[3]};
    nn_buffer_ref args[2] = {nn_tensor_ref(y), nn_tensor_ref(bias)};
    return nn_ctx_run(x->ctx, NN_KERNEL_BIAS_ADD, args, 2, &b);
}

static nn_status backward(nn_node *node) {
    const conv_transpose_node *c = NN_NODE_PARAMS(node, conv_transpose_node);
    nn_tensor *x = node->inputs[0], *w = node->inputs[1], *bias = node->inputs[2], *dy = node->output->grad;
    nn_ctx *ctx = x->ctx;
    nn_conv_params p = c->conv;
    nn_tensor *grad;
    int32_t acc;
    if (nn_wants_grad(w)) {
        NN_TRY(nn_grad_target(w, &grad, &acc));
        p.g.accumulate = acc;
        NN_TRY(nn_conv_run_weight(ctx, &p, nn_tensor_ref(x), nn_tensor_ref(dy), nn_tensor_ref(grad),
                                  nn_optional_ref(NULL)));
    }
    if (nn_wants_grad(bias)) {
        NN_TRY(nn_grad_target(bias, &grad, &acc));
        nn_bias_params b = {.outer = dy->shape[0], .channels = (int32_t)dy->shape[1],
                            .inner = dy->shape[2] * dy->shape[3], .accumulate = acc};
        nn_buffer_ref args[2] = {nn_tensor_ref(dy), nn_tensor_ref(grad)};
        NN_TRY(nn_ctx_run(ctx, NN_KERNEL_BIAS_GRAD, args, 2, &b));
    }
    if (nn_wants_grad(x)) {
        NN_TRY(nn_grad_target(x, &grad, &acc));
        p.g.accumulate = 0, p.epilogue = 0;
        /* The convolution's forward overwrites: into a scratch tensor, then added, where x's gradient accumulates. */
        nn_tensor *into = acc ? nn_op_scratch(ctx, NN_F32, 4, x->shape) : grad;
        if (!into) return nn_last_status();
        nn_status st = nn_conv_run_forward(ctx, &p, nn_tensor_ref(dy), nn_tensor_ref(w), nn_tensor_ref(into),
                                           nn_optional_ref(NULL), nn_optional_ref(NULL));
        if (acc) {
            if (st == NN_OK)
                st = nn_run_scale(ctx, nn_tensor_ref(into), nn_tensor_ref(grad), nn_tensor_numel(x), 1.0f, 1);
            nn_tensor_release(into);
        }
        NN_TRY(st);
    }
    return NN_OK;
}

static nn_status to_onnx(exporter *x, op_io *io, const char *out) {
    NN_TRY(nn_onnx_only_input_carries_batch(x, io, 0));
    const conv_transpose_node *c = NN_NODE_PARAMS(io->node, conv_transpose_node);
    const nn_conv_geometry *g = &c->conv.g;
    int64_t kernel[2] = {g->kernel_h, g->kernel_w}, strides[2] = {g->stride_h, g->stride_w};
    int64_t pads[4] = {g->pad_h, g->pad_w, g->pad_h, g->pad_w}, dilations[2] = {g->dilation_h, g->dilation_w};
    int64_t output_padding[2] = {c->output_pad_h, c->output_pad_w};
    nn_onnx_node n;
    nn_onnx_begin_window(x, &n, "ConvTranspose", io, 3, out, kernel, strides, pads);
    nn_onnx_attr_ints(&n, "dilations", dilations, 2);
    nn_onnx_attr_int(&n, "group", c->conv.groups);
    nn_onnx_attr_ints(&n, "output_padding", output_padding, 2);
    nn_onnx_node_end(&n, &x->graph);
    return NN_OK;
}

const nn_op nn_op_conv_transpose2d = {
    .name = "nn_conv_transpose2d", .forward = forward, .backward = backward, .to_onnx = to_onnx};

static nn_status check_args(const char *op, nn_tensor *x, nn_tensor *w, nn_tensor *bias,
                            const nn_conv_transpose2d_params *p) {
    NN_TRY(nn_check_tensor_ndim(op, "x", x, NN_F32, 4));
    NN_TRY(nn_check_tensor_ndim(op, "weight", w, NN_F32, 4));
    NN_TRY(nn_check_same_ctx(op, "x", x, "weight", w));
    char sx[96], sw[96], sb[96];
    nn_format_shape(4, x->shape, sx, sizeof sx);
    nn_format_shape(4, w->shape, sw, sizeof sw);
    if (p->groups < 1) return nn_set_error(NN_ERR_ARGUMENT, "%s: groups must be >= 1, got %d", op, p->groups);
    if (x->shape[1] != w->shape[0])
        return nn_set_error(NN_ERR_SHAPE, "%s: x %s has %lld channels, weight %s expects %lld", op, sx,
                            (long long)x->shape[1], sw, (long long)w->shape[0]);
    if (x->shape[1] % p->groups != 0)
        return nn_set_error(NN_ERR_SHAPE, "%s: groups %d must divide the input channels (x %s)", op, p->groups, sx);
    if (p->stride_h < 1 || p->stride_w < 1)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: stride must be >= 1, got %dx%d", op, p->stride_h, p->stride_w);
    if (p->pad_h < 0 || p->pad_w < 0)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: padding must be >= 0, got %dx%d", op, p->pad_h, p->pad_w);
    if (p->dilation_h < 1 || p->dilation_w < 1)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: dilation must be >= 1, got %dx%d", op, p->dilation_h,
                            p->dilation_w);
    if (p->output_pad_h < 0 || p->output_pad_w < 0 || p->output_pad_h >= p->stride_h ||
        p->output_pad_w >= p->stride_w)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: output_padding %dx%d must be >= 0 and below the stride %dx%d", op,
                            p->output_pad_h, p->output_pad_w, p->stride_h, p->stride_w);
    /* Every size below is computed in 64 bits from sizes that fit 32. */
    NN_TRY(nn_check_int32(op, "input height", x->shape[2]));
    NN_TRY(nn_check_int32(op, "input width", x->shape[3]));
    NN_TRY(nn_check_int32(op, "kernel height", w->shape[2]));
    NN_TRY(nn_check_int32(op, "kernel width", w->shape[3]));
    const int64_t out_h = (x->shape[2] - 1) * p->stride_h - 2 * (int64_t)p->pad_h +
                          (int64_t)p->dilation_h * (w->shape[2] - 1) + p->output_pad_h + 1;
    const int64_t out_w = (x->shape[3] - 1) * p->stride_w - 2 * (int64_t)p->pad_w +
                          (int64_t)p->dilation_w * (w->shape[3] - 1) + p->output_pad_w + 1;
    if (x->shape[2] < 1 || x->shape[3] < 1 || out_h < 1 || out_w < 1)
        return nn_set_error(NN_ERR_SHAPE, "%s: x %s with weight %s, stride %dx%d, padding %dx%d gives an empty "
                            "output (%lldx%lld)", op, sx, sw, p->stride_h, p->stride_w, p->pad_h, p->pad_w,
                            (long long)out_h, (long long)out_w);
    if (bias) {
        NN_TRY(nn_check_tensor_ndim(op, "bias", bias, NN_F32, 1));
        NN_TRY(nn_check_same_ctx(op, "x", x, "bias", bias));
        if (bias->shape[0] != w->shape[1] * p->groups)
            return nn_set_error(NN_ERR_SHAPE, "%s: bias %s does not match weight %s with groups %d (%lld outputs)",
                                op, nn_format_shape(1, bias->shape, sb, sizeof sb), sw, p->groups,
                                (long long)(w->shape[1] * p->groups));
    }
    NN_TRY(nn_check_int32(op, "batch", x->shape[0]));
    NN_TRY(nn_check_int32(op, "output height", out_h));
    NN_TRY(nn_check_int32(op, "output width", out_w));
    /* The backward convolution reads the output padded. */
    NN_TRY(nn_check_padded(op, "output height", out_h, p->pad_h));
    NN_TRY(nn_check_padded(op, "output width", out_w, p->pad_w));
    NN_TRY(nn_check_int32(op, "kernel area", w->shape[2] * w->shape[3]));
    NN_TRY(nn_check_int32(op, "output channels", w->shape[1] * p->groups));
    NN_TRY(nn_check_int32(op, "output channels x kernel", (w->shape[1] * p->groups) * (w->shape[2] * w->shape[3])));
    NN_TRY(nn_check_int32(op, "input positions", x->shape[2] * x->shape[3]));
    return NN_OK;
}

nn_tensor *nn_conv_transpose2d(nn_tensor *x, nn_tensor *weight, nn_tensor *bias,
                               const nn_conv_transpose2d_params *params) {
    const char *op = "nn_conv_transpose2d";
    if (!params) {
        nn_set_error(NN_ERR_ARGUMENT, "%s: params is NULL", op);
        return NULL;
    }
    nn_conv_transpose2d_params p = *params;
    if (p.dilation_h == 0) p.dilation_h = 1;
    if (p.dilation_w == 0) p.dilation_w = 1;
    if (p.groups == 0) p.groups = 1;
    if (check_args(op, x, weight, bias, &p) != NN_OK) return NULL;
    const int32_t out_channels = (int32_t)(weight->shape[1] * p.groups);
    nn_conv_geometry g = {
        .batch = (int32_t)x->shape[0], .channels = out_channels,
        .height = (int32_t)((x->shape[2] - 1) * p.stride_h - 2 * p.pad_h + p.dilation_h * (weight->shape[2] - 1) +
                            p.output_pad_h + 1),
        .width = (int32_t)((x->shape[3] - 1) * p.stride_w - 2 * p.pad_w + p.dilation_w * (weight->shape[3] - 1) +
                           p.output_pad_w + 1),
        .kernel_h = (int32_t)weight->shape[2], .kernel_w = (int32_t)weight->shape[3],
        .stride_h = p.stride_h, .stride_w = p.stride_w, .pad_h = p.pad_h, .pad_w = p.pad_w,
        .out_h = (int32_t)x->shape[2], .out_w = (int32_t)x->shape[3],
        .dilation_h = p.dilation_h, .dilation_w = p.dilation_w};
    const conv_transpose_node node = {
        .conv = {.g = g, .filters = (int32_t)x->shape[1], .groups = p.groups, .precision = x->ctx->precision},
        .output_pad_h = p.output_pad_h, .output_pad_w = p.output_pad_w};
    const int64_t shape[4] = {g.batch, out_channels, g.height, g.width};
    nn_tensor *inputs[3] = {x, weight, bias};
    return nn_op_result(&nn_op_conv_transpose2d, inputs, 3, &node, sizeof node, 4, shape);
}
