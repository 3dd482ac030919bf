/* Pipelines and descriptor sets. Every kernel shares one layout: bindings
 * 0-7 are its buffer arguments (whole memory blocks; tensors are addressed
 * by element offsets in the push constants), binding 8 the status buffer,
 * and up to 128 bytes of push constants. A pipeline is built from the
 * embedded SPIR-V the first time its kernel runs. Since bindings are whole
 * blocks, a descriptor set depends only on which blocks a kernel touches:
 * sets are made once per combination and kept, so recording a kernel
 * writes no descriptors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "vk_backend.h"
#include "vk_pipeline_list.h"
#include "platform/files.h"

#define MAX_SETS 4096

typedef struct pipeline_spec {
    const char *shader;
    const char *kernel; /* for messages */
    uint32_t spec[7];   /* GEMM: BM, BN, BK, TM, TN, workgroup size, double-buffered */
} pipeline_spec;

static const pipeline_spec kSpecs[VK_PIPE_COUNT] = {
#define VK_PIPELINE_SPEC(ID, shader, kernel, ...) [VK_PIPE_##ID] = {#shader, kernel, {__VA_ARGS__}},
    VK_PIPELINE_LIST(VK_PIPELINE_SPEC)
#undef VK_PIPELINE_SPEC
};

typedef struct vk_special_pipeline {
    vk_pipeline_id id;
    uint32_t constants[VK_SPECIAL_CONSTANTS];
    VkPipeline pipeline;
} vk_special_pipeline;

/* The shared memory a GEMM tile's slices take (0: not a tile). */
static uint32_t tile_shared_bytes(const pipeline_spec *spec) {
    if (!spec->spec[0]) return 0;
    const uint32_t bm = spec->spec[0], bn = spec->spec[1], bk = spec->spec[2], slices = 1 + spec->spec[6];
    if (strcmp(spec->shader, "gemm_coopmat") == 0 || strcmp(spec->shader, "conv_gemm_coopmat") == 0) {
        /* fp16 slices in either layout, and the output squares (which hold the weight gradient's slice pixels) */
        const uint32_t a = bm * (bk + 8) > bk * (bm + 8) ? bm * (bk + 8) : bk * (bm + 8);
        const uint32_t b = bn * (bk + 8) > bk * (bn + 8) ? bn * (bk + 8) : bk * (bn + 8);
        return slices * (a + b) * 2 + spec->spec[5] / 32 * 16 * 16 * 4;
    }
    /* conv_gemm.comp: the weight gradient's slice pixels too, two slices of 16 bytes each */
    const uint32_t pixels = strcmp(spec->shader, "conv_gemm") == 0 ? 2 * bk * 16 : 0;
    return slices * bk * (bm + bn + 8) * 4 + pixels;
}

bool vk_tile_fits(const vk_backend *vk, vk_pipeline_id id) {
    return tile_shared_bytes(&kSpecs[id]) <= vk->phys->props.limits.maxComputeSharedMemorySize;
}

void vk_gemm_tiles(vk_pipeline_id id, uint32_t *bm, uint32_t *bn, uint32_t *bk) {
    *bm = kSpecs[id].spec[0];
    *bn = kSpecs[id].spec[1];
    *bk = kSpecs[id].spec[2];
}

