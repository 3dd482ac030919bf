#include "norm_layout.h"

#include "base/error.h"

int64_t nn_norm_elements(const nn_norm_params *p) { return p->outer * p->groups * p->inner; }

nn_status nn_norm_check(const char *backend, nn_kernel kernel, const nn_norm_params *p) {
    if (p->outer < 0 || p->inner < 0 || p->groups < 1 || p->channels < 1 || p->channel_inner < 1 ||
        !(p->eps >= 0.0f))
        return nn_set_error(NN_ERR_ARGUMENT,
                            "%s %s: need outer, inner >= 0, groups, channels, channel_inner >= 1 and eps >= 0; got "
                            "outer %lld groups %d inner %lld channels %d channel_inner %lld eps %g",
                            backend, nn_kernel_name(kernel), (long long)p->outer, p->groups, (long long)p->inner,
                            p->channels, (long long)p->channel_inner, (double)p->eps);
    if (p->epilogue.on && (p->epilogue.op < 0 || p->epilogue.op >= NN_UNARY_COUNT))
        return nn_set_error(NN_ERR_ARGUMENT, "%s %s: epilogue function %d is not a row of unary_ops.h", backend,
                            nn_kernel_name(kernel), p->epilogue.op);
    if (p->sums_unweighted && !nn_norm_channel_groups(p))
        return nn_set_error(NN_ERR_ARGUMENT,
                            "%s %s: sums without the weight need one channel per group (BatchNorm), got %d groups "
                            "of %d channels", backend, nn_kernel_name(kernel), p->groups, p->channels);
    if (p->grad_mask < NN_NORM_MASK_NONE || p->grad_mask > NN_NORM_MASK_RELU6)
        return nn_set_error(NN_ERR_ARGUMENT, "%s %s: grad_mask %d is not an nn_norm_mask", backend,
                            nn_kernel_name(kernel), p->grad_mask);
    if (p->grad_mask &&
        ((kernel != NN_KERNEL_NORM_BACKWARD_SUMS && kernel != NN_KERNEL_NORM_BACKWARD_FROM_SUMS) ||
         !nn_norm_channel_groups(p)))
        return nn_set_error(NN_ERR_ARGUMENT,
                            "%s %s: an activation's mask (grad_mask) is taken by the backward sums' kernels of a "
                            "normalisation with one channel per group (BatchNorm) only", backend,
                            nn_kernel_name(kernel));
    const int64_t per_tile = (int64_t)p->channels * p->channel_inner;
    if (nn_norm_elements(p) % per_tile != 0)
        return nn_set_error(NN_ERR_ARGUMENT,
                            "%s %s: %lld elements are not whole runs of %d channels x %lld (channel_inner)", backend,
                            nn_kernel_name(kernel), (long long)nn_norm_elements(p), p->channels,
                            (long long)p->channel_inner);
    return NN_OK;
}

nn_status nn_norm_affine_from_sums_check(const char *backend, const nn_norm_params *p, bool affine) {
    if (affine && !p->sums_unweighted)
        return nn_set_error(NN_ERR_ARGUMENT,
                            "%s norm_backward_from_sums: dweight and dbias come from sums without the weight; "
                            "sums_unweighted is 0", backend);
    return NN_OK;
}

nn_status nn_norm_running_check(const char *backend, const nn_norm_running_params *p, bool has_count) {
    if (p->channels < 1 || p->count < 2)
        return nn_set_error(NN_ERR_ARGUMENT, "%s norm_running_update: need channels >= 1 and count >= 2, got %d and %lld",
                            backend, p->channels, (long long)p->count);
    if (p->momentum < 0.0f && !has_count)
        return nn_set_error(NN_ERR_ARGUMENT,
                            "%s norm_running_update: momentum < 0 (the cumulative average) needs the batch count "
                            "(buffer argument 4)", backend);
    if (p->momentum > 1.0f)
        return nn_set_error(NN_ERR_ARGUMENT, "%s norm_running_update: momentum %g is above 1", backend,
                            (double)p->momentum);
    return NN_OK;
}
