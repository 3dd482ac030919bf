/* Device memory: large device-local blocks, each carved into sub-buffers by
 * a first-fit free list with merging. A training step frees and allocates
 * the same sizes every step, so after the first step allocation is a list
 * walk and free a list insert, with no Vulkan call. Freed ranges may be
 * handed out again at once even though recorded commands still use them:
 * every command is ordered after all earlier ones by a barrier
 * (vk_stream.c), and uploads go through the same queue, so a later user
 * of a range can never overtake an earlier one. Blocks are kept until the
 * backend is destroyed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "vk_backend.h"
#include "vk_host_memory.h"

#define ALIGNMENT 256 /* sub-buffer alignment: >= any minStorageBufferOffsetAlignment */
#define DEFAULT_BLOCK_BYTES ((VkDeviceSize)256 << 20)

static VkDeviceSize round_up(VkDeviceSize x, VkDeviceSize unit) { return (x + unit - 1) / unit * unit; }

static int find_memory_type(const vk_backend *vk, uint32_t allowed, VkMemoryPropertyFlags want,
                            VkMemoryPropertyFlags avoid) {
    for (uint32_t i = 0; i < vk->memory_props.memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = vk->memory_props.memoryTypes[i].propertyFlags;
        if ((allowed & (1u << i)) && (f & want) == want && !(f & avoid)) return (int)i;
    }
    return -1;
}

/* A buffer with its own memory of a type having `want` (preferring one
 * without `avoid`). */
static nn_status create_buffer(vk_backend *vk, VkDeviceSize size, VkBufferUsageFlags usage,
                               VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid,
                               VkBuffer *buffer, VkDeviceMemory *memory) {
    /* Every failure leaves both handles null: callers destroy what is not
     * null, so a handle destroyed here and kept would be destroyed twice. */
    *buffer = VK_NULL_HANDLE;
    *memory = VK_NULL_HANDLE;
    VkBufferCreateInfo info = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = size,
                               .usage = usage, .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VkResult r = vk->fn.vkCreateBuffer(vk->device, &info, NULL, buffer);
    if (r != VK_SUCCESS) {
        *buffer = VK_NULL_HANDLE;
        return nn_set_error(NN_ERR_MEMORY, "vulkan: vkCreateBuffer of %llu bytes failed (%s)",
                            (unsigned long long)size, nn_vk_result_name(r));
    }
    VkMemoryRequirements req;
    vk->fn.vkGetBufferMemoryRequirements(vk->device, *buffer, &req);
    int type = find_memory_type(vk, req.memoryTypeBits, want, avoid);
    if (type < 0) type = find_memory_type(vk, req.memoryTypeBits, want, 0);
    if (type < 0) {
        vk->fn.vkDestroyBuffer(vk->device, *buffer, NULL);
        *buffer = VK_NULL_HANDLE;
        return nn_set_error(NN_ERR_BACKEND, "vulkan: no memory type with flags 0x%x for a buffer", want);
    }
    VkMemoryAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                  .allocationSize = req.size, .memoryTypeIndex = (uint32_t)type};
    r = vk->fn.vkAllocateMemory(vk->device, &alloc, NULL, memory);
    if (r == VK_SUCCESS) r = vk->fn.vkBindBufferMemory(vk->device, *buffer, *memory, 0);
    else *memory = VK_NULL_HANDLE;
    if (r != VK_SUCCESS) {
        if (*memory) vk->fn.vkFreeMemory(vk->device, *memory, NULL);
        vk->fn.vkDestroyBuffer(vk->device, *buffer, NULL);
        *buffer = VK_NULL_HANDLE;
        *memory = VK_NULL_HANDLE;
        const uint32_t heap = vk->memory_props.memoryTypes[type].heapIndex;
        return nn_set_error(NN_ERR_MEMORY, "vulkan: out of device memory allocating %llu bytes in memory heap %u of "
                            "%llu bytes (%s)", (unsigned long long)req.size, heap,
                            (unsigned long long)vk->memory_props.memoryHeaps[heap].size, nn_vk_result_name(r));
    }
    return NN_OK;
}

