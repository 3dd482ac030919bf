/* matmul with transpose flags, and linear (x W^T + b) as one node. */
#include "fused_relu.h"

/* C = op(A) op(B). With the flags, each gradient is one more GEMM:
 *   dA = dC op(B)^T      (A not transposed)   dA = op(B) dC^T   (A transposed)
 *   dB = op(A)^T dC      (B not transposed)   dB = dC^T op(A)   (B transposed) */
static nn_status matmul_backward(nn_node *node) {
    nn_tensor *a = node->inputs[0], *b = node->inputs[1], *c = node->output;
    bool ta = node->params.matmul.transpose_a, tb = node->params.matmul.transpose_b;
    int m = (int)c->shape[0], n = (int)c->shape[1];
    int k = (int)(ta ? a->shape[0] : a->shape[1]);
    nn_ctx *ctx = c->ctx;
    nn_tensor *grad;
    int32_t acc;
    if (nn_wants_grad(a)) {
        NN_TRY(nn_grad_target(a, &grad, &acc));
        if (!ta)
            NN_TRY(nn_run_gemm(ctx, nn_tensor_ref(c->grad), nn_tensor_ref(b), nn_tensor_ref(grad), m,
                               k, n, false, !tb, acc));
        else
            NN_TRY(nn_run_gemm(ctx, nn_tensor_ref(b), nn_tensor_ref(c->grad), nn_tensor_ref(grad), k,
                               m, n, tb, true, acc));
    }
    if (nn_wants_grad(b)) {
        NN_TRY(nn_grad_target(b, &grad, &acc));
        if (!tb)
            NN_TRY(nn_run_gemm(ctx, nn_tensor_ref(a), nn_tensor_ref(c->grad), nn_tensor_ref(grad), k,
                               n, m, !ta, false, acc));
        else
            NN_TRY(nn_run_gemm(ctx, nn_tensor_ref(c->grad), nn_tensor_ref(a), nn_tensor_ref(grad), n,
                               k, m, true, ta, acc));
    }
    return NN_OK;
}

nn_tensor *nn_matmul(nn_tensor *a, nn_tensor *b, bool transpose_a, bool transpose_b) {
    const char *op = "nn_matmul";
    if (nn_check_tensor_ndim(op, "a", a, NN_F32, 2) || nn_check_tensor_ndim(op, "b", b, NN_F32, 2) ||
        nn_check_same_ctx(op, a, b))
        return NULL;
    int64_t m = transpose_a ? a->shape[1] : a->shape[0];
    int64_t k = transpose_a ? a->shape[0] : a->shape[1];
    int64_t kb = transpose_b ? b->shape[1] : b->shape[0];
    int64_t n = transpose_b ? b->shape[0] : b->shape[1];
    if (k != kb) {
        char sa[96], sb[96];
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: inner dimensions differ: a %s%s has %lld, b %s%s has %lld",
                            op, nn_format_shape(2, a->shape, sa, sizeof sa),
                            transpose_a ? " (transposed)" : "", (long long)k,
                            nn_format_shape(2, b->shape, sb, sizeof sb),
                            transpose_b ? " (transposed)" : "", (long long)kb);
    }
    if (nn_check_int32(op, "m", m) || nn_check_int32(op, "n", n) || nn_check_int32(op, "k", k))
        return NULL;
    int64_t shape[2] = {m, n};
    nn_tensor *c = nn_op_result(a->ctx, 2, shape);
    if (!c) return NULL;
    if (nn_run_gemm(a->ctx, nn_tensor_ref(a), nn_tensor_ref(b), nn_tensor_ref(c), (int)m, (int)n,
                    (int)k, transpose_a, transpose_b, 0) != NN_OK)
        return nn_op_fail(c);
    nn_tensor *inputs[2] = {a, b};
    nn_node *node;
    c = nn_op_finish(c, op, matmul_backward, inputs, 2, NULL, 0, &node);
    if (node) {
        node->params.matmul.transpose_a = transpose_a;
        node->params.matmul.transpose_b = transpose_b;
    }
    return c;
}

/* y = x W^T + b:  dx = dy W,  dW = dy^T x,  db = column sums of dy. */
static nn_status linear_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *w = node->inputs[1], *bias = node->inputs[2];
    nn_tensor *dy = node->output->grad;
    int batch = (int)x->shape[0], in = (int)x->shape[1], out = (int)w->shape[0];
    nn_ctx *ctx = x->ctx;
    nn_tensor *grad;
    int32_t acc;
    if (nn_wants_grad(x)) {
        NN_TRY(nn_grad_target(x, &grad, &acc));
        /* A claimed ReLU output as input (fused_relu.h): dx = (dy W) * (x > 0). */
        int32_t epilogue = (node->fusion & NN_NODE_MASKS_INPUT_GRAD) ? NN_EPI_MASK : 0;
        nn_gemm_epilogue_params p = {
            .gemm = {.m = batch, .n = in, .k = out, .lda = out, .ldb = in, .ldc = in, .batch = 1,
                     .alpha = 1.0f, .beta = acc ? 1.0f : 0.0f},
            .epilogue = epilogue};
        nn_buffer_ref none = {NULL, 0, 0};
        nn_buffer_ref args[4] = {nn_tensor_ref(dy), nn_tensor_ref(w), nn_tensor_ref(grad),
                                 epilogue ? nn_tensor_ref(x) : none};
        NN_TRY(nn_ctx_run(ctx, NN_KERNEL_GEMM_EPILOGUE, args, 4, &p));
    }
    if (nn_wants_grad(w)) {
        NN_TRY(nn_grad_target(w, &grad, &acc));
        NN_TRY(nn_run_gemm(ctx, nn_tensor_ref(dy), nn_tensor_ref(x), nn_tensor_ref(grad), out, in,
                           batch, true, false, acc));
    }
    if (nn_wants_grad(bias)) {
        NN_TRY(nn_grad_target(bias, &grad, &acc));
        nn_bias_params p = {.outer = batch, .inner = 1, .channels = out, .accumulate = acc};
        nn_buffer_ref args[2] = {nn_tensor_ref(dy), nn_tensor_ref(grad)};
        NN_TRY(nn_ctx_run(ctx, NN_KERNEL_BIAS_GRAD, args, 2, &p));
    }
    return NN_OK;
}

