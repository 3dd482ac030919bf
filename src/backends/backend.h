/* The backend interface (DESIGN.md): a table of functions behind which a
 * device lives. Everything above it (ops, layers, optimizers) sees buffers
 * only as opaque handles and launches kernels through run(). */
#ifndef NN_BACKEND_H
#define NN_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nn_error.h"
#include "kernels.h"

typedef struct nn_buffer nn_buffer; /* defined by each backend */

/* A kernel argument: a buffer and a byte offset into it (views share buffers). */
typedef struct nn_buffer_ref {
    nn_buffer *buffer;
    size_t offset;
} nn_buffer_ref;

typedef enum nn_device_kind { NN_DEVICE_CPU, NN_DEVICE_GPU } nn_device_kind;

typedef struct nn_backend nn_backend;
struct nn_backend {
    const char *name;        /* "cpu", "vulkan" */
    char description[160];   /* device and library, for messages */
    nn_device_kind kind;
    int threads;

    /* Buffers. alloc returns NULL (and sets the error) when memory runs out. */
    nn_buffer *(*alloc)(nn_backend *self, size_t bytes);
    void (*free)(nn_backend *self, nn_buffer *buffer);
    nn_status (*write)(nn_backend *self, nn_buffer_ref dst, const void *src, size_t bytes);
    nn_status (*read)(nn_backend *self, nn_buffer_ref src, void *dst, size_t bytes);
    nn_status (*fill)(nn_backend *self, nn_buffer_ref dst, float value, size_t count);
    nn_status (*copy)(nn_backend *self, nn_buffer_ref dst, nn_buffer_ref src, size_t bytes);

    /* Launch one kernel. args: as listed in kernels.h; params: that kernel's
     * parameter struct. A backend lacking a kernel returns NN_ERR_BACKEND
     * naming it: nothing falls back to another device silently. */
    nn_status (*run)(nn_backend *self, nn_kernel kernel, const nn_buffer_ref *args, int nargs,
                     const void *params);

    /* Wait for all submitted work. */
    nn_status (*sync)(nn_backend *self);
    void (*destroy)(nn_backend *self);

    /* Memory counters (nn_ctx_memory_stats): bytes in buffers handed out
     * now, the most at any time since the backend opened, and the bytes the
     * backend holds from the system or driver (blocks, caches). */
    void (*memory_stats)(nn_backend *self, uint64_t *current, uint64_t *peak, uint64_t *reserved);
};

/* Open the CPU backend with `threads` workers (0 = one per core). */
nn_backend *nn_cpu_backend_new(int threads);

#endif
