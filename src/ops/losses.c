/* The elementwise losses, composed from recorded operations (their
 * gradients are those operations' autograd): mse_loss, l1_loss,
 * smooth_l1_loss and binary_cross_entropy_with_logits, each reduced by
 * nn_loss_reduce. input and target broadcast as nn_sub does. */
#include <math.h>
#include <stdio.h>

#include "ops.h"

nn_tensor *nn_loss_reduce(nn_tensor *loss, nn_reduction reduction) {
    if (!loss) return NULL;
    if (reduction == NN_REDUCTION_MEAN) return nn_mean(loss);
    if (reduction == NN_REDUCTION_SUM) return nn_sum(loss);
    return loss;
}

nn_tensor *nn_loss_named(const char *op, nn_tensor *result) {
    if (result) return result;
    char message[512];
    snprintf(message, sizeof message, "%s", nn_last_error());
    return NN_FAIL_NULL(nn_last_status(), "%s: %s", op, message);
}

nn_status nn_loss_check(const char *op, nn_tensor *input, nn_tensor *target, nn_reduction reduction) {
    NN_TRY(nn_check_tensor(op, "input", input, NN_F32));
    NN_TRY(nn_check_tensor(op, "target", target, NN_F32));
    NN_TRY(nn_check_same_ctx(op, "input", input, "target", target));
    if (reduction != NN_REDUCTION_NONE && reduction != NN_REDUCTION_MEAN && reduction != NN_REDUCTION_SUM)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: reduction %d is not NN_REDUCTION_NONE, _MEAN or _SUM", op,
                            (int)reduction);
    return NN_OK;
}

nn_tensor *nn_mse_loss(nn_tensor *input, nn_tensor *target, nn_reduction reduction) {
    const char *op = "nn_mse_loss";
    if (nn_loss_check(op, input, target, reduction)) return NULL;
    nn_tensor *d = nn_sub(input, target);
    return nn_loss_named(op, nn_loss_reduce(d ? nn_mul(d, d) : NULL, reduction));
}

nn_tensor *nn_l1_loss(nn_tensor *input, nn_tensor *target, nn_reduction reduction) {
    const char *op = "nn_l1_loss";
    if (nn_loss_check(op, input, target, reduction)) return NULL;
    nn_tensor *d = nn_sub(input, target);
    return nn_loss_named(op, nn_loss_reduce(d ? nn_abs(d) : NULL, reduction));
}

/* With a = |input - target| and m = min(a, beta): m (a - m / 2) / beta is
 * a^2 / (2 beta) below beta and a - beta / 2 from it, and its gradient is
 * PyTorch's (clamp's gradient is 1 at its bound, so a = beta takes the
 * quadratic side, which equals the other there). */
nn_tensor *nn_smooth_l1_loss(nn_tensor *input, nn_tensor *target, nn_reduction reduction, float beta) {
    const char *op = "nn_smooth_l1_loss";
    if (nn_loss_check(op, input, target, reduction)) return NULL;
    if (!(beta >= 0.0f) || isinf(beta))
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: beta %g must be finite and >= 0", op, (double)beta);
    if (beta == 0.0f) return nn_loss_named(op, nn_l1_loss(input, target, reduction));
    nn_tensor *d = nn_sub(input, target);
    nn_tensor *a = d ? nn_abs(d) : NULL;
    nn_tensor *m = a ? nn_clamp(a, -INFINITY, beta) : NULL;
    nn_tensor *rest = m ? nn_sub(a, nn_mul_scalar(m, 0.5f)) : NULL;
    nn_tensor *loss = rest ? nn_mul_scalar(nn_mul(m, rest), 1.0f / beta) : NULL;
    return nn_loss_named(op, nn_loss_reduce(loss, reduction));
}

/* (1 - t) x + (1 + (pos_weight - 1) t) log(1 + e^-x), the softplus of -x
 * never overflowing (PyTorch's stable form); times weight. */
nn_tensor *nn_binary_cross_entropy_with_logits(nn_tensor *input, nn_tensor *target, nn_tensor *weight,
                                               nn_tensor *pos_weight, nn_reduction reduction) {
    const char *op = "nn_binary_cross_entropy_with_logits";
    if (nn_loss_check(op, input, target, reduction) || (weight && nn_check_tensor(op, "weight", weight, NN_F32)) ||
        (pos_weight && nn_check_tensor(op, "pos_weight", pos_weight, NN_F32)))
        return NULL;
    if (!nn_same_shape(input, target)) {
        char si[96], st[96];
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: target %s must have input's shape %s", op,
                            nn_format_shape(target->ndim, target->shape, st, sizeof st),
                            nn_format_shape(input->ndim, input->shape, si, sizeof si));
    }
    nn_tensor *log_term = nn_softplus(nn_neg(input), 1.0f, 20.0f);
    if (log_term && pos_weight) {
        nn_tensor *log_weight = nn_add_scalar(nn_mul(nn_add_scalar(pos_weight, -1.0f), target), 1.0f);
        log_term = log_weight ? nn_mul(log_weight, log_term) : NULL;
    }
    nn_tensor *loss = log_term ? nn_add(nn_mul(nn_rsub_scalar(target, 1.0f), input), log_term) : NULL;
    if (loss && weight) loss = nn_mul(loss, weight);
    return nn_loss_named(op, nn_loss_reduce(loss, reduction));
}
