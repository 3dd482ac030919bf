/* Imported host memory (vk_host_memory.h). An imported buffer is a block of
 * its own in the backend's block table (kernels bind blocks), never handed
 * out by the allocator and not counted as device memory. */
#include "vk_host_memory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "vk_probe.h"

const char *vk_host_memory_extension(const nn_vk_instance *vi, const nn_vk_physical *phys) {
    /* External memory is core from Vulkan 1.1, which the import needs. */
    if (phys->props.apiVersion < VK_API_VERSION_1_1 || vi->api_version < VK_API_VERSION_1_1) return NULL;
    return nn_vk_device_has_extension(vi, phys->handle, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME)
               ? VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME : NULL;
}

void vk_host_memory_init(vk_backend *vk) {
    PFN_vkGetPhysicalDeviceProperties2 props2 = (PFN_vkGetPhysicalDeviceProperties2)
        vk->vi->loader->vkGetInstanceProcAddr(vk->vi->instance, "vkGetPhysicalDeviceProperties2");
    vk->host_pointer_properties = (PFN_vkGetMemoryHostPointerPropertiesEXT)vk->vi->fns.vkGetDeviceProcAddr(
        vk->device, "vkGetMemoryHostPointerPropertiesEXT");
    if (!props2 || !vk->host_pointer_properties) return;
    VkPhysicalDeviceExternalMemoryHostPropertiesEXT host = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &host};
    props2(vk->phys->handle, &p2);
    if (host.minImportedHostPointerAlignment == 0) return;
    vk->base.import_host = vk_buffer_import_host;
    vk->base.host_import_alignment = (size_t)host.minImportedHostPointerAlignment;
}

static nn_buffer *import_failed(vk_backend *vk, vk_block *b, nn_buffer *buffer, const char *call, VkResult r) {
    free(buffer);
    if (b->buffer) vk->fn.vkDestroyBuffer(vk->device, b->buffer, NULL);
    if (b->memory) vk->fn.vkFreeMemory(vk->device, b->memory, NULL);
    free(b);
    return NN_FAIL_NULL(NN_ERR_BACKEND, "vulkan: importing host memory on %s: %s failed (%s)",
                        vk->phys->props.deviceName, call, nn_vk_result_name(r));
}

nn_buffer *vk_buffer_import_host(nn_backend *self, void *host, size_t bytes) {
    vk_backend *vk = as_vk(self);
    const size_t align = self->host_import_alignment;
    if (!host || bytes == 0 || (uintptr_t)host % align != 0 || bytes % align != 0)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "vulkan: host memory to import must be %zu-byte aligned in address "
                            "and size, got %p and %zu bytes", align, host, bytes);
    if (bytes > vk->max_range)
        return NN_FAIL_NULL(NN_ERR_MEMORY, "vulkan: %zu bytes of host memory are more than %s binds (%llu)", bytes,
                            vk->phys->props.deviceName, (unsigned long long)vk->max_range);
    const VkExternalMemoryHandleTypeFlagBits type = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
    VkMemoryHostPointerPropertiesEXT pointer = {.sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
    vk_block *b = calloc(1, sizeof *b);
    nn_buffer *buffer = calloc(1, sizeof *buffer);
    if (!b || !buffer) {
        free(b);
        free(buffer);
        return NN_FAIL_NULL(NN_ERR_MEMORY, "vulkan: out of host memory");
    }
    b->imported = true;
    b->size = bytes;
    VkResult r = vk->host_pointer_properties(vk->device, type, host, &pointer);
    if (r != VK_SUCCESS) return import_failed(vk, b, buffer, "vkGetMemoryHostPointerPropertiesEXT", r);
    VkExternalMemoryBufferCreateInfo external = {.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
                                                 .handleTypes = type};
    VkBufferCreateInfo info = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .pNext = &external, .size = bytes,
                               .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                        VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                               .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    r = vk->fn.vkCreateBuffer(vk->device, &info, NULL, &b->buffer);
    if (r != VK_SUCCESS) return import_failed(vk, b, buffer, "vkCreateBuffer", r);
    VkMemoryRequirements req;
    vk->fn.vkGetBufferMemoryRequirements(vk->device, b->buffer, &req);
    const uint32_t types = req.memoryTypeBits & pointer.memoryTypeBits;
    uint32_t chosen = UINT32_MAX;
    for (uint32_t i = 0; i < vk->memory_props.memoryTypeCount && chosen == UINT32_MAX; i++)
        if (types & (1u << i)) chosen = i;
    if (chosen == UINT32_MAX)
        return import_failed(vk, b, buffer, "finding a memory type", VK_ERROR_FEATURE_NOT_PRESENT);
    VkImportMemoryHostPointerInfoEXT import = {.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT,
                                               .handleType = type, .pHostPointer = host};
    VkMemoryAllocateInfo allocate = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .pNext = &import,
                                     .allocationSize = bytes, .memoryTypeIndex = chosen};
    r = vk->fn.vkAllocateMemory(vk->device, &allocate, NULL, &b->memory);
    if (r != VK_SUCCESS) return import_failed(vk, b, buffer, "vkAllocateMemory", r);
    r = vk->fn.vkBindBufferMemory(vk->device, b->buffer, b->memory, 0);
    if (r != VK_SUCCESS) return import_failed(vk, b, buffer, "vkBindBufferMemory", r);
    if (vk_block_table_reserve(vk) != NN_OK)
        return import_failed(vk, b, buffer, "registering the block", VK_ERROR_OUT_OF_HOST_MEMORY);
    b->id = vk->block_count;
    vk->blocks[vk->block_count++] = b;
    *buffer = (nn_buffer){.block = b, .offset = 0, .reserved = 0, .bytes = bytes};
    return buffer;
}

void vk_imported_free(vk_backend *vk, nn_buffer *buffer) {
    vk_block *b = buffer->block;
    vk_finish(vk); /* work in flight may still touch the memory */
    vk->fn.vkDestroyBuffer(vk->device, b->buffer, NULL);
    vk->fn.vkFreeMemory(vk->device, b->memory, NULL);
    vk->blocks[b->id] = NULL; /* ids are never reused: cached descriptor sets name blocks by id */
    free(b);
    free(buffer);
}
