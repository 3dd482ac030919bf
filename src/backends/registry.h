/* The backends this library was built with, each registered once by name
 * (registry.c): the core opens a device and lists the devices through this
 * table and names no backend itself. */
#ifndef NN_BACKENDS_REGISTRY_H
#define NN_BACKENDS_REGISTRY_H

#include <stdbool.h>

#include "backend.h"
#include "nn_devices.h"

typedef struct nn_backend_request {
    int threads;        /* worker threads where the backend has them; 0 = one per core */
    bool hardware_only; /* "auto": no software implementation of a GPU */
} nn_backend_request;

typedef struct nn_backend_provider {
    const char *name; /* what nn_ctx_options.device names: "cpu", "vulkan" */
    /* Whether "auto" tries it, with hardware_only, before the CPU. */
    bool automatic;
    /* Open it on its best usable device (a backend may let an environment
     * variable choose: NN_ENGINE_VULKAN_DEVICE). NULL with the error set on
     * failure; *no_device (may be NULL) tells that the reason is that it
     * has no suitable device, not that one failed to open. */
    nn_backend *(*open)(const nn_backend_request *request, bool *no_device);
    /* Append its entries of nn_list_devices: one per device, or one
     * saying why there is none. Never fails. */
    void (*list_devices)(void (*add)(void *ctx, const nn_device_info *info), void *ctx);
} nn_backend_provider;

/* Every backend built in, the CPU first (the one "auto" falls back to). */
const nn_backend_provider *const *nn_backend_providers(int *count);
/* The backend nn_ctx_options.device names ("auto": the first automatic
 * backend with a usable hardware device, else the CPU; a device that is
 * present but fails to open is an error, not a quiet switch to the CPU).
 * `who` names the caller in messages. */
nn_backend *nn_backend_open(const char *who, const char *device, int threads);

/* Append an entry of nn_list_devices for each backend this build left out,
 * saying why. */
void nn_backend_list_left_out(void (*add)(void *ctx, const nn_device_info *info), void *ctx);

/* The providers, each defined beside its backend. */
extern const nn_backend_provider nn_cpu_provider;
extern const nn_backend_provider nn_vulkan_provider;

#endif
