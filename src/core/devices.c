/* The device list: the CPU, then the Vulkan devices (or one entry saying why
 * there are none), so `nnengine devices` can say why there is no GPU. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nn_devices.h"
#ifdef NN_WITH_VULKAN
#include "backends/vulkan/vulkan_backend.h"
#endif

static void add_entry(nn_device_info *out, int capacity, int *count, const nn_device_info *entry) {
    if (*count < capacity) out[*count] = *entry;
    (*count)++;
}

static void cpu_entry(nn_device_info *info) {
    memset(info, 0, sizeof *info);
    snprintf(info->backend, sizeof info->backend, "cpu");
    info->index = 0;
    snprintf(info->name, sizeof info->name, "host CPU");
    snprintf(info->kind, sizeof info->kind, "cpu");
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
#ifdef NN_USE_OPENBLAS
    const char *gemm = "OpenBLAS GEMM";
#else
    const char *gemm = "built-in GEMM";
#endif
    snprintf(info->detail, sizeof info->detail, "%ld cores, %s", cores > 0 ? cores : 1, gemm);
    info->usable = true;
}

#ifdef NN_WITH_VULKAN
typedef struct device_list {
    nn_device_info *out;
    int capacity, count;
} device_list;

static void add_to_list(void *ctx, const nn_device_info *info) {
    device_list *list = ctx;
    add_entry(list->out, list->capacity, &list->count, info);
}
#endif

int nn_list_devices(nn_device_info *out, int capacity) {
    if (!out) capacity = 0;
    int count = 0;
    nn_device_info info;
    cpu_entry(&info);
    add_entry(out, capacity, &count, &info);

#ifdef NN_WITH_VULKAN
    device_list list = {out, capacity, count};
    nn_vulkan_list_devices(add_to_list, &list);
    count = list.count;
#else
    memset(&info, 0, sizeof info);
    snprintf(info.backend, sizeof info.backend, "vulkan");
    info.index = -1;
    snprintf(info.reason, sizeof info.reason, "this library was built without the Vulkan backend (make VULKAN=0)");
    add_entry(out, capacity, &count, &info);
#endif
    return count;
}
