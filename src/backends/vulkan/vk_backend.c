/* The Vulkan backend: opening a device, and the nn_backend table's buffer
 * operations (write / read / fill / copy through the command stream). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "vk_backend.h"
#include "vk_host_memory.h"
#include "vk_matrix_cores.h"
#include "backends/registry.h"
#include "vulkan_backend.h"

static nn_status check_range(const char *fn, nn_buffer_ref ref, size_t bytes) {
    if (!ref.buffer || ref.offset > ref.buffer->bytes || bytes > ref.buffer->bytes - ref.offset)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: %zu bytes at offset %zu outside the buffer", fn, bytes,
                            ref.offset);
    if (ref.offset % 4 != 0 || bytes % 4 != 0)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: offset %zu and size %zu must be multiples of 4", fn,
                            ref.offset, bytes);
    return NN_OK;
}

static VkDeviceSize device_offset(nn_buffer_ref ref) { return ref.buffer->offset + ref.offset; }

static nn_status vk_write(nn_backend *self, nn_buffer_ref dst, const void *src, size_t bytes) {
    vk_backend *vk = as_vk(self);
    NN_TRY(check_range("write", dst, bytes));
    /* Through the staging area, in pieces as large as it allows; the copy is
     * recorded in order with the kernels, so nothing waits here. */
    for (size_t done = 0; done < bytes;) {
        size_t chunk = bytes - done;
        if (chunk > vk_staging_capacity(vk)) chunk = vk_staging_capacity(vk);
        VkDeviceSize staging_offset;
        void *host;
        NN_TRY(vk_staging_take(vk, chunk, &staging_offset, &host));
        memcpy(host, (const char *)src + done, chunk);
        nn_buffer_ref piece = {dst.buffer, dst.offset + done, chunk};
        vk_access access = vk_access_of(piece, true);
        if (vk->labels) snprintf(vk->profile_label, sizeof vk->profile_label, "write (host to device)");
        VkCommandBuffer cmd;
        NN_TRY(vk_begin_command(vk, &access, 1, &cmd));
        VkBufferCopy region = {staging_offset, device_offset(dst) + done, chunk};
        vk->fn.vkCmdCopyBuffer(cmd, vk_staging_buffer(vk), dst.buffer->block->buffer, 1, &region);
        NN_TRY(vk_end_command(vk));
        done += chunk;
    }
    return NN_OK;
}

static nn_status vk_read(nn_backend *self, nn_buffer_ref src, void *dst, size_t bytes) {
    vk_backend *vk = as_vk(self);
    NN_TRY(check_range("read", src, bytes));
    nn_status result = NN_OK;
    size_t done = 0;
    do {
        size_t chunk = bytes - done;
        if (chunk > vk_staging_capacity(vk)) chunk = vk_staging_capacity(vk);
        VkDeviceSize staging_offset;
        void *host;
        NN_TRY(vk_staging_take(vk, chunk ? chunk : 4, &staging_offset, &host));
        nn_buffer_ref piece = {src.buffer, src.offset + done, chunk ? chunk : 4};
        vk_access access = vk_access_of(piece, false);
        if (vk->labels) snprintf(vk->profile_label, sizeof vk->profile_label, "read (device to host)");
        VkCommandBuffer cmd;
        NN_TRY(vk_begin_command(vk, &access, 1, &cmd));
        if (chunk) {
            VkBufferCopy region = {device_offset(src) + done, staging_offset, chunk};
            vk->fn.vkCmdCopyBuffer(cmd, src.buffer->block->buffer, vk_staging_buffer(vk), 1, &region);
        }
        NN_TRY(vk_end_command(vk));
        /* A device-side error (a bad label) is reported, but the data is
         * still copied out, as the CPU backend leaves its NaN loss readable. */
        nn_status st = vk_finish(vk);
        if (st != NN_OK && st != NN_ERR_ARGUMENT) return st;
        if (st != NN_OK && result == NN_OK) result = st;
        memcpy((char *)dst + done, host, chunk);
        done += chunk;
    } while (done < bytes);
    return result;
}

