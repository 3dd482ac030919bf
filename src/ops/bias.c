/* x + bias along dimension 1 (channels of [N, C, H, W], features of [N, C]). */
#include <stdio.h>

#include "io/onnx_graph.h"
#include "ops.h"

static nn_bias_params bias_geometry(const nn_tensor *x) {
    nn_bias_params p = {.outer = x->shape[0], .channels = (int32_t)x->shape[1], .inner = 1};
    for (int i = 2; i < x->ndim; i++) p.inner *= x->shape[i];
    return p;
}

static nn_status add_bias_forward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *y = node->output;
    nn_bias_params p = bias_geometry(x);
    NN_TRY(nn_ctx_copy(x->ctx, nn_tensor_ref(y), nn_tensor_ref(x), (size_t)x->numel * sizeof(float)));
    nn_buffer_ref args[2] = {nn_tensor_ref(y), nn_tensor_ref(node->inputs[1])};
    return nn_ctx_run(x->ctx, NN_KERNEL_BIAS_ADD, args, 2, &p);
}

static nn_status add_bias_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *bias = node->inputs[1], *dy = node->output->grad;
    nn_tensor *grad;
    int32_t acc;
    if (nn_wants_grad(x)) {
        NN_TRY(nn_grad_target(x, &grad, &acc));
        NN_TRY(nn_run_scale(x->ctx, nn_tensor_ref(dy), nn_tensor_ref(grad), x->numel, 1.0f, acc));
    }
    if (nn_wants_grad(bias)) {
        NN_TRY(nn_grad_target(bias, &grad, &acc));
        nn_bias_params p = bias_geometry(x);
        p.accumulate = acc;
        nn_buffer_ref args[2] = {nn_tensor_ref(dy), nn_tensor_ref(grad)};
        NN_TRY(nn_ctx_run(x->ctx, NN_KERNEL_BIAS_GRAD, args, 2, &p));
    }
    return NN_OK;
}

/* ONNX broadcasts from the last dimension, so a bias for [N, C, H, W] is
 * first reshaped to [C, 1, 1]. */
static nn_status add_bias_onnx(exporter *x, op_io *io, const char *out) {
    NN_TRY(nn_onnx_only_input_carries_batch(x, io, 0));
    const nn_tensor *t = io->node->inputs[0];
    const char *bias = io->in[1]->name;
    char reshaped[80];
    if (t->ndim > 2) {
        char reshape_name[48];
        snprintf(reshape_name, sizeof reshape_name, "Reshape_%d", x->nodes_made++);
        int64_t dims[NN_MAX_DIMS] = {-1, 1, 1, 1};
        snprintf(reshaped, sizeof reshaped, "%s_out", reshape_name);
        NN_TRY(nn_onnx_reshape_to(x, reshape_name, bias, dims, t->ndim - 1, reshaped));
        if (!nn_onnx_add_value(x, NULL, reshaped, false)) return nn_last_status();
        bias = reshaped;
    }
    nn_onnx_reserve_name(x, "Add", io);
    nn_onnx_pair(x, "Add", io->name, io->in[0]->name, bias, out);
    return NN_OK;
}

const nn_op nn_op_add_bias = {
    .name = "nn_add_bias", .forward = add_bias_forward, .backward = add_bias_backward, .to_onnx = add_bias_onnx};

nn_tensor *nn_add_bias(nn_tensor *x, nn_tensor *bias) {
    const char *op = "nn_add_bias";
    if (nn_check_tensor(op, "x", x, NN_F32) || nn_check_tensor_ndim(op, "bias", bias, NN_F32, 1) ||
        nn_check_same_ctx(op, "x", x, "bias", bias))
        return NULL;
    char sx[96], sb[96];
    if (x->ndim < 2 || x->shape[1] != bias->shape[0])
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: bias %s must have one value per channel (dimension 1) of x %s", op,
                            nn_format_shape(1, bias->shape, sb, sizeof sb),
                            nn_format_shape(x->ndim, x->shape, sx, sizeof sx));
    if (nn_check_int32(op, "channels", x->shape[1])) return NULL;
    nn_tensor *inputs[2] = {x, bias};
    return nn_op_result(&nn_op_add_bias, inputs, 2, NULL, 0, x->ndim, x->shape);
}
