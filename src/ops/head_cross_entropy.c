/* A classifier's last layers and its loss as one operation (fused_relu.h,
 * nn_head_cross_entropy): Linear(wa, ba), ReLU, Linear(wb, bb), softmax
 * cross-entropy. On a GPU a training step's time at small batches goes to
 * the barriers between dependent kernels, and here each row's forward,
 * loss and gradient stay in one workgroup: one kernel
 * (NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY) takes a row through both layers,
 * its loss, and the loss's gradient back to the head's input. Only what
 * needs every row is left: the mean of the rows' losses (a sum after the
 * kernel) and the weight and bias gradients (backward: one GEMM and one
 * column sum each, all independent of each other).
 *
 * One tape node, "nn_head_cross_entropy". Seeded (the loss is what
 * nn_backward started from), backward finds the data gradients written
 * already; otherwise the loss's gradient scales dlogits, which goes back
 * through the layers as nn_linear_relu_linear's backward takes it. */
#include "fused_relu.h"

static nn_status check_args(const char *op, nn_tensor *x, nn_tensor *wa, nn_tensor *ba, nn_tensor *wb,
                            nn_tensor *bb, nn_tensor *labels) {
    NN_TRY(nn_check_tensor_ndim(op, "x", x, NN_F32, 2));
    NN_TRY(nn_check_int32(op, "batch", x->shape[0]));
    NN_TRY(nn_check_int32(op, "in_features", x->shape[1]));
    NN_TRY(nn_linear_layer_check(op, "first", x, x->shape[1], wa, ba));
    NN_TRY(nn_linear_layer_check(op, "second", x, wa->shape[0], wb, bb));
    NN_TRY(nn_check_tensor_ndim(op, "labels", labels, NN_I32, 1));
    NN_TRY(nn_check_same_ctx(op, x, labels));
    if (labels->shape[0] != x->shape[0])
        return nn_set_error(NN_ERR_SHAPE, "%s: %lld labels for %lld rows", op, (long long)labels->shape[0],
                            (long long)x->shape[0]);
    return NN_OK;
}

static nn_linear_head_params params_of(const nn_tensor *x, const nn_tensor *wa, const nn_tensor *wb) {
    return (nn_linear_head_params){.rows = (int32_t)x->shape[0], .in = (int32_t)x->shape[1],
                                   .hidden = (int32_t)wa->shape[0], .out = (int32_t)wb->shape[0]};
}

/* The node's saved tensors. dh and dx are NULL where nothing wanted them. */
enum { SAVED_H, SAVED_DLOGITS, SAVED_DH, SAVED_DX, SAVED_LABELS, SAVED_COUNT };

/* The loss scaled or summed with another: dy = dloss * dlogits, back
 * through the head as nn_linear_relu_linear's backward takes it. */
static nn_status unseeded_backward(nn_node *node, nn_linear_head_params p) {
    nn_tensor *x = node->inputs[0], *dlogits = node->saved[SAVED_DLOGITS];
    nn_ctx *ctx = x->ctx;
    nn_tensor *dy = nn_op_scratch(ctx, NN_F32, 2, dlogits->shape);
    if (!dy) return nn_last_status();
    nn_status st = nn_run_scalar_times(ctx, node->output->grad, dlogits, dy, 0);
    nn_tensor *dx = NULL;
    p.accumulate = 0;
    if (st == NN_OK && nn_wants_grad(x)) st = nn_grad_target(x, &dx, &p.accumulate);
    if (st == NN_OK)
        st = nn_linear_head_gradients(&p, x, node->inputs[1], node->inputs[2], node->inputs[3], node->inputs[4],
                                      node->saved[SAVED_H], dy, dx);
    nn_tensor_release(dy);
    return st;
}

static nn_status head_cross_entropy_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *wa = node->inputs[1], *ba = node->inputs[2], *wb = node->inputs[3],
              *bb = node->inputs[4];
    const nn_linear_head_params p = node->params.linear_head;
    if (!node->output->grad_seeded) return unseeded_backward(node, p);
    nn_ctx *ctx = x->ctx;
    nn_tensor *dh = node->saved[SAVED_DH], *dx = node->saved[SAVED_DX];
    NN_TRY(nn_linear_layer_gradients(ctx, wb, bb, node->saved[SAVED_DLOGITS], node->saved[SAVED_H], p.rows, p.out,
                                     p.hidden));
    if (dh) NN_TRY(nn_linear_layer_gradients(ctx, wa, ba, dh, x, p.rows, p.hidden, p.in));
    return dx ? nn_grad_hand_on(x, dx) : NN_OK;
}

