/* Finding Vulkan devices: one instance, every physical device described
 * (name, kind, driver, API version, device-local memory) and judged usable
 * or not with a reason; the choice rule (discrete, integrated, virtual, then
 * a CPU implementation; NN_ENGINE_VULKAN_DEVICE overrides). Used both by
 * nn_list_devices and by the backend when it opens a device. */
#ifndef NN_VK_PROBE_H
#define NN_VK_PROBE_H

#include <stdbool.h>
#include <stdint.h>

#include "vk_loader.h"

typedef struct nn_vk_physical {
    VkPhysicalDevice handle;
    VkPhysicalDeviceProperties props;
    char kind[32];          /* "discrete gpu", "integrated gpu", "virtual gpu", "software", "other" */
    int rank;               /* preference: 0 discrete, 1 integrated, 2 virtual, 3 software, 4 other */
    char driver[160];       /* "NVIDIA 550.54.15", "llvmpipe Mesa 22.3.6 (LLVM 15.0.6)" */
    uint64_t device_local_bytes;
    uint32_t queue_family;  /* a family with compute */
    bool usable;
    char reason[200];
    bool matrix_cores;          /* the fp16 GEMM's cooperative matrices (vk_matrix_cores.h) */
    char matrix_cores_note[96]; /* what they are, or why there are none */
} nn_vk_physical;

typedef struct nn_vk_instance {
    const nn_vk_loader *loader;
    VkInstance instance;
    nn_vk_instance_fns fns;
    uint32_t api_version;   /* the instance's */
    nn_vk_physical *devices;
    int count;
} nn_vk_instance;

/* The process's Vulkan instance with every device described, made on first
 * use and kept until the process ends (like the loader, which is never
 * closed): listing devices and opening contexts then cost no new instance,
 * and the driver stays loaded while its devices may be in use. Returns NULL
 * with `why` (the loader is missing, instance creation failed, no devices);
 * a failure is remembered too. Thread-safe. */
const nn_vk_instance *nn_vk_instance_get(char *why, size_t why_size);

/* The device to open: NN_ENGINE_VULKAN_DEVICE (an index or a part of the
 * name, case-insensitive) when set, else the best usable one; hardware_only
 * skips software implementations (what "auto" wants). Returns -1 with `why`. */
int nn_vk_choose_device(const nn_vk_instance *vi, bool hardware_only, char *why, size_t why_size);

/* Whether the physical device offers the device extension `name`. */
bool nn_vk_device_has_extension(const nn_vk_instance *vi, VkPhysicalDevice device, const char *name);

/* "1.3.230" */
void nn_vk_version_string(uint32_t version, char *buf, size_t size);

#endif
