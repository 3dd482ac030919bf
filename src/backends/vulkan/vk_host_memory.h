/* Host memory the device reads and writes in place, through
 * VK_EXT_external_memory_host: the backend's import_host (backend.h). The
 * data-parallel optimizer gives it MPI's shared windows, so a GPU copies its
 * gradients straight into memory the other ranks' GPUs read. */
#ifndef NN_VK_HOST_MEMORY_H
#define NN_VK_HOST_MEMORY_H

#include "vk_backend.h"

/* The device extension to enable when the device has it (else NULL), and
 * its property chain to fill from vkGetPhysicalDeviceProperties2. */
const char *vk_host_memory_extension(const nn_vk_instance *vi, const nn_vk_physical *phys);
/* After vkCreateDevice with the extension: loads its entry point and reads
 * the import alignment into the backend (host_import stays NULL otherwise). */
void vk_host_memory_init(vk_backend *vk);

nn_buffer *vk_buffer_import_host(nn_backend *self, void *host, size_t bytes);
/* vk_buffer_free's path for an imported block: waits for the device, then
 * lets the memory go back to its owner. */
void vk_imported_free(vk_backend *vk, nn_buffer *buffer);

#endif
