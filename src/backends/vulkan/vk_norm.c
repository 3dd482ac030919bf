/* The normalisation kernels (kernels.h's nn_norm_params) on Vulkan: one
 * workgroup per group for the statistics and the data gradient, one per
 * channel for the affine gradients, one invocation per element for the
 * normalise + affine pass (shaders/norm_*.comp). */
#include "backends/norm_layout.h"
#include "core/error.h"
#include "vk_backend.h"

typedef VK_PUSH(NORM) norm_block;

static nn_status norm_push(nn_kernel kernel, const nn_norm_params *p, norm_block *push) {
    NN_TRY(nn_norm_check("vulkan", kernel, p));
    NN_TRY(vk_fits32(kernel, "elements", nn_norm_elements(p)));
    *push = (norm_block){.outer = (uint32_t)p->outer, .inner = (uint32_t)p->inner,
                            .channel_inner = (uint32_t)p->channel_inner, .groups = (uint32_t)p->groups,
                            .channels = (uint32_t)p->channels, .eps = p->eps, .batch_stats = p->batch_stats,
                            .accumulate = p->accumulate};
    return NN_OK;
}

static uint32_t capped(int64_t workgroups) {
    return workgroups > (int64_t)VK_MAX_GROUPS ? VK_MAX_GROUPS : (uint32_t)workgroups;
}

nn_status vk_run_norm_stats(vk_backend *vk, const nn_norm_params *p, const nn_buffer_ref *a) {
    norm_block push;
    NN_TRY(norm_push(NN_KERNEL_NORM_STATS, p, &push));
    return vk_record(vk, NN_KERNEL_NORM_STATS, VK_PIPE_NORM_STATS, 0, a, 3, VK_PUSH_REF(push), capped(p->groups), 1, 1);
}

nn_status vk_run_norm_apply(vk_backend *vk, const nn_norm_params *p, const nn_buffer_ref *a) {
    norm_block push;
    NN_TRY(norm_push(NN_KERNEL_NORM_APPLY, p, &push));
    const int64_t n = nn_norm_elements(p);
    if (n == 0) return NN_OK;
    push.has_weight = a[3].buffer != NULL;
    push.has_bias = a[4].buffer != NULL;
    return vk_record(vk, NN_KERNEL_NORM_APPLY, VK_PIPE_NORM_APPLY, 0, a, 6, VK_PUSH_REF(push),
                     vk_groups_for((uint64_t)n), 1, 1);
}

nn_status vk_run_norm_backward_data(vk_backend *vk, const nn_norm_params *p, const nn_buffer_ref *a) {
    norm_block push;
    NN_TRY(norm_push(NN_KERNEL_NORM_BACKWARD_DATA, p, &push));
    if (nn_norm_elements(p) == 0) return NN_OK;
    push.has_weight = a[3].buffer != NULL;
    return vk_record(vk, NN_KERNEL_NORM_BACKWARD_DATA, VK_PIPE_NORM_BACKWARD_DATA, 0, a, 6, VK_PUSH_REF(push),
                     capped(p->groups), 1, 1);
}

nn_status vk_run_norm_backward_affine(vk_backend *vk, const nn_norm_params *p, const nn_buffer_ref *a) {
    norm_block push;
    NN_TRY(norm_push(NN_KERNEL_NORM_BACKWARD_AFFINE, p, &push));
    if (!a[4].buffer && !a[5].buffer)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan norm_backward_affine: dweight and dbias are both absent");
    push.has_weight = a[4].buffer != NULL;
    push.has_bias = a[5].buffer != NULL;
    return vk_record(vk, NN_KERNEL_NORM_BACKWARD_AFFINE, VK_PIPE_NORM_BACKWARD_AFFINE, 0, a, 6, VK_PUSH_REF(push),
                     capped(p->channels), 1, 1);
}

nn_status vk_run_norm_running_update(vk_backend *vk, const nn_norm_running_params *p, const nn_buffer_ref *a) {
    NN_TRY(nn_norm_running_check("vulkan", p, a[4].buffer != NULL));
    VK_PUSH(NORM_RUNNING) push = {.channels = (uint32_t)p->channels, .momentum = p->momentum,
                                  .unbias = (float)((double)p->count / (double)(p->count - 1))};
    return vk_record(vk, NN_KERNEL_NORM_RUNNING_UPDATE, VK_PIPE_NORM_RUNNING_UPDATE, 0, a, 5, VK_PUSH_REF(push),
                     vk_groups_for((uint64_t)p->channels), 1, 1);
}
