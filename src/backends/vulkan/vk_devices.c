/* The Vulkan entries of nn_list_devices. */
#include <stdio.h>
#include <string.h>

#include "vk_probe.h"
#include "vulkan_backend.h"

void nn_vulkan_list_devices(void (*add)(void *ctx, const nn_device_info *info), void *ctx) {
    nn_device_info info;
    char why[320];
    const nn_vk_instance *vi = nn_vk_instance_get(why, sizeof why);
    if (!vi) {
        memset(&info, 0, sizeof info);
        snprintf(info.backend, sizeof info.backend, "vulkan");
        info.index = -1;
        snprintf(info.reason, sizeof info.reason, "%.250s", why);
        add(ctx, &info);
        return;
    }
    for (int i = 0; i < vi->count; i++) {
        const nn_vk_physical *d = &vi->devices[i];
        memset(&info, 0, sizeof info);
        snprintf(info.backend, sizeof info.backend, "vulkan");
        info.index = i;
        snprintf(info.name, sizeof info.name, "%.120s", d->props.deviceName);
        snprintf(info.kind, sizeof info.kind, "%s", d->kind);
        char api[32];
        nn_vk_version_string(d->props.apiVersion, api, sizeof api);
        char cores[112];
        snprintf(cores, sizeof cores, d->matrix_cores ? "%.100s" : "none (%.100s)", d->matrix_cores_note);
        snprintf(info.detail, sizeof info.detail, "%.56s, Vulkan %.16s, %llu MiB device-local, matrix cores: %.48s",
                 d->driver, api, (unsigned long long)(d->device_local_bytes >> 20), cores);
        info.usable = d->usable;
        if (!d->usable) snprintf(info.reason, sizeof info.reason, "%s", d->reason);
        add(ctx, &info);
    }
}
