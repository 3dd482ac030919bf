/* Command recording and submission. Eager kernels are recorded, one after
 * another, into the current frame's command buffer; nothing is submitted
 * until a read or sync needs the results, the frame holds
 * MAX_COMMANDS_PER_FRAME commands, or its staging area is full. Then the
 * frame is submitted without waiting and recording continues in the other
 * frame, so the GPU works while the host records. A captured step is
 * recorded the same way into its plan's command buffer (vk_plan.c).
 *
 * Ordering: every command buffer starts with one global memory barrier,
 * which orders it after everything submitted before. Inside it, a command
 * gets a barrier only when it touches memory that a command since the last
 * barrier wrote (or writes memory one read): kernels on disjoint memory (a
 * layer's weight and input gradients, the gathers of a batch) run together.
 * Hazards are tracked by address range, not by tensor, so the allocator
 * stays free to hand memory to the next tensor at once (vk_memory.c). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/custom_kernels.h"
#include "base/error.h"
#include "vk_backend.h"

#define STAGING_BYTES ((VkDeviceSize)16 << 20)
#define MAX_COMMANDS_PER_FRAME 256
#define STATUS_NONE INT32_MAX
/* status[3], who reported a bad label or index: the kernels that write none
 * (softmax_ce's) leave it at 0; nll_forward.comp writes 1,
 * embedding_forward.comp 2, a custom kernel's prelude NN_CUSTOM_STATUS_KIND
 * (status[4] its id). */
#define STATUS_SOFTMAX_CE 0
#define STATUS_NLL 1
#define STATUS_EMBEDDING 2

static const VkPipelineStageFlags kStages =
    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;

nn_status vk_stream_init(vk_backend *vk) {
    for (int i = 0; i < VK_FRAMES; i++) {
        vk_frame *f = &vk->frames[i];
        VkCommandPoolCreateInfo pool = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                        .flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
                                        .queueFamilyIndex = vk->phys->queue_family};
        VkResult r = vk->fn.vkCreateCommandPool(vk->device, &pool, NULL, &f->pool);
        if (r == VK_SUCCESS) {
            VkCommandBufferAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                                 .commandPool = f->pool,
                                                 .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                                 .commandBufferCount = 1};
            r = vk->fn.vkAllocateCommandBuffers(vk->device, &alloc, &f->target.cmd);
        }
        if (r == VK_SUCCESS) {
            VkFenceCreateInfo fence = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
            r = vk->fn.vkCreateFence(vk->device, &fence, NULL, &f->fence);
        }
        if (r != VK_SUCCESS)
            return nn_set_error(NN_ERR_BACKEND, "vulkan: creating command buffers failed (%s)",
                                nn_vk_result_name(r));
        NN_TRY(vk_host_buffer_create(vk, STAGING_BYTES,
                                     VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                     &f->staging));
    }
    NN_TRY(vk_host_buffer_create(vk, 64, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, &vk->status));
    int32_t *status = vk->status.mapped;
    status[0] = STATUS_NONE;
    status[3] = STATUS_SOFTMAX_CE;
    return NN_OK;
}

static nn_status frame_wait(vk_backend *vk, vk_frame *f) {
    if (!f->in_flight) return NN_OK;
    VkResult r = vk->fn.vkWaitForFences(vk->device, 1, &f->fence, VK_TRUE, UINT64_MAX);
    if (r != VK_SUCCESS)
        return nn_set_error(NN_ERR_BACKEND, "vulkan: waiting for the GPU failed (%s)", nn_vk_result_name(r));
    vk->fn.vkResetFences(vk->device, 1, &f->fence);
    f->in_flight = false;
    vk_profile_frame_done(vk, (int)(f - vk->frames));
    f->staging_used = 0;
    return NN_OK;
}

static const VkMemoryBarrier kFullBarrier = {
    .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
    .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
    .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT};

static void full_barrier(vk_backend *vk, vk_target *t) {
    if (vk->trace && vk->compiling) fprintf(stderr, "nn-engine trace:   -- barrier\n");
    vk->fn.vkCmdPipelineBarrier(t->cmd, kStages, kStages, 0, 1, &kFullBarrier, 0, NULL, 0, NULL);
    /* Only the plan being recorded: a stamp in another buffer (the tuner's) is never written by a replay. */
    if (vk->compiling && t == &vk->compiling->target) vk_stretches_stamp(vk, t->cmd);
    t->hazards.count = 0;
    t->hazards.barriers++;
}

void vk_target_barrier(vk_backend *vk, vk_target *t) { full_barrier(vk, t); }

void vk_target_begin(vk_backend *vk, vk_target *t) {
    t->hazards.barriers = t->hazards.commands = 0;
    full_barrier(vk, t);
}

void vk_hazards_free(vk_hazards *h) {
    free(h->items);
    memset(h, 0, sizeof *h);
}

vk_access vk_access_of(nn_buffer_ref ref, bool write) {
    VkDeviceSize begin = ref.buffer->offset + ref.offset;
    VkDeviceSize bytes = ref.bytes ? ref.bytes : ref.buffer->bytes - ref.offset;
    return (vk_access){ref.buffer->block->buffer, begin, begin + bytes, write};
}

