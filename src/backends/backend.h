/* The backend interface (docs/ARCHITECTURE.md): a table of functions behind which a
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

/* A kernel argument: a buffer, a byte offset into it (views share buffers)
 * and the bytes the argument spans from there (0: to the end of the buffer).
 * The extent lets a backend see which kernels touch disjoint memory (the
 * Vulkan backend puts barriers only between kernels that conflict). */
typedef struct nn_buffer_ref {
    nn_buffer *buffer;
    size_t offset;
    size_t bytes;
} nn_buffer_ref;

/* One recorded command of a captured step (core/capture.c): a kernel launch
 * or a buffer operation, with everything needed to issue it again. */
typedef enum nn_command_kind {
    NN_COMMAND_RUN,   /* kernel(args, params) */
    NN_COMMAND_FILL,  /* args[0] = value, `count` floats */
    NN_COMMAND_COPY,  /* args[0] <- args[1], `count` bytes */
    NN_COMMAND_WRITE  /* args[0] <- data, `count` bytes (a constant captured with the step) */
} nn_command_kind;

#define NN_COMMAND_MAX_ARGS 12 /* at least the most any kernel takes (kernels.h) */
#define NN_COMMAND_MAX_PARAMS 256 /* at least the largest parameter struct (kernels.h) */

typedef struct nn_command {
    nn_command_kind kind;
    nn_kernel kernel;
    int nargs;
    nn_buffer_ref args[NN_COMMAND_MAX_ARGS];
    _Alignas(8) unsigned char params[NN_COMMAND_MAX_PARAMS];
    float value;
    size_t count;
    void *data; /* WRITE: owned by the capture */
    /* Moves data over the bus (to or from host memory) rather than working
     * the GPU's units: the scheduler spreads such commands over the step
     * beside other work (core/schedule.c). */
    bool background;
} nn_command;

typedef enum nn_device_kind { NN_DEVICE_CPU, NN_DEVICE_GPU } nn_device_kind;

typedef struct nn_backend nn_backend;
struct nn_backend {
    const char *name;        /* "cpu", "vulkan" */
    char description[160];   /* device and library, for messages */
    nn_device_kind kind;
    int threads;
    /* Bit (1 << precision) for each nn_precision whose products run on
     * matrix cores (tensor cores) rather than the fp32 units. */
    unsigned matrix_core_precisions;

    /* Buffers. alloc returns NULL (and sets the error) when memory runs out. */
    nn_buffer *(*alloc)(nn_backend *self, size_t bytes);
    void (*free)(nn_backend *self, nn_buffer *buffer);
    nn_status (*write)(nn_backend *self, nn_buffer_ref dst, const void *src, size_t bytes);
    nn_status (*read)(nn_backend *self, nn_buffer_ref src, void *dst, size_t bytes);
    nn_status (*fill)(nn_backend *self, nn_buffer_ref dst, float value, size_t count);
    nn_status (*copy)(nn_backend *self, nn_buffer_ref dst, nn_buffer_ref src, size_t bytes);
    /* A buffer over host memory the caller owns and keeps until the buffer is
     * freed (free releases the buffer, never the memory): kernels and copies
     * read and write that memory in place, so another process mapping it (MPI's
     * shared windows, src/dist/) sees what the device wrote. host must be
     * aligned to host_import_alignment and bytes a multiple of it. NULL (and the
     * error says why) where the device cannot; NULL hook: never. */
    nn_buffer *(*import_host)(nn_backend *self, void *host, size_t bytes);
    size_t host_import_alignment;

    /* Launch one kernel. args: as kernel_list.h lists them; params: that
     * kernel's parameter struct. Every backend implements every kernel of
     * the registry; parameters a backend's kernel does not take are refused
     * with NN_ERR_BACKEND naming them: nothing falls back to another device
     * silently. */
    nn_status (*run)(nn_backend *self, nn_kernel kernel, const nn_buffer_ref *args, int nargs,
                     const void *params);

    /* Wait for all submitted work. */
    nn_status (*sync)(nn_backend *self);