nn_tensor *nn_linear(nn_tensor *x, nn_tensor *weight, nn_tensor *bias) { return nn_linear_fused(x, weight, bias, 0); }

nn_status nn_linear_forward_begin(nn_tensor *x, nn_tensor *weight, nn_tensor *bias, int flags,
                                  nn_linear_forward *f) {
    const char *op = "nn_linear";
    *f = (nn_linear_forward){.inputs = {x, weight, bias}};
    NN_TRY(nn_check_tensor_ndim(op, "x", x, NN_F32, 2));
    NN_TRY(nn_check_tensor_ndim(op, "weight", weight, NN_F32, 2));
    NN_TRY(nn_check_same_ctx(op, x, weight));
    char sx[96], sw[96], sb[96];
    if (x->shape[1] != weight->shape[1])
        return nn_set_error(NN_ERR_SHAPE, "%s: x %s has %lld features, weight %s expects %lld", op,
                            nn_format_shape(2, x->shape, sx, sizeof sx), (long long)x->shape[1],
                            nn_format_shape(2, weight->shape, sw, sizeof sw), (long long)weight->shape[1]);
    if (bias) {
        NN_TRY(nn_check_tensor_ndim(op, "bias", bias, NN_F32, 1));
        NN_TRY(nn_check_same_ctx(op, x, bias));
        if (bias->shape[0] != weight->shape[0])
            return nn_set_error(NN_ERR_SHAPE, "%s: bias %s does not match weight %s (%lld outputs)", op,
                                nn_format_shape(1, bias->shape, sb, sizeof sb),
                                nn_format_shape(2, weight->shape, sw, sizeof sw), (long long)weight->shape[0]);
    }
    int64_t batch = x->shape[0], in = x->shape[1], out = weight->shape[0];
    NN_TRY(nn_check_int32(op, "batch", batch));
    NN_TRY(nn_check_int32(op, "in_features", in));
    NN_TRY(nn_check_int32(op, "out_features", out));
    int64_t shape[2] = {batch, out};
    bool relu = flags & NN_FUSE_RELU;
    if (relu) {
        NN_TRY(nn_fused_relu_outputs(x->ctx, nn_autograd_needed(x->ctx, f->inputs, 3), 2, shape, &f->y, &f->z));
    } else {
        f->y = f->z = nn_op_result(x->ctx, 2, shape);
        if (!f->y) return nn_last_status();
    }
    f->params = (nn_gemm_epilogue_params){
        .gemm = {.m = (int32_t)batch, .n = (int32_t)out, .k = (int32_t)in, .trans_b = 1, .lda = (int32_t)in,
                 .ldb = (int32_t)in, .ldc = (int32_t)out, .batch = 1, .alpha = 1.0f},
        .epilogue = (bias ? NN_EPI_BIAS_COLS : 0) | (relu ? NN_EPI_RELU : 0)};
    return NN_OK;
}

void nn_linear_forward_abort(nn_linear_forward *f) {
    if (f->z != f->y) nn_tensor_free(f->z);
    nn_op_fail(f->y);
    f->y = f->z = NULL;
}

nn_tensor *nn_linear_forward_end(nn_linear_forward *f, int flags) {
    nn_tensor *x = f->inputs[0], *y = f->y;
    const bool relu = f->params.epilogue & NN_EPI_RELU, record = f->z != f->y; /* z: a view of y */
    nn_node *node;
    nn_tensor *z = nn_op_finish(f->z, "nn_linear", linear_backward, f->inputs, 3, NULL, 0, &node);
    f->y = f->z = NULL;
    if (!z) {
        if (record) nn_tensor_free(y);
        return NULL;
    }
    if ((flags & NN_FUSE_MASK_INPUT) && node) nn_fused_relu_claim(x, node);
    return relu ? nn_fused_relu_finish(z, y) : y;
}

/* The bias (and with NN_FUSE_RELU the ReLU) in the GEMM's epilogue: one
 * kernel for the layer (fused_relu.h). */
nn_tensor *nn_linear_fused(nn_tensor *x, nn_tensor *weight, nn_tensor *bias, int flags) {
    nn_linear_forward f;
    if (nn_linear_forward_begin(x, weight, bias, flags, &f) != NN_OK) return NULL;
    nn_buffer_ref none = {NULL, 0, 0};
    nn_buffer_ref args[4] = {nn_tensor_ref(x), nn_tensor_ref(weight), nn_tensor_ref(f.y),
                             bias ? nn_tensor_ref(bias) : none};
    if (nn_ctx_run(x->ctx, NN_KERNEL_GEMM_EPILOGUE, args, 4, &f.params) != NN_OK) {
        nn_linear_forward_abort(&f);
        return NULL;
    }
    return nn_linear_forward_end(&f, flags);
}
