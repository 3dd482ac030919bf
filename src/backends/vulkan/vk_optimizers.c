/* The optimizers' update kernels on Vulkan (ADAM_UPDATE, RMSPROP_UPDATE,
 * LION_UPDATE, Muon's pointwise kernels): one dispatch each, an invocation
 * per element, the formulas of the CPU's cpu_optimizers.c; has_skip says
 * whether the optional skip argument is there (kernels.h). */
#include "base/error.h"
#include "vk_backend.h"

static nn_status dispatch(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, const nn_buffer_ref *a, int nargs,
                          vk_push_ref push, int64_t n) {
    NN_TRY(vk_fits32(kernel, "n", n));
    if (n <= 0) return NN_OK;
    return vk_record(vk, kernel, pipe, 0, a, nargs, push, vk_groups_for((uint64_t)n), 1, 1);
}

nn_status vk_run_adam_update(vk_backend *vk, const nn_adam_params *p, const nn_buffer_ref *a) {
    if (p->amsgrad && !a[4].buffer)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan adam_update: amsgrad needs max_exp_avg_sq (argument 4)");
    VK_PUSH(ADAM_UPDATE) push = {.n = (uint32_t)p->n, .beta1 = p->beta1, .beta2 = p->beta2, .eps = p->eps,
                                 .weight_decay = p->weight_decay, .decoupled = p->decoupled,
                                 .amsgrad = p->amsgrad, .maximize = p->maximize, .has_skip = a[7].buffer != NULL};
    return dispatch(vk, NN_KERNEL_ADAM_UPDATE, VK_PIPE_ADAM_UPDATE, a, 8, VK_PUSH_REF(push), p->n);
}

nn_status vk_run_rmsprop_update(vk_backend *vk, const nn_rmsprop_params *p, const nn_buffer_ref *a) {
    if ((p->momentum > 0.0f && !a[3].buffer) || (p->centered && !a[4].buffer))
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan rmsprop_update: %s",
                            p->centered && !a[4].buffer ? "centered needs grad_avg (argument 4)"
                                                        : "momentum needs momentum_buffer (argument 3)");
    VK_PUSH(RMSPROP_UPDATE) push = {.n = (uint32_t)p->n, .alpha = p->alpha, .eps = p->eps,
                                    .weight_decay = p->weight_decay, .momentum = p->momentum,
                                    .centered = p->centered, .maximize = p->maximize,
                                    .has_skip = a[6].buffer != NULL};
    return dispatch(vk, NN_KERNEL_RMSPROP_UPDATE, VK_PIPE_RMSPROP_UPDATE, a, 7, VK_PUSH_REF(push), p->n);
}

nn_status vk_run_lion_update(vk_backend *vk, const nn_lion_params *p, const nn_buffer_ref *a) {
    VK_PUSH(LION_UPDATE) push = {.n = (uint32_t)p->n, .beta1 = p->beta1, .beta2 = p->beta2,
                                 .weight_decay = p->weight_decay, .maximize = p->maximize,
                                 .has_skip = a[4].buffer != NULL};
    return dispatch(vk, NN_KERNEL_LION_UPDATE, VK_PIPE_LION_UPDATE, a, 5, VK_PUSH_REF(push), p->n);
}

static nn_status muon(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, const nn_muon_params *p,
                      const nn_buffer_ref *a, int nargs) {
    VK_PUSH(MUON) push = {.n = (uint32_t)p->n, .momentum = p->momentum, .nesterov = p->nesterov, .eps = p->eps,
                          .scale = p->scale, .weight_decay = p->weight_decay,
                          .has_skip = kernel != NN_KERNEL_MUON_NORMALIZE && a[nargs - 1].buffer != NULL};
    return dispatch(vk, kernel, pipe, a, nargs, VK_PUSH_REF(push), p->n);
}

nn_status vk_run_muon_momentum(vk_backend *vk, const nn_muon_params *p, const nn_buffer_ref *a) {
    return muon(vk, NN_KERNEL_MUON_MOMENTUM, VK_PIPE_MUON_MOMENTUM, p, a, 4);
}

nn_status vk_run_muon_normalize(vk_backend *vk, const nn_muon_params *p, const nn_buffer_ref *a) {
    return muon(vk, NN_KERNEL_MUON_NORMALIZE, VK_PIPE_MUON_NORMALIZE, p, a, 2);
}

nn_status vk_run_muon_apply(vk_backend *vk, const nn_muon_params *p, const nn_buffer_ref *a) {
    return muon(vk, NN_KERNEL_MUON_APPLY, VK_PIPE_MUON_APPLY, p, a, 4);
}
