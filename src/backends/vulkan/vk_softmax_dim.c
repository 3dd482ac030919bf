/* Softmax and log_softmax along any dimension on Vulkan: one invocation
 * per row (shaders/softmax_dim_{forward,backward}.comp, neighbouring
 * invocations reading neighbouring words where the rows are strided), or,
 * for contiguous rows of ROWS_MIN entries and more, a workgroup per row
 * (softmax_dim_rows_*.comp), whose invocations read across the row. */
#include "base/error.h"
#include "vk_backend.h"

#define ROWS_MIN 32 /* narrower contiguous rows: an invocation each reads as much */

static nn_status softmax_dim(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, const nn_softmax_dim_params *p,
                             const nn_buffer_ref *a) {
    if (p->outer < 0 || p->size <= 0 || p->inner <= 0)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: outer=%d size=%d inner=%d", nn_kernel_name(kernel),
                            p->outer, p->size, p->inner);
    NN_TRY(vk_fits32(kernel, "elements", (int64_t)p->outer * p->size * p->inner));
    if (p->outer == 0) return NN_OK;
    VK_PUSH(SOFTMAX_DIM) push = {.outer = p->outer, .size = p->size, .inner = p->inner, .log = p->log,
                                 .accumulate = p->accumulate};
    if (p->inner == 1 && p->size >= ROWS_MIN) {
        const vk_pipeline_id rows = kernel == NN_KERNEL_SOFTMAX_DIM_FORWARD ? VK_PIPE_SOFTMAX_DIM_ROWS_FORWARD
                                                                            : VK_PIPE_SOFTMAX_DIM_ROWS_BACKWARD;
        const uint32_t x = p->outer < (int32_t)VK_MAX_GROUPS ? (uint32_t)p->outer : VK_MAX_GROUPS;
        const uint32_t y = (uint32_t)((p->outer + x - 1) / x);
        return vk_record(vk, kernel, rows, 0, a, nn_kernel_arg_count(kernel), VK_PUSH_REF(push), x,
                         y < VK_MAX_GROUPS ? y : VK_MAX_GROUPS, 1);
    }
    return vk_record(vk, kernel, pipe, 0, a, nn_kernel_arg_count(kernel), VK_PUSH_REF(push),
                     vk_groups_for((uint64_t)p->outer * (uint64_t)p->inner), 1, 1);
}

nn_status vk_run_softmax_dim_forward(vk_backend *vk, const nn_softmax_dim_params *p, const nn_buffer_ref *a) {
    return softmax_dim(vk, NN_KERNEL_SOFTMAX_DIM_FORWARD, VK_PIPE_SOFTMAX_DIM_FORWARD, p, a);
}

nn_status vk_run_softmax_dim_backward(vk_backend *vk, const nn_softmax_dim_params *p, const nn_buffer_ref *a) {
    return softmax_dim(vk, NN_KERNEL_SOFTMAX_DIM_BACKWARD, VK_PIPE_SOFTMAX_DIM_BACKWARD, p, a);
}
