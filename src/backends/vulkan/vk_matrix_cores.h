/* Matrix cores (tensor cores) through VK_KHR_cooperative_matrix: whether a
 * device multiplies 16 x 16 x 16 fp16 matrices into fp32 in a subgroup,
 * which the fp16 GEMM (shaders/gemm_coopmat.comp) needs, and the extension
 * and features to enable for it when the device is opened. Debian 12's
 * Vulkan headers (1.3.239) predate the extension, so its few definitions
 * are here when the headers lack them. */
#ifndef NN_VK_MATRIX_CORES_H
#define NN_VK_MATRIX_CORES_H

#include <stdbool.h>

#include "vk_loader.h"

#ifndef VK_KHR_cooperative_matrix
#define VK_KHR_cooperative_matrix 1
#define VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME "VK_KHR_cooperative_matrix"
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR ((VkStructureType)1000506000)
#define VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR ((VkStructureType)1000506001)
typedef enum VkComponentTypeKHR { VK_COMPONENT_TYPE_FLOAT16_KHR = 0, VK_COMPONENT_TYPE_FLOAT32_KHR = 1 } VkComponentTypeKHR;
typedef enum VkScopeKHR { VK_SCOPE_SUBGROUP_KHR = 3 } VkScopeKHR;
typedef struct VkCooperativeMatrixPropertiesKHR {
    VkStructureType sType;
    void *pNext;
    uint32_t MSize, NSize, KSize;
    VkComponentTypeKHR AType, BType, CType, ResultType;
    VkBool32 saturatingAccumulation;
    VkScopeKHR scope;
} VkCooperativeMatrixPropertiesKHR;
typedef struct VkPhysicalDeviceCooperativeMatrixFeaturesKHR {
    VkStructureType sType;
    void *pNext;
    VkBool32 cooperativeMatrix;
    VkBool32 cooperativeMatrixRobustBufferAccess;
} VkPhysicalDeviceCooperativeMatrixFeaturesKHR;
typedef VkResult(VKAPI_PTR *PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)(
    VkPhysicalDevice, uint32_t *, VkCooperativeMatrixPropertiesKHR *);
#endif

struct nn_vk_instance;
struct nn_vk_physical;

/* Fills d->matrix_cores and d->matrix_cores_note ("fp16 16x16x16, fp32
 * accumulation" or why not: no extension, no such shape, no fp16
 * arithmetic, no Vulkan memory model). */
void nn_vk_describe_matrix_cores(const struct nn_vk_instance *vi, struct nn_vk_physical *d);

/* The features to chain into VkDeviceCreateInfo for the fp16 GEMM. */
typedef struct nn_vk_matrix_core_features {
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR cooperative;
    VkPhysicalDeviceVulkan12Features vulkan12;
    const char *extension;
} nn_vk_matrix_core_features;

/* Point `f` at the features (chained to `next`) and return its head. */
void *nn_vk_matrix_core_features_chain(nn_vk_matrix_core_features *f, void *next);

#endif