nn_status vk_host_buffer_create(vk_backend *vk, VkDeviceSize size, VkBufferUsageFlags usage,
                                vk_host_buffer *out) {
    memset(out, 0, sizeof *out);
    /* Coherent means no flushes; cached reads back faster where there is one. */
    const VkMemoryPropertyFlags coherent = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    if (create_buffer(vk, size, usage, coherent | VK_MEMORY_PROPERTY_HOST_CACHED_BIT, 0, &out->buffer,
                      &out->memory) != NN_OK) {
        NN_TRY(create_buffer(vk, size, usage, coherent, 0, &out->buffer, &out->memory));
        nn_clear_error(); /* the first try's message is not an error any more */
    }
    VkResult r = vk->fn.vkMapMemory(vk->device, out->memory, 0, VK_WHOLE_SIZE, 0, &out->mapped);
    if (r != VK_SUCCESS) {
        vk_host_buffer_destroy(vk, out);
        return nn_set_error(NN_ERR_BACKEND, "vulkan: vkMapMemory failed (%s)", nn_vk_result_name(r));
    }
    out->size = size;
    return NN_OK;
}

void vk_host_buffer_destroy(vk_backend *vk, vk_host_buffer *hb) {
    if (hb->buffer) vk->fn.vkDestroyBuffer(vk->device, hb->buffer, NULL);
    if (hb->memory) vk->fn.vkFreeMemory(vk->device, hb->memory, NULL);
    memset(hb, 0, sizeof *hb);
}

nn_status vk_memory_init(vk_backend *vk) {
    vk->vi->fns.vkGetPhysicalDeviceMemoryProperties(vk->phys->handle, &vk->memory_props);
    vk->max_range = vk->phys->props.limits.maxStorageBufferRange;
    /* Blocks as large as one binding may be, up to 256 MiB, and at most an
     * eighth of device-local memory (small GPUs). */
    VkDeviceSize size = DEFAULT_BLOCK_BYTES;
    if (size > vk->max_range) size = vk->max_range / ALIGNMENT * ALIGNMENT;
    if (vk->phys->device_local_bytes && size > vk->phys->device_local_bytes / 8)
        size = round_up(vk->phys->device_local_bytes / 8, ALIGNMENT);
    vk->block_size = size;
    return NN_OK;
}

static void free_ranges(vk_range *r) {
    while (r) {
        vk_range *next = r->next;
        free(r);
        r = next;
    }
}

void vk_memory_destroy(vk_backend *vk) {
    for (uint32_t i = 0; i < vk->block_count; i++) {
        vk_block *b = vk->blocks[i];
        if (!b) continue; /* an imported block already given back */
        vk->fn.vkDestroyBuffer(vk->device, b->buffer, NULL);
        vk->fn.vkFreeMemory(vk->device, b->memory, NULL);
        free_ranges(b->free_list);
        free(b);
    }
    free(vk->blocks);
    vk->blocks = NULL;
    vk->block_count = vk->block_capacity = 0;
}

nn_status vk_block_table_reserve(vk_backend *vk) {
    if (vk->block_count < vk->block_capacity) return NN_OK;
    uint32_t cap = vk->block_capacity ? vk->block_capacity * 2 : 16;
    vk_block **grown = realloc(vk->blocks, cap * sizeof *grown);
    if (!grown) return nn_set_error(NN_ERR_MEMORY, "vulkan: out of host memory");
    vk->blocks = grown;
    vk->block_capacity = cap;
    return NN_OK;
}

static vk_block *new_block(vk_backend *vk, VkDeviceSize size) {
    if (vk_block_table_reserve(vk) != NN_OK) return NULL;
    vk_block *b = calloc(1, sizeof *b);
    vk_range *all = calloc(1, sizeof *all);
    if (!b || !all) {
        free(b);
        free(all);
        return NN_FAIL_NULL(NN_ERR_MEMORY, "vulkan: out of host memory");
    }
    /* Past the device-local memory, drivers that spill to host memory
     * (lavapipe is host memory) grow until the kernel kills the process. */
    const uint64_t device = vk->phys->device_local_bytes;
    if (device && (size > device || vk->block_bytes > device - size)) {
        free(b);
        free(all);
        return NN_FAIL_NULL(NN_ERR_MEMORY, "vulkan: out of device memory: a block of %llu bytes with the %llu bytes "
                            "in blocks exceeds the device-local heap of %llu bytes", (unsigned long long)size,
                            (unsigned long long)vk->block_bytes, (unsigned long long)device);
    }
    VkBufferUsageFlags usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    if (create_buffer(vk, size, usage, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, &b->buffer, &b->memory) != NN_OK) {
        free(b);
        free(all);
        return NULL;
    }
    b->size = size;
    vk->block_bytes += size;
    all->size = size;
    b->free_list = all;
    b->id = vk->block_count;
    vk->blocks[vk->block_count++] = b;
    return b;
}

