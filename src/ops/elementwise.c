/* add, mul and scale on tensors of the same shape. */
#include <stdio.h>

#include "io/onnx_graph.h"
#include "ops.h"

static nn_status binary_forward(nn_node *node, nn_elementwise_op kind) {
    nn_tensor *a = node->inputs[0], *b = node->inputs[1];
    nn_pointwise_params p = {.n = a->numel, .op = kind};
    nn_buffer_ref args[3] = {nn_tensor_ref(a), nn_tensor_ref(b), nn_tensor_ref(node->output)};
    return nn_ctx_run(a->ctx, NN_KERNEL_ELEMENTWISE, args, 3, &p);
}

static nn_status add_forward(nn_node *node) { return binary_forward(node, NN_EW_ADD); }
static nn_status mul_forward(nn_node *node) { return binary_forward(node, NN_EW_MUL); }

static nn_status add_backward(nn_node *node) {
    nn_tensor *dy = node->output->grad;
    for (int i = 0; i < 2; i++) {
        nn_tensor *input = node->inputs[i], *grad;
        int32_t acc;
        if (!nn_wants_grad(input)) continue;
        NN_TRY(nn_grad_target(input, &grad, &acc));
        NN_TRY(nn_run_scale(dy->ctx, nn_tensor_ref(dy), nn_tensor_ref(grad), dy->numel, 1.0f, acc));
    }
    return NN_OK;
}

/* d(a*b)/da = b and d(a*b)/db = a; mul(x, x) accumulates both into x's grad. */
static nn_status mul_backward(nn_node *node) {
    nn_tensor *dy = node->output->grad;
    for (int i = 0; i < 2; i++) {
        nn_tensor *input = node->inputs[i], *other = node->inputs[1 - i], *grad;
        int32_t acc;
        if (!nn_wants_grad(input)) continue;
        NN_TRY(nn_grad_target(input, &grad, &acc));
        nn_pointwise_params p = {.n = dy->numel, .op = NN_EW_MUL, .accumulate = acc};
        nn_buffer_ref args[3] = {nn_tensor_ref(dy), nn_tensor_ref(other), nn_tensor_ref(grad)};
        NN_TRY(nn_ctx_run(dy->ctx, NN_KERNEL_ELEMENTWISE, args, 3, &p));
    }
    return NN_OK;
}

/* Elementwise on equal shapes: a batch value with a constant of the traced
 * batch's shape would broadcast differently at another batch size. */
static nn_status binary_onnx(exporter *x, op_io *io, const char *out, const char *op_type) {
    if (x->dynamic && io->in[0]->batch != io->in[1]->batch)
        return nn_onnx_refuse_batch(x, io, "combines a batch value with a constant of the same shape");
    io->out_batch = io->in[0]->batch;
    return nn_onnx_simple(x, io, out, op_type);
}

static nn_status add_onnx(exporter *x, op_io *io, const char *out) { return binary_onnx(x, io, out, "Add"); }
static nn_status mul_onnx(exporter *x, op_io *io, const char *out) { return binary_onnx(x, io, out, "Mul"); }

const nn_op nn_op_add = {.name = "nn_add", .forward = add_forward, .backward = add_backward, .to_onnx = add_onnx};
const nn_op nn_op_mul = {.name = "nn_mul", .forward = mul_forward, .backward = mul_backward, .to_onnx = mul_onnx};

static nn_tensor *binary(const nn_op *op, nn_tensor *a, nn_tensor *b) {
    if (nn_check_tensor(op->name, "a", a, NN_F32) || nn_check_tensor(op->name, "b", b, NN_F32) ||
        nn_check_same_ctx(op->name, a, b) || nn_check_same_shape(op->name, a, b))
        return NULL;
    nn_tensor *inputs[2] = {a, b};
    return nn_op_result(op, inputs, 2, NULL, 0, a->ndim, a->shape);
}

nn_tensor *nn_add(nn_tensor *a, nn_tensor *b) { return binary(&nn_op_add, a, b); }
nn_tensor *nn_mul(nn_tensor *a, nn_tensor *b) { return binary(&nn_op_mul, a, b); }

typedef struct scale_node {
    float factor;
} scale_node;

static nn_status scale_forward(nn_node *node) {
    nn_tensor *x = node->inputs[0];
    return nn_run_scale(x->ctx, nn_tensor_ref(x), nn_tensor_ref(node->output), x->numel,
                        NN_NODE_PARAMS(node, scale_node)->factor, 0);
}

static nn_status scale_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *grad;
    int32_t acc;
    NN_TRY(nn_grad_target(x, &grad, &acc));
    return nn_run_scale(x->ctx, nn_tensor_ref(node->output->grad), nn_tensor_ref(grad), x->numel,
                        NN_NODE_PARAMS(node, scale_node)->factor, acc);
}

static nn_status scale_onnx(exporter *x, op_io *io, const char *out) {
    NN_TRY(nn_onnx_only_input_carries_batch(x, io, 0));
    nn_onnx_reserve_name(x, "Mul", io);
    char const_name[64];
    snprintf(const_name, sizeof const_name, "%s_factor", io->name);
    float factor = NN_NODE_PARAMS(io->node, scale_node)->factor;
    const char *c = nn_onnx_add_constant(x, const_name, NN_ONNX_FLOAT, NULL, 0, &factor, sizeof factor);
    if (!c) return nn_last_status();
    nn_onnx_pair(x, "Mul", io->name, io->in[0]->name, c, out);
    return NN_OK;
}

const nn_op nn_op_scale = {
    .name = "nn_scale", .forward = scale_forward, .backward = scale_backward, .to_onnx = scale_onnx};

nn_tensor *nn_scale(nn_tensor *x, float factor) {
    if (nn_check_tensor("nn_scale", "x", x, NN_F32)) return NULL;
    const scale_node p = {factor};
    return nn_op_result(&nn_op_scale, &x, 1, &p, sizeof p, x->ndim, x->shape);
}
