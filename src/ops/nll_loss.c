/* The class-target negative log-likelihood (NLL_* kernels): nn_nll_loss,
 * and the loss cross_entropy records after log_softmax with its label
 * smoothing. Inputs: input [N, C, d1, ...] (log-probabilities), target
 * int32 [N, d1, ...], weight [C] or NULL. Mean and sum keep the total
 * weight of the kept targets (saved[0]) for the mean's gradient. The
 * weight gets no gradient (PyTorch refuses to compute one). */
#include <math.h>

#include "io/onnx_graph.h"
#include "ops.h"

enum { IN_INPUT, IN_TARGET, IN_WEIGHT };

static nn_buffer_ref ref_or_none(const nn_tensor *t) { return t ? nn_tensor_ref(t) : (nn_buffer_ref){0}; }

static nn_status nll_forward(nn_node *node) {
    const nn_nll_params *p = NN_NODE_PARAMS(node, nn_nll_params);
    nn_tensor *total = NULL;
    if (p->reduction != NN_REDUCTION_NONE) {
        const int64_t one = 1;
        total = nn_node_save_new(node, NN_F32, 1, &one);
        if (!total) return nn_last_status();
    }
    nn_buffer_ref args[5] = {nn_tensor_ref(node->inputs[IN_INPUT]), nn_tensor_ref(node->inputs[IN_TARGET]),
                             ref_or_none(node->inputs[IN_WEIGHT]), nn_tensor_ref(node->output), ref_or_none(total)};
    return nn_ctx_run(node->output->ctx, NN_KERNEL_NLL_FORWARD, args, 5, p);
}

static nn_status nll_backward(nn_node *node) {
    nn_tensor *input = node->inputs[IN_INPUT];
    if (!nn_wants_grad(input)) return NN_OK;
    nn_nll_params p = *NN_NODE_PARAMS(node, nn_nll_params);
    nn_tensor *grad;
    NN_TRY(nn_grad_target(input, &grad, &p.accumulate));
    nn_buffer_ref args[5] = {nn_tensor_ref(node->output->grad), nn_tensor_ref(node->inputs[IN_TARGET]),
                             ref_or_none(node->inputs[IN_WEIGHT]),
                             node->saved_count ? nn_tensor_ref(node->saved[0]) : (nn_buffer_ref){0},
                             nn_tensor_ref(grad)};
    return nn_ctx_run(input->ctx, NN_KERNEL_NLL_BACKWARD, args, 5, &p);
}

const nn_op nn_op_nll_loss = {
    .name = "nn_nll_loss", .forward = nll_forward, .backward = nll_backward, .to_onnx = nn_nll_loss_onnx};

nn_tensor *nn_class_nll(const char *op, nn_tensor *input, nn_tensor *target, nn_tensor *weight,
                        nn_reduction reduction, int ignore_index, float label_smoothing) {
    if (nn_check_tensor(op, "input", input, NN_F32) || nn_check_tensor(op, "target", target, NN_I32) ||
        nn_check_same_ctx(op, "input", input, "target", target) || (weight && nn_check_same_ctx(op, "input", input, "weight", weight)))
        return NULL;
    char si[96], st[96];
    nn_format_shape(input->ndim, input->shape, si, sizeof si);
    nn_format_shape(target->ndim, target->shape, st, sizeof st);
    if (input->ndim < 2)
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: input %s must be [N, C] or [N, C, d1, ...]", op, si);
    bool matches = target->ndim == input->ndim - 1 && target->shape[0] == input->shape[0];
    for (int d = 2; matches && d < input->ndim; d++) matches = target->shape[d - 1] == input->shape[d];
    if (!matches)
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: target %s must be input %s without its class dimension 1", op, st, si);
    const int64_t classes = input->shape[1];
    if (weight) {
        char sw[96];
        if (nn_check_tensor(op, "weight", weight, NN_F32)) return NULL;
        if (weight->ndim != 1 || weight->shape[0] != classes)
            return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: weight %s must be [%lld], one per class of input %s", op,
                                nn_format_shape(weight->ndim, weight->shape, sw, sizeof sw), (long long)classes, si);
    }
    if (reduction != NN_REDUCTION_NONE && reduction != NN_REDUCTION_MEAN && reduction != NN_REDUCTION_SUM)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: reduction %d is not NN_REDUCTION_NONE, _MEAN or _SUM", op,
                            (int)reduction);
    if (!(label_smoothing >= 0.0f && label_smoothing <= 1.0f))
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: label_smoothing %g must be in [0, 1]", op, (double)label_smoothing);
    if (nn_check_int32(op, "elements", input->numel)) return NULL;
    if (classes == 0) return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: input %s has no classes", op, si);
    nn_nll_params p = {.outer = (int32_t)input->shape[0], .classes = (int32_t)classes, .inner = 1,
                       .ignore_index = ignore_index, .reduction = (int32_t)reduction, .smoothing = label_smoothing};
    for (int d = 2; d < input->ndim; d++) p.inner *= (int32_t)input->shape[d];
    if (p.inner == 0) return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: input %s has no positions", op, si);
    nn_tensor *inputs[3] = {input, target, weight};
    const int64_t one = 1;
    if (reduction == NN_REDUCTION_NONE)
        return nn_op_result(&nn_op_nll_loss, inputs, 3, &p, sizeof p, target->ndim, target->shape);
    return nn_op_result(&nn_op_nll_loss, inputs, 3, &p, sizeof p, 1, &one);
}

nn_tensor *nn_nll_loss(nn_tensor *input, nn_tensor *target, nn_tensor *weight, nn_reduction reduction,
                       int ignore_index) {
    return nn_class_nll("nn_nll_loss", input, target, weight, reduction, ignore_index, 0.0f);
}
