/* Command recording and submission. Eager kernels are recorded, one after
 * another, into the current frame's command buffer; nothing is submitted
 * until a read or sync needs the results, the frame holds
 * MAX_COMMANDS_PER_FRAME commands, or its staging area is full. Then the
 * frame is submitted without waiting and recording continues in the other
 * frame, so the GPU works while the host records.
 *
 * Ordering: before every command goes one global memory barrier (compute
 * and transfer writes -> compute and transfer reads and writes). A barrier
 * orders against everything earlier in submission order, earlier frames
 * included, so each command sees the results of all that came before it;
 * eager training is a chain of dependent kernels anyway, and this keeps the
 * allocator free to reuse memory at once (vk_memory.c). */
#include <limits.h>
#include <string.h>

#include "core/error.h"
#include "vk_backend.h"

#define STAGING_BYTES ((VkDeviceSize)16 << 20)
#define MAX_COMMANDS_PER_FRAME 256
#define STATUS_NONE INT32_MAX

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
            r = vk->fn.vkAllocateCommandBuffers(vk->device, &alloc, &f->cmd);
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
    return NN_OK;
}

static nn_status frame_wait(vk_backend *vk, vk_frame *f) {
    if (!f->in_flight) return NN_OK;
    VkResult r = vk->fn.vkWaitForFences(vk->device, 1, &f->fence, VK_TRUE, UINT64_MAX);
    if (r != VK_SUCCESS)
        return nn_set_error(NN_ERR_BACKEND, "vulkan: waiting for the GPU failed (%s)", nn_vk_result_name(r));
    vk->fn.vkResetFences(vk->device, 1, &f->fence);
    f->in_flight = false;
    f->staging_used = 0;
    return NN_OK;
}

static nn_status frame_begin(vk_backend *vk, vk_frame *f) {
    NN_TRY(frame_wait(vk, f));
    vk->fn.vkResetCommandPool(vk->device, f->pool, 0);
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                      .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VkResult r = vk->fn.vkBeginCommandBuffer(f->cmd, &begin);
    if (r != VK_SUCCESS)
        return nn_set_error(NN_ERR_BACKEND, "vulkan: vkBeginCommandBuffer failed (%s)", nn_vk_result_name(r));
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
    vk->fn.vkCmdPipelineBarrier(f->cmd, kStages, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, NULL, 0, NULL);
    f->recording = false;
    VkResult r = vk->fn.vkEndCommandBuffer(f->cmd);
    if (r == VK_SUCCESS) {
        VkSubmitInfo submit = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1,
                               .pCommandBuffers = &f->cmd};
        r = vk->fn.vkQueueSubmit(vk->queue, 1, &submit, f->fence);
    }
    if (r != VK_SUCCESS)
        return nn_set_error(NN_ERR_BACKEND, "vulkan: submitting %d commands failed (%s)", f->commands,
                            nn_vk_result_name(r));
    f->in_flight = true;
    return NN_OK;
}

/* Submit the current frame and make the other one current. */
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

nn_status vk_begin_command(vk_backend *vk, VkCommandBuffer *cmd) {
    vk_frame *f;
    NN_TRY(current_recording(vk, &f));
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                           VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT};
    vk->fn.vkCmdPipelineBarrier(f->cmd, kStages, kStages, 0, 1, &mb, 0, NULL, 0, NULL);
    *cmd = f->cmd;
    return NN_OK;
}

nn_status vk_end_command(vk_backend *vk) {
    vk_frame *f = &vk->frames[vk->current];
    if (++f->commands >= MAX_COMMANDS_PER_FRAME) NN_TRY(switch_frames(vk));
    return NN_OK;
}

VkDeviceSize vk_staging_capacity(const vk_backend *vk) { return STAGING_BYTES; }
VkBuffer vk_staging_buffer(const vk_backend *vk) { return vk->frames[vk->current].staging.buffer; }

nn_status vk_staging_take(vk_backend *vk, VkDeviceSize bytes, VkDeviceSize *offset, void **host) {
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
    NN_TRY(st);
    int32_t *status = vk->status.mapped;
    if (status[0] != STATUS_NONE) {
        int32_t row = status[0], label = status[1], cols = status[2];
        status[0] = STATUS_NONE;
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
        memset(f, 0, sizeof *f);
    }
    vk_host_buffer_destroy(vk, &vk->status);
}
