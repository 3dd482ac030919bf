/* The strided kernels on Vulkan (kernels.h): BROADCAST, COMPARE,
 * STRIDED_COPY, REDUCE_DIMS and REDUCE_DIMS_SCATTER, one dispatch each.
 * Semantics follow the CPU's (cpu_strided.c). */
#include <string.h>

#include "base/error.h"
#include "nn_ops.h"
#include "vk_backend.h"

_Static_assert(NN_COMPARE_EQ == 0 && NN_COMPARE_NE == 1 && NN_COMPARE_LT == 2 && NN_COMPARE_LE == 3 &&
                   NN_COMPARE_GT == 4 && NN_COMPARE_GE == 5,
               "shaders/compare.comp numbers the ops as nn_compare_op");

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

nn_status vk_run_compare(vk_backend *vk, const nn_compare_params *p, const nn_buffer_ref *a) {
    const nn_kernel kernel = NN_KERNEL_COMPARE;
    uint64_t n;
    NN_TRY(space_size(kernel, p->ndim, p->shape, &n));
    if (p->op < NN_COMPARE_EQ || p->op > NN_COMPARE_GE)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan compare: unknown op %d (nn_compare_op)", p->op);
    if (n == 0) return NN_OK;
    VK_PUSH(COMPARE) push = {.ndim = p->ndim, .op = p->op, .integer = p->integer != 0};
    memcpy(push.shape, p->shape, sizeof push.shape);
    memcpy(push.stride_a, p->stride[0], sizeof push.stride_a);
    memcpy(push.stride_b, p->stride[1], sizeof push.stride_b);
    return vk_record(vk, kernel, VK_PIPE_COMPARE, 0, a, 3, VK_PUSH_REF(push), vk_groups_for(n), 1, 1);
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
    if (p->integer && p->op != NN_REDUCE_SUM)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: integer reductions are sums only (op %d)",
                            nn_kernel_name(kernel), p->op);
    *push = (reduce_dims_push){.op = p->op, .kept = p->kept, .reduced = p->reduced,
                                   .accumulate = p->accumulate, .alpha = p->alpha, .integer = p->integer != 0};
    memcpy(push->shape, p->shape, sizeof push->shape);
    memcpy(push->stride, p->stride, sizeof push->stride);
    return NN_OK;
}

/* Invocations a reduction aims to keep busy: enough to fill a large GPU. */
#define REDUCE_TARGET_INVOCATIONS (1u << 18)

/* How a reduction spreads over invocations: lanes per output where its
 * elements are neighbours in memory (the reduced dimensions innermost),
 * else one invocation per output, neighbouring outputs reading
 * neighbouring elements; a sum with too few outputs to fill the device
 * is cut into chunks, their sums added by a second pass. */
static void reduce_shape(const nn_reduce_dims_params *p, uint64_t outputs, uint64_t count, uint32_t *lanes,
                         uint32_t *chunks) {
    const bool contiguous = p->reduced > 0 && p->stride[p->kept + p->reduced - 1] == 1;
    *lanes = 1;
    if (contiguous)
        while (*lanes < 256 && (uint64_t)*lanes * 32 < count) *lanes *= 2;
    *chunks = 1;
    if (p->op != NN_REDUCE_SUM) return;
    const uint64_t busy = outputs * *lanes;
    while (busy * *chunks * 2 <= REDUCE_TARGET_INVOCATIONS && count / ((uint64_t)*chunks * 2) >= (uint64_t)*lanes * 64)
        *chunks *= 2;
}

static uint32_t reduce_groups(uint64_t items, uint32_t lanes) {
    const uint64_t groups = (items * lanes + 255) / 256;
    return groups > VK_MAX_GROUPS ? VK_MAX_GROUPS : (uint32_t)(groups ? groups : 1);
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
    uint32_t lanes, chunks;
    reduce_shape(p, outputs, count, &lanes, &chunks);
    push.lanes = (int32_t)lanes;
    push.chunks = 1;
    if (chunks == 1)
        return vk_record(vk, kernel, VK_PIPE_REDUCE_DIMS, 0, a, 3, VK_PUSH_REF(push), reduce_groups(outputs, lanes),
                         1, 1);
    /* first pass: each chunk's raw sum into partials [chunks, outputs] */
    NN_TRY(vk_fits32(kernel, "partial sums", (int64_t)(outputs * chunks)));
    nn_buffer *partials = vk_scratch_alloc(vk, outputs * chunks * sizeof(float));
    if (!partials) return nn_last_status();
    push.chunks = (int32_t)chunks;
    push.chunk = (int32_t)((count + chunks - 1) / chunks);
    nn_buffer_ref first[3] = {a[0], {partials, 0, 0}, a[2]};
    nn_status st = vk_record_ex(vk, kernel, VK_PIPE_REDUCE_DIMS, 0, first, 3, NN_ARG(1), VK_PUSH_REF(push),
                                reduce_groups(outputs * chunks, lanes), 1, 1);
    /* second pass: each output adds its chunks, neighbouring outputs side by side */
    if (st == NN_OK) {
        reduce_dims_push total = {.op = NN_REDUCE_SUM, .kept = 1, .reduced = 1, .accumulate = p->accumulate,
                                  .alpha = p->alpha, .lanes = 1, .chunks = 1,
                                  .shape = {(int32_t)outputs, (int32_t)chunks}, .stride = {1, (int32_t)outputs},
                                  .integer = push.integer};
        nn_buffer_ref second[3] = {{partials, 0, 0}, a[1], a[2]};
        st = vk_record(vk, kernel, VK_PIPE_REDUCE_DIMS, 0, second, 3, VK_PUSH_REF(total), reduce_groups(outputs, 1),
                       1, 1);
    }
    /* freed at once: a later user of the range is ordered after both passes (vk_stream.c) */
    vk_scratch_done(vk, partials);
    return st;
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
