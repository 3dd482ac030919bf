/* The Vulkan loader, opened at run time: the library never links against
 * libvulkan, so it loads (and runs on the CPU) where Vulkan is absent. As in
 * volk: open libvulkan.so.1 (vulkan-1.dll on Windows), fetch vkGetInstanceProcAddr, then every
 * other entry point through it (instance level) or vkGetDeviceProcAddr
 * (device level, which skips the loader's dispatch trampoline). */
#ifndef NN_VK_LOADER_H
#define NN_VK_LOADER_H

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

/* X(name) for every entry point we use, by level. */
#define NN_VK_GLOBAL_FUNCS(X)                \
    X(vkCreateInstance)                      \
    X(vkEnumerateInstanceVersion)

#define NN_VK_INSTANCE_FUNCS(X)              \
    X(vkDestroyInstance)                     \
    X(vkEnumeratePhysicalDevices)            \
    X(vkGetPhysicalDeviceProperties)         \
    X(vkGetPhysicalDeviceProperties2)        \
    X(vkGetPhysicalDeviceFeatures)           \
    X(vkGetPhysicalDeviceMemoryProperties)   \
    X(vkGetPhysicalDeviceQueueFamilyProperties) \
    X(vkCreateDevice)                        \
    X(vkGetDeviceProcAddr)

#define NN_VK_DEVICE_FUNCS(X)                \
    X(vkDestroyDevice)                       \
    X(vkGetDeviceQueue)                      \
    X(vkDeviceWaitIdle)                      \
    X(vkQueueSubmit)                         \
    X(vkQueueWaitIdle)                       \
    X(vkAllocateMemory)                      \
    X(vkFreeMemory)                          \
    X(vkMapMemory)                           \
    X(vkUnmapMemory)                         \
    X(vkCreateBuffer)                        \
    X(vkDestroyBuffer)                       \
    X(vkGetBufferMemoryRequirements)         \
    X(vkBindBufferMemory)                    \
    X(vkCreateShaderModule)                  \
    X(vkDestroyShaderModule)                 \
    X(vkCreateDescriptorSetLayout)           \
    X(vkDestroyDescriptorSetLayout)          \
    X(vkCreatePipelineLayout)                \
    X(vkDestroyPipelineLayout)               \
    X(vkCreateComputePipelines)              \
    X(vkDestroyPipeline)                     \
    X(vkCreateDescriptorPool)                \
    X(vkDestroyDescriptorPool)               \
    X(vkResetDescriptorPool)                 \
    X(vkAllocateDescriptorSets)              \
    X(vkUpdateDescriptorSets)                \
    X(vkCreateCommandPool)                   \
    X(vkDestroyCommandPool)                  \
    X(vkAllocateCommandBuffers)              \
    X(vkResetCommandPool)                    \
    X(vkBeginCommandBuffer)                  \
    X(vkEndCommandBuffer)                    \
    X(vkCmdBindPipeline)                     \
    X(vkCmdBindDescriptorSets)               \
    X(vkCmdPushConstants)                    \
    X(vkCmdDispatch)                         \
    X(vkCmdPipelineBarrier)                  \
    X(vkCmdCopyBuffer)                       \
    X(vkCmdFillBuffer)                       \
    X(vkCreateQueryPool)                     \
    X(vkDestroyQueryPool)                    \
    X(vkCmdResetQueryPool)                   \
    X(vkCmdWriteTimestamp)                   \
    X(vkGetQueryPoolResults)                 \
    X(vkCreateFence)                         \
    X(vkDestroyFence)                        \
    X(vkResetFences)                         \
    X(vkWaitForFences)

#define NN_VK_DECLARE(name) PFN_##name name;
typedef struct nn_vk_instance_fns {
    NN_VK_INSTANCE_FUNCS(NN_VK_DECLARE)
} nn_vk_instance_fns;
typedef struct nn_vk_device_fns {
    NN_VK_DEVICE_FUNCS(NN_VK_DECLARE)
} nn_vk_device_fns;

/* The process-wide loader (opened once, never closed: drivers do not all
 * survive dlclose). */
typedef struct nn_vk_loader {
    PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;
    NN_VK_GLOBAL_FUNCS(NN_VK_DECLARE)
} nn_vk_loader;
#undef NN_VK_DECLARE

/* Returns the loader, or NULL with `why` (size >= 256) saying what is
 * missing (e.g. "libvulkan.so.1 not found: install libvulkan1 ..."). */
const nn_vk_loader *nn_vk_loader_get(char *why, size_t why_size);

/* Fill the tables; returns the name of the first entry point missing, or NULL. */
const char *nn_vk_load_instance_fns(const nn_vk_loader *loader, VkInstance instance,
                                    nn_vk_instance_fns *fns);
const char *nn_vk_load_device_fns(const nn_vk_instance_fns *ifns, VkDevice device,
                                  nn_vk_device_fns *fns);

/* "VK_ERROR_OUT_OF_DEVICE_MEMORY" and friends. */
const char *nn_vk_result_name(VkResult result);

#endif