bool nn_head_cross_entropy_fuses(nn_tensor *x, nn_tensor *wa, nn_tensor *ba, nn_tensor *wb, nn_tensor *bb,
                                 nn_tensor *labels) {
    if (!x || !wa || !wb || !labels) return false;
    if (check_args("nn_head_cross_entropy", x, wa, ba, wb, bb, labels) != NN_OK) {
        nn_clear_error(); /* the unfused layers and loss report it */
        return false;
    }
    const nn_linear_head_params p = params_of(x, wa, wb);
    return nn_ctx_supports(x->ctx, NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY, &p);
}

nn_tensor *nn_head_cross_entropy(nn_tensor *x, nn_tensor *wa, nn_tensor *ba, nn_tensor *wb, nn_tensor *bb,
                                 nn_tensor *labels, int flags, nn_tensor **logits_out) {
    const char *op = "nn_head_cross_entropy";
    if (logits_out) *logits_out = NULL;
    if (check_args(op, x, wa, ba, wb, bb, labels) != NN_OK) return NULL;
    nn_ctx *ctx = x->ctx;
    nn_linear_head_params p = params_of(x, wa, wb);
    nn_tensor *inputs[5] = {x, wa, ba, wb, bb};
    /* Which data gradients the forward writes: dx when x wants one, dh when
     * x or the first layer does; dx masked when this op claims x. */
    const bool grad = nn_autograd_needed(ctx, inputs, 5);
    const bool want_dx = grad && nn_wants_grad(x);
    const bool want_dh = want_dx || (grad && (nn_wants_grad(wa) || nn_wants_grad(ba)));
    p.mask_input = want_dx && (flags & NN_FUSE_MASK_INPUT) && nn_fused_relu_claimable(x) ? 1 : 0;
    const int64_t one = 1, rows_shape[1] = {p.rows}, hidden_shape[2] = {p.rows, p.hidden},
                  out_shape[2] = {p.rows, p.out};
    nn_tensor *loss = nn_op_result(ctx, 1, &one), *logits = nn_op_result(ctx, 2, out_shape);
    /* Step-owned, not scratch: released here, its memory would be handed to
     * backward's first tensor, whose first write would then wait behind a
     * barrier for the sum below to have read it. */
    nn_tensor *row_loss = nn_op_result(ctx, 1, rows_shape);
    nn_tensor *h = nn_op_scratch(ctx, NN_F32, 2, hidden_shape), *dlogits = nn_op_scratch(ctx, NN_F32, 2, out_shape);
    nn_tensor *dh = want_dh ? nn_op_scratch(ctx, NN_F32, 2, hidden_shape) : NULL;
    nn_tensor *dx = want_dx ? nn_op_scratch(ctx, NN_F32, 2, x->shape) : NULL;
    nn_status st = loss && logits && row_loss && h && dlogits && (dh || !want_dh) && (dx || !want_dx)
                       ? NN_OK
                       : nn_last_status();
    if (st == NN_OK) {
        nn_buffer_ref args[12] = {nn_tensor_ref(x),       nn_tensor_ref(wa),      nn_optional_ref(ba),
                                  nn_tensor_ref(wb),      nn_optional_ref(bb),    nn_tensor_ref(labels),
                                  nn_tensor_ref(h),       nn_tensor_ref(logits),  nn_tensor_ref(row_loss),
                                  nn_tensor_ref(dlogits), nn_optional_ref(dh),    nn_optional_ref(dx)};
        st = nn_ctx_run(ctx, NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY, args, 12, &p);
    }
    if (st == NN_OK) { /* the mean of the rows' losses */
        nn_pointwise_params mean = {.n = p.rows, .alpha = 1.0f / (float)p.rows};
        nn_buffer_ref args[2] = {nn_tensor_ref(row_loss), nn_tensor_ref(loss)};
        st = nn_ctx_run(ctx, NN_KERNEL_REDUCE_SUM, args, 2, &mean);
    }
    nn_tensor *saved[SAVED_COUNT] = {h, dlogits, dh, dx, labels};
    nn_node *node = NULL;
    if (st == NN_OK) {
        loss = nn_op_finish(loss, op, head_cross_entropy_backward, inputs, 5, saved, SAVED_COUNT, &node);
        if (!loss) st = nn_last_status();
    } else if (loss) {
        nn_op_fail(loss);
    }
    if (node) {
        node->params.linear_head = p;
        if (p.mask_input) nn_fused_relu_claim(x, node);
    }
    nn_tensor *scratch[4] = {h, dlogits, dh, dx};
    for (int i = 0; i < 4; i++) nn_tensor_release(scratch[i]);
    if (st != NN_OK) {
        if (logits) nn_op_fail(logits);
        return NULL;
    }
    if (logits_out) *logits_out = logits;
    return loss;
}