/* First fit in one block; returns the offset or -1. */
static int64_t take_range(vk_block *b, VkDeviceSize size) {
    vk_range **link = &b->free_list;
    for (vk_range *r = b->free_list; r; link = &r->next, r = r->next) {
        if (r->size < size) continue;
        VkDeviceSize offset = r->offset;
        r->offset += size;
        r->size -= size;
        if (r->size == 0) {
            *link = r->next;
            free(r);
        }
        return (int64_t)offset;
    }
    return -1;
}

nn_buffer *vk_buffer_alloc(nn_backend *self, size_t bytes) {
    vk_backend *vk = as_vk(self);
    VkDeviceSize size = round_up(bytes ? bytes : 4, ALIGNMENT);
    if (size > vk->max_range)
        return NN_FAIL_NULL(NN_ERR_MEMORY,
                            "vulkan: a buffer of %zu bytes is larger than this device binds "
                            "(maxStorageBufferRange %llu bytes on %s)",
                            bytes, (unsigned long long)vk->max_range, vk->phys->props.deviceName);
    nn_buffer *buffer = calloc(1, sizeof *buffer);
    if (!buffer) return NN_FAIL_NULL(NN_ERR_MEMORY, "vulkan: out of host memory");
    int64_t offset = -1;
    vk_block *block = NULL;
    for (uint32_t i = 0; i < vk->block_count && offset < 0; i++) {
        if (!vk->blocks[i] || vk->blocks[i]->imported) continue;
        offset = take_range(vk->blocks[i], size);
        if (offset >= 0) block = vk->blocks[i];
    }
    if (offset < 0) {
        block = new_block(vk, size > vk->block_size ? size : vk->block_size);
        if (!block) {
            free(buffer);
            return NULL;
        }
        offset = take_range(block, size);
    }
    buffer->block = block;
    buffer->offset = (VkDeviceSize)offset;
    buffer->reserved = size;
    buffer->bytes = bytes;
    vk->bytes_in_use += size;
    if (vk->bytes_in_use > vk->peak_in_use) vk->peak_in_use = vk->bytes_in_use;
    return buffer;
}

void vk_memory_stats(nn_backend *self, uint64_t *current, uint64_t *peak, uint64_t *reserved) {
    vk_backend *vk = as_vk(self);
    *current = vk->bytes_in_use;
    *peak = vk->peak_in_use;
    *reserved = vk->block_bytes;
}

void vk_buffer_free(nn_backend *self, nn_buffer *buffer) {
    if (!buffer) return;
    if (buffer->block->imported) {
        vk_imported_free(as_vk(self), buffer);
        return;
    }
    vk_block *b = buffer->block;
    VkDeviceSize start = buffer->offset, size = buffer->reserved;
    as_vk(self)->bytes_in_use -= size;
    free(buffer);
    /* Insert in offset order, merging with the neighbours it touches. */
    vk_range *prev = NULL, *next = b->free_list;
    while (next && next->offset < start) {
        prev = next;
        next = next->next;
    }
    bool joins_prev = prev && prev->offset + prev->size == start;
    bool joins_next = next && start + size == next->offset;
    if (joins_prev) {
        prev->size += size;
        if (joins_next) {
            prev->size += next->size;
            prev->next = next->next;
            free(next);
        }
        return;
    }
    if (joins_next) {
        next->offset = start;
        next->size += size;
        return;
    }
    vk_range *r = malloc(sizeof *r);
    if (!r) return; /* out of host memory: the range stays unused, nothing breaks */
    r->offset = start;
    r->size = size;
    r->next = next;
    if (prev) prev->next = r;
    else b->free_list = r;
}