nn_status vk_pipelines_init(vk_backend *vk) {
    /* Every kernel's set: its arguments and the status buffer. */
    const VkPhysicalDeviceLimits *limits = &vk->phys->props.limits;
    uint32_t limit = limits->maxPerStageDescriptorStorageBuffers;
    if (limits->maxDescriptorSetStorageBuffers < limit) limit = limits->maxDescriptorSetStorageBuffers;
    if (limit < VK_BASE_ARG_BINDINGS + 1)
        return nn_set_error(NN_ERR_BACKEND, "vulkan: %s binds %u storage buffers per kernel; the kernels need %d",
                            vk->phys->props.deviceName, limit, VK_BASE_ARG_BINDINGS + 1);
    vk->arg_bindings = limit - 1 < VK_ARG_BINDINGS ? limit - 1 : VK_ARG_BINDINGS;
    VkDescriptorSetLayoutBinding bindings[VK_ARG_BINDINGS + 1];
    for (uint32_t i = 0; i <= vk->arg_bindings; i++)
        bindings[i] = (VkDescriptorSetLayoutBinding){.binding = i < vk->arg_bindings ? vk_arg_binding(i)
                                                                                     : VK_STATUS_BINDING,
                                                     .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                     .descriptorCount = 1,
                                                     .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo set_info = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                                .bindingCount = vk->arg_bindings + 1, .pBindings = bindings};
    VkResult r = vk->fn.vkCreateDescriptorSetLayout(vk->device, &set_info, NULL, &vk->set_layout);
    if (r == VK_SUCCESS) {
        VkPushConstantRange push = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = VK_PUSH_BYTES};
        VkPipelineLayoutCreateInfo info = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                           .setLayoutCount = 1, .pSetLayouts = &vk->set_layout,
                                           .pushConstantRangeCount = 1, .pPushConstantRanges = &push};
        r = vk->fn.vkCreatePipelineLayout(vk->device, &info, NULL, &vk->pipeline_layout);
    }
    if (r == VK_SUCCESS) {
        VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, MAX_SETS * (VK_ARG_BINDINGS + 1)};
        VkDescriptorPoolCreateInfo info = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                           .maxSets = MAX_SETS, .poolSizeCount = 1, .pPoolSizes = &size};
        r = vk->fn.vkCreateDescriptorPool(vk->device, &info, NULL, &vk->set_pool);
    }
    if (r != VK_SUCCESS)
        return nn_set_error(NN_ERR_BACKEND, "vulkan: creating the pipeline layout failed (%s)",
                            nn_vk_result_name(r));
    return NN_OK;
}

/* Every handle is cleared as it goes: an open that failed part way and
 * the backend's destroy may both come here. */
void vk_pipelines_destroy(vk_backend *vk) {
    for (int i = 0; i < VK_PIPE_COUNT; i++)
        for (int v = 0; v < VK_PIPE_VARIANTS; v++) {
            if (vk->pipelines[i][v]) vk->fn.vkDestroyPipeline(vk->device, vk->pipelines[i][v], NULL);
            vk->pipelines[i][v] = VK_NULL_HANDLE;
        }
    for (uint32_t i = 0; i < vk->special_count; i++) vk->fn.vkDestroyPipeline(vk->device, vk->specials[i].pipeline, NULL);
    free(vk->specials);
    vk->specials = NULL;
    vk->special_count = vk->special_capacity = 0;
    if (vk->set_pool) vk->fn.vkDestroyDescriptorPool(vk->device, vk->set_pool, NULL);
    if (vk->pipeline_layout) vk->fn.vkDestroyPipelineLayout(vk->device, vk->pipeline_layout, NULL);
    if (vk->set_layout) vk->fn.vkDestroyDescriptorSetLayout(vk->device, vk->set_layout, NULL);
    vk->set_pool = VK_NULL_HANDLE;
    vk->pipeline_layout = VK_NULL_HANDLE;
    vk->set_layout = VK_NULL_HANDLE;
    free(vk->sets);
    vk->sets = NULL;
}

static const nn_vk_shader *find_shader(const char *name) {
    for (int i = 0; i < nn_vk_shader_count; i++)
        if (strcmp(nn_vk_shaders[i].name, name) == 0) return &nn_vk_shaders[i];
    return NULL;
}

bool vk_shader_built(const char *name) { return find_shader(name) != NULL; }

/* NN_ENGINE_VULKAN_SHADER_DIR=DIR (for shader work): DIR/<shader>.spv, where
 * present, replaces the built-in SPIR-V, so variants of a shader can be
 * timed on a machine without a shader compiler. Returns NULL (and the
 * built-in shader is used) when unset or absent; *size is in bytes. */
static uint32_t *shader_override(const char *name, size_t *size) {
    const char *dir = getenv("NN_ENGINE_VULKAN_SHADER_DIR");
    if (!dir || !*dir) return NULL;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.spv", dir, name);
    FILE *f = nn_file_fopen(path, "rb");
    if (!f) return NULL;
    uint32_t *code = NULL;
    long bytes = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (bytes > 0 && bytes % 4 == 0 && fseek(f, 0, SEEK_SET) == 0 && (code = malloc((size_t)bytes)) &&
        fread(code, 1, (size_t)bytes, f) != (size_t)bytes) {
        free(code);
        code = NULL;
    }
    fclose(f);
    if (code) fprintf(stderr, "nn-engine: NN_ENGINE_VULKAN_SHADER_DIR: shader %s from %s\n", name, path);
    *size = (size_t)bytes;
    return code;
}

