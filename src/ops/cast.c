/* nn_cast: float32 <-> int32 (PyTorch's .float(), and .int() / .long() as
 * int32) through the CAST kernel, whose float-to-int rule is defined for NaN
 * and values beyond int32's range (kernels.h); to the same dtype, a copy.
 * A float32 copy passes its gradient through as the identity; the other
 * results carry none (nn_no_gradient: an int32 -> float32 result never
 * requires grad, its input having none). */
#include <stdio.h>

#include "core/layout.h"
#include "io/onnx_graph.h"
#include "ops.h"

static nn_status cast_forward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *y = node->output;
    if (x->dtype == y->dtype)
        return nn_ctx_copy(x->ctx, nn_tensor_ref(y), nn_tensor_ref(x), (size_t)x->numel * sizeof(float));
    const nn_pointwise_params p = {.n = x->numel,
                                   .op = y->dtype == NN_I32 ? NN_CAST_FLOAT_TO_INT : NN_CAST_INT_TO_FLOAT};
    return nn_run_forward(node, NN_KERNEL_CAST, &p);
}

/* The identity's gradient: dy itself where nothing else wrote x's yet. */
static nn_status copy_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *dy = node->output->grad, *grad;
    bool shared;
    NN_TRY(nn_grad_share(x, dy, &shared));
    if (shared) return NN_OK;
    int32_t acc;
    NN_TRY(nn_grad_target(x, &grad, &acc));
    return nn_run_scale(x->ctx, nn_tensor_ref(dy), nn_tensor_ref(grad), x->numel, 1.0f, acc);
}

/* A node of op_type over three inputs with one output, named after it. */
static void triple(exporter *x, const char *op_type, const char *a, const char *b, const char *c, const char *out) {
    char name[48];
    snprintf(name, sizeof name, "%s_%d", op_type, x->nodes_made++);
    nn_onnx_node n;
    nn_onnx_node_begin(&n, op_type, name);
    nn_onnx_node_input(&n, a);
    nn_onnx_node_input(&n, b);
    nn_onnx_node_input(&n, c);
    nn_onnx_node_output(&n, out);
    nn_onnx_node_end(&n, &x->graph);
}

/* The kernel's float-to-int rule in standard operators, since ONNX's Cast
 * leaves NaN and values beyond the target's range undefined: NaN to 0
 * (IsNaN, Where), clipped to [-2^31, 2^31] (both exact floats), cast to
 * int64 (truncation, exact there), clipped to int32's range (2^31 becomes
 * INT32_MAX), cast to int32. */
static nn_status float_to_int_onnx(exporter *x, op_io *io, const char *out) {
    enum { NAN_MASK, FINITE, CLIPPED, WIDE, SATURATED, ZERO, LOW, HIGH, MIN, MAX, NAMES };
    static const char *const kSuffix[NAMES] = {"nan", "finite", "clipped", "int64", "saturated",
                                               "zero", "low", "high", "min", "max"};
    nn_onnx_reserve_name(x, "IsNaN", io);
    char name[NAMES][80];
    for (int i = 0; i < NAMES; i++) snprintf(name[i], sizeof name[i], "%s_%s", io->name, kSuffix[i]);
    for (int i = NAN_MASK; i <= SATURATED; i++)
        if (!nn_onnx_add_value(x, NULL, name[i], false)) return nn_last_status();
    const float zero = 0.0f, low = -2147483648.0f, high = 2147483648.0f;
    const int64_t min = INT32_MIN, max = INT32_MAX;
    if (!nn_onnx_add_constant(x, name[ZERO], NN_ONNX_FLOAT, NULL, 0, &zero, sizeof zero) ||
        !nn_onnx_add_constant(x, name[LOW], NN_ONNX_FLOAT, NULL, 0, &low, sizeof low) ||
        !nn_onnx_add_constant(x, name[HIGH], NN_ONNX_FLOAT, NULL, 0, &high, sizeof high) ||
        !nn_onnx_add_constant(x, name[MIN], NN_ONNX_INT64, NULL, 0, &min, sizeof min) ||
        !nn_onnx_add_constant(x, name[MAX], NN_ONNX_INT64, NULL, 0, &max, sizeof max))
        return nn_last_status();
    nn_onnx_node n;
    nn_onnx_node_begin(&n, "IsNaN", io->name);
    nn_onnx_node_input(&n, io->in[0]->name);
    nn_onnx_node_output(&n, name[NAN_MASK]);
    nn_onnx_node_end(&n, &x->graph);
    triple(x, "Where", name[NAN_MASK], name[ZERO], io->in[0]->name, name[FINITE]);
    triple(x, "Clip", name[FINITE], name[LOW], name[HIGH], name[CLIPPED]);
    nn_onnx_cast(x, name[CLIPPED], NN_ONNX_INT64, name[WIDE]);
    triple(x, "Clip", name[WIDE], name[MIN], name[MAX], name[SATURATED]);
    nn_onnx_cast(x, name[SATURATED], NN_ONNX_INT32, out);
    return NN_OK;
}

static nn_status cast_onnx(exporter *x, op_io *io, const char *out) {
    NN_TRY(nn_onnx_only_input_carries_batch(x, io, 0));
    const nn_dtype from = io->node->inputs[0]->dtype, to = io->node->output->dtype;
    if (from == to) return nn_onnx_simple(x, io, out, "Identity");
    if (to == NN_I32) return float_to_int_onnx(x, io, out);
    nn_onnx_cast(x, io->in[0]->name, NN_ONNX_FLOAT, out);
    return NN_OK;
}

/* Conversions and int32 copies; a float32 copy, which passes its gradient on. */
static const nn_op nn_op_cast = {.name = "nn_cast", .forward = cast_forward, .backward = nn_no_gradient,
                                 .to_onnx = cast_onnx, .layouts = nn_layouts_pointwise};
static const nn_op nn_op_cast_float = {.name = "nn_cast", .forward = cast_forward, .backward = copy_backward,
                                       .to_onnx = cast_onnx, .layouts = nn_layouts_pointwise};

nn_tensor *nn_cast(nn_tensor *x, nn_dtype dtype) {
    if (!x) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_cast: x is NULL");
    if (dtype != NN_F32 && dtype != NN_I32)
        return NN_FAIL_NULL(NN_ERR_DTYPE, "nn_cast: dtype %d is neither NN_F32 (float32) nor NN_I32 (int32)",
                            (int)dtype);
    const nn_op *op = x->dtype == NN_F32 && dtype == NN_F32 ? &nn_op_cast_float : &nn_op_cast;
    return nn_op_record(op, &x, 1, NULL, 0, dtype, x->ndim, x->shape);
}
