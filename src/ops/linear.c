/* linear: y = x W^T + b as one GEMM with the bias in its epilogue. Its
 * backward: dx = dy W (masked by (x > 0) where x is a ReLU's output this
 * node alone reads: nn_relu_mask_claim), dW = dy^T x, db = dy's column
 * sums. */
#include "io/onnx_graph.h"
#include "ops.h"

nn_gemm_epilogue_params nn_linear_gemm(const nn_node *linear, int32_t epilogue) {
    const nn_tensor *x = linear->inputs[0], *w = linear->inputs[1];
    const int32_t batch = (int32_t)x->shape[0], in = (int32_t)x->shape[1], out = (int32_t)w->shape[0];
    return (nn_gemm_epilogue_params){
        .gemm = {.m = batch, .n = out, .k = in, .trans_b = 1, .lda = in, .ldb = in, .ldc = out, .batch = 1,
                 .alpha = 1.0f, .precision = linear->precision},
        .epilogue = (linear->inputs[2] ? NN_EPI_BIAS_COLS : 0) | epilogue};
}

static nn_status linear_forward(nn_node *node) {
    nn_tensor *x = node->inputs[0];
    const nn_gemm_epilogue_params p = nn_linear_gemm(node, 0);
    nn_buffer_ref args[4] = {nn_tensor_ref(x), nn_tensor_ref(node->inputs[1]), nn_tensor_ref(node->output),
                             nn_optional_ref(node->inputs[2])};
    return nn_ctx_run(x->ctx, NN_KERNEL_GEMM_EPILOGUE, args, 4, &p);
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

static nn_status linear_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *w = node->inputs[1], *bias = node->inputs[2];
    nn_tensor *dy = node->output->grad;
    const int batch = (int)x->shape[0], in = (int)x->shape[1], out = (int)w->shape[0];
    nn_ctx *ctx = x->ctx;
    if (nn_wants_grad(x)) {
        const int32_t epilogue = nn_relu_mask_claim(x) ? NN_EPI_MASK : 0;
        nn_tensor *grad;
        int32_t acc;
        NN_TRY(nn_grad_target(x, &grad, &acc));
        nn_gemm_epilogue_params p = {
            .gemm = {.m = batch, .n = in, .k = out, .lda = out, .ldb = in, .ldc = in, .batch = 1, .alpha = 1.0f,
                     .beta = acc ? 1.0f : 0.0f, .precision = ctx->launch_precision},
            .epilogue = epilogue};
        nn_buffer_ref none = {NULL, 0, 0};
        nn_buffer_ref args[4] = {nn_tensor_ref(dy), nn_tensor_ref(w), nn_tensor_ref(grad),
                                 epilogue ? nn_tensor_ref(x) : none};
        NN_TRY(nn_ctx_run(ctx, NN_KERNEL_GEMM_EPILOGUE, args, 4, &p));
    }
    return nn_linear_layer_gradients(ctx, w, bias, dy, x, batch, out, in);
}

static nn_status linear_onnx(exporter *x, op_io *io, const char *out) {
    NN_TRY(nn_onnx_only_input_carries_batch(x, io, 0));
    nn_onnx_reserve_name(x, "Gemm", io);
    nn_onnx_node n;
    nn_onnx_node_begin(&n, "Gemm", io->name);
    nn_onnx_inputs(&n, io, 3);
    nn_onnx_node_output(&n, out);
    nn_onnx_attr_int(&n, "transB", 1);
    nn_onnx_node_end(&n, &x->graph);
    return NN_OK;
}

const nn_op nn_op_linear = {
    .name = "nn_linear", .forward = linear_forward, .backward = linear_backward, .to_onnx = linear_onnx};

nn_status nn_linear_layer_check(const char *op, const char *layer, nn_tensor *x, int64_t features, nn_tensor *w,
                                nn_tensor *bias) {
    char sw[96], sb[96];
    NN_TRY(nn_check_tensor_ndim(op, "weight", w, NN_F32, 2));
    NN_TRY(nn_check_same_ctx(op, "x", x, "weight", w));
    if (w->shape[1] != features)
        return nn_set_error(NN_ERR_SHAPE, "%s: the %s layer's weight %s expects %lld features, its input has %lld",
                            op, layer, nn_format_shape(2, w->shape, sw, sizeof sw), (long long)w->shape[1],
                            (long long)features);
    if (!bias) return nn_check_int32(op, "features", w->shape[0]);
    NN_TRY(nn_check_tensor_ndim(op, "bias", bias, NN_F32, 1));
    NN_TRY(nn_check_same_ctx(op, "x", x, "bias", bias));
    if (bias->shape[0] != w->shape[0])
        return nn_set_error(NN_ERR_SHAPE, "%s: the %s layer's bias %s does not match its weight %s", op, layer,
                            nn_format_shape(1, bias->shape, sb, sizeof sb),
                            nn_format_shape(2, w->shape, sw, sizeof sw));
    return nn_check_int32(op, "features", w->shape[0]);
}

nn_tensor *nn_linear(nn_tensor *x, nn_tensor *weight, nn_tensor *bias) {
    const char *op = "nn_linear";
    if (nn_check_tensor(op, "x", x, NN_F32)) return NULL;
    if (x->ndim != 2) return nn_linear_nd(x, weight, bias); /* [..., in]: linear_nd.c */
    if (nn_check_tensor_ndim(op, "x", x, NN_F32, 2) || nn_check_tensor_ndim(op, "weight", weight, NN_F32, 2) ||
        nn_check_same_ctx(op, "x", x, "weight", weight))
        return NULL;
    char sx[96], sw[96], sb[96];
    if (x->shape[1] != weight->shape[1])
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: x %s has %lld features, weight %s expects %lld", op,
                            nn_format_shape(2, x->shape, sx, sizeof sx), (long long)x->shape[1],
                            nn_format_shape(2, weight->shape, sw, sizeof sw), (long long)weight->shape[1]);
    if (bias) {
        if (nn_check_tensor_ndim(op, "bias", bias, NN_F32, 1) || nn_check_same_ctx(op, "x", x, "bias", bias)) return NULL;
        if (bias->shape[0] != weight->shape[0])
            return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: bias %s does not match weight %s (%lld outputs)", op,
                                nn_format_shape(1, bias->shape, sb, sizeof sb),
                                nn_format_shape(2, weight->shape, sw, sizeof sw), (long long)weight->shape[0]);
    }
    if (nn_check_int32(op, "batch", x->shape[0]) || nn_check_int32(op, "in_features", x->shape[1]) ||
        nn_check_int32(op, "out_features", weight->shape[0]))
        return NULL;
    const int64_t shape[2] = {x->shape[0], weight->shape[0]};
    nn_tensor *inputs[3] = {x, weight, bias};
    return nn_op_result(&nn_op_linear, inputs, 3, NULL, 0, 2, shape);
}