nn_status vk_pipeline_build(vk_backend *vk, const char *kernel, const char *shader, const uint32_t *code,
                            size_t bytes, const uint32_t *constants, uint32_t count, VkPipeline *out) {
    VkShaderModuleCreateInfo module_info = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                            .codeSize = bytes, .pCode = code};
    VkShaderModule module;
    VkResult r = vk->fn.vkCreateShaderModule(vk->device, &module_info, NULL, &module);
    if (r != VK_SUCCESS)
        return nn_set_error(NN_ERR_BACKEND, "vulkan: kernel %s: the device rejects shader %s (%s)", kernel, shader,
                            nn_vk_result_name(r));
    VkSpecializationMapEntry entries[16];
    for (uint32_t i = 0; i < count; i++) entries[i] = (VkSpecializationMapEntry){i, i * 4, 4};
    VkSpecializationInfo spec_info = {.mapEntryCount = count, .pMapEntries = entries, .dataSize = count * 4,
                                      .pData = constants};
    VkComputePipelineCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT, .module = module, .pName = "main",
                  .pSpecializationInfo = count ? &spec_info : NULL},
        .layout = vk->pipeline_layout};
    if (vk->pipeline_statistics) info.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
    r = vk->fn.vkCreateComputePipelines(vk->device, VK_NULL_HANDLE, 1, &info, NULL, out);
    if (r == VK_SUCCESS) vk_pipeline_stats_print(vk, *out, shader, constants, count);
    vk->fn.vkDestroyShaderModule(vk->device, module, NULL);
    if (r != VK_SUCCESS) {
        *out = VK_NULL_HANDLE;
        return nn_set_error(NN_ERR_BACKEND, "vulkan: kernel %s: building its pipeline failed on %s (%s)", kernel,
                            vk->phys->props.deviceName, nn_vk_result_name(r));
    }
    return NN_OK;
}

/* Build the pipeline of `spec` with `count` specialization constants (0 to
 * count-1; none when count is 0). */
static nn_status build_pipeline(vk_backend *vk, const pipeline_spec *spec, const uint32_t *constants, uint32_t count,
                                VkPipeline *out) {
    const nn_vk_shader *shader = find_shader(spec->shader);
    size_t override_size = 0;
    uint32_t *override = shader_override(spec->shader, &override_size);
    if (!shader && !override)
        return nn_set_error(NN_ERR_BACKEND, "vulkan: kernel %s is missing: shader %s.comp is not built into "
                            "this library", spec->kernel, spec->shader);
    nn_status st = vk_pipeline_build(vk, spec->kernel, spec->shader,
                                     override ? override : (const uint32_t *)shader->code,
                                     override ? override_size : shader->size, constants, count, out);
    free(override);
    return st;
}

nn_status vk_pipeline_get(vk_backend *vk, vk_pipeline_id id, int variant, VkPipeline *out) {
    VkPipeline *slot = &vk->pipelines[id][variant & (VK_PIPE_VARIANTS - 1)];
    if (*slot) {
        *out = *slot;
        return NN_OK;
    }
    const pipeline_spec *spec = &kSpecs[id];
    if (!spec->shader) /* a pipeline id added without its row in kSpecs */
        return nn_set_error(NN_ERR_BACKEND, "vulkan: pipeline %d has no shader", (int)id);
    if (!vk_tile_fits(vk, id))
        return nn_set_error(NN_ERR_BACKEND, "vulkan: gemm tile %ux%ux%u needs %u bytes of shared memory; %s "
                            "has %u", spec->spec[0], spec->spec[1], spec->spec[2], tile_shared_bytes(spec),
                            vk->phys->props.deviceName, vk->phys->props.limits.maxComputeSharedMemorySize);
    uint32_t constants[11];
    memcpy(constants, spec->spec, sizeof spec->spec);
    constants[7] = (variant & 1) != 0; /* VEC_A */
    constants[8] = (variant & 2) != 0; /* VEC_B */
    /* ROUND, the operands' nn_precision (shaders/precision.glsl); gemm_coopmat.comp: TRANSPOSES;
     * conv_gemm.comp and conv_gemm_coopmat.comp: MODE; winograd.glsl: TRANSFORM */
    constants[9] = (variant >> 2) & 3;
    constants[10] = (variant >> 4) & 1; /* conv_gemm_coopmat.comp: PRELOAD */
    NN_TRY(build_pipeline(vk, spec, constants, spec->spec[0] || variant ? 11 : 0, slot));
    *out = *slot;
    return NN_OK;
}

