/* Kernels written outside the library (include/nn_custom.h): the process's
 * registry, which the backends look a launch's kernel up in by the id its
 * parameters carry (nn_custom_params, kernels.h), so a captured launch
 * replays like any other. Ids are never reused: a freed kernel's launch is
 * an error, never another kernel's code. */
#ifndef NN_BACKENDS_CUSTOM_KERNELS_H
#define NN_BACKENDS_CUSTOM_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nn_custom.h"

struct nn_custom_kernel {
    int32_t id;
    char name[64];
    nn_custom_cpu_fn cpu;
    void *cpu_user;
    uint32_t *spirv; /* owned; NULL: no Vulkan code */
    size_t spirv_bytes;
    uint32_t local_size[3];
    bool not_capturable;
};

/* The kernel of `id`, or NULL (never made, or freed). */
const nn_custom_kernel *nn_custom_kernel_find(int32_t id);

/* The shader's device-side report of an index out of range (the Vulkan
 * status buffer's kind for it, vk_stream.c). */
#define NN_CUSTOM_STATUS_KIND 3

/* custom_glsl.c: GLSL body -> SPIR-V with the prelude of `local_size`,
 * through libshaderc opened at run time. *spirv is malloc'd. The error
 * names `kernel`. */
nn_status nn_custom_compile_glsl(const char *kernel, const char *body, const uint32_t local_size[3],
                                 uint32_t **spirv, size_t *bytes);

/* custom_spirv.c: whether the module is one the shared pipeline layout
 * runs (one compute entry point "main" of workgroup local_size, storage
 * buffers at set 0 bindings 0-8 only, at most 128 bytes of push
 * constants); the error names `kernel` and what is wrong. */
nn_status nn_custom_check_spirv(const char *kernel, const uint32_t *code, size_t bytes, const uint32_t local_size[3]);

#endif