static bool overlaps(const vk_access *a, const vk_access *b) {
    return a->buffer == b->buffer && a->begin < b->end && b->begin < a->end;
}

/* Beyond this many tracked ranges a barrier is cheaper than the search. */
#define MAX_TRACKED 64

static bool conflicts(const vk_hazards *h, const vk_access *accesses, int count) {
    if (h->count + count > MAX_TRACKED) return true;
    for (int i = 0; i < count; i++)
        for (int j = 0; j < h->count; j++)
            if ((accesses[i].write || h->items[j].write) && overlaps(&accesses[i], &h->items[j])) return true;
    return false;
}

static nn_status track(vk_backend *vk, vk_target *t, const vk_access *accesses, int count) {
    vk_hazards *h = &t->hazards;
    if (conflicts(h, accesses, count)) full_barrier(vk, t);
    if (h->count + count > h->capacity) {
        int capacity = MAX_TRACKED + 8 > h->count + count ? MAX_TRACKED + 8 : h->count + count;
        vk_access *grown = realloc(h->items, sizeof *grown * (size_t)capacity);
        if (!grown) return nn_set_error(NN_ERR_MEMORY, "vulkan: out of host memory tracking hazards");
        h->items = grown;
        h->capacity = capacity;
    }
    memcpy(h->items + h->count, accesses, sizeof *accesses * (size_t)count);
    h->count += count;
    h->commands++;
    return NN_OK;
}

static nn_status frame_begin(vk_backend *vk, vk_frame *f) {
    NN_TRY(frame_wait(vk, f));
    vk->fn.vkResetCommandPool(vk->device, f->pool, 0);
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                      .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VkResult r = vk->fn.vkBeginCommandBuffer(f->target.cmd, &begin);
    if (r != VK_SUCCESS)
        return nn_set_error(NN_ERR_BACKEND, "vulkan: vkBeginCommandBuffer failed (%s)", nn_vk_result_name(r));
    vk_target_begin(vk, &f->target);
    vk_profile_frame_begin(vk, (int)(f - vk->frames), f->target.cmd);
    f->recording = true;
    f->commands = 0;
    f->staging_used = 0;
    return NN_OK;
}

static nn_status frame_submit(vk_backend *vk, vk_frame *f) {
    if (!f->recording) return NN_OK;
    /* Make the frame's writes visible to the host (reads, the status flag). */
    VkMemoryBarrier to_host = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                               .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                               .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vk->fn.vkCmdPipelineBarrier(f->target.cmd, kStages, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, NULL, 0,
                                NULL);
    f->recording = false;
    VkResult r = vk->fn.vkEndCommandBuffer(f->target.cmd);
    if (r == VK_SUCCESS) {
        VkSubmitInfo submit = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1,
                               .pCommandBuffers = &f->target.cmd};
        r = vk->fn.vkQueueSubmit(vk->queue, 1, &submit, f->fence);
    }
    if (r != VK_SUCCESS)
        return nn_set_error(NN_ERR_BACKEND, "vulkan: submitting %d commands failed (%s)", f->commands,
                            nn_vk_result_name(r));
    f->in_flight = true;
    return NN_OK;
}

static nn_status switch_frames(vk_backend *vk);

/* Submit the current frame and make the other one current. */
nn_status vk_submit_pending(vk_backend *vk) {
    if (!vk->frames[vk->current].recording) return NN_OK;
    return switch_frames(vk);
}

static nn_status switch_frames(vk_backend *vk) {
    NN_TRY(frame_submit(vk, &vk->frames[vk->current]));
    vk->current = (vk->current + 1) % VK_FRAMES;
    return NN_OK;
}

static nn_status current_recording(vk_backend *vk, vk_frame **out) {
    vk_frame *f = &vk->frames[vk->current];
    if (!f->recording) NN_TRY(frame_begin(vk, f));
    *out = f;
    return NN_OK;
}

nn_status vk_begin_command(vk_backend *vk, const vk_access *accesses, int count, VkCommandBuffer *cmd) {
    vk_target *t;
    vk_frame *f = NULL;
    if (vk->tuning) {
        t = vk->tuning;
    } else if (vk->compiling) {
        t = &vk->compiling->target;
    } else {
        NN_TRY(current_recording(vk, &f));
        t = &f->target;
    }
    NN_TRY(track(vk, t, accesses, count));
    if (f && vk->profile) {
        full_barrier(vk, t); /* each command timed alone */
        vk_profile_command_begin(vk, (int)(f - vk->frames), t->cmd);
    }
    *cmd = t->cmd;
    return NN_OK;
}

