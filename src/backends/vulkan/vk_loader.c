/* Opening the Vulkan loader (libvulkan.so.1, vulkan-1.dll) at run time and
 * fetching the entry points. */
#include "vk_loader.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "platform/dynamic_library.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static nn_vk_loader g_loader;
static int g_loaded;
static char g_why[256];

#ifdef _WIN32
/* Every Windows GPU driver installs it in System32. */
#define VULKAN_LOADER "vulkan-1.dll"
#define VULKAN_LOADER_NAMES {VULKAN_LOADER}
#define VULKAN_LOADER_HINT "vulkan-1.dll not found: install your GPU vendor's driver (it brings the Vulkan loader)"
#else
#define VULKAN_LOADER "libvulkan.so.1"
/* The soname first (what libvulkan1 installs), then the unversioned name
 * some systems have only through -dev packages. */
#define VULKAN_LOADER_NAMES {VULKAN_LOADER, "libvulkan.so"}
#define VULKAN_LOADER_HINT \
    "libvulkan.so.1 not found: install libvulkan1 and a driver such as mesa-vulkan-drivers (or your GPU vendor's)"
#endif

static void open_loader(void) {
    const char *names[] = VULKAN_LOADER_NAMES;
    void *lib = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++) lib = nn_library_open(names[i]);
    if (!lib) {
        snprintf(g_why, sizeof g_why, "%s", VULKAN_LOADER_HINT);
        return;
    }
    g_loader.vkGetInstanceProcAddr = (PFN_vkGetInstanceProcAddr)nn_library_symbol(lib, "vkGetInstanceProcAddr");
    if (!g_loader.vkGetInstanceProcAddr) {
        snprintf(g_why, sizeof g_why, "%s has no vkGetInstanceProcAddr (not a Vulkan loader?)", VULKAN_LOADER);
        return;
    }
#define LOAD_GLOBAL(name) g_loader.name = (PFN_##name)g_loader.vkGetInstanceProcAddr(NULL, #name);
    NN_VK_GLOBAL_FUNCS(LOAD_GLOBAL)
#undef LOAD_GLOBAL
    if (!g_loader.vkCreateInstance) {
        snprintf(g_why, sizeof g_why, "the Vulkan loader does not export vkCreateInstance");
        return;
    }
    g_loaded = 1;
}

const nn_vk_loader *nn_vk_loader_get(char *why, size_t why_size) {
    pthread_once(&g_once, open_loader);
    if (!g_loaded) {
        if (why) snprintf(why, why_size, "%s", g_why);
        return NULL;
    }
    return &g_loader;
}

const char *nn_vk_load_instance_fns(const nn_vk_loader *loader, VkInstance instance,
                                    nn_vk_instance_fns *fns) {
#define LOAD(name)                                                                    \
    fns->name = (PFN_##name)loader->vkGetInstanceProcAddr(instance, #name);           \
    if (!fns->name) return #name;
    NN_VK_INSTANCE_FUNCS(LOAD)
#undef LOAD
    return NULL;
}

const char *nn_vk_load_device_fns(const nn_vk_instance_fns *ifns, VkDevice device,
                                  nn_vk_device_fns *fns) {
#define LOAD(name)                                                                    \
    fns->name = (PFN_##name)ifns->vkGetDeviceProcAddr(device, #name);                 \
    if (!fns->name) return #name;
    NN_VK_DEVICE_FUNCS(LOAD)
#undef LOAD
    return NULL;
}

const char *nn_vk_result_name(VkResult r) {
    switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_FORMAT_NOT_SUPPORTED: return "VK_ERROR_FORMAT_NOT_SUPPORTED";
    case VK_ERROR_FRAGMENTED_POOL: return "VK_ERROR_FRAGMENTED_POOL";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "VkResult error";
    }
}
