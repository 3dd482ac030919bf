/* Recording one dispatch: the pipeline, the descriptor set of the blocks
 * its arguments live in, the push constants (the arguments' element
 * offsets, then the kernel's parameters: vk_push.h) and the barrier its
 * accesses need (vk_stream.c). Every kernel's entry point ends here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "vk_backend.h"

#define WG 256

uint32_t vk_groups_for(uint64_t items) {
    uint64_t g = (items + WG - 1) / WG;
    return g > VK_MAX_GROUPS ? VK_MAX_GROUPS : (uint32_t)(g ? g : 1);
}

nn_status vk_fits32(nn_kernel kernel, const char *what, int64_t value) {
    if (value < 0 || value > (int64_t)UINT32_MAX)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: %s = %lld is outside the 32-bit range the shaders index",
                            nn_kernel_name(kernel), what, (long long)value);
    return NN_OK;
}

/* Whether `label` contains one of the comma-separated names in `list`
 * (NN_ENGINE_VULKAN_SKIP). */
static bool skipped(const char *list, const char *label) {
    for (const char *at = list; *at;) {
        const char *end = strchr(at, ',');
        size_t n = end ? (size_t)(end - at) : strlen(at);
        for (const char *l = label; n && *l; l++)
            if (strncmp(l, at, n) == 0) return true;
        at += n + (end != NULL);
    }
    return false;
}

/* One dispatch of pipeline `pipe` (its `variant`, or specialised by
 * `special` when that is not NULL, or `given` when that is not null); `work`, when given, is a split's work
 * area, whose counters and partials are tracked as written (the counters
 * are not an argument of their own, and whichever argument carries the
 * partials, the kernel writes them). */
static nn_status dispatch(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, int variant, const uint32_t *special,
                          VkPipeline given, const nn_buffer_ref *args, int nargs, unsigned written,
                          const vk_split_work *work, vk_push_ref push, uint32_t gx, uint32_t gy, uint32_t gz) {
    if (nargs > (int)vk->arg_bindings)
        return nn_set_error(NN_ERR_BACKEND, "vulkan %s: %d buffer arguments; kernels on this device bind at most %u",
                            nn_kernel_name(kernel), nargs, vk->arg_bindings);
    if (nargs > (int)push.offsets || push.bytes > VK_PUSH_BYTES)
        return nn_set_error(NN_ERR_BACKEND, "vulkan %s: %d arguments and %zu bytes of push constants for a block of "
                            "%u offsets (at most %d bytes)", nn_kernel_name(kernel), nargs, push.bytes, push.offsets,
                            VK_PUSH_BYTES);
    if (vk->labels && !vk->profile_label[0])
        snprintf(vk->profile_label, sizeof vk->profile_label, "%s", nn_kernel_name(kernel));
    vk_access accesses[VK_ARG_BINDINGS + 2];
    int access_count = 0;
    for (int i = 0; i < nargs; i++)
        if (args[i].buffer) accesses[access_count++] = vk_access_of(args[i], (written >> i) & 1u);
    if (work) {
        accesses[access_count++] = work->counter_access;
        accesses[access_count++] = vk_access_of(work->partials, true);
    }
    uint32_t words[VK_PUSH_BYTES / 4] = {0};
    memcpy(words, push.data, push.bytes);
    uint32_t blocks[VK_ARG_BINDINGS] = {0};
    uint32_t fallback = 0;
    for (int i = 0; i < nargs; i++)
        if (args[i].buffer) {
            fallback = args[i].buffer->block->id;
            break;
        }
    for (int i = 0; i < VK_ARG_BINDINGS; i++) {
        if (i >= nargs || !args[i].buffer) {
            blocks[i] = fallback; /* unused by the shader; any valid block */
            if (i < nargs) words[i] = 0;
            continue;
        }
        VkDeviceSize byte = args[i].buffer->offset + args[i].offset;
        if (byte % 4 != 0)
            return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: argument %d is at byte offset %zu, not a multiple of 4",
                                nn_kernel_name(kernel), i, args[i].offset);
        blocks[i] = args[i].buffer->block->id;
        words[i] = (uint32_t)(byte / 4);
    }
    VkPipeline pipeline;
    VkDescriptorSet set;
    VkCommandBuffer cmd;
    if (given) pipeline = given;
    else if (special) NN_TRY(vk_pipeline_special(vk, pipe, special, &pipeline));
    else NN_TRY(vk_pipeline_get(vk, pipe, variant, &pipeline));
    NN_TRY(vk_descriptor_set(vk, blocks, &set));
    NN_TRY(vk_begin_command(vk, accesses, access_count, &cmd));
    vk->fn.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    vk->fn.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, vk->pipeline_layout, 0, 1, &set, 0, NULL);
    vk->fn.vkCmdPushConstants(cmd, vk->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, (uint32_t)push.bytes, words);
    if (vk->skip[0] && skipped(vk->skip, vk->profile_label)) gx = gy = gz = 0;
    vk->fn.vkCmdDispatch(cmd, gx, gy, gz);
    if (vk->trace) { /* the groups, after the name vk_end_command prints */
        size_t used = strlen(vk->profile_label);
        snprintf(vk->profile_label + used, sizeof vk->profile_label - used, " (groups %u x %u x %u)", gx, gy, gz);
    }
    return vk_end_command(vk);
}

nn_status vk_record(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, int variant, const nn_buffer_ref *args,
                    int nargs, vk_push_ref push, uint32_t gx, uint32_t gy, uint32_t gz) {
    return dispatch(vk, kernel, pipe, variant, NULL, VK_NULL_HANDLE, args, nargs, nn_kernel_written_args(kernel), NULL,
                    push, gx, gy, gz);
}

nn_status vk_record_ex(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, int variant, const nn_buffer_ref *args,
                       int nargs, unsigned written, vk_push_ref push, uint32_t gx, uint32_t gy, uint32_t gz) {
    return dispatch(vk, kernel, pipe, variant, NULL, VK_NULL_HANDLE, args, nargs, written, NULL, push, gx, gy, gz);
}

nn_status vk_record_split(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, int variant,
                          const nn_buffer_ref *args, int nargs, unsigned written, const vk_split_work *work,
                          vk_push_ref push, uint32_t gx, uint32_t gy, uint32_t gz) {
    return dispatch(vk, kernel, pipe, variant, NULL, VK_NULL_HANDLE, args, nargs, written, work, push, gx, gy, gz);
}

nn_status vk_record_special(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe,
                            const uint32_t constants[VK_SPECIAL_CONSTANTS], const nn_buffer_ref *args, int nargs,
                            const vk_split_work *work, vk_push_ref push, uint32_t gx, uint32_t gy, uint32_t gz) {
    return dispatch(vk, kernel, pipe, 0, constants, VK_NULL_HANDLE, args, nargs, nn_kernel_written_args(kernel), work,
                    push, gx, gy, gz);
}

nn_status vk_record_pipeline(vk_backend *vk, nn_kernel kernel, VkPipeline pipeline, const nn_buffer_ref *args,
                             int nargs, unsigned written, vk_push_ref push, uint32_t gx, uint32_t gy, uint32_t gz) {
    return dispatch(vk, kernel, 0, 0, NULL, pipeline, args, nargs, written, NULL, push, gx, gy, gz);
}
