/* Instance creation, device description and the device choice rule. */
#include "vk_probe.h"

#include "vk_matrix_cores.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What our shaders need beyond what every Vulkan device guarantees. */
#define NEED_INVOCATIONS 256

void nn_vk_version_string(uint32_t v, char *buf, size_t size) {
    snprintf(buf, size, "%u.%u.%u", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v),
             VK_API_VERSION_PATCH(v));
}

bool nn_vk_device_has_extension(const nn_vk_instance *vi, VkPhysicalDevice device, const char *name) {
    PFN_vkEnumerateDeviceExtensionProperties enumerate = (PFN_vkEnumerateDeviceExtensionProperties)
        vi->loader->vkGetInstanceProcAddr(vi->instance, "vkEnumerateDeviceExtensionProperties");
    uint32_t count = 0;
    if (!enumerate || enumerate(device, NULL, &count, NULL) != VK_SUCCESS || count == 0) return false;
    VkExtensionProperties *list = calloc(count, sizeof *list);
    bool found = false;
    if (list && enumerate(device, NULL, &count, list) == VK_SUCCESS)
        for (uint32_t i = 0; i < count && !found; i++) found = strcmp(list[i].extensionName, name) == 0;
    free(list);
    return found;
}

static void describe_kind(nn_vk_physical *d) {
    static const struct { VkPhysicalDeviceType type; const char *name; int rank; } kinds[] = {
        {VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, "discrete gpu", 0},
        {VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU, "integrated gpu", 1},
        {VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU, "virtual gpu", 2},
        {VK_PHYSICAL_DEVICE_TYPE_CPU, "software", 3},
    };
    snprintf(d->kind, sizeof d->kind, "other");
    d->rank = 4;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        if (kinds[i].type == d->props.deviceType) {
            snprintf(d->kind, sizeof d->kind, "%s", kinds[i].name);
            d->rank = kinds[i].rank;
        }
    }
}

/* The driver's name and version: VkPhysicalDeviceDriverProperties where the
 * device has Vulkan 1.2, else the vendor's raw version number. */
static void describe_driver(const nn_vk_instance *vi, nn_vk_physical *d) {
    PFN_vkGetPhysicalDeviceProperties2 props2 = (PFN_vkGetPhysicalDeviceProperties2)
        vi->loader->vkGetInstanceProcAddr(vi->instance, "vkGetPhysicalDeviceProperties2");
    if (props2 && d->props.apiVersion >= VK_API_VERSION_1_2 && vi->api_version >= VK_API_VERSION_1_2) {
        VkPhysicalDeviceDriverProperties driver = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
        VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &driver};
        props2(d->handle, &p2);
        snprintf(d->driver, sizeof d->driver, "%.60s %.90s", driver.driverName, driver.driverInfo);
        return;
    }
    uint32_t v = d->props.driverVersion;
    if (d->props.vendorID == 0x10DE) /* NVIDIA packs 10.8.8.6 bits */
        snprintf(d->driver, sizeof d->driver, "NVIDIA %u.%u.%u", v >> 22, (v >> 14) & 0xff, (v >> 6) & 0xff);
    else
        snprintf(d->driver, sizeof d->driver, "driver version 0x%x", v);
}

