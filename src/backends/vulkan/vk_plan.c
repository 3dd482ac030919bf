/* Plans: a captured step (core/capture.c) recorded once into a command
 * buffer of its own, through the same kernel code as eager work, and then
 * submitted as often as it is replayed. The buffer is recorded with
 * SIMULTANEOUS_USE, so one vkQueueSubmit can carry several replays in a row
 * (several training steps per submit, nothing read back between them).
 * It begins with a full barrier (ordering it after all earlier work, the
 * previous replay included); inside, barriers go only between conflicting
 * kernels (vk_stream.c). The barrier that makes its writes visible to the
 * host is a command buffer of its own, submitted once after the last replay
 * of a submit: at the end of every replay it made replaying slower than
 * eager work (bench/README.md). What its kernels allocate for themselves
 * (split-K partial sums, reduction partials, packed weights) is kept with
 * the plan, since every replay writes it again; a temporary whose kernel is
 * recorded serves the plan's later kernels (vk_scratch_alloc), so the plan
 * holds about the largest few rather than all of them. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "vk_backend.h"

/* Replays per vkQueueSubmit: the array of command-buffer handles. */
#define REPLAYS_PER_SUBMIT 64

nn_buffer *vk_scratch_alloc(vk_backend *vk, size_t bytes) {
    vk_plan *plan = vk->compiling;
    int best = -1;
    for (int i = 0; plan && i < plan->spare_count; i++)
        if (plan->spare[i]->bytes >= bytes && (best < 0 || plan->spare[i]->bytes < plan->spare[best]->bytes)) best = i;
    if (best < 0) return vk_buffer_alloc(&vk->base, bytes);
    nn_buffer *buffer = plan->spare[best];
    plan->spare[best] = plan->spare[--plan->spare_count];
    return buffer;
}

void vk_scratch_done(vk_backend *vk, nn_buffer *buffer) {
    vk_plan *plan = vk->compiling;
    if (!plan) {
        vk_buffer_free(&vk->base, buffer);
        return;
    }
    for (int i = 0; i < plan->scratch_count; i++)
        if (plan->scratch[i] == buffer) { /* a spare taken again: owned already */
            plan->spare[plan->spare_count++] = buffer;
            return;
        }
    if (plan->scratch_count == plan->scratch_capacity) {
        int capacity = plan->scratch_capacity ? plan->scratch_capacity * 2 : 8;
        nn_buffer **grown = realloc(plan->scratch, sizeof *grown * (size_t)capacity);
        nn_buffer **spare = grown ? realloc(plan->spare, sizeof *spare * (size_t)capacity) : NULL;
        if (grown) plan->scratch = grown;
        if (!spare) {
            /* Cannot happen in practice (a few pointers); leaking the buffer
             * is safe, freeing it while the plan uses it is not. */
            return;
        }
        plan->spare = spare;
        plan->scratch_capacity = capacity;
    }
    plan->scratch[plan->scratch_count++] = buffer;
    plan->spare[plan->spare_count++] = buffer;
}

void vk_plan_free(nn_backend *self, void *opaque) {
    vk_backend *vk = as_vk(self);
    vk_plan *plan = opaque;
    if (!plan) return;
    /* Its command buffer may still be pending: it must not be freed then. */
    if (vk->plans_in_flight) {
        vk->fn.vkQueueWaitIdle(vk->queue);
        vk->plans_in_flight = false;
    }
    vk_stretches_free(vk, plan);
    for (int i = 0; i < plan->scratch_count; i++) vk_buffer_free(self, plan->scratch[i]);
    free(plan->scratch);
    free(plan->spare);
    vk_host_buffer_destroy(vk, &plan->constants);
    if (plan->pool) vk->fn.vkDestroyCommandPool(vk->device, plan->pool, NULL);
    vk_hazards_free(&plan->target.hazards);
    free(plan);
}

static const VkCommandBufferBeginInfo kReusable = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                                   .flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT};

/* The barrier after a submit's replays: their writes visible to the host. */
static VkResult record_to_host(vk_backend *vk, VkCommandBuffer cmd) {
    VkResult r = vk->fn.vkBeginCommandBuffer(cmd, &kReusable);
    if (r != VK_SUCCESS) return r;
    VkMemoryBarrier to_host = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                               .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                               .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vk->fn.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                                VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, NULL, 0, NULL);
    return vk->fn.vkEndCommandBuffer(cmd);
}

