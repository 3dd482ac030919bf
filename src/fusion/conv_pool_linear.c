/* Conv2d -> ReLU -> MaxPool2d (fused: conv_pool.c), Flatten and a Linear
 * (and a ReLU after it) with the two layers' forwards in one kernel
 * (NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD). The Linear is small, so the
 * workgroups that compute an image's pooled output multiply it with the
 * Linear's weights themselves: forward has no GEMM and no barrier between
 * the two layers. Only the forward is fused: the pooled output and the
 * winners are written for backward, the convolution's three nodes share
 * conv_pool.c's backward, and the Flatten, the Linear and its ReLU keep
 * their own. */
#include "patterns.h"

/* The kernel's parameters, when the Linear fits after the fused layer. */
static bool linear_params(nn_node *const *m, bool relu, nn_conv_pool_linear_params *out) {
    nn_conv_pool_params c;
    if (!nn_conv_pool_chain_fits(m, &c)) return false;
    const nn_node *linear = m[4];
    *out = (nn_conv_pool_linear_params){
        .conv_pool = c, .out_features = (int32_t)linear->inputs[1]->shape[0],
        .epilogue = (linear->inputs[2] ? NN_EPI_BIAS_COLS : 0) | (relu ? NN_EPI_RELU : 0)};
    return true;
}

/* Whether the Linear starts a Linear -> ReLU -> Linear head, which fuses
 * its own way (linear_head.c). */
static bool starts_head(const nn_fusion_graph *g, nn_node *linear) {
    nn_node *relu = nn_fusion_next(g, linear->output, &nn_op_relu);
    nn_node *second = relu ? nn_fusion_next(g, relu->output, &nn_op_linear) : NULL;
    return second && !nn_fusion_next(g, second->output, &nn_op_relu);
}

static bool match(const nn_fusion_graph *g, nn_node *const *m, bool relu) {
    nn_conv_pool_linear_params p;
    if (!linear_params(m, relu, &p) || starts_head(g, m[4])) return false;
    /* The kernel does not write the column matrix a backend may keep for the weight gradient. */
    return nn_ctx_supports(g->ctx, NN_KERNEL_CONV2D_POOL_FORWARD, &p.conv_pool) &&
           !nn_ctx_conv_keeps_columns(g->ctx, &p.conv_pool.conv) &&
           nn_ctx_supports(g->ctx, NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD, &p);
}

static nn_status launch(nn_node *const *m, bool relu) {
    nn_conv_pool_linear_params p;
    linear_params(m, relu, &p);
    nn_tensor *winners, *cols;
    NN_TRY(nn_conv_pool_prepare(m, &p.conv_pool, &winners, &cols));
    NN_TRY(nn_node_launch(m[3])); /* the Flatten: a view of the pooled output */
    nn_node *linear = m[4];
    nn_tensor *h = relu ? m[5]->output : linear->output;
    NN_TRY(nn_tensor_attach_storage(h));
    if (relu) {
        m[5]->launched = true;
        NN_TRY(nn_node_elide(linear));
    }
    linear->launched = true;
    nn_node *conv = m[0];
    nn_buffer_ref args[8] = {nn_tensor_ref(conv->inputs[0]), nn_tensor_ref(conv->inputs[1]),
                             nn_optional_ref(conv->inputs[2]), nn_tensor_ref(m[2]->output),
                             nn_tensor_ref(winners), nn_tensor_ref(linear->inputs[1]),
                             nn_optional_ref(linear->inputs[2]), nn_tensor_ref(h)};
    return nn_ctx_run(h->ctx, NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD, args, 8, &p);
}

static bool match_plain(const nn_fusion_graph *g, nn_node *const *m) { return match(g, m, false); }
static bool match_relu(const nn_fusion_graph *g, nn_node *const *m) { return match(g, m, true); }
static nn_status launch_plain(const nn_fusion_graph *g, nn_node *const *m) { return launch(m, false); }
static nn_status launch_relu(const nn_fusion_graph *g, nn_node *const *m) { return launch(m, true); }

const nn_fusion_pattern nn_pattern_conv_pool_linear_relu = {
    "conv2d+relu+maxpool2d+flatten+linear+relu", 6,
    {&nn_op_conv2d, &nn_op_relu, &nn_op_maxpool2d, &nn_op_flatten, &nn_op_linear, &nn_op_relu}, match_relu,
    launch_relu, .any_precision = false};
const nn_fusion_pattern nn_pattern_conv_pool_linear = {
    "conv2d+relu+maxpool2d+flatten+linear", 5,
    {&nn_op_conv2d, &nn_op_relu, &nn_op_maxpool2d, &nn_op_flatten, &nn_op_linear}, match_plain, launch_plain,
    .any_precision = false};
