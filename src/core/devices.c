/* The device list: the CPU, plus one entry per backend that is not built in
 * (so `nnengine devices` can say why there is no GPU). Backends built into the
 * library add their own entries here. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nn_devices.h"

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

int nn_list_devices(nn_device_info *out, int capacity) {
    if (!out) capacity = 0;
    int count = 0;
    nn_device_info info;
    cpu_entry(&info);
    add_entry(out, capacity, &count, &info);

    memset(&info, 0, sizeof info);
    snprintf(info.backend, sizeof info.backend, "vulkan");
    info.index = -1;
    snprintf(info.reason, sizeof info.reason, "this library was built without the Vulkan backend");
    add_entry(out, capacity, &count, &info);
    return count;
}