/* A fill is a compute kernel (NN_KERNEL_FILL), not vkCmdFillBuffer: a
 * transfer command in a stream of compute work can cost a driver more than
 * a small kernel does (bench/README.md). */
static nn_status vk_fill(nn_backend *self, nn_buffer_ref dst, float value, size_t count) {
    vk_backend *vk = as_vk(self);
    NN_TRY(check_range("fill", dst, count * sizeof(float)));
    if (count == 0) return NN_OK;
    nn_fill_params p = {.count = (int64_t)count};
    memcpy(&p.bits, &value, sizeof p.bits);
    const nn_buffer_ref whole = {dst.buffer, dst.offset, count * sizeof(float)};
    if (vk->labels) snprintf(vk->profile_label, sizeof vk->profile_label, "fill");
    return vk_run(self, NN_KERNEL_FILL, &whole, 1, &p);
}

static nn_status copy_once(vk_backend *vk, nn_buffer_ref dst, nn_buffer_ref src, size_t bytes) {
    nn_buffer_ref to = {dst.buffer, dst.offset, bytes}, from = {src.buffer, src.offset, bytes};
    vk_access accesses[2] = {vk_access_of(from, false), vk_access_of(to, true)};
    if (vk->labels) snprintf(vk->profile_label, sizeof vk->profile_label, "copy");
    VkCommandBuffer cmd;
    NN_TRY(vk_begin_command(vk, accesses, 2, &cmd));
    VkBufferCopy region = {device_offset(src), device_offset(dst), bytes};
    vk->fn.vkCmdCopyBuffer(cmd, src.buffer->block->buffer, dst.buffer->block->buffer, 1, &region);
    return vk_end_command(vk);
}

static nn_status vk_copy(nn_backend *self, nn_buffer_ref dst, nn_buffer_ref src, size_t bytes) {
    vk_backend *vk = as_vk(self);
    NN_TRY(check_range("copy", dst, bytes));
    NN_TRY(check_range("copy", src, bytes));
    if (bytes == 0) return NN_OK;
    VkDeviceSize d = device_offset(dst), s = device_offset(src);
    bool overlap = dst.buffer->block == src.buffer->block && d < s + bytes && s < d + bytes;
    if (!overlap) return copy_once(vk, dst, src, bytes);
    /* vkCmdCopyBuffer forbids overlapping regions; memmove through a temporary. */
    nn_buffer *tmp = vk_scratch_alloc(vk, bytes);
    if (!tmp) return nn_last_status();
    nn_buffer_ref t = {tmp, 0, 0};
    nn_status st = copy_once(vk, t, src, bytes);
    if (st == NN_OK) st = copy_once(vk, dst, t, bytes);
    vk_scratch_done(vk, tmp);
    return st;
}

static nn_status vk_sync(nn_backend *self) { return vk_finish(as_vk(self)); }

static void vk_destroy(nn_backend *self) {
    vk_backend *vk = as_vk(self);
    if (vk->device) {
        vk->fn.vkDeviceWaitIdle(vk->device);
        vk_split_work_destroy(vk);
        vk_tune_destroy(vk);
        vk_stream_destroy(vk);
        vk_profile_destroy(vk);
        vk_custom_destroy(vk); /* custom kernels' pipelines exist only once one ran: after the open */
        vk_pipelines_destroy(vk);
        vk_memory_destroy(vk);
        vk->fn.vkDestroyDevice(vk->device, NULL);
    }
    free(vk); /* the instance is the process's: kept */
}

static atomic_int g_announced;

/* Print the device once per process: which GPU a run used is the first
 * question about any figure. */
