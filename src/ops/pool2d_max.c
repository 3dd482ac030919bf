/* Max pooling with PyTorch's arguments (nn_maxpool2d_window) and adaptive
 * max pooling (nn_adaptive_maxpool2d): the POOL2D_MAX kernels, the argmax
 * kept for backward. Windows nn_maxpool2d_ex handles go to it, so the
 * fused convolution patterns (src/fusion/) see only what they handle. */
#include "base/error.h"
#include "ops.h"
#include "pool2d.h"

static nn_status max_forward(nn_node *node) {
    const nn_pool2d_geometry *g = NN_NODE_PARAMS(node, nn_pool2d_geometry);
    nn_tensor *x = node->inputs[0], *y = node->output;
    nn_tensor *argmax = nn_node_save_new(node, NN_I32, y->ndim, y->shape);
    if (!argmax) return nn_last_status();
    nn_buffer_ref args[3] = {nn_tensor_ref(x), nn_tensor_ref(y), nn_tensor_ref(argmax)};
    return nn_ctx_run(x->ctx, NN_KERNEL_POOL2D_MAX_FORWARD, args, 3, g);
}

static nn_status max_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *argmax = node->saved[0];
    nn_pool2d_geometry g = *NN_NODE_PARAMS(node, nn_pool2d_geometry);
    nn_tensor *grad;
    NN_TRY(nn_grad_target(x, &grad, &g.accumulate));
    nn_buffer_ref args[3] = {nn_tensor_ref(node->output->grad), nn_tensor_ref(argmax), nn_tensor_ref(grad)};
    return nn_ctx_run(x->ctx, NN_KERNEL_POOL2D_MAX_BACKWARD, args, 3, &g);
}

static nn_status window_onnx(exporter *x, op_io *io, const char *out) {
    NN_TRY(nn_pool2d_onnx_begin(x, io));
    const nn_pool2d_geometry *g = NN_NODE_PARAMS(io->node, nn_pool2d_geometry);
    nn_onnx_node n;
    nn_pool2d_onnx_window(x, &n, "MaxPool", io, out, g);
    const int64_t dilations[2] = {g->dilation_h, g->dilation_w};
    nn_onnx_attr_ints(&n, "dilations", dilations, 2);
    nn_onnx_node_end(&n, &x->graph);
    return NN_OK;
}

static nn_status adaptive_onnx(exporter *x, op_io *io, const char *out) {
    NN_TRY(nn_pool2d_onnx_begin(x, io));
    return nn_pool2d_onnx_adaptive(x, io, out, "MaxPool", "GlobalMaxPool");
}

const nn_op nn_op_maxpool2d_window = {
    .name = "nn_maxpool2d_window", .forward = max_forward, .backward = max_backward, .to_onnx = window_onnx};
const nn_op nn_op_adaptive_maxpool2d = {
    .name = "nn_adaptive_maxpool2d", .forward = max_forward, .backward = max_backward, .to_onnx = adaptive_onnx};

/* Whether nn_maxpool2d_ex computes this pooling: then it runs as that. */
static bool square_and_plain(const nn_tensor *x, const nn_pool2d_geometry *g) {
    return x->ndim == 4 && g->kernel_h == g->kernel_w && g->stride_h == g->stride_w && g->pad_h == g->pad_w &&
           g->dilation_h == 1 && g->dilation_w == 1 && g->height + 2 * g->pad_h >= g->kernel_h &&
           g->width + 2 * g->pad_w >= g->kernel_w &&
           g->out_h == (g->height + 2 * g->pad_h - g->kernel_h) / g->stride_h + 1 &&
           g->out_w == (g->width + 2 * g->pad_w - g->kernel_w) / g->stride_w + 1;
}

nn_tensor *nn_maxpool2d_window(nn_tensor *x, const nn_pool2d_params *window) {
    nn_pool2d_geometry g;
    if (nn_pool2d_window_geometry("nn_maxpool2d_window", x, window, true, &g)) return NULL;
    if (square_and_plain(x, &g)) return nn_maxpool2d_ex(x, g.kernel_h, g.stride_h, g.pad_h);
    return nn_pool2d_record(&nn_op_maxpool2d_window, x, &g);
}

nn_tensor *nn_adaptive_maxpool2d(nn_tensor *x, int out_h, int out_w) {
    nn_pool2d_geometry g;
    if (nn_pool2d_adaptive_geometry("nn_adaptive_maxpool2d", x, out_h, out_w, &g)) return NULL;
    return nn_pool2d_record(&nn_op_adaptive_maxpool2d, x, &g);
}