nn_status vk_pipeline_special(vk_backend *vk, vk_pipeline_id id, const uint32_t constants[VK_SPECIAL_CONSTANTS],
                              VkPipeline *out) {
    for (uint32_t i = 0; i < vk->special_count; i++) {
        const vk_special_pipeline *e = &vk->specials[i];
        if (e->id == id && memcmp(e->constants, constants, sizeof e->constants) == 0) {
            *out = e->pipeline;
            return NN_OK;
        }
    }
    const pipeline_spec *spec = &kSpecs[id];
    if (!spec->shader) return nn_set_error(NN_ERR_BACKEND, "vulkan: pipeline %d has no shader", (int)id);
    if (vk->special_count == vk->special_capacity) {
        uint32_t cap = vk->special_capacity ? vk->special_capacity * 2 : 16;
        vk_special_pipeline *grown = realloc(vk->specials, cap * sizeof *grown);
        if (!grown) return nn_set_error(NN_ERR_MEMORY, "vulkan: out of host memory");
        vk->specials = grown;
        vk->special_capacity = cap;
    }
    vk_special_pipeline *e = &vk->specials[vk->special_count];
    NN_TRY(build_pipeline(vk, spec, constants, VK_SPECIAL_CONSTANTS, &e->pipeline));
    e->id = id;
    memcpy(e->constants, constants, sizeof e->constants);
    vk->special_count++;
    *out = e->pipeline;
    return NN_OK;
}

nn_status vk_descriptor_set(vk_backend *vk, const uint32_t blocks[VK_ARG_BINDINGS], VkDescriptorSet *out) {
    for (uint32_t i = 0; i < vk->set_count; i++) {
        if (memcmp(vk->sets[i].blocks, blocks, sizeof vk->sets[i].blocks) == 0) {
            *out = vk->sets[i].set;
            return NN_OK;
        }
    }
    if (vk->set_count == MAX_SETS)
        return nn_set_error(NN_ERR_BACKEND,
                            "vulkan: more than %d combinations of memory blocks in kernel arguments "
                            "(%u blocks allocated)", MAX_SETS, vk->block_count);
    if (vk->set_count == vk->set_capacity) {
        uint32_t cap = vk->set_capacity ? vk->set_capacity * 2 : 64;
        vk_set_entry *grown = realloc(vk->sets, cap * sizeof *grown);
        if (!grown) return nn_set_error(NN_ERR_MEMORY, "vulkan: out of host memory");
        vk->sets = grown;
        vk->set_capacity = cap;
    }
    VkDescriptorSetAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                         .descriptorPool = vk->set_pool, .descriptorSetCount = 1,
                                         .pSetLayouts = &vk->set_layout};
    VkDescriptorSet set;
    VkResult r = vk->fn.vkAllocateDescriptorSets(vk->device, &alloc, &set);
    if (r != VK_SUCCESS)
        return nn_set_error(NN_ERR_BACKEND, "vulkan: allocating a descriptor set failed (%s)", nn_vk_result_name(r));
    VkDescriptorBufferInfo infos[VK_ARG_BINDINGS + 1];
    VkWriteDescriptorSet writes[VK_ARG_BINDINGS + 1];
    for (uint32_t i = 0; i <= vk->arg_bindings; i++) {
        bool status = i == vk->arg_bindings;
        infos[i] = (VkDescriptorBufferInfo){status ? vk->status.buffer : vk->blocks[blocks[i]]->buffer, 0,
                                            VK_WHOLE_SIZE};
        writes[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = set,
                                           .dstBinding = status ? VK_STATUS_BINDING : vk_arg_binding(i),
                                           .descriptorCount = 1,
                                           .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                           .pBufferInfo = &infos[i]};
    }
    vk->fn.vkUpdateDescriptorSets(vk->device, vk->arg_bindings + 1, writes, 0, NULL);
    vk->sets[vk->set_count].set = set;
    memcpy(vk->sets[vk->set_count].blocks, blocks, sizeof vk->sets[vk->set_count].blocks);
    vk->set_count++;
    *out = set;
    return NN_OK;
}
