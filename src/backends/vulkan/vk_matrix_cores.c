/* Matrix cores through VK_KHR_cooperative_matrix (vk_matrix_cores.h). */
#include "vk_matrix_cores.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_probe.h"

/* A subgroup-scope 16 x 16 x 16 shape with fp16 inputs and fp32 sums. */
static bool has_fp16_shape(const nn_vk_instance *vi, VkPhysicalDevice device) {
    PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR query =
        (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)vi->loader->vkGetInstanceProcAddr(
            vi->instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
    uint32_t count = 0;
    if (!query || query(device, &count, NULL) != VK_SUCCESS || count == 0) return false;
    VkCooperativeMatrixPropertiesKHR *shapes = calloc(count, sizeof *shapes);
    if (!shapes) return false;
    for (uint32_t i = 0; i < count; i++) shapes[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR;
    bool found = false;
    if (query(device, &count, shapes) == VK_SUCCESS)
        for (uint32_t i = 0; i < count && !found; i++) {
            const VkCooperativeMatrixPropertiesKHR *s = &shapes[i];
            found = s->MSize == 16 && s->NSize == 16 && s->KSize == 16 && s->AType == VK_COMPONENT_TYPE_FLOAT16_KHR &&
                    s->BType == VK_COMPONENT_TYPE_FLOAT16_KHR && s->CType == VK_COMPONENT_TYPE_FLOAT32_KHR &&
                    s->ResultType == VK_COMPONENT_TYPE_FLOAT32_KHR && s->scope == VK_SCOPE_SUBGROUP_KHR;
        }
    free(shapes);
    return found;
}

void nn_vk_describe_matrix_cores(const nn_vk_instance *vi, nn_vk_physical *d) {
    d->matrix_cores = false;
    const char *why = NULL;
    if (d->props.apiVersion < VK_API_VERSION_1_2 || vi->api_version < VK_API_VERSION_1_2)
        why = "needs Vulkan 1.2";
    else if (!nn_vk_device_has_extension(vi, d->handle, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME))
        why = "no " VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME;
    if (!why) {
        PFN_vkGetPhysicalDeviceFeatures2 features2 = (PFN_vkGetPhysicalDeviceFeatures2)
            vi->loader->vkGetInstanceProcAddr(vi->instance, "vkGetPhysicalDeviceFeatures2");
        VkPhysicalDeviceCooperativeMatrixFeaturesKHR coop = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
        VkPhysicalDeviceVulkan12Features v12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                                .pNext = &coop};
        VkPhysicalDeviceFeatures2 all = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &v12};
        if (features2) features2(d->handle, &all);
        if (!features2 || !coop.cooperativeMatrix) why = "cooperative matrices are not enabled by the driver";
        else if (!v12.shaderFloat16) why = "no fp16 arithmetic in shaders";
        else if (!v12.vulkanMemoryModel) why = "no Vulkan memory model";
        else if (!has_fp16_shape(vi, d->handle)) why = "no 16x16x16 fp16 shape with fp32 sums in a subgroup";
    }
    d->matrix_cores = why == NULL;
    snprintf(d->matrix_cores_note, sizeof d->matrix_cores_note, "%s",
             why ? why : "fp16 16x16x16 with fp32 sums");
}

void *nn_vk_matrix_core_features_chain(nn_vk_matrix_core_features *f, void *next) {
    memset(f, 0, sizeof *f);
    f->cooperative = (VkPhysicalDeviceCooperativeMatrixFeaturesKHR){
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR, .pNext = next,
        .cooperativeMatrix = VK_TRUE};
    f->vulkan12 = (VkPhysicalDeviceVulkan12Features){.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                                     .pNext = &f->cooperative, .shaderFloat16 = VK_TRUE,
                                                     .vulkanMemoryModel = VK_TRUE};
    f->extension = VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME;
    return &f->vulkan12;
}
