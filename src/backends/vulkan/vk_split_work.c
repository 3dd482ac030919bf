/* Scratch for kernels that finish their own split reductions (vk_backend.h,
 * vk_split_work_take): instead of a second dispatch that adds the partial
 * results, which costs a barrier and a launch, the workgroups of a split
 * write their partials, count themselves in on a per-tile counter, and the
 * last one to arrive adds the partials in split order (deterministic, as
 * the second dispatch was) and resets the counter to zero.
 *
 * So the counters must be zero whenever no kernel is using them. They live
 * in a region of one device buffer that is zeroed once when it is made;
 * the partials live in another region of the same buffer (one binding for
 * both). Both regions are handed out in turn, like a ring; a kernel's
 * slices are tracked as written ranges like any argument, so two kernels
 * whose slices overlap are ordered by a barrier and never share a
 * counter while one of them runs. */
#include "base/error.h"
#include "vk_backend.h"

#define WORK_COUNTERS ((uint64_t)1 << 14)
#define WORK_PARTIALS ((uint64_t)1 << 20) /* floats: 4 MiB */

static nn_status work_create(vk_backend *vk) {
    size_t bytes = (size_t)(WORK_COUNTERS + WORK_PARTIALS) * 4;
    nn_buffer *work = vk_buffer_alloc(&vk->base, bytes);
    if (!work) return nn_last_status();
    /* Zero the counters once, as eager work even while a plan is being
     * recorded: it is submitted before any replay (vk_plan_replay). */
    vk_plan *compiling = vk->compiling;
    vk->compiling = NULL;
    nn_status st = vk->base.fill(&vk->base, (nn_buffer_ref){work, 0, 0}, 0.0f, (size_t)WORK_COUNTERS);
    vk->compiling = compiling;
    if (st != NN_OK) {
        vk_buffer_free(&vk->base, work);
        return st;
    }
    vk->split_work = work;
    return NN_OK;
}

bool vk_split_work_fits(uint64_t counters, uint64_t floats) {
    return counters <= WORK_COUNTERS && floats <= WORK_PARTIALS;
}

nn_status vk_split_work_take(vk_backend *vk, uint64_t counters, uint64_t floats, vk_split_work *out) {
    if (!vk_split_work_fits(counters, floats))
        return nn_set_error(NN_ERR_BACKEND, "vulkan: a split reduction needs %llu counters and %llu partial sums; "
                            "the work area holds %llu and %llu", (unsigned long long)counters,
                            (unsigned long long)floats, (unsigned long long)WORK_COUNTERS,
                            (unsigned long long)WORK_PARTIALS);
    if (!vk->split_work) NN_TRY(work_create(vk));
    if (vk->work_counter_cursor + counters > WORK_COUNTERS) vk->work_counter_cursor = 0;
    if (vk->work_partial_cursor + floats > WORK_PARTIALS) vk->work_partial_cursor = 0;
    uint64_t counter = vk->work_counter_cursor, partial = WORK_COUNTERS + vk->work_partial_cursor;
    vk->work_counter_cursor += counters;
    vk->work_partial_cursor += (floats + 3) / 4 * 4; /* 16-byte aligned slices */
    out->partials = (nn_buffer_ref){vk->split_work, (size_t)partial * 4, (size_t)(floats ? floats : 1) * 4};
    out->counters = (uint32_t)((vk->split_work->offset / 4) + counter);
    out->counter_access = vk_access_of((nn_buffer_ref){vk->split_work, (size_t)counter * 4, (size_t)counters * 4},
                                       true);
    return NN_OK;
}

void vk_split_work_destroy(vk_backend *vk) {
    if (vk->split_work) vk_buffer_free(&vk->base, vk->split_work);
    vk->split_work = NULL;
}
