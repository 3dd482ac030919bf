/* Opening the Vulkan backend (the rest of it is private to this folder). */
#ifndef NN_VULKAN_BACKEND_H
#define NN_VULKAN_BACKEND_H

#include <stdbool.h>

#include "backends/backend.h"
#include "nn_devices.h"

/* Open the device NN_ENGINE_VULKAN_DEVICE names, else the best usable one
 * (discrete, integrated, virtual GPU, then a CPU implementation unless
 * hardware_only). Returns NULL and sets the error saying why; *no_device
 * (may be NULL) is set when the reason is that no suitable device exists
 * (as opposed to one failing to open), which lets "auto" take the CPU. */
nn_backend *nn_vulkan_backend_new(bool hardware_only, bool *no_device);

/* Append the Vulkan entries of nn_list_devices: one per physical device, or
 * one saying why there is none. */
void nn_vulkan_list_devices(void (*add)(void *ctx, const nn_device_info *info), void *ctx);

#endif