    /* Capture and replay (docs/ARCHITECTURE.md). plan_new turns a captured step's
     * command list into something the backend can issue again cheaply (the
     * Vulkan backend records it once into a command buffer); plan_replay
     * issues it `times` times in a row, in order after all earlier work,
     * without waiting. A backend without plans (NULL hooks) is replayed by
     * the core, which issues the commands one by one through run/fill/copy/
     * write: no graph building, no allocation. */
    nn_status (*plan_new)(nn_backend *self, const nn_command *commands, int64_t count, void **plan);
    nn_status (*plan_replay)(nn_backend *self, void *plan, int64_t times);
    void (*plan_free)(nn_backend *self, void *plan);
    void (*destroy)(nn_backend *self);

    /* Whether the backend's convolution kernels (kernels.h) want the column
     * matrix kept between forward and backward for this layer: then the op
     * passes one, the forward fills it and the weight gradient reads it,
     * instead of running im2col a second time (memory for time). NULL: never. */
    bool (*conv_keeps_columns)(nn_backend *self, const nn_conv_params *p);
    /* The layout of a convolution's output where the context leaves the
     * choice to the backend (nn_ctx_set_memory_format's AUTO): channels-last
     * where its kernels for the layer are faster so (p's layouts are the
     * input's and the dense output's). NULL: dense. */
    nn_layout (*conv_layout)(nn_backend *self, const nn_conv_params *p);
    /* The fused kernels' query: whether this backend runs a fused kernel
     * (kernels.h: CONV2D_POOL_FORWARD for the layer's three kernels,
     * CONV2D_POOL_CHAIN_WEIGHT, CONV2D_POOL_LINEAR_FORWARD,
     * LINEAR_HEAD_FORWARD for the head's forward and data gradient,
     * LINEAR_HEAD_CROSS_ENTROPY) with these parameters to advantage, so
     * that operations take it rather than the kernels it stands for. Every
     * backend runs every kernel; NULL: none is an advantage here. */
    bool (*supports)(nn_backend *self, nn_kernel kernel, const void *params);

    /* Memory counters (nn_ctx_memory_stats): bytes in buffers handed out
     * now, the most at any time since the backend opened, and the bytes the
     * backend holds from the system or driver (blocks, caches). */
    void (*memory_stats)(nn_backend *self, uint64_t *current, uint64_t *peak, uint64_t *reserved);
};

/* The checks every backend's run() makes first (kernels.c): a known
 * kernel, its number of buffers, every argument that is not optional
 * present, and parameters. `backend` names the backend in the message. */
nn_status nn_kernel_check_call(const char *backend, nn_kernel kernel, const nn_buffer_ref *args, int nargs,
                               const void *params);

/* A backend's table of entry points, generated from the registry: for
 * each kernel, a function that calls NN_ENTRY_RUN(name)(self, params,
 * args) with the row's parameter struct. The backend defines NN_ENTRY_SELF
 * (its self type) and NN_ENTRY_RUN first:
 *     #define NN_ENTRY_SELF vk_backend
 *     #define NN_ENTRY_RUN(name) vk_run_##name
 *     NN_KERNEL_ENTRY_TABLE(kEntries)
 * and calls kEntries[kernel](self, params, args). */
#define NN_KERNEL_ENTRY_FN_(ID, name, params, ...)                                                    \
    static nn_status nn_entry_##name(NN_ENTRY_SELF *self, const void *p, const nn_buffer_ref *a) { \
        return NN_ENTRY_RUN(name)(self, (const params *)p, a);                                      \
    }
#define NN_KERNEL_ENTRY_ROW_(ID, name, ...) [NN_KERNEL_##ID] = nn_entry_##name,
#define NN_KERNEL_ENTRY_TABLE(table)                                                                  \
    NN_KERNEL_LIST(NN_KERNEL_ENTRY_FN_)                                                               \
    static nn_status (*const table[NN_KERNEL_COUNT])(NN_ENTRY_SELF *, const void *, const nn_buffer_ref *) = { \
        NN_KERNEL_LIST(NN_KERNEL_ENTRY_ROW_)};

/* Issue one recorded command through b's run/fill/copy/write. */
nn_status nn_command_issue(nn_backend *b, const nn_command *cmd);

/* Open the CPU backend with `threads` workers (0 = one per core). */
nn_backend *nn_cpu_backend_new(int threads);

#endif
