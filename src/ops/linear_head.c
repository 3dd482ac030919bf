/* Linear -> ReLU -> Linear as one operation (kernels.h,
 * nn_linear_head_params): the small layers at the end of a classifier.
 * Unfused, each is a GEMM whose output the next waits for behind a barrier,
 * forward and backward, and on a GPU those waits, not the arithmetic, are
 * the layers' time. Fused, one kernel takes a block of rows through both
 * layers forward, and one takes their gradient back through both; the
 * weight and bias gradients stay GEMMs and column sums.
 *
 * One tape node, "nn_linear_relu_linear", with the layers' five inputs; the
 * ONNX export writes it as Gemm, Relu, Gemm. */
#include "fused_relu.h"

static nn_linear_head_params head_params(const nn_tensor *x, const nn_tensor *wa, const nn_tensor *wb) {
    return (nn_linear_head_params){.rows = (int32_t)x->shape[0], .in = (int32_t)x->shape[1],
                                   .hidden = (int32_t)wa->shape[0], .out = (int32_t)wb->shape[0]};
}

nn_status nn_linear_layer_check(const char *op, const char *layer, nn_tensor *x, int64_t features, nn_tensor *w,
                                nn_tensor *bias) {
    char sw[96], sb[96];
    NN_TRY(nn_check_tensor_ndim(op, "weight", w, NN_F32, 2));
    NN_TRY(nn_check_same_ctx(op, x, w));
    if (w->shape[1] != features)
        return nn_set_error(NN_ERR_SHAPE, "%s: the %s layer's weight %s expects %lld features, its input has %lld",
                            op, layer, nn_format_shape(2, w->shape, sw, sizeof sw), (long long)w->shape[1],
                            (long long)features);
    if (!bias) return nn_check_int32(op, "features", w->shape[0]);
    NN_TRY(nn_check_tensor_ndim(op, "bias", bias, NN_F32, 1));
    NN_TRY(nn_check_same_ctx(op, x, bias));
    if (bias->shape[0] != w->shape[0])
        return nn_set_error(NN_ERR_SHAPE, "%s: the %s layer's bias %s does not match its weight %s", op, layer,
                            nn_format_shape(1, bias->shape, sb, sizeof sb),
                            nn_format_shape(2, w->shape, sw, sizeof sw));
    return nn_check_int32(op, "features", w->shape[0]);
}

static nn_status check_args(const char *op, nn_tensor *x, nn_tensor *wa, nn_tensor *ba, nn_tensor *wb,
                            nn_tensor *bb) {
    NN_TRY(nn_check_tensor_ndim(op, "x", x, NN_F32, 2));
    NN_TRY(nn_check_int32(op, "batch", x->shape[0]));
    NN_TRY(nn_check_int32(op, "in_features", x->shape[1]));
    NN_TRY(nn_linear_layer_check(op, "first", x, x->shape[1], wa, ba));
    return nn_linear_layer_check(op, "second", x, wa->shape[0], wb, bb);
}

nn_status nn_linear_layer_gradients(nn_ctx *ctx, nn_tensor *w, nn_tensor *bias, nn_tensor *dy, nn_tensor *a,
                                    int32_t rows, int32_t outputs, int32_t inputs) {
    nn_tensor *grad;
    int32_t acc;
    if (nn_wants_grad(w)) {
        NN_TRY(nn_grad_target(w, &grad, &acc));
        NN_TRY(nn_run_gemm(ctx, nn_tensor_ref(dy), nn_tensor_ref(a), nn_tensor_ref(grad), outputs, inputs, rows,
                           true, false, acc));
    }
    if (!nn_wants_grad(bias)) return NN_OK;
    NN_TRY(nn_grad_target(bias, &grad, &acc));
    nn_bias_params b = {.outer = rows, .inner = 1, .channels = outputs, .accumulate = acc};
    nn_buffer_ref args[2] = {nn_tensor_ref(dy), nn_tensor_ref(grad)};
    return nn_ctx_run(ctx, NN_KERNEL_BIAS_GRAD, args, 2, &b);
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
                             p->mask_input ? nn_tensor_ref(x) : none, nn_tensor_ref(dh), dx ? nn_tensor_ref(dx) : none};
    nn_status st = nn_ctx_run(ctx, NN_KERNEL_LINEAR_HEAD_BACKWARD_DATA, args, 7, p);
    if (st == NN_OK) st = nn_linear_layer_gradients(ctx, wa, ba, dh, x, p->rows, p->hidden, p->in);
    nn_tensor_release(dh);
    return st;
}

/* x's gradient written (or added to) masked when this node claimed x. */
static nn_status linear_head_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0];
    nn_linear_head_params p = node->params.linear_head;
    nn_tensor *dx = NULL;
    p.mask_input = 0;
    p.accumulate = 0;
    if (nn_wants_grad(x)) {
        NN_TRY(nn_grad_target(x, &dx, &p.accumulate));
        p.mask_input = (node->fusion & NN_NODE_MASKS_INPUT_GRAD) ? 1 : 0;
    }
    return nn_linear_head_gradients(&p, x, node->inputs[1], node->inputs[2], node->inputs[3], node->inputs[4],
                                    node->saved[0], node->output->grad, dx);
}

bool nn_linear_relu_linear_fuses(nn_tensor *x, nn_tensor *wa, nn_tensor *ba, nn_tensor *wb, nn_tensor *bb) {
    if (!x || !wa || !wb) return false;
    if (check_args("nn_linear", x, wa, ba, wb, bb) != NN_OK) {
        nn_clear_error(); /* the unfused layers report it */
        return false;
    }
    const nn_linear_head_params p = head_params(x, wa, wb);
    return nn_ctx_supports(x->ctx, NN_KERNEL_LINEAR_HEAD_FORWARD, &p);
}

nn_tensor *nn_linear_relu_linear(nn_tensor *x, nn_tensor *wa, nn_tensor *ba, nn_tensor *wb, nn_tensor *bb, int flags) {
    const char *op = "nn_linear_relu_linear";
    if (check_args(op, x, wa, ba, wb, bb) != NN_OK) return NULL;
    nn_ctx *ctx = x->ctx;
    nn_linear_head_params p = head_params(x, wa, wb);
    const int64_t hidden_shape[2] = {p.rows, p.hidden}, out_shape[2] = {p.rows, p.out};
    nn_tensor *y = nn_op_result(ctx, 2, out_shape);
    if (!y) return NULL;
    nn_tensor *h = nn_op_scratch(ctx, NN_F32, 2, hidden_shape);
    if (!h) return nn_op_fail(y);
    const nn_buffer_ref none = {NULL, 0, 0};
    nn_buffer_ref args[7] = {nn_tensor_ref(x),  nn_tensor_ref(wa), ba ? nn_tensor_ref(ba) : none,
                             nn_tensor_ref(wb), bb ? nn_tensor_ref(bb) : none, nn_tensor_ref(h), nn_tensor_ref(y)};
    if (nn_ctx_run(ctx, NN_KERNEL_LINEAR_HEAD_FORWARD, args, 7, &p) != NN_OK) {
        nn_tensor_release(h);
        return nn_op_fail(y);
    }
    nn_tensor *inputs[5] = {x, wa, ba, wb, bb};
    nn_node *node;
    y = nn_op_finish(y, op, linear_head_backward, inputs, 5, &h, 1, &node);
    if (node) {
        node->params.linear_head = p;
        if (flags & NN_FUSE_MASK_INPUT) nn_fused_relu_claim(x, node);
    }
    nn_tensor_release(h); /* the node holds what backward needs */
    return y;
}
