/* The strided kernels on Vulkan (kernels.h): BROADCAST, STRIDED_COPY,
 * REDUCE_DIMS and REDUCE_DIMS_SCATTER, one dispatch each. Semantics follow
 * the CPU's (cpu_strided.c). */
#include <string.h>

#include "core/error.h"
#include "vk_backend.h"

static const int kOperands[NN_BROADCAST_COUNT] = {
#define OPERANDS_ROW(ID, operands, f) operands,
    NN_BROADCAST_OPS(OPERANDS_ROW)
#undef OPERANDS_ROW
};

/* The element count of an index space, refused by name when a size is
 * negative or the count leaves the shaders' 32-bit range. */
static nn_status space_size(nn_kernel kernel, int ndim, const int32_t *shape, uint64_t *n) {
    if (ndim < 0 || ndim > NN_STRIDED_DIMS)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: %d dimensions (at most %d)", nn_kernel_name(kernel), ndim,
                            NN_STRIDED_DIMS);
    *n = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0)
            return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: dimension %d has size %d", nn_kernel_name(kernel), d,
                                shape[d]);
        *n *= (uint64_t)shape[d];
        NN_TRY(vk_fits32(kernel, "elements", (int64_t)*n));
    }
    return NN_OK;
}

nn_status vk_run_broadcast(vk_backend *vk, const nn_broadcast_params *p, const nn_buffer_ref *a) {
    const nn_kernel kernel = NN_KERNEL_BROADCAST;
    uint64_t n;
    NN_TRY(space_size(kernel, p->ndim, p->shape, &n));
    if (p->op < 0 || p->op >= NN_BROADCAST_COUNT)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan broadcast: unknown op %d (broadcast_ops.h has %d)", p->op,
                            (int)NN_BROADCAST_COUNT);
    if ((kOperands[p->op] > 1 && !a[1].buffer) || (kOperands[p->op] > 2 && !a[2].buffer))
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan broadcast: op %d reads %d operands", p->op, kOperands[p->op]);
    if (n == 0) return NN_OK;
    VK_PUSH(BROADCAST) push = {.ndim = p->ndim, .op = p->op, .accumulate = p->accumulate, .alpha = p->alpha};
    memcpy(push.shape, p->shape, sizeof push.shape);
    memcpy(push.stride_a, p->stride[0], sizeof push.stride_a);
    /* An operand the row does not read is bound to any block: read it at 0. */
    if (kOperands[p->op] > 1) memcpy(push.stride_b, p->stride[1], sizeof push.stride_b);
    if (kOperands[p->op] > 2) memcpy(push.stride_c, p->stride[2], sizeof push.stride_c);
    return vk_record(vk, kernel, VK_PIPE_BROADCAST, 0, a, 4, VK_PUSH_REF(push), vk_groups_for(n), 1, 1);
}

nn_status vk_run_strided_copy(vk_backend *vk, const nn_strided_copy_params *p, const nn_buffer_ref *a) {
    const nn_kernel kernel = NN_KERNEL_STRIDED_COPY;
    uint64_t n;
    NN_TRY(space_size(kernel, p->ndim, p->shape, &n));
    if (n == 0) return NN_OK;
    VK_PUSH(STRIDED_COPY) push = {.ndim = p->ndim, .accumulate = p->accumulate};
    memcpy(push.shape, p->shape, sizeof push.shape);
    memcpy(push.src_stride, p->src_stride, sizeof push.src_stride);
    memcpy(push.dst_stride, p->dst_stride, sizeof push.dst_stride);
    return vk_record(vk, kernel, VK_PIPE_STRIDED_COPY, 0, a, 2, VK_PUSH_REF(push), vk_groups_for(n), 1, 1);
}

typedef VK_PUSH(REDUCE_DIMS) reduce_dims_push;

static nn_status reduce_push(nn_kernel kernel, const nn_reduce_dims_params *p, uint64_t *outputs, uint64_t *count,
                             reduce_dims_push *push) {
    if (p->kept < 0 || p->reduced < 0 || p->kept + p->reduced > NN_STRIDED_DIMS)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: %d kept and %d reduced dimensions (at most %d in all)",
                            nn_kernel_name(kernel), p->kept, p->reduced, NN_STRIDED_DIMS);
    if (p->op < 0 || p->op >= NN_REDUCE_OP_COUNT)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: unknown op %d", nn_kernel_name(kernel), p->op);
    NN_TRY(space_size(kernel, p->kept, p->shape, outputs));
    NN_TRY(space_size(kernel, p->reduced, p->shape + p->kept, count));
    *push = (reduce_dims_push){.op = p->op, .kept = p->kept, .reduced = p->reduced,
                                   .accumulate = p->accumulate, .alpha = p->alpha};
    memcpy(push->shape, p->shape, sizeof push->shape);
    memcpy(push->stride, p->stride, sizeof push->stride);
    return NN_OK;
}

/* One invocation per output where each has few elements, or where outputs
 * are many and neighbours read neighbouring elements (the reduced
 * dimensions are not the innermost); else a workgroup per output. */
static bool per_thread(const nn_reduce_dims_params *p, uint64_t outputs, uint64_t count) {
    if (count <= 32) return true;
    const bool kept_innermost = p->kept > 0 && p->stride[p->kept - 1] == 1;
    return kept_innermost && outputs >= 4096;
}

nn_status vk_run_reduce_dims(vk_backend *vk, const nn_reduce_dims_params *p, const nn_buffer_ref *a) {
    const nn_kernel kernel = NN_KERNEL_REDUCE_DIMS;
    uint64_t outputs, count;
    reduce_dims_push push;
    NN_TRY(reduce_push(kernel, p, &outputs, &count, &push));
    if (count == 0 && p->op != NN_REDUCE_SUM)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan reduce_dims: the max or min of no elements");
    if (p->op != NN_REDUCE_SUM && !a[2].buffer)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan reduce_dims: max and min need winners (buffer argument 2)");
    if (outputs == 0) return NN_OK;
    push.per_thread = per_thread(p, outputs, count);
    const uint32_t groups = push.per_thread ? vk_groups_for(outputs)
                                            : (uint32_t)(outputs < VK_MAX_GROUPS ? outputs : VK_MAX_GROUPS);
    return vk_record(vk, kernel, VK_PIPE_REDUCE_DIMS, 0, a, 3, VK_PUSH_REF(push), groups, 1, 1);
}

nn_status vk_run_reduce_dims_scatter(vk_backend *vk, const nn_reduce_dims_params *p, const nn_buffer_ref *a) {
    const nn_kernel kernel = NN_KERNEL_REDUCE_DIMS_SCATTER;
    uint64_t outputs, count;
    reduce_dims_push push;
    NN_TRY(reduce_push(kernel, p, &outputs, &count, &push));
    if (outputs == 0) return NN_OK;
    return vk_record(vk, kernel, VK_PIPE_REDUCE_DIMS_SCATTER, 0, a, 3, VK_PUSH_REF(push), vk_groups_for(outputs), 1,
                     1);
}
