/* The EMBEDDING_* kernels on Vulkan (kernels.h): one dispatch each, an
 * invocation per output element (forward) or per weight element (backward,
 * walking the indices in order: deterministic). Shaders embedding_*.comp. */
#include "base/error.h"
#include "vk_backend.h"

static nn_status embedding(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, const nn_embedding_params *p,
                           const nn_buffer_ref *a, int64_t items) {
    if (p->count < 0 || p->num < 1 || p->dim < 1)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: invalid sizes (%lld indices, %d x %d weight)",
                            nn_kernel_name(kernel), (long long)p->count, p->num, p->dim);
    NN_TRY(vk_fits32(kernel, "elements", items));
    if (items == 0) return NN_OK;
    VK_PUSH(EMBEDDING) push = {.count = (uint32_t)p->count, .num = p->num, .dim = p->dim,
                               .padding_idx = p->padding_idx, .accumulate = p->accumulate};
    return vk_record(vk, kernel, pipe, 0, a, nn_kernel_arg_count(kernel), VK_PUSH_REF(push),
                     vk_groups_for((uint64_t)items), 1, 1);
}

nn_status vk_run_embedding_forward(vk_backend *vk, const nn_embedding_params *p, const nn_buffer_ref *a) {
    return embedding(vk, NN_KERNEL_EMBEDDING_FORWARD, VK_PIPE_EMBEDDING_FORWARD, p, a, p->count * p->dim);
}

nn_status vk_run_embedding_backward(vk_backend *vk, const nn_embedding_params *p, const nn_buffer_ref *a) {
    return embedding(vk, NN_KERNEL_EMBEDDING_BACKWARD, VK_PIPE_EMBEDDING_BACKWARD, p, a, (int64_t)p->num * p->dim);
}
