/* The EMBEDDING_* kernels on Vulkan (kernels.h). Forward: one dispatch, an
 * invocation per output element (embedding_forward.comp). Backward: the
 * positions sorted by the row they picked, then a workgroup per row adding
 * its positions' gradients in order (embedding_backward.comp's four
 * phases over scratch counts, starts and order), so the cost is the
 * indices plus the weight, not their product, and the sums are the CPU's. */
#include "base/error.h"
#include "vk_backend.h"

enum { COUNT, SCAN, SCATTER, SUM }; /* embedding_backward.comp's phases */

static nn_status check_sizes(nn_kernel kernel, const nn_embedding_params *p) {
    if (p->count < 0 || p->num < 1 || p->dim < 1)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: invalid sizes (%lld indices, %d x %d weight)",
                            nn_kernel_name(kernel), (long long)p->count, p->num, p->dim);
    NN_TRY(vk_fits32(kernel, "elements", p->count * p->dim));
    return vk_fits32(kernel, "weight elements", (int64_t)p->num * p->dim);
}

typedef VK_PUSH(EMBEDDING) embedding_block;

static embedding_block push_of(const nn_embedding_params *p, int phase) {
    return (embedding_block){.count = (uint32_t)p->count, .num = p->num, .dim = p->dim,
                                .padding_idx = p->padding_idx, .accumulate = p->accumulate, .phase = phase};
}

nn_status vk_run_embedding_forward(vk_backend *vk, const nn_embedding_params *p, const nn_buffer_ref *a) {
    const nn_kernel kernel = NN_KERNEL_EMBEDDING_FORWARD;
    NN_TRY(check_sizes(kernel, p));
    if (p->count == 0) return NN_OK;
    embedding_block push = push_of(p, 0);
    return vk_record(vk, kernel, VK_PIPE_EMBEDDING_FORWARD, 0, a, 3, VK_PUSH_REF(push),
                     vk_groups_for((uint64_t)(p->count * p->dim)), 1, 1);
}

/* Scratch of `words` 32-bit words, its reference into *ref. */
static nn_buffer *scratch(vk_backend *vk, int64_t words, nn_buffer_ref *ref) {
    nn_buffer *b = vk_scratch_alloc(vk, (size_t)words * 4);
    *ref = (nn_buffer_ref){b, 0, (size_t)words * 4};
    return b;
}

nn_status vk_run_embedding_backward(vk_backend *vk, const nn_embedding_params *p, const nn_buffer_ref *a) {
    const nn_kernel kernel = NN_KERNEL_EMBEDDING_BACKWARD;
    NN_TRY(check_sizes(kernel, p));
    nn_buffer_ref args[6] = {a[0], a[1], a[2]};
    nn_buffer *counts = scratch(vk, p->num, &args[3]);
    nn_buffer *starts = counts ? scratch(vk, (int64_t)p->num + 1, &args[4]) : NULL;
    nn_buffer *order = starts ? scratch(vk, p->count > 0 ? p->count : 1, &args[5]) : NULL;
    nn_status st = order ? NN_OK : nn_last_status();
    const uint32_t positions = vk_groups_for((uint64_t)(p->count > 0 ? p->count : 1));
    const uint32_t rows_x = (uint32_t)(p->num < (int32_t)VK_MAX_GROUPS ? p->num : (int32_t)VK_MAX_GROUPS);
    const uint32_t rows_y = (uint32_t)((p->num + rows_x - 1) / rows_x);
    if (st == NN_OK) st = vk_run_fill(vk, &(nn_fill_params){.count = p->num, .bits = 0}, &args[3]);
    /* Each phase: what it writes (bits of args), its workgroups. */
    const struct {
        int phase;
        unsigned written;
        uint32_t gx, gy;
    } phases[] = {{COUNT, NN_ARG(3), positions, 1},
                  {SCAN, NN_ARG(3) | NN_ARG(4), 1, 1},
                  {SCATTER, NN_ARG(3) | NN_ARG(5), positions, 1},
                  {SUM, NN_ARG(2) | NN_ARG(5), rows_x, rows_y}};
    for (size_t i = 0; i < sizeof phases / sizeof phases[0] && st == NN_OK; i++) {
        embedding_block push = push_of(p, phases[i].phase);
        st = vk_record_ex(vk, kernel, VK_PIPE_EMBEDDING_BACKWARD, 0, args, 6, phases[i].written, VK_PUSH_REF(push),
                          phases[i].gx, phases[i].gy, 1);
    }
    /* freed at once (vk_stream.c orders reuse), or kept by a plan */
    if (order) vk_scratch_done(vk, order);
    if (starts) vk_scratch_done(vk, starts);
    if (counts) vk_scratch_done(vk, counts);
    return st;
}