static void announce(const vk_backend *vk, int index) {
    if (atomic_exchange(&g_announced, 1)) return;
    char api[32];
    nn_vk_version_string(vk->phys->props.apiVersion, api, sizeof api);
    fprintf(stderr, "nn-engine: Vulkan device %d: %s (%s), driver %s, Vulkan %s, %llu MiB device-local, "
            "matrix cores: %s%s\n", index, vk->phys->props.deviceName, vk->phys->kind, vk->phys->driver, api,
            (unsigned long long)(vk->phys->device_local_bytes >> 20), vk->matrix_cores ? "" : "off, ",
            vk->matrix_cores_note);
}

static nn_status open_device(vk_backend *vk) {
    float priority = 1.0f;
    VkDeviceQueueCreateInfo queue = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                     .queueFamilyIndex = vk->phys->queue_family, .queueCount = 1,
                                     .pQueuePriorities = &priority};
    VkDeviceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .queueCreateInfoCount = 1,
                               .pQueueCreateInfos = &queue};
    /* NN_ENGINE_VULKAN_MATRIX_CORES=0 leaves them off (to compare). */
    const char *cores = getenv("NN_ENGINE_VULKAN_MATRIX_CORES");
    vk->matrix_cores = false;
    if (!vk->phys->matrix_cores)
        snprintf(vk->matrix_cores_note, sizeof vk->matrix_cores_note, "%s", vk->phys->matrix_cores_note);
    else if (cores && strcmp(cores, "0") == 0)
        snprintf(vk->matrix_cores_note, sizeof vk->matrix_cores_note, "NN_ENGINE_VULKAN_MATRIX_CORES=0");
    else if (!vk_shader_built("gemm_coopmat") || !vk_shader_built("conv_gemm_coopmat"))
        snprintf(vk->matrix_cores_note, sizeof vk->matrix_cores_note,
                 "this library was built without its cooperative-matrix shaders (COOPMAT=0)");
    else {
        vk->matrix_cores = true;
        snprintf(vk->matrix_cores_note, sizeof vk->matrix_cores_note, "%s", vk->phys->matrix_cores_note);
    }
    nn_vk_matrix_core_features core_features;
    const char *extensions[3];
    const char *host_memory = vk_host_memory_extension(vk->vi, vk->phys);
    if (host_memory) extensions[info.enabledExtensionCount++] = host_memory;
    if (vk->matrix_cores) {
        info.pNext = nn_vk_matrix_core_features_chain(&core_features, NULL);
        extensions[info.enabledExtensionCount++] = core_features.extension;
    }
    /* NN_ENGINE_VULKAN_PIPELINE_STATS=1 (vk_profile.c): the driver's
     * statistics of each pipeline it builds, where it has the extension. */
    const char *stats = getenv("NN_ENGINE_VULKAN_PIPELINE_STATS");
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executables = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
        .pNext = (void *)info.pNext, .pipelineExecutableInfo = VK_TRUE};
    const bool want_stats = stats && strcmp(stats, "1") == 0;
    const void *without_stats = info.pNext;
    if (want_stats) {
        info.pNext = &executables;
        extensions[info.enabledExtensionCount++] = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
    }
    info.ppEnabledExtensionNames = extensions;
    VkResult r = vk->vi->fns.vkCreateDevice(vk->phys->handle, &info, NULL, &vk->device);
    if (want_stats && r != VK_SUCCESS) {
        fprintf(stderr, "nn-engine: NN_ENGINE_VULKAN_PIPELINE_STATS=1: %s has no %s (%s); no statistics\n",
                vk->phys->props.deviceName, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME,
                nn_vk_result_name(r));
        info.pNext = without_stats;
        info.enabledExtensionCount--;
        r = vk->vi->fns.vkCreateDevice(vk->phys->handle, &info, NULL, &vk->device);
    } else if (want_stats) {
        vk->pipeline_statistics = (PFN_vkGetPipelineExecutableStatisticsKHR)vk->vi->fns.vkGetDeviceProcAddr(
            vk->device, "vkGetPipelineExecutableStatisticsKHR");
    }
    if (r != VK_SUCCESS) {
        vk->device = VK_NULL_HANDLE;
        return nn_set_error(NN_ERR_BACKEND, "vulkan: vkCreateDevice failed on %s (%s)", vk->phys->props.deviceName,
                            nn_vk_result_name(r));
    }
    const char *missing = nn_vk_load_device_fns(&vk->vi->fns, vk->device, &vk->fn);
    if (missing) {
        /* Without vkDestroyDevice loaded we cannot clean up; leak the device. */
        vk->device = VK_NULL_HANDLE;
        return nn_set_error(NN_ERR_BACKEND, "vulkan: the driver of %s lacks %s", vk->phys->props.deviceName, missing);
    }
    vk->fn.vkGetDeviceQueue(vk->device, vk->phys->queue_family, 0, &vk->queue);
    if (host_memory) vk_host_memory_init(vk);
    NN_TRY(vk_memory_init(vk));
    NN_TRY(vk_pipelines_init(vk));
    NN_TRY(vk_stream_init(vk));
    NN_TRY(vk_tune_init(vk));
    NN_TRY(vk_profile_init(vk));
    return NN_OK;
}