static void judge(const nn_vk_instance *vi, nn_vk_physical *d) {
    uint32_t families = 0;
    vi->fns.vkGetPhysicalDeviceQueueFamilyProperties(d->handle, &families, NULL);
    VkQueueFamilyProperties *fam = calloc(families ? families : 1, sizeof *fam);
    d->queue_family = UINT32_MAX;
    if (fam) {
        vi->fns.vkGetPhysicalDeviceQueueFamilyProperties(d->handle, &families, fam);
        /* A compute-only family first (it does not share with graphics), else any with compute. */
        for (uint32_t i = 0; i < families && d->queue_family == UINT32_MAX; i++)
            if ((fam[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(fam[i].queueFlags & VK_QUEUE_GRAPHICS_BIT))
                d->queue_family = i;
        for (uint32_t i = 0; i < families && d->queue_family == UINT32_MAX; i++)
            if (fam[i].queueFlags & VK_QUEUE_COMPUTE_BIT) d->queue_family = i;
        free(fam);
    }
    VkPhysicalDeviceMemoryProperties mem;
    vi->fns.vkGetPhysicalDeviceMemoryProperties(d->handle, &mem);
    d->device_local_bytes = 0;
    for (uint32_t i = 0; i < mem.memoryHeapCount; i++)
        if (mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) d->device_local_bytes += mem.memoryHeaps[i].size;
    bool host_coherent = false;
    for (uint32_t i = 0; i < mem.memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = mem.memoryTypes[i].propertyFlags;
        if ((f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) && (f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT))
            host_coherent = true;
    }
    const VkPhysicalDeviceLimits *lim = &d->props.limits;
    d->usable = false;
    if (d->queue_family == UINT32_MAX)
        snprintf(d->reason, sizeof d->reason, "no queue family with compute");
    else if (lim->maxComputeWorkGroupInvocations < NEED_INVOCATIONS || lim->maxComputeWorkGroupSize[0] < NEED_INVOCATIONS)
        snprintf(d->reason, sizeof d->reason,
                 "device allows %u invocations per workgroup (x up to %u); the gemm and reduction "
                 "shaders need %d",
                 lim->maxComputeWorkGroupInvocations, lim->maxComputeWorkGroupSize[0], NEED_INVOCATIONS);
    else if (!host_coherent)
        snprintf(d->reason, sizeof d->reason,
                 "no host-visible coherent memory type, needed by the staging path");
    else
        d->usable = true;
}

static void instance_close(nn_vk_instance *vi);

static bool instance_open(nn_vk_instance *vi, char *why, size_t why_size) {
    memset(vi, 0, sizeof *vi);
    vi->loader = nn_vk_loader_get(why, why_size);
    if (!vi->loader) return false;
    vi->api_version = VK_API_VERSION_1_0;
    if (vi->loader->vkEnumerateInstanceVersion) vi->loader->vkEnumerateInstanceVersion(&vi->api_version);
    /* Ask for 1.2 where the loader has it (driver names); our shaders need 1.0. */
    uint32_t want = vi->api_version >= VK_API_VERSION_1_2 ? VK_API_VERSION_1_2 : vi->api_version;
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "nn-engine", .pEngineName = "nn-engine",
                             .apiVersion = want};
    VkInstanceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    VkResult r = vi->loader->vkCreateInstance(&info, NULL, &vi->instance);
    if (r != VK_SUCCESS) {
        snprintf(why, why_size, "vkCreateInstance failed (%s): %s", nn_vk_result_name(r),
                 r == VK_ERROR_INCOMPATIBLE_DRIVER
                     ? "no Vulkan driver is installed (e.g. mesa-vulkan-drivers or the GPU vendor's)"
                     : "the Vulkan loader or driver is broken");
        vi->instance = VK_NULL_HANDLE;
        return false;
    }
    vi->api_version = want;
    const char *missing = nn_vk_load_instance_fns(vi->loader, vi->instance, &vi->fns);
    if (missing) {
        snprintf(why, why_size, "the Vulkan loader lacks %s", missing);
        instance_close(vi);
        return false;
    }
    uint32_t count = 0;
    r = vi->fns.vkEnumeratePhysicalDevices(vi->instance, &count, NULL);
    if (r != VK_SUCCESS || count == 0) {
        snprintf(why, why_size, r != VK_SUCCESS ? "vkEnumeratePhysicalDevices failed (%s)"
                                                : "no Vulkan devices: the loader found no driver with a device "
                                                  "(install mesa-vulkan-drivers or your GPU's driver)",
                 nn_vk_result_name(r));
        instance_close(vi);
        return false;
    }
    VkPhysicalDevice *handles = calloc(count, sizeof *handles);
    vi->devices = calloc(count, sizeof *vi->devices);
    if (!handles || !vi->devices) {
        free(handles);
        snprintf(why, why_size, "out of host memory listing Vulkan devices");
        instance_close(vi);
        return false;
    }
    vi->fns.vkEnumeratePhysicalDevices(vi->instance, &count, handles);
    vi->count = (int)count;
    for (uint32_t i = 0; i < count; i++) {
        nn_vk_physical *d = &vi->devices[i];
        d->handle = handles[i];
        vi->fns.vkGetPhysicalDeviceProperties(d->handle, &d->props);
        describe_kind(d);
        describe_driver(vi, d);
        judge(vi, d);
        nn_vk_describe_matrix_cores(vi, d);
    }
    free(handles);
    return true;
}

static void instance_close(nn_vk_instance *vi) {
    if (vi->instance && vi->fns.vkDestroyInstance) vi->fns.vkDestroyInstance(vi->instance, NULL);
    free(vi->devices);
    memset(vi, 0, sizeof *vi);
}

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static nn_vk_instance g_instance;
static bool g_ok;
static char g_why[320];

static void open_shared(void) { g_ok = instance_open(&g_instance, g_why, sizeof g_why); }

const nn_vk_instance *nn_vk_instance_get(char *why, size_t why_size) {
    pthread_once(&g_once, open_shared);
    if (!g_ok) {
        snprintf(why, why_size, "%s", g_why);
        return NULL;
    }
    return &g_instance;
}

static bool contains_nocase(const char *hay, const char *needle) {
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (strncasecmp(hay, needle, n) == 0) return true;
    return n == 0;
}

int nn_vk_choose_device(const nn_vk_instance *vi, bool hardware_only, char *why, size_t why_size) {
    const char *want = getenv("NN_ENGINE_VULKAN_DEVICE");
    if (want && *want) {
        char *end;
        long index = strtol(want, &end, 10);
        int found = -1;
        if (*end == '\0') {
            if (index >= 0 && index < vi->count) found = (int)index;
        } else {
            for (int i = 0; i < vi->count && found < 0; i++)
                if (contains_nocase(vi->devices[i].props.deviceName, want)) found = i;
        }
        if (found < 0) {
            snprintf(why, why_size, "NN_ENGINE_VULKAN_DEVICE=%s matches none of the %d Vulkan device%s", want,
                     vi->count, vi->count == 1 ? "" : "s");
            return -1;
        }
        if (!vi->devices[found].usable) {
            snprintf(why, why_size, "NN_ENGINE_VULKAN_DEVICE=%s names device %d (%s), which is not usable: %s",
                     want, found, vi->devices[found].props.deviceName, vi->devices[found].reason);
            return -1;
        }
        return found;
    }
    int best = -1;
    for (int i = 0; i < vi->count; i++) {
        const nn_vk_physical *d = &vi->devices[i];
        if (!d->usable || (hardware_only && d->rank > 2)) continue;
        if (best < 0 || d->rank < vi->devices[best].rank) best = i;
    }
    if (best < 0) {
        int software = 0;
        for (int i = 0; i < vi->count; i++) software += vi->devices[i].usable && vi->devices[i].rank > 2;
        if (hardware_only && software)
            snprintf(why, why_size, "only a software Vulkan device (%s) is present", vi->devices[0].props.deviceName);
        else
            snprintf(why, why_size, "none of the %d Vulkan device%s is usable (first: %s: %s)", vi->count,
                     vi->count == 1 ? "" : "s", vi->devices[0].props.deviceName, vi->devices[0].reason);
    }
    return best;
}
