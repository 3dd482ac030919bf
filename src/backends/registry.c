/* The table of the backends built in (registry.h), and opening one by name. */
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "registry.h"

static const nn_backend_provider *const kProviders[] = {
    &nn_cpu_provider,
#ifdef NN_WITH_VULKAN
    &nn_vulkan_provider,
#endif
};

/* Backends the project has that this build left out, and how to get them. */
static const struct {
    const char *name, *why;
} kLeftOut[] = {
#ifndef NN_WITH_VULKAN
    {"vulkan", "this library was built without the Vulkan backend (VULKAN=0)"},
#endif
    {NULL, NULL},
};

const nn_backend_provider *const *nn_backend_providers(int *count) {
    *count = (int)(sizeof kProviders / sizeof kProviders[0]);
    return kProviders;
}

static void names(char *out, size_t size) {
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < sizeof kProviders / sizeof kProviders[0] && used < size; i++)
        used += (size_t)snprintf(out + used, size - used, "%s, ", kProviders[i]->name);
    if (used < size) snprintf(out + used, size - used, "auto");
}

nn_backend *nn_backend_open(const char *who, const char *device, int threads) {
    const nn_backend_request request = {.threads = threads};
    const size_t count = sizeof kProviders / sizeof kProviders[0];
    if (strcmp(device, "auto") == 0) {
        const nn_backend_request hardware = {.threads = threads, .hardware_only = true};
        for (size_t i = 0; i < count; i++) {
            if (!kProviders[i]->automatic) continue;
            bool no_device = false;
            nn_backend *b = kProviders[i]->open(&hardware, &no_device);
            if (b || !no_device) return b;
            nn_clear_error();
        }
        return kProviders[0]->open(&request, NULL);
    }
    for (size_t i = 0; i < count; i++)
        if (strcmp(device, kProviders[i]->name) == 0) return kProviders[i]->open(&request, NULL);
    for (size_t i = 0; kLeftOut[i].name; i++)
        if (strcmp(device, kLeftOut[i].name) == 0) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: %s", who, kLeftOut[i].why);
    char known[160];
    names(known, sizeof known);
    return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: unknown device '%s' (this build has: %s)", who, device, known);
}

void nn_backend_list_left_out(void (*add)(void *ctx, const nn_device_info *info), void *ctx) {
    for (size_t i = 0; kLeftOut[i].name; i++) {
        nn_device_info info;
        memset(&info, 0, sizeof info);
        snprintf(info.backend, sizeof info.backend, "%s", kLeftOut[i].name);
        info.index = -1;
        snprintf(info.reason, sizeof info.reason, "%s", kLeftOut[i].why);
        add(ctx, &info);
    }
}