nn_backend *nn_vulkan_backend_new(bool hardware_only, bool *no_device) {
    if (no_device) *no_device = false;
    vk_backend *vk = calloc(1, sizeof *vk);
    if (!vk) return NN_FAIL_NULL(NN_ERR_MEMORY, "vulkan backend: out of host memory");
    char why[320];
    vk->vi = nn_vk_instance_get(why, sizeof why);
    if (!vk->vi) {
        free(vk);
        if (no_device) *no_device = true;
        return NN_FAIL_NULL(NN_ERR_BACKEND, "vulkan: %s", why);
    }
    int index = nn_vk_choose_device(vk->vi, hardware_only, why, sizeof why);
    if (index < 0) {
        free(vk);
        if (no_device) *no_device = !getenv("NN_ENGINE_VULKAN_DEVICE");
        return NN_FAIL_NULL(NN_ERR_BACKEND, "vulkan: %s", why);
    }
    vk->phys = &vk->vi->devices[index];
    if (open_device(vk) != NN_OK) {
        char message[512];
        snprintf(message, sizeof message, "%s", nn_last_error());
        vk_destroy(&vk->base);
        return NN_FAIL_NULL(NN_ERR_BACKEND, "%s", message);
    }
    nn_backend *b = &vk->base;
    b->name = "vulkan";
    b->kind = NN_DEVICE_GPU;
    b->threads = 1;
    for (int32_t precision = NN_PRECISION_FP32; precision <= NN_PRECISION_BF16; precision++)
        if (vk_on_matrix_cores(vk, precision)) b->matrix_core_precisions |= 1u << precision;
    snprintf(b->description, sizeof b->description, "vulkan %d: %.60s (%.16s, %.40s)", index,
             vk->phys->props.deviceName, vk->phys->kind, vk->phys->driver);
    b->alloc = vk_buffer_alloc;
    b->memory_stats = vk_memory_stats;
    b->free = vk_buffer_free;
    b->conv_keeps_columns = vk_conv_keeps_columns;
    b->conv_layout = vk_conv_layout;
    b->supports = vk_supports;
    b->write = vk_write;
    b->read = vk_read;
    b->fill = vk_fill;
    b->copy = vk_copy;
    b->run = vk_run;
    b->sync = vk_sync;
    b->destroy = vk_destroy;
    b->plan_new = vk_plan_new;
    b->plan_replay = vk_plan_replay;
    b->plan_free = vk_plan_free;
    announce(vk, index);
    return b;
}

static nn_backend *open_vulkan(const nn_backend_request *request, bool *no_device) {
    return nn_vulkan_backend_new(request->hardware_only, no_device);
}

const nn_backend_provider nn_vulkan_provider = {
    .name = "vulkan", .automatic = true, .open = open_vulkan, .list_devices = nn_vulkan_list_devices};
