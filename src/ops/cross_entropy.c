/* cross_entropy: log_softmax over the class dimension 1, then the class
 * targets' negative log-likelihood with its label smoothing (nll_loss.c),
 * or, for class probabilities (a float target of input's shape),
 * -sum_c w[c] t[c] log_softmax(x)[c] per position, its mean over the
 * positions (PyTorch's rules for each, weighted means included). */

#include "ops.h"

static nn_tensor *with_probabilities(const char *op, nn_tensor *input, nn_tensor *target, nn_tensor *weight,
                                     nn_reduction reduction, int ignore_index, float label_smoothing) {
    char si[96], st[96];
    nn_format_shape(input->ndim, input->shape, si, sizeof si);
    if (!nn_same_shape(target, input))
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: a float target (class probabilities) %s must have input's shape %s",
                            op, nn_format_shape(target->ndim, target->shape, st, sizeof st), si);
    if (ignore_index >= 0)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: ignore_index %d is not supported for a float target (class "
                            "probabilities)", op, ignore_index);
    const int64_t classes = input->shape[1];
    if (weight && (weight->ndim != 1 || weight->shape[0] != classes)) {
        char sw[96];
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: weight %s must be [%lld], one per class of input %s", op,
                            nn_format_shape(weight->ndim, weight->shape, sw, sizeof sw), (long long)classes, si);
    }
    if (!(label_smoothing >= 0.0f && label_smoothing <= 1.0f))
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: label_smoothing %g must be in [0, 1]", op, (double)label_smoothing);
    nn_tensor *t = target;
    if (label_smoothing > 0.0f)
        t = nn_add_scalar(nn_mul_scalar(target, 1.0f - label_smoothing), label_smoothing / (float)classes);
    nn_tensor *terms = t ? nn_mul(nn_log_softmax(input, 1), t) : NULL;
    if (terms && weight) {
        int64_t shape[NN_MAX_DIMS];
        for (int d = 0; d < input->ndim; d++) shape[d] = d == 1 ? classes : 1;
        terms = nn_mul(terms, nn_reshape(weight, input->ndim, shape));
    }
    const int class_dim = 1;
    nn_tensor *per_position = terms ? nn_neg(nn_sum_dims(terms, &class_dim, 1, false)) : NULL;
    if (!per_position || reduction == NN_REDUCTION_NONE) return per_position;
    nn_tensor *total = nn_sum(per_position);
    if (reduction == NN_REDUCTION_SUM || !total) return total;
    return nn_mul_scalar(total, (float)((double)classes / (double)input->numel));
}

nn_tensor *nn_cross_entropy(nn_tensor *input, nn_tensor *target, nn_tensor *weight, nn_reduction reduction,
                            int ignore_index, float label_smoothing) {
    const char *op = "nn_cross_entropy";
    if (nn_check_tensor(op, "input", input, NN_F32)) return NULL;
    if (!target) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: target is NULL", op);
    if (nn_check_same_ctx(op, "input", input, "target", target) || (weight && nn_check_tensor(op, "weight", weight, NN_F32)) ||
        (weight && nn_check_same_ctx(op, "input", input, "weight", weight)))
        return NULL;
    if (reduction != NN_REDUCTION_NONE && reduction != NN_REDUCTION_MEAN && reduction != NN_REDUCTION_SUM)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: reduction %d is not NN_REDUCTION_NONE, _MEAN or _SUM", op,
                            (int)reduction);
    char si[96];
    if (input->ndim < 2)
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: input %s must be [N, C] or [N, C, d1, ...]", op,
                            nn_format_shape(input->ndim, input->shape, si, sizeof si));
    if (target->dtype == NN_F32)
        return nn_loss_named(op, with_probabilities(op, input, target, weight, reduction, ignore_index,
                                                    label_smoothing));
    if (nn_check_tensor(op, "target", target, NN_I32)) return NULL;
    nn_tensor *log_probabilities = nn_log_softmax(input, 1);
    if (!log_probabilities) return nn_loss_named(op, NULL);
    return nn_class_nll(op, log_probabilities, target, weight, reduction, ignore_index, label_smoothing);
}
