/* A classifier's last layers and its loss, Linear -> ReLU -> Linear ->
 * softmax cross-entropy, as one kernel (NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY):
 * on a GPU a training step's time at small batches goes to the barriers
 * between dependent kernels, and here each row's forward, loss and
 * gradient stay in one workgroup, which takes the row through both layers,
 * its loss, and the loss's gradient back to the head's input. Only what
 * needs every row is left: the mean of the rows' losses (a sum after the
 * kernel) and the weight and bias gradients (backward: one GEMM and one
 * column sum each, all independent of each other). The ReLU's output and
 * the logits are written (backward and metrics read them); the first
 * layer's output is not.
 *
 * One segment runs the four nodes' backward. Seeded (the loss is what
 * nn_backward started from), it finds the data gradients written already;
 * otherwise the loss's gradient scales dlogits, which goes back through the
 * layers as linear_head.c's backward takes it. */
#include <string.h>

#include "patterns.h"

/* The segment's saved tensors. dh and dx are NULL where nothing wanted them. */
enum { SAVED_DLOGITS, SAVED_DH, SAVED_DX, SAVED_COUNT };

/* The loss scaled or summed with another, or a masked dx that is not x's
 * whole gradient: dy = dloss * dlogits, back through the head. */
static nn_status unseeded_backward(nn_segment *s, nn_linear_head_params p) {
    nn_node *first = s->members[0], *second = s->members[2], *loss = s->members[3];
    nn_tensor *x = first->inputs[0], *dlogits = s->saved[SAVED_DLOGITS];
    nn_ctx *ctx = x->ctx;
    nn_tensor *dy = nn_op_scratch(ctx, NN_F32, 2, dlogits->shape);
    if (!dy) return nn_last_status();
    nn_status st = nn_run_scalar_times(ctx, loss->output->grad, dlogits, dy, 0);
    nn_tensor *dx = NULL;
    p.accumulate = 0;
    p.mask_input = 0;
    if (st == NN_OK && nn_wants_grad(x)) {
        p.mask_input = nn_relu_mask_claim(x) ? 1 : 0;
        st = nn_grad_target(x, &dx, &p.accumulate);
    }
    if (st == NN_OK)
        st = nn_linear_head_gradients(&p, x, first->inputs[1], first->inputs[2], second->inputs[1],
                                      second->inputs[2], s->members[1]->output, dy, dx);
    nn_tensor_release(dy);
    return st;
}

static nn_status head_cross_entropy_backward(nn_segment *s) {
    nn_node *first = s->members[0], *second = s->members[2], *loss = s->members[3];
    nn_tensor *x = first->inputs[0];
    const nn_linear_head_params p = *NN_NODE_PARAMS(s, nn_linear_head_params);
    bool seeded = loss->output->grad_seeded;
    if (seeded && p.mask_input && !nn_relu_mask_claim(x)) seeded = false; /* another reader of x: unmasked */
    if (!seeded) return unseeded_backward(s, p);
    nn_ctx *ctx = x->ctx;
    nn_tensor *dh = s->saved[SAVED_DH], *dx = s->saved[SAVED_DX];
    NN_TRY(nn_linear_layer_gradients(ctx, second->inputs[1], second->inputs[2], s->saved[SAVED_DLOGITS],
                                     s->members[1]->output, p.rows, p.out, p.hidden));
    if (dh) NN_TRY(nn_linear_layer_gradients(ctx, first->inputs[1], first->inputs[2], dh, x, p.rows, p.hidden, p.in));
    return dx ? nn_grad_hand_on(x, dx) : NN_OK;
}

static bool match(const nn_fusion_graph *g, nn_node *const *m) {
    const nn_linear_head_params p = nn_linear_head_params_of(m);
    return nn_ctx_supports(g->ctx, NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY, &p);
}

/* Which data gradients the forward writes: dx when x wants one, dh when x
 * or the first layer does; dx masked where x is a ReLU's output the head
 * alone reads (checked again at backward). */
