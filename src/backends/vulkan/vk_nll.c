/* The class-target negative log-likelihood on Vulkan (shaders/nll_*.comp):
 * the forward in one workgroup when it sums (its mean is one division),
 * else one invocation per position; the backward one per input element. */
#include "base/error.h"
#include "vk_backend.h"

typedef VK_PUSH(NLL) nll_block;

static nn_status nll_push(nn_kernel kernel, const nn_nll_params *p, const nn_buffer_ref *a, int total_arg,
                          nll_block *push) {
    if (p->outer < 0 || p->classes <= 0 || p->inner <= 0 || p->reduction < 0 || p->reduction > 2)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: outer=%d classes=%d inner=%d reduction=%d",
                            nn_kernel_name(kernel), p->outer, p->classes, p->inner, p->reduction);
    NN_TRY(vk_fits32(kernel, "elements", (int64_t)p->outer * p->classes * p->inner));
    *push = (nll_block){.outer = p->outer, .classes = p->classes, .inner = p->inner,
                        .ignore_index = p->ignore_index, .reduction = p->reduction, .smoothing = p->smoothing,
                        .accumulate = p->accumulate, .has_weight = a[2].buffer != NULL,
                        .has_total = a[total_arg].buffer != NULL};
    return NN_OK;
}

nn_status vk_run_nll_forward(vk_backend *vk, const nn_nll_params *p, const nn_buffer_ref *a) {
    nll_block push;
    NN_TRY(nll_push(NN_KERNEL_NLL_FORWARD, p, a, 4, &push));
    if (p->reduction == 0 && push.has_total)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan nll_forward: total_weight is written only for reduction mean "
                                             "or sum");
    const uint64_t positions = (uint64_t)p->outer * (uint64_t)p->inner;
    if (p->reduction == 0 && positions == 0) return NN_OK;
    return vk_record(vk, NN_KERNEL_NLL_FORWARD, VK_PIPE_NLL_FORWARD, 0, a, 5, VK_PUSH_REF(push),
                     p->reduction == 0 ? vk_groups_for(positions) : 1, 1, 1);
}

nn_status vk_run_nll_backward(vk_backend *vk, const nn_nll_params *p, const nn_buffer_ref *a) {
    nll_block push;
    NN_TRY(nll_push(NN_KERNEL_NLL_BACKWARD, p, a, 3, &push));
    if (p->reduction == 1 && !push.has_total)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan nll_backward: reduction mean needs total_weight (argument 3)");
    const uint64_t elements = (uint64_t)p->outer * (uint64_t)p->classes * (uint64_t)p->inner;
    if (elements == 0) return NN_OK;
    return vk_record(vk, NN_KERNEL_NLL_BACKWARD, VK_PIPE_NLL_BACKWARD, 0, a, 5, VK_PUSH_REF(push),
                     vk_groups_for(elements), 1, 1);
}
