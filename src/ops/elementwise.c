/* The elementwise functions of two tensors, with NumPy's broadcasting: add,
 * sub, mul, div, maximum, minimum; and scale (a tensor times a constant).
 * Equal shapes add and multiply through the ELEMENTWISE kernel, everything
 * else through BROADCAST (strided.h); an operand's gradient is summed over
 * the dimensions it was broadcast along. */
#include <stdio.h>

#include "core/layout.h"
#include "io/onnx_graph.h"
#include "ops.h"
#include "strided.h"

typedef struct binary_node {
    int32_t op; /* nn_broadcast_op */
} binary_node;

static nn_status binary_forward(nn_node *node) {
    nn_tensor *a = node->inputs[0], *b = node->inputs[1];
    const nn_broadcast_op op = (nn_broadcast_op)NN_NODE_PARAMS(node, binary_node)->op;
    if (nn_same_shape(a, b) && (op == NN_BROADCAST_ADD || op == NN_BROADCAST_MUL)) {
        nn_pointwise_params p = {.n = a->numel, .op = op == NN_BROADCAST_ADD ? NN_EW_ADD : NN_EW_MUL};
        nn_buffer_ref args[3] = {nn_tensor_ref(a), nn_tensor_ref(b), nn_tensor_ref(node->output)};
        return nn_ctx_run(a->ctx, NN_KERNEL_ELEMENTWISE, args, 3, &p);
    }
    return nn_run_broadcast(a->ctx, op, 1.0f, 0, node->output, a, b, NULL);
}

/* Input i's gradient: dy times the derivative of f with respect to it,
 * summed to its shape. mul(x, x) adds both terms into x's gradient. */
static nn_status binary_backward(nn_node *node) {
    const nn_broadcast_op op = (nn_broadcast_op)NN_NODE_PARAMS(node, binary_node)->op;
    nn_tensor *y = node->output, *dy = y->grad;
    bool dy_shared = false;
    for (int i = 0; i < 2; i++) {
        nn_tensor *input = node->inputs[i], *other = node->inputs[1 - i], *grad;
        int32_t acc;
        if (!nn_wants_grad(input)) continue;
        /* d(a + b) and d(a - b)/da are dy itself: handed on without a copy
         * where the shapes match, to one input only (the other's rules may
         * still read dy after the first adds into it) */
        const bool passes_dy = op == NN_BROADCAST_ADD || (op == NN_BROADCAST_SUB && i == 0);
        bool shared = false;
        if (passes_dy && !dy_shared && nn_same_shape(input, dy)) NN_TRY(nn_grad_share(input, dy, &shared));
        dy_shared |= shared;
        if (shared) continue;
        NN_TRY(nn_grad_target(input, &grad, &acc));
        nn_ctx *ctx = input->ctx;
        switch (op) {
        case NN_BROADCAST_ADD: NN_TRY(nn_run_sum_to(ctx, dy, grad, acc)); break;
        case NN_BROADCAST_SUB:
            if (i == 0) NN_TRY(nn_run_sum_to(ctx, dy, grad, acc));
            else NN_TRY(nn_run_broadcast_grad(ctx, NN_BROADCAST_COPY, -1.0f, dy, grad, acc, dy, NULL, NULL));
            break;
        case NN_BROADCAST_MUL:
            NN_TRY(nn_run_broadcast_grad(ctx, NN_BROADCAST_MUL, 1.0f, dy, grad, acc, dy, other, NULL));
            break;
        case NN_BROADCAST_DIV: /* d(a/b)/da = 1/b, d(a/b)/db = -y/b */
            if (i == 0) NN_TRY(nn_run_broadcast_grad(ctx, NN_BROADCAST_DIV, 1.0f, dy, grad, acc, dy, other, NULL));
            else NN_TRY(nn_run_broadcast_grad(ctx, NN_BROADCAST_MUL_DIV, -1.0f, dy, grad, acc, dy, y, input));
            break;
        case NN_BROADCAST_MAXIMUM:
        case NN_BROADCAST_MINIMUM: {
            const nn_broadcast_op g = op == NN_BROADCAST_MAXIMUM ? NN_BROADCAST_MAXIMUM_GRAD : NN_BROADCAST_MINIMUM_GRAD;
            NN_TRY(nn_run_broadcast_grad(ctx, g, 1.0f, dy, grad, acc, dy, input, other));
            break;
        }
        default: return nn_set_error(NN_ERR_ARGUMENT, "%s: no gradient for broadcast op %d", node->op->name, op);
        }
    }
    return NN_OK;
}

static nn_status binary_onnx(exporter *x, op_io *io, const char *out, const char *op_type) {
    NN_TRY(nn_onnx_broadcast_batch(x, io));
    return nn_onnx_simple(x, io, out, op_type);
}

/* Operands of one shape are read in a's layout (the output takes it); a
 * broadcast runs on dense tensors, as the strided kernels read them. */
static nn_layout binary_layouts(nn_tensor *const *inputs, int count, const void *params, int ndim,
                                const int64_t *shape, nn_layout *input_layouts) {
    if (!nn_same_shape(inputs[0], inputs[1])) return NN_LAYOUT_DENSE;
    return nn_layouts_pointwise(inputs, count, params, ndim, shape, input_layouts);
}

/* (The macro's arguments are named apart from nn_op's fields.) */
#define BINARY_OP(fn, ID, Onnx)                                                                                  \
    static nn_status fn##_onnx(exporter *x, op_io *io, const char *out) { return binary_onnx(x, io, out, #Onnx); } \
    const nn_op nn_op_##fn = {.name = "nn_" #fn, .forward = binary_forward, .backward = binary_backward,        \
                              .to_onnx = fn##_onnx, .layouts = binary_layouts};                                  \
    nn_tensor *nn_##fn(nn_tensor *a, nn_tensor *b) { return binary(&nn_op_##fn, NN_BROADCAST_##ID, a, b); }

static nn_tensor *binary(const nn_op *op, nn_broadcast_op code, nn_tensor *a, nn_tensor *b) {
    if (nn_check_tensor(op->name, "a", a, NN_F32) || nn_check_tensor(op->name, "b", b, NN_F32) ||
        nn_check_same_ctx(op->name, "a", a, "b", b))
        return NULL;
    int ndim;
    int64_t shape[NN_MAX_DIMS];
    if (nn_broadcast_shapes(op->name, a->ndim, a->shape, b->ndim, b->shape, &ndim, shape)) return NULL;
    nn_tensor *inputs[2] = {a, b};
    const binary_node p = {code};
    return nn_op_result(op, inputs, 2, &p, sizeof p, ndim, shape);
}

BINARY_OP(add, ADD, Add)
BINARY_OP(sub, SUB, Sub)
BINARY_OP(mul, MUL, Mul)
BINARY_OP(div, DIV, Div)
BINARY_OP(maximum, MAXIMUM, Max)
BINARY_OP(minimum, MINIMUM, Min)

/* ---- scale: x times a constant ---- */

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

const nn_op nn_op_scale = {.name = "nn_scale", .forward = scale_forward, .backward = scale_backward,
                           .to_onnx = scale_onnx, .layouts = nn_layouts_pointwise};

nn_tensor *nn_scale(nn_tensor *x, float factor) {
    if (nn_check_tensor("nn_scale", "x", x, NN_F32)) return NULL;
    const scale_node p = {factor};
    return nn_op_result(&nn_op_scale, &x, 1, &p, sizeof p, x->ndim, x->shape);
}
