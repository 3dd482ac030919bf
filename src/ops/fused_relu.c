/* The ReLU half of the fused layer + ReLU ops (fused_relu.h). */
#include "fused_relu.h"

/* z -> r. Claimed (NN_NODE_GRAD_PREMASKED): r's gradient already is z's, so
 * z takes that tensor as its gradient, no kernel. Otherwise, or if z has a
 * gradient tensor of its own already, the mask is applied as nn_relu does. */
static nn_status fused_relu_backward(nn_node *node) {
    nn_tensor *z = node->inputs[0], *r = node->output;
    nn_tensor *grad;
    int32_t acc;
    bool premasked = node->fusion & NN_NODE_GRAD_PREMASKED;
    if (premasked && !z->grad && z->grad_fn) z->grad = nn_tensor_retain(r->grad);
    NN_TRY(nn_grad_target(z, &grad, &acc));
    if (premasked) {
        if (grad == r->grad && !acc) return NN_OK;
        return nn_run_scale(z->ctx, nn_tensor_ref(r->grad), nn_tensor_ref(grad), z->numel, 1.0f, acc);
    }
    nn_pointwise_params p = {.n = z->numel, .accumulate = acc};
    nn_buffer_ref args[3] = {nn_tensor_ref(r), nn_tensor_ref(r->grad), nn_tensor_ref(grad)};
    return nn_ctx_run(z->ctx, NN_KERNEL_RELU_BACKWARD, args, 3, &p);
}

nn_status nn_fused_relu_outputs(nn_ctx *ctx, bool record, int ndim, const int64_t *shape, nn_tensor **r,
                                nn_tensor **z) {
    *r = nn_op_result(ctx, ndim, shape);
    if (!*r) return nn_last_status();
    *z = record ? nn_tensor_view(*r, ndim, shape) : *r;
    if (!*z) {
        nn_tensor_free(*r);
        return nn_last_status();
    }
    return NN_OK;
}

nn_tensor *nn_fused_relu_finish(nn_tensor *z, nn_tensor *r) {
    if (z == r) return r;
    nn_node *node;
    /* The view z is the step's; r stays alive through the step and the node. */
    return nn_op_finish(r, "nn_relu", fused_relu_backward, &z, 1, NULL, 0, &node);
}

bool nn_fused_relu_claimable(const nn_tensor *x) {
    return x->grad_fn && x->grad_fn->backward == fused_relu_backward;
}

bool nn_fused_relu_claim(nn_tensor *x, nn_node *consumer) {
    if (!consumer || !x->grad_fn || x->grad_fn->backward != fused_relu_backward) return false;
    x->grad_fn->fusion |= NN_NODE_GRAD_PREMASKED;
    consumer->fusion |= NN_NODE_MASKS_INPUT_GRAD;
    return true;
}
