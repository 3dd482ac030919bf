/* A context is one device (a backend) plus the state of define-by-run
 * execution on it: the autograd tape, the tensors created during the current
 * step, the random generator and the grad-mode switch. Every tensor belongs to
 * exactly one context; an operation whose inputs come from two contexts fails. */
#ifndef NN_CONTEXT_H
#define NN_CONTEXT_H

#include <stdbool.h>
#include <stdint.h>
#include "nn_error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nn_ctx nn_ctx;

typedef struct nn_ctx_options {
    /* "cpu" (default when NULL); "vulkan": the Vulkan GPU (NN_ENGINE_VULKAN_DEVICE
     * = index or name part picks one; a software device such as lavapipe too);
     * "auto": a hardware Vulkan GPU when one is usable, else the CPU
     * (nn_ctx_device_name says which). */
    const char *device;
    int threads;        /* worker threads for the CPU backend; 0 = one per core */
    uint64_t seed;      /* seed of the context's random generator */
} nn_ctx_options;

/* Open a context on a device. Returns NULL and sets nn_last_error() when the
 * device is unknown or cannot be opened. options may be NULL (CPU, all cores,
 * seed 0). */
nn_ctx *nn_ctx_new(const nn_ctx_options *options);
/* Free the context and every tensor still alive on it (whoever holds it).
 * Free its modules and optimizers first: they hold tensors and would be left
 * pointing at freed memory. NULL is ignored. */
void nn_ctx_free(nn_ctx *ctx);

/* Human-readable device name, e.g. "cpu (OpenBLAS, 2 threads)" or
 * "vulkan 0: NVIDIA H100 80GB HBM3 (discrete gpu, NVIDIA 580.159.04)". */
const char *nn_ctx_device_name(const nn_ctx *ctx);
/* Number of worker threads the backend uses. */
int nn_ctx_threads(const nn_ctx *ctx);

/* Device memory of the context's backend, in bytes (any pointer may be
 * NULL): `current` in tensors and temporaries now, `peak` the most at any
 * moment since the context opened (both counted as allocated, alignment
 * included), `reserved` what the backend holds from the driver or system
 * (Vulkan: its memory blocks; CPU: live buffers plus its cache of freed
 * ones). Staging and host-visible buffers are not counted. */
nn_status nn_ctx_memory_stats(const nn_ctx *ctx, uint64_t *current, uint64_t *peak, uint64_t *reserved);
/* Wait until all work submitted to the device has finished. */
nn_status nn_ctx_sync(nn_ctx *ctx);

/* Re-seed the context's random generator (initialisers draw from it). */
nn_status nn_ctx_manual_seed(nn_ctx *ctx, uint64_t seed);

/* Grad mode: when disabled, operations record nothing on the tape (inference,
 * evaluation). Returns the previous setting. These setters follow the
 * threading rule: called while another thread is inside the context, they
 * change nothing, return the current setting and set NN_ERR_STATE
 * (nn_last_status). */
bool nn_ctx_set_grad_enabled(nn_ctx *ctx, bool enabled);
bool nn_ctx_grad_enabled(const nn_ctx *ctx);
/* Whether chains of operations run as fused kernels where the device has
 * them (on by default); off, every operation runs its own kernels (to
 * compare, or to find a bug). Takes effect for operations not yet run.
 * Returns the previous setting. */
bool nn_ctx_set_fusion(nn_ctx *ctx, bool enabled);

/* The precision of products: matrix multiplications, Linear layers and
 * convolutions (not depthwise ones). FP16 and BF16 round the two operands of
 * each product to that format and keep the sums and every result in fp32,
 * as tensor cores do; everything else (normalisation, losses, pointwise
 * operations, the optimizer) stays fp32. Every backend computes the same
 * rounded products; a Vulkan device with fp16 matrix cores (see
 * nn_ctx_matrix_cores) runs FP16 products on them. An operation takes the
 * setting when it is recorded, and its backward products use the same.
 * Fails (NN_ERR_ARGUMENT) for a value not in the enum, NN_ERR_STATE while
 * another thread is inside the context. */
typedef enum nn_precision { NN_PRECISION_FP32 = 0, NN_PRECISION_FP16 = 1, NN_PRECISION_BF16 = 2 } nn_precision;
nn_status nn_ctx_set_precision(nn_ctx *ctx, nn_precision precision);
nn_precision nn_ctx_precision(const nn_ctx *ctx);
/* "fp32", "fp16", "bf16"; NULL for another value. */
const char *nn_precision_name(nn_precision precision);
/* The precision named "fp32", "fp16" or "bf16" into *out; NN_ERR_ARGUMENT
 * naming `name` otherwise. */
nn_status nn_precision_parse(const char *name, nn_precision *out);
/* Whether the context's device runs `precision` products on matrix cores
 * (tensor cores) rather than its fp32 arithmetic units. */
bool nn_ctx_matrix_cores(const nn_ctx *ctx, nn_precision precision);

/* Where convolutional layers keep their activations. Every tensor keeps
 * PyTorch's logical shape ([N, C, H, W]) whatever its memory holds: reads,
 * writes, checkpoints and ONNX see that order, and operations that want
 * another layout get a converted copy. AUTO (the default) lets the device
 * choose per layer: channels-last (memory in N, H, W, C order, as PyTorch's
 * torch.channels_last) where its convolution kernels run faster so, which
 * a GPU backend does for most layers and the CPU for none. CONTIGUOUS and
 * CHANNELS_LAST make every convolution's output take that layout (to
 * compare, or to test). Takes effect for operations recorded after it;
 * returns the previous setting. Another value is refused (NN_ERR_ARGUMENT,
 * the setting unchanged), as is a call while another thread is inside the
 * context (NN_ERR_STATE): both set nn_last_status. */
typedef enum nn_memory_format {
    NN_MEMORY_FORMAT_AUTO = 0,
    NN_MEMORY_FORMAT_CONTIGUOUS = 1,
    NN_MEMORY_FORMAT_CHANNELS_LAST = 2
} nn_memory_format;
nn_memory_format nn_ctx_set_memory_format(nn_ctx *ctx, nn_memory_format format);
nn_memory_format nn_ctx_memory_format(const nn_ctx *ctx);

/* End a training step: drop the autograd tape and free every tensor an
 * operation created since the previous call (the step's activations and
 * temporaries), except those handed to nn_tensor_persist(). Pointers to the
 * freed tensors become invalid. Parameters, their gradients and tensors made
 * with nn_tensor_new()/nn_tensor_from_data() are not touched. */
nn_status nn_ctx_step_end(nn_ctx *ctx);

/* Number of tensors the current step owns (a leak check for callers). */
int64_t nn_ctx_step_tensor_count(const nn_ctx *ctx);
/* Number of operations on the autograd tape that no nn_backward has
 * consumed yet: 0 when ending the step loses no graph a backward could
 * still walk (Python's nn_engine ends steps by itself then). */
int64_t nn_ctx_tape_length(const nn_ctx *ctx);

/* The most tensors one step may own: operations recorded without a step
 * end (a loop that never calls nn_ctx_step_end) hold every result, and
 * would grow until the system kills the process. The operation that would
 * pass it fails, naming the limit. */
#define NN_MAX_STEP_TENSORS (1 << 17)

/* The threading rule: a context belongs to one thread at a time. A call
 * that touches a context while another thread is inside it fails with
 * NN_ERR_STATE ("context ... is in use by another thread") instead of
 * corrupting it; give each thread its own context, or serialise the calls
 * (the Python package does: its calls take turns under one lock). Different
 * contexts run in parallel freely. */

#ifdef __cplusplus
}
#endif
#endif