nn_status vk_end_command(vk_backend *vk) {
    if (vk->tuning) { /* vk_tune.c times it; no plan or frame counts it */
        vk->profile_label[0] = '\0';
        return NN_OK;
    }
    if (vk->compiling) { /* a plan is one command buffer, however long */
        if (vk->trace) fprintf(stderr, "nn-engine trace: %s\n", vk->profile_label);
        vk_stretches_name(vk, vk->profile_label);
        vk->profile_label[0] = '\0';
        return NN_OK;
    }
    vk_frame *f = &vk->frames[vk->current];
    if (vk->profile) vk_profile_command_end(vk, vk->current, f->target.cmd);
    vk->profile_label[0] = '\0';
    if (++f->commands >= MAX_COMMANDS_PER_FRAME) NN_TRY(switch_frames(vk));
    return NN_OK;
}

VkDeviceSize vk_staging_capacity(const vk_backend *vk) { return STAGING_BYTES; }

VkBuffer vk_staging_buffer(const vk_backend *vk) {
    return vk->compiling ? vk->compiling->constants.buffer : vk->frames[vk->current].staging.buffer;
}

nn_status vk_staging_take(vk_backend *vk, VkDeviceSize bytes, VkDeviceSize *offset, void **host) {
    if (vk->compiling) {
        /* A plan's captured writes copy from its own constants, sized for
         * all of them when it was made (vk_plan.c). */
        vk_plan *plan = vk->compiling;
        if (plan->constants_used + bytes > plan->constants.size)
            return nn_set_error(NN_ERR_BACKEND, "vulkan: a captured write outgrew the plan's constants");
        *offset = plan->constants_used;
        *host = (char *)plan->constants.mapped + plan->constants_used;
        plan->constants_used += (bytes + 15) / 16 * 16;
        return NN_OK;
    }
    vk_frame *f;
    NN_TRY(current_recording(vk, &f));
    if (f->staging_used + bytes > f->staging.size) {
        NN_TRY(switch_frames(vk));
        NN_TRY(current_recording(vk, &f));
    }
    *offset = f->staging_used;
    *host = (char *)f->staging.mapped + f->staging_used;
    f->staging_used += (bytes + 15) / 16 * 16;
    return NN_OK;
}

nn_status vk_finish(vk_backend *vk) {
    nn_status st = frame_submit(vk, &vk->frames[vk->current]);
    for (int i = 0; i < VK_FRAMES; i++) {
        nn_status w = frame_wait(vk, &vk->frames[i]);
        if (st == NN_OK) st = w;
    }
    if (st == NN_OK && vk->plans_in_flight) {
        /* Replays carry no fence of their own: wait for the queue. */
        VkResult r = vk->fn.vkQueueWaitIdle(vk->queue);
        if (r != VK_SUCCESS)
            st = nn_set_error(NN_ERR_BACKEND, "vulkan: waiting for the GPU failed (%s)", nn_vk_result_name(r));
        else vk->plans_in_flight = false;
    }
    NN_TRY(st);
    int32_t *status = vk->status.mapped;
    if (status[0] != STATUS_NONE) {
        int32_t row = status[0], label = status[1], cols = status[2], kind = status[3], ignore_index = status[4];
        status[0] = STATUS_NONE;
        status[3] = STATUS_SOFTMAX_CE;
        if (kind == STATUS_NLL)
            return nn_set_error(NN_ERR_ARGUMENT,
                                "cross_entropy / nll_loss: target %d at position %d is outside [0, %d) and is not "
                                "ignore_index %d (found on the Vulkan device; reported at the first read or sync "
                                "after the kernel ran)", (int)label, (int)row, (int)cols, (int)ignore_index);
        if (kind == NN_CUSTOM_STATUS_KIND) {
            const nn_custom_kernel *k = nn_custom_kernel_find(status[4]);
            return nn_set_error(NN_ERR_ARGUMENT,
                                "custom kernel %s: index %u is outside buffer %d of %d elements (found on the "
                                "Vulkan device; reported at the first read or sync after the kernel ran)",
                                k ? k->name : "(freed)", (unsigned)row, (int)label, (int)cols);
        }
        if (kind == STATUS_EMBEDDING)
            return nn_set_error(NN_ERR_ARGUMENT,
                                "embedding: index %d at position %d is outside [0, %d) (found on the Vulkan "
                                "device; reported at the first read or sync after the kernel ran)",
                                (int)label, (int)row, (int)cols);
        return nn_set_error(NN_ERR_ARGUMENT,
                            "softmax_cross_entropy: label %d at row %d is outside [0, %d) (found on the "
                            "Vulkan device; reported at the first read or sync after the kernel ran)",
                            (int)label, (int)row, (int)cols);
    }
    return NN_OK;
}

void vk_stream_destroy(vk_backend *vk) {
    for (int i = 0; i < VK_FRAMES; i++) {
        vk_frame *f = &vk->frames[i];
        if (f->in_flight) frame_wait(vk, f);
        if (f->fence) vk->fn.vkDestroyFence(vk->device, f->fence, NULL);
        if (f->pool) vk->fn.vkDestroyCommandPool(vk->device, f->pool, NULL);
        vk_host_buffer_destroy(vk, &f->staging);
        vk_hazards_free(&f->target.hazards);
        memset(f, 0, sizeof *f);
    }
    vk_host_buffer_destroy(vk, &vk->status);
}
