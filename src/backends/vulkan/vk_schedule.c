/* LR_SCHEDULE, EMA_UPDATE and LOSS_SCALE on Vulkan (kernels.h): the
 * schedule and the loss scale's update are one invocation, the average and
 * the unscaling one invocation per word. Shaders lr_schedule.comp,
 * ema_update.comp and loss_scale.comp. */
#include "base/error.h"
#include "nn_schedule.h"
#include "vk_backend.h"

nn_status vk_run_lr_schedule(vk_backend *vk, const nn_lr_schedule_params *p, const nn_buffer_ref *a) {
    if (!nn_lr_schedule_params_valid(p))
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan lr_schedule: invalid kind %d, step_size %d, %d milestones, "
                                             "warmup %d or total %d", p->kind, p->step_size, p->milestone_count,
                            p->warmup, p->total);
    VK_PUSH(LR_SCHEDULE) push = {
        .kind = p->kind, .delta = p->delta, .start = p->start, .until = p->until, .base_lr = (float)p->base_lr, .gamma = (float)p->gamma,
        .eta_min = (float)p->eta_min, .warmup_start = (float)p->warmup_start,
        .end_factor = (float)p->end_factor, .step_size = p->step_size,
        .warmup = p->warmup, .total = p->total, .milestone_count = p->milestone_count,
        .initial_lr = (float)p->initial_lr, .max_lr = (float)p->max_lr, .min_lr = (float)p->min_lr,
        .phase_end1 = (float)p->phase_end1, .phase_end2 = (float)p->phase_end2, .anneal_linear = p->anneal_linear,
        .three_phase = p->three_phase,
    };
    for (int i = 0; i < p->milestone_count; i++) push.milestones[i] = p->milestones[i];
    return vk_record(vk, NN_KERNEL_LR_SCHEDULE, VK_PIPE_LR_SCHEDULE, 0, a, 2, VK_PUSH_REF(push), 1, 1, 1);
}

nn_status vk_run_ema_update(vk_backend *vk, const nn_ema_params *p, const nn_buffer_ref *a) {
    if (p->n < 0 || p->mode < NN_EMA_AVERAGE || p->mode > NN_EMA_SWAP)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan ema_update: n=%lld mode=%d", (long long)p->n, p->mode);
    NN_TRY(vk_fits32(NN_KERNEL_EMA_UPDATE, "n", p->n));
    if (p->n == 0) return NN_OK;
    VK_PUSH(EMA_UPDATE) push = {.n = (uint32_t)p->n, .mode = p->mode, .decay = p->decay, .weight = p->weight};
    return vk_record(vk, NN_KERNEL_EMA_UPDATE, VK_PIPE_EMA_UPDATE, 0, a, 2, VK_PUSH_REF(push),
                     vk_groups_for((uint64_t)p->n), 1, 1);
}

nn_status vk_run_loss_scale(vk_backend *vk, const nn_loss_scale_params *p, const nn_buffer_ref *a) {
    if (p->n < 0 || (p->mode != NN_LOSS_SCALE_UNSCALE && p->mode != NN_LOSS_SCALE_UPDATE) ||
        (p->mode == NN_LOSS_SCALE_UNSCALE && !a[0].buffer))
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan loss_scale: n=%lld mode=%d, or a buffer it needs is absent",
                            (long long)p->n, p->mode);
    NN_TRY(vk_fits32(NN_KERNEL_LOSS_SCALE, "n", p->n));
    if (p->n == 0 && p->mode != NN_LOSS_SCALE_UPDATE) return NN_OK;
    VK_PUSH(LOSS_SCALE) push = {.n = (uint32_t)p->n, .mode = p->mode, .growth_interval = p->growth_interval,
                                .growth_factor = p->growth_factor, .backoff_factor = p->backoff_factor};
    const uint32_t groups = p->mode == NN_LOSS_SCALE_UPDATE ? 1 : vk_groups_for((uint64_t)p->n);
    return vk_record(vk, NN_KERNEL_LOSS_SCALE, VK_PIPE_LOSS_SCALE, 0, a, 2, VK_PUSH_REF(push), groups, 1, 1);
}