static nn_status create(vk_backend *vk, const nn_command *commands, int64_t count, vk_plan *plan) {
    VkCommandPoolCreateInfo pool = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                    .queueFamilyIndex = vk->phys->queue_family};
    VkResult r = vk->fn.vkCreateCommandPool(vk->device, &pool, NULL, &plan->pool);
    if (r == VK_SUCCESS) {
        VkCommandBufferAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                             .commandPool = plan->pool,
                                             .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                             .commandBufferCount = 2};
        VkCommandBuffer buffers[2];
        r = vk->fn.vkAllocateCommandBuffers(vk->device, &alloc, buffers);
        if (r == VK_SUCCESS) plan->target.cmd = buffers[0], plan->to_host = buffers[1];
    }
    if (r == VK_SUCCESS) r = record_to_host(vk, plan->to_host);
    if (r != VK_SUCCESS) {
        plan->target.cmd = plan->to_host = VK_NULL_HANDLE;
        return nn_set_error(NN_ERR_BACKEND, "vulkan: creating a captured step's command buffer failed (%s)",
                            nn_vk_result_name(r));
    }
    VkDeviceSize constants = 0;
    for (int64_t i = 0; i < count; i++)
        if (commands[i].kind == NN_COMMAND_WRITE) constants += (commands[i].count + 15) / 16 * 16;
    if (constants > 0)
        NN_TRY(vk_host_buffer_create(vk, constants, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, &plan->constants));
    return NN_OK;
}

nn_status vk_plan_new(nn_backend *self, const nn_command *commands, int64_t count, void **out) {
    vk_backend *vk = as_vk(self);
    *out = NULL;
    vk_plan *plan = calloc(1, sizeof *plan);
    if (!plan) return nn_set_error(NN_ERR_MEMORY, "vulkan: out of host memory for a captured step");
    nn_status st = create(vk, commands, count, plan);
    if (st != NN_OK) {
        vk_plan_free(self, plan);
        return st;
    }
    VkResult r = vk->fn.vkBeginCommandBuffer(plan->target.cmd, &kReusable);
    if (r != VK_SUCCESS) {
        vk_plan_free(self, plan);
        return nn_set_error(NN_ERR_BACKEND, "vulkan: vkBeginCommandBuffer failed (%s)", nn_vk_result_name(r));
    }
    st = vk_stretches_begin(vk, plan);
    vk_target_begin(vk, &plan->target);
    vk->compiling = plan;
    vk_stretches_stamp(vk, plan->target.cmd); /* after the opening barrier */
    for (int64_t i = 0; i < count && st == NN_OK; i++) st = nn_command_issue(&vk->base, &commands[i]);
    vk_stretches_stamp(vk, plan->target.cmd);
    vk->compiling = NULL;
    r = vk->fn.vkEndCommandBuffer(plan->target.cmd);
    if (st == NN_OK && r != VK_SUCCESS)
        st = nn_set_error(NN_ERR_BACKEND, "vulkan: recording a captured step failed (%s)", nn_vk_result_name(r));
    if (st != NN_OK) {
        vk_plan_free(self, plan);
        return st;
    }
    *out = plan;
    return NN_OK;
}

nn_status vk_plan_replay(nn_backend *self, void *opaque, int64_t times) {
    vk_backend *vk = as_vk(self);
    vk_plan *plan = opaque;
    /* Eager work recorded before the replay runs before it. */
    NN_TRY(vk_submit_pending(vk));
    VkCommandBuffer handles[REPLAYS_PER_SUBMIT + 1];
    for (int i = 0; i < REPLAYS_PER_SUBMIT; i++) handles[i] = plan->target.cmd;
    /* Profiled: one replay per submit, its stamps read before the next. */
    const int64_t per_submit = plan->stretches ? 1 : REPLAYS_PER_SUBMIT;
    while (times > 0) {
        uint32_t n = times > per_submit ? (uint32_t)per_submit : (uint32_t)times;
        handles[n] = plan->to_host;
        VkSubmitInfo submit = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = n + 1,
                               .pCommandBuffers = handles};
        VkResult r = vk->fn.vkQueueSubmit(vk->queue, 1, &submit, VK_NULL_HANDLE);
        if (r != VK_SUCCESS)
            return nn_set_error(NN_ERR_BACKEND, "vulkan: submitting %u replays of a captured step failed (%s)", n,
                                nn_vk_result_name(r));
        handles[n] = plan->target.cmd;
        vk->plans_in_flight = true;
        times -= n;
        if (plan->stretches) {
            r = vk->fn.vkQueueWaitIdle(vk->queue);
            if (r != VK_SUCCESS)
                return nn_set_error(NN_ERR_BACKEND, "vulkan: waiting for a profiled replay failed (%s)",
                                    nn_vk_result_name(r));
            vk_stretches_sample(vk, plan);
        }
    }
    return NN_OK;
}
