/* Conv2d -> ReLU and Linear -> ReLU: the ReLU in the layer's kernel, its
 * epilogue (after the bias). The layer's own output (before the ReLU) is
 * never written; both nodes keep their own backward, which reads only the
 * ReLU's output and the layer's inputs (and the columns the launch keeps
 * for the convolution as its own forward would). */
#include "patterns.h"

static bool always(const nn_fusion_graph *g, nn_node *const *members) { return true; }

/* Grouped and dilated convolutions run on their own (the depthwise kernels take no ReLU epilogue from here). */
static bool plain_conv(const nn_fusion_graph *g, nn_node *const *members) { return nn_conv2d_is_plain(members[0]); }

static nn_status launch_conv_relu(const nn_fusion_graph *g, nn_node *const *m) {
    nn_node *conv = m[0];
    nn_tensor *r = m[1]->output;
    const nn_conv_params p = nn_conv2d_params_of(conv, NN_EPI_RELU);
    NN_TRY(nn_tensor_attach_storage(r));
    m[1]->launched = true;
    nn_status st;
    nn_tensor *cols = nn_conv2d_columns(conv, &p, &st);
    NN_TRY(st);
    NN_TRY(nn_node_elide(conv));
    nn_buffer_ref args[5] = {nn_tensor_ref(conv->inputs[0]), nn_tensor_ref(conv->inputs[1]), nn_tensor_ref(r),
                             nn_optional_ref(conv->inputs[2]), nn_optional_ref(cols)};
    return nn_ctx_run(r->ctx, NN_KERNEL_CONV2D_FORWARD, args, 5, &p);
}

static nn_status launch_linear_relu(const nn_fusion_graph *g, nn_node *const *m) {
    nn_node *linear = m[0];
    nn_tensor *r = m[1]->output;
    const nn_gemm_epilogue_params p = nn_linear_gemm(linear, NN_EPI_RELU);
    NN_TRY(nn_node_elide(linear));
    NN_TRY(nn_tensor_attach_storage(r));
    m[1]->launched = true;
    nn_buffer_ref args[4] = {nn_tensor_ref(linear->inputs[0]), nn_tensor_ref(linear->inputs[1]), nn_tensor_ref(r),
                             nn_optional_ref(linear->inputs[2])};
    return nn_ctx_run(r->ctx, NN_KERNEL_GEMM_EPILOGUE, args, 4, &p);
}

const nn_fusion_pattern nn_pattern_conv_relu = {"conv2d+relu", 2, {&nn_op_conv2d, &nn_op_relu}, plain_conv,
                                                launch_conv_relu, .any_precision = true};
const nn_fusion_pattern nn_pattern_linear_relu = {"linear+relu", 2, {&nn_op_linear, &nn_op_relu}, always,
                                                  launch_linear_relu, .any_precision = true};