static nn_status launch(const nn_fusion_graph *g, nn_node *const *m) {
    nn_node *first = m[0], *second = m[2], *loss = m[3];
    nn_tensor *x = first->inputs[0], *wa = first->inputs[1], *ba = first->inputs[2];
    nn_ctx *ctx = x->ctx;
    nn_linear_head_params p = nn_linear_head_params_of(m);
    const bool grad = first->tape_index >= 0;
    const bool want_dx = grad && nn_wants_grad(x);
    const bool want_dh = want_dx || (grad && (nn_wants_grad(wa) || nn_wants_grad(ba)));
    p.mask_input = want_dx && nn_relu_output(x) && nn_fusion_readers(g, x) == 1 ? 1 : 0;
    const int64_t rows_shape[1] = {p.rows}, hidden_shape[2] = {p.rows, p.hidden};
    nn_tensor *h = m[1]->output, *logits = second->output;
    NN_TRY(nn_tensor_attach_storage(loss->output));
    NN_TRY(nn_tensor_attach_storage(logits));
    /* Step-owned, not scratch: released here, its memory would be handed to
     * backward's first tensor, whose first write would then wait behind a
     * barrier for the sum below to have read it. */
    nn_tensor *row_loss = nn_tensor_alloc(ctx, NN_F32, 1, rows_shape, true);
    if (!row_loss) return nn_last_status();
    NN_TRY(nn_tensor_attach_storage(h));
    for (int i = 1; i < 4; i++) m[i]->launched = true;
    NN_TRY(nn_node_elide(first));
    nn_segment *s = nn_segment_new(m, 4, head_cross_entropy_backward);
    if (!s) return nn_last_status();
    memcpy(s->params, &p, sizeof p);
    nn_tensor *dlogits = nn_op_scratch(ctx, NN_F32, 2, logits->shape);
    nn_tensor *dh = want_dh ? nn_op_scratch(ctx, NN_F32, 2, hidden_shape) : NULL;
    nn_tensor *dx = want_dx ? nn_op_scratch(ctx, NN_F32, 2, x->shape) : NULL;
    nn_status st = dlogits && (dh || !want_dh) && (dx || !want_dx) ? NN_OK : nn_last_status();
    nn_tensor *saved[SAVED_COUNT] = {dlogits, dh, dx};
    for (int i = 0; i < SAVED_COUNT; i++) {
        if (st == NN_OK) st = nn_segment_save(s, saved[i]);
        nn_tensor_release(saved[i]); /* the segment holds what backward needs */
    }
    NN_TRY(st);
    nn_buffer_ref args[12] = {nn_tensor_ref(x),       nn_tensor_ref(wa),      nn_optional_ref(ba),
                              nn_tensor_ref(second->inputs[1]), nn_optional_ref(second->inputs[2]),
                              nn_tensor_ref(loss->inputs[1]),   nn_tensor_ref(h),
                              nn_tensor_ref(logits),  nn_tensor_ref(row_loss), nn_tensor_ref(dlogits),
                              nn_optional_ref(dh),    nn_optional_ref(dx)};
    NN_TRY(nn_ctx_run(ctx, NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY, args, 12, &p));
    nn_pointwise_params mean = {.n = p.rows, .alpha = 1.0f / (float)p.rows}; /* the mean of the rows' losses */
    nn_buffer_ref sum[2] = {nn_tensor_ref(row_loss), nn_tensor_ref(loss->output)};
    return nn_ctx_run(ctx, NN_KERNEL_REDUCE_SUM, sum, 2, &mean);
}

const nn_fusion_pattern nn_pattern_head_cross_entropy = {
    "linear+relu+linear+softmax_cross_entropy", 4,
    {&nn_op_linear, &nn_op_relu, &nn_op_linear, &nn_op_softmax_cross_entropy}, match, launch,
    .any_precision = false};
