/* nn_function_apply (include/nn_custom.h): a custom function's node is a
 * view of the result the caller computed (input 0, no copy), with the
 * caller's inputs after it, so autograd reaches them through it; its
 * backward runs the user's, with grad mode off, and hands each gradient it
 * returns on to its input. Every input keeps its layout: the node reads
 * none of them. */
#include <string.h>

#include "core/layout.h"
#include "io/onnx_graph.h"
#include "ops.h"

typedef struct function_node {
    const nn_function_def *def;
    void *user;
} function_node;

/* Inputs and output as they are (a view of input 0 has its layout). */
static nn_layout function_layouts(nn_tensor *const *inputs, int count, const void *params, int ndim,
                                  const int64_t *shape, nn_layout *input_layouts) {
    for (int i = 0; i < count; i++)
        if (inputs[i]) input_layouts[i] = inputs[i]->layout;
    return inputs[0]->layout;
}

/* A gradient the user's backward returned for input x, checked and made
 * x's layout. */
static nn_status checked_grad(const char *name, int i, nn_tensor *x, nn_tensor **g) {
    char want[96], got[96];
    if ((*g)->ctx != x->ctx || (*g)->dtype != NN_F32 || !nn_same_shape(*g, x))
        return nn_set_error(NN_ERR_SHAPE, "custom function %s: backward gave input %d a gradient %s %s; the input is "
                            "float32 %s on the same context", name, i, (*g)->dtype == NN_F32 ? "float32" : "int32",
                            nn_format_shape((*g)->ndim, (*g)->shape, got, sizeof got),
                            nn_format_shape(x->ndim, x->shape, want, sizeof want));
    if ((*g)->layout != x->layout) {
        const nn_to_layout_node p = {x->layout};
        *g = nn_op_record(&nn_op_to_layout, g, 1, &p, sizeof p, NN_F32, x->ndim, x->shape);
        if (!*g) return nn_last_status();
    }
    return nn_tensor_materialize(*g);
}

static nn_status function_backward(nn_node *node) {
    const function_node *p = NN_NODE_PARAMS(node, function_node);
    const char *name = p->def->name ? p->def->name : "(unnamed)";
    const int count = node->input_count - 1;
    nn_tensor *const *inputs = node->inputs + 1;
    bool needs[NN_FUNCTION_MAX_INPUTS];
    nn_tensor *grads[NN_FUNCTION_MAX_INPUTS] = {0};
    for (int i = 0; i < count; i++) needs[i] = nn_wants_grad(inputs[i]);
    nn_function_call call = {.inputs = inputs, .input_count = count, .output = node->output,
                             .grad_output = node->output->grad, .saved = node->saved,
                             .saved_count = node->saved_count, .needs_grad = needs, .grad_inputs = grads,
                             .user = p->user};
    nn_ctx *ctx = node->output->ctx;
    const bool was = nn_ctx_set_grad_enabled(ctx, false);
    nn_status st = p->def->backward(&call);
    for (int i = 0; i < count && st == NN_OK; i++)
        if (grads[i] && needs[i]) {
            st = checked_grad(name, i, inputs[i], &grads[i]);
            if (st == NN_OK) st = nn_grad_hand_on(inputs[i], grads[i]);
        }
    nn_ctx_set_grad_enabled(ctx, was);
    /* nn_set_error formats apart first: nn_last_error() may be its argument */
    if (st != NN_OK && !strstr(nn_last_error(), "custom function"))
        st = nn_set_error(st, "custom function %s: backward: %s", name, nn_last_error());
    return st;
}

static nn_status function_refusal(exporter *x, const nn_node *node) {
    const function_node *p = NN_NODE_PARAMS(node, function_node);
    return nn_set_error(NN_ERR_ARGUMENT, "%s: custom function %s has no ONNX form (give its definition a compose: "
                        "the function as library operations)", x->who, p->def->name ? p->def->name : "(unnamed)");
}

static const nn_op nn_op_custom_function = {.name = "nn_function_apply",
                                            .forward = NULL,
                                            .backward = function_backward,
                                            .export_refusal = function_refusal,
                                            .view = true,
                                            .layouts = function_layouts};

nn_tensor *nn_function_apply(const nn_function_def *def, nn_tensor *const *inputs, int count, nn_tensor *result,
                             nn_tensor *const *saved, int saved_count, void *user) {
    if (!def || !def->backward) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_function_apply: def or its backward is NULL");
    const char *name = def->name ? def->name : "(unnamed)";
    if (!result) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_function_apply %s: result is NULL", name);
    if (count < 0 || count > NN_FUNCTION_MAX_INPUTS || (count && !inputs))
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_function_apply %s: %d inputs; at most %d", name, count,
                            NN_FUNCTION_MAX_INPUTS);
    if (saved_count < 0 || saved_count > NN_NODE_MAX_TENSORS || (saved_count && !saved))
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_function_apply %s: %d saved tensors; at most %d", name, saved_count,
                            NN_NODE_MAX_TENSORS);
    nn_tensor *all[NN_FUNCTION_MAX_INPUTS + 1] = {result};
    for (int i = 0; i < count; i++) {
        if (!inputs[i]) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_function_apply %s: input %d is NULL", name, i);
        if (inputs[i]->ctx != result->ctx)
            return NN_FAIL_NULL(NN_ERR_STATE, "nn_function_apply %s: input %d is on another context than the result",
                                name, i);
        all[i + 1] = inputs[i];
    }
    for (int i = 0; i < saved_count; i++)
        if (!saved[i] || saved[i]->ctx != result->ctx)
            return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_function_apply %s: saved tensor %d is NULL or on another context",
                                name, i);
    if (result->requires_grad)
        return NN_FAIL_NULL(NN_ERR_STATE, "nn_function_apply %s: the result requires grad: compute it with grad mode "
                            "off, so that its gradient is the function's backward alone", name);
    if (result->ctx->tracing_export && def->compose) return def->compose(inputs, count, user);
    const function_node p = {def, user};
    nn_tensor *out = nn_op_record(&nn_op_custom_function, all, count + 1, &p, sizeof p, result->dtype, result->ndim,
                                  result->shape);
    if (!out || !out->grad_fn) return out;
    for (int i = 0; i < saved_count; i++)
        if (nn_node_save(out->grad_fn, saved[i]) != NN_OK) return NULL; /* the step frees out */
    return out;
}
