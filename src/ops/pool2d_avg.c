/* Average pooling with PyTorch's arguments (nn_avgpool2d) and adaptive
 * average pooling (nn_adaptive_avgpool2d): the POOL2D_AVG kernels. */
#include "base/error.h"
#include "pool2d.h"

static nn_status avg_forward(nn_node *node) {
    return nn_run_forward(node, NN_KERNEL_POOL2D_AVG_FORWARD, NN_NODE_PARAMS(node, nn_pool2d_geometry));
}

static nn_status avg_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0];
    nn_pool2d_geometry g = *NN_NODE_PARAMS(node, nn_pool2d_geometry);
    nn_tensor *grad;
    NN_TRY(nn_grad_target(x, &grad, &g.accumulate));
    nn_buffer_ref args[2] = {nn_tensor_ref(node->output->grad), nn_tensor_ref(grad)};
    return nn_ctx_run(x->ctx, NN_KERNEL_POOL2D_AVG_BACKWARD, args, 2, &g);
}

static nn_status window_onnx(exporter *x, op_io *io, const char *out) {
    NN_TRY(nn_pool2d_onnx_begin(x, io));
    const nn_pool2d_geometry *g = NN_NODE_PARAMS(io->node, nn_pool2d_geometry);
    if (g->divisor > 0) /* as PyTorch's exporter: ONNX's AveragePool has no such attribute */
        return nn_set_error(NN_ERR_ARGUMENT, "%s: nn_avgpool2d with divisor_override %d has no ONNX form", x->who,
                            g->divisor);
    nn_onnx_node n;
    nn_pool2d_onnx_window(x, &n, "AveragePool", io, out, g);
    nn_onnx_attr_int(&n, "count_include_pad", g->count_include_pad);
    nn_onnx_node_end(&n, &x->graph);
    return NN_OK;
}

static nn_status adaptive_onnx(exporter *x, op_io *io, const char *out) {
    NN_TRY(nn_pool2d_onnx_begin(x, io));
    return nn_pool2d_onnx_adaptive(x, io, out, "AveragePool", "GlobalAveragePool");
}

const nn_op nn_op_avgpool2d = {
    .name = "nn_avgpool2d", .forward = avg_forward, .backward = avg_backward, .to_onnx = window_onnx};
const nn_op nn_op_adaptive_avgpool2d = {
    .name = "nn_adaptive_avgpool2d", .forward = avg_forward, .backward = avg_backward, .to_onnx = adaptive_onnx};

nn_tensor *nn_avgpool2d(nn_tensor *x, const nn_pool2d_params *window, bool count_include_pad, int divisor_override) {
    const char *op = "nn_avgpool2d";
    nn_pool2d_geometry g;
    if (nn_pool2d_window_geometry(op, x, window, false, &g)) return NULL;
    if (divisor_override < 0)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: divisor_override must be > 0 (or 0 for none), got %d", op,
                            divisor_override);
    g.count_include_pad = count_include_pad;
    g.divisor = divisor_override;
    return nn_pool2d_record(&nn_op_avgpool2d, x, &g);
}

nn_tensor *nn_adaptive_avgpool2d(nn_tensor *x, int out_h, int out_w) {
    nn_pool2d_geometry g;
    if (nn_pool2d_adaptive_geometry("nn_adaptive_avgpool2d", x, out_h, out_w, &g)) return NULL;
    return nn_pool2d_record(&nn_op_adaptive_avgpool2d, x, &g);
}
