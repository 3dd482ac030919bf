/* Linear -> ReLU -> Linear, the small layers at the end of a classifier,
 * as one forward kernel and one data-gradient kernel that take a block of
 * rows through both layers (kernels.h, nn_linear_head_params): unfused,
 * each layer is a GEMM whose output the next waits for behind a barrier,
 * forward and backward, and on a GPU those waits, not the arithmetic, are
 * the layers' time. The first layer's output (before the ReLU) is never
 * written; the ReLU's is (backward reads it). One segment runs the three
 * nodes' backward; the weight and bias gradients stay GEMMs and column
 * sums. */
#include <string.h>

#include "patterns.h"

nn_linear_head_params nn_linear_head_params_of(nn_node *const *m) {
    const nn_tensor *x = m[0]->inputs[0];
    return (nn_linear_head_params){.rows = (int32_t)x->shape[0], .in = (int32_t)x->shape[1],
                                   .hidden = (int32_t)m[0]->inputs[1]->shape[0],
                                   .out = (int32_t)m[2]->inputs[1]->shape[0]};
}

/* dWb and dbb first: they read only dy and h, so they run beside the
 * kernel that takes the gradient through both layers (dh, dx); dWa and
 * dba then read dh. */
nn_status nn_linear_head_gradients(const nn_linear_head_params *p, nn_tensor *x, nn_tensor *wa, nn_tensor *ba,
                                   nn_tensor *wb, nn_tensor *bb, nn_tensor *h, nn_tensor *dy, nn_tensor *dx) {
    nn_ctx *ctx = x->ctx;
    NN_TRY(nn_linear_layer_gradients(ctx, wb, bb, dy, h, p->rows, p->out, p->hidden));
    if (!dx && !nn_wants_grad(wa) && !nn_wants_grad(ba)) return NN_OK;
    const int64_t hidden_shape[2] = {p->rows, p->hidden};
    nn_tensor *dh = nn_op_scratch(ctx, NN_F32, 2, hidden_shape);
    if (!dh) return nn_last_status();
    const nn_buffer_ref none = {NULL, 0, 0};
    nn_buffer_ref args[7] = {nn_tensor_ref(dy), nn_tensor_ref(wb), nn_tensor_ref(h), nn_tensor_ref(wa),
                             p->mask_input ? nn_tensor_ref(x) : none, nn_tensor_ref(dh), nn_optional_ref(dx)};
    nn_status st = nn_ctx_run(ctx, NN_KERNEL_LINEAR_HEAD_BACKWARD_DATA, args, 7, p);
    if (st == NN_OK) st = nn_linear_layer_gradients(ctx, wa, ba, dh, x, p->rows, p->hidden, p->in);
    nn_tensor_release(dh);
    return st;
}

/* x's gradient written (or added to) masked where x is a ReLU's output the
 * head alone reads. */
static nn_status head_backward(nn_segment *s) {
    nn_node *first = s->members[0], *second = s->members[2];
    nn_tensor *x = first->inputs[0];
    nn_linear_head_params p = *NN_NODE_PARAMS(s, nn_linear_head_params);
    nn_tensor *dx = NULL;
    p.mask_input = 0;
    p.accumulate = 0;
    if (nn_wants_grad(x)) {
        p.mask_input = nn_relu_mask_claim(x) ? 1 : 0;
        NN_TRY(nn_grad_target(x, &dx, &p.accumulate));
    }
    return nn_linear_head_gradients(&p, x, first->inputs[1], first->inputs[2], second->inputs[1], second->inputs[2],
                                    s->members[1]->output, second->output->grad, dx);
}

static bool match(const nn_fusion_graph *g, nn_node *const *m) {
    const nn_linear_head_params p = nn_linear_head_params_of(m);
    return !nn_fusion_next(g, m[2]->output, &nn_op_relu) && nn_ctx_supports(g->ctx, NN_KERNEL_LINEAR_HEAD_FORWARD, &p);
}

static nn_status launch(const nn_fusion_graph *g, nn_node *const *m) {
    nn_linear_head_params p = nn_linear_head_params_of(m);
    nn_tensor *h = m[1]->output, *y = m[2]->output;
    NN_TRY(nn_tensor_attach_storage(y));
    NN_TRY(nn_tensor_attach_storage(h));
    m[1]->launched = m[2]->launched = true;
    NN_TRY(nn_node_elide(m[0]));
    nn_segment *s = nn_segment_new(m, 3, head_backward);
    if (!s) return nn_last_status();
    memcpy(s->params, &p, sizeof p);
    nn_node *first = m[0], *second = m[2];
    nn_buffer_ref args[7] = {nn_tensor_ref(first->inputs[0]),  nn_tensor_ref(first->inputs[1]),
                             nn_optional_ref(first->inputs[2]), nn_tensor_ref(second->inputs[1]),
                             nn_optional_ref(second->inputs[2]), nn_tensor_ref(h), nn_tensor_ref(y)};
    return nn_ctx_run(y->ctx, NN_KERNEL_LINEAR_HEAD_FORWARD, args, 7, &p);
}

const nn_fusion_pattern nn_pattern_linear_head = {
    "linear+relu+linear", 3, {&nn_op_linear, &nn_op_relu, &nn_op_linear}, match, launch, .any_precision = false};
