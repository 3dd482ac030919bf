/* A custom kernel on Vulkan (include/nn_custom.h): its SPIR-V built into a
 * pipeline of the shared layout on first use, then dispatched as the
 * library's kernels are, with its push constants laid out as the prelude
 * declares them (backends/custom_kernels.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/custom_kernels.h"
#include "base/error.h"
#include "vk_backend.h"

/* The prelude's NN_Push block. */
typedef struct custom_push {
    uint32_t off[8]; /* written by the dispatch */
    uint32_t len[8];
    uint32_t grid[3];
    uint32_t kernel;
    uint32_t params[12];
} custom_push;
_Static_assert(sizeof(custom_push) == VK_PUSH_BYTES, "the prelude's push constants fill the 128 bytes");

static nn_status custom_pipeline(vk_backend *vk, const nn_custom_kernel *k, VkPipeline *out) {
    const uint32_t id = (uint32_t)k->id;
    if (id >= vk->custom_capacity) {
        uint32_t cap = vk->custom_capacity ? vk->custom_capacity : 16;
        while (cap <= id) cap *= 2;
        VkPipeline *grown = realloc(vk->custom_pipelines, cap * sizeof *grown);
        if (!grown) return nn_set_error(NN_ERR_MEMORY, "vulkan: out of host memory");
        memset(grown + vk->custom_capacity, 0, (cap - vk->custom_capacity) * sizeof *grown);
        vk->custom_pipelines = grown;
        vk->custom_capacity = cap;
    }
    if (!vk->custom_pipelines[id])
        NN_TRY(vk_pipeline_build(vk, k->name, k->name, k->spirv, k->spirv_bytes, NULL, 0,
                                 &vk->custom_pipelines[id]));
    *out = vk->custom_pipelines[id];
    return NN_OK;
}

void vk_custom_destroy(vk_backend *vk) {
    for (uint32_t i = 0; i < vk->custom_capacity; i++)
        if (vk->custom_pipelines[i]) vk->fn.vkDestroyPipeline(vk->device, vk->custom_pipelines[i], NULL);
    free(vk->custom_pipelines);
    vk->custom_pipelines = NULL;
    vk->custom_capacity = 0;
}

nn_status vk_run_custom(vk_backend *vk, const nn_custom_params *p, const nn_buffer_ref *a) {
    const nn_custom_kernel *k = nn_custom_kernel_find(p->id);
    if (!k) return nn_set_error(NN_ERR_STATE, "vulkan custom kernel #%d: the kernel was freed", (int)p->id);
    if (!k->spirv)
        return nn_set_error(NN_ERR_BACKEND, "vulkan: custom kernel %s has no shader (nn_custom_kernel_desc.glsl or "
                            ".spirv)", k->name);
    uint32_t groups[3];
    for (int d = 0; d < 3; d++) {
        groups[d] = (uint32_t)(((uint64_t)p->grid[d] + k->local_size[d] - 1) / k->local_size[d]);
        if (groups[d] > VK_MAX_GROUPS)
            return nn_set_error(NN_ERR_ARGUMENT, "vulkan: custom kernel %s: grid %u in dimension %d needs %u "
                                "workgroups of %u; at most %u (loop inside the shader over the rest)", k->name,
                                p->grid[d], d, groups[d], k->local_size[d], VK_MAX_GROUPS);
    }
    custom_push push = {.kernel = (uint32_t)k->id};
    for (int i = 0; i < NN_CUSTOM_MAX_BUFFERS; i++) {
        if (!a[i].buffer) continue;
        const vk_access span = vk_access_of(a[i], false); /* the argument's extent */
        const int64_t words = (int64_t)((span.end - span.begin) / 4);
        NN_TRY(vk_fits32(NN_KERNEL_CUSTOM, "a buffer's elements", words));
        push.len[i] = (uint32_t)words;
    }
    memcpy(push.grid, p->grid, sizeof push.grid);
    memcpy(push.params, p->params, p->params_size < sizeof push.params ? p->params_size : sizeof push.params);
    VkPipeline pipeline = VK_NULL_HANDLE;
    NN_TRY(custom_pipeline(vk, k, &pipeline));
    if (vk->labels) snprintf(vk->profile_label, sizeof vk->profile_label, "custom %.56s", k->name);
    return vk_record_pipeline(vk, NN_KERNEL_CUSTOM, pipeline, a, NN_CUSTOM_MAX_BUFFERS, p->written,
                              (vk_push_ref){&push, sizeof push, 8}, groups[0], groups[1], groups[2]);
}
