/* The library's private view of contexts, tensors and the autograd tape.
 * Included by src/ only. */
#ifndef NN_CORE_INTERNAL_H
#define NN_CORE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "nn_engine.h"
#include "backends/backend.h"
#include "error.h"
#include "rng.h"

typedef struct nn_capture nn_capture;

/* A device buffer shared by a tensor and its views. Captures pin the
 * storages their commands use (capture.c): a pinned storage whose last
 * tensor is gone is `released` but keeps its buffer until no capture pins it. */
typedef struct nn_storage {
    int refcount;
    nn_buffer *buffer;
    size_t bytes;
    int pins;
    uint64_t last_pin_id;     /* the newest capture that pinned it (no double pins) */
    nn_capture *allocated_in; /* the capture recording when it was allocated, or NULL */
    bool released;
} nn_storage;

typedef struct nn_node nn_node;

struct nn_tensor {
    nn_ctx *ctx;
    nn_dtype dtype;
    int ndim;
    int64_t shape[NN_MAX_DIMS];
    int64_t numel;
    nn_storage *storage;
    size_t offset; /* bytes into storage, for views */
    int refcount;

    bool requires_grad;
    nn_tensor *grad;     /* owned; same shape */
    bool grad_written;   /* non-leaf: this backward pass has written grad */
    nn_node *grad_fn;    /* the tape node that produced it; NULL for leaves */
    bool is_result;      /* produced by a recorded op (stays set after the tape is cleared) */

    int64_t step_slot;   /* index in ctx->step_tensors, or -1 when not step-owned */
    /* fusion (issue 6): true while nn_backward walks from this tensor, whose
     * gradient is then exactly the seed 1 (softmax-CE needs no kernel). */
    bool grad_seeded;
    nn_tensor *live_prev, *live_next; /* every live tensor of the context */
};

/* The most saved tensors or inputs any operation needs. */
#define NN_NODE_MAX_TENSORS 5

typedef nn_status (*nn_backward_fn)(nn_node *node);

/* One recorded operation: its output, inputs, what it saved for backward
 * (column matrix, argmax, probabilities) and its parameters. The node holds
 * references to all of them until the tape is cleared. */
struct nn_node {
    const char *op;
    nn_backward_fn backward;
    nn_tensor *output;
    nn_tensor *inputs[NN_NODE_MAX_TENSORS];
    int input_count;
    nn_tensor *saved[NN_NODE_MAX_TENSORS];
    int saved_count;
    int64_t tape_index;
    int fusion; /* fusion (issue 6): NN_NODE_* bits of src/ops/fused_relu.h */
    union {
        nn_gemm_params gemm;
        nn_conv_geometry conv;
        nn_pool_params pool;
        nn_conv_pool_params conv_pool;
        nn_linear_head_params linear_head;
        struct {
            bool transpose_a, transpose_b;
        } matmul;
        float factor;
    } params;
};

struct nn_ctx {
    nn_backend *backend;
    nn_rng rng;
    bool grad_enabled;

    nn_node **tape;
    int64_t tape_count, tape_capacity;

    nn_tensor **step_tensors; /* slots may be NULL after an early free */
    int64_t step_count, step_capacity, step_live;

    nn_tensor *live_head; /* every tensor not yet freed */

    nn_capture *recording;     /* the capture being recorded, or NULL */
    nn_capture *captures;      /* every capture alive (a list through capture->next) */
    uint64_t next_capture_id;
    /* dropout (ops/dropout.c): the draw counter lives on the device (a
     * persistent uint32 tensor, freed with the context's live tensors) so
     * that a replayed step draws a fresh mask; the key is drawn from `rng`
     * once per generator generation (nn_ctx_manual_seed starts a new one). */
    nn_tensor *dropout_counter;
    uint32_t dropout_key[2];
    uint64_t dropout_generation;
};

/* ---- tensors (tensor.c) ---- */

/* A new tensor with its own (uninitialised) storage. step_owned: belongs to
 * the current step (an op's result) rather than the caller. */
nn_tensor *nn_tensor_alloc(nn_ctx *ctx, nn_dtype dtype, int ndim, const int64_t *shape,
                           bool step_owned);
/* A tensor sharing `source`'s storage with a new shape (same numel). */
nn_tensor *nn_tensor_view(nn_tensor *source, int ndim, const int64_t *shape);
nn_tensor *nn_tensor_retain(nn_tensor *t);
void nn_tensor_release(nn_tensor *t);
nn_buffer_ref nn_tensor_ref(const nn_tensor *t);
/* The tensor's argument, or an absent one for NULL. */
nn_buffer_ref nn_optional_ref(const nn_tensor *t);
/* ---- fusion (issue 6): tensors living inside a larger buffer (src/optim/sgd.c) ---- */
/* A caller-owned (not step-owned) tensor over `source`'s storage starting
 * `offset` bytes after source's own offset; offset + its size must fit. */
nn_tensor *nn_tensor_view_at(nn_tensor *source, size_t offset, int ndim, const int64_t *shape);
/* Copy t's data to `target`'s storage at `offset` bytes past target's
 * offset (a device copy) and make t live there from now on; t's old storage
 * is released. Views made of t before keep the old storage, so callers move
 * only tensors that are their storage's sole user. */
nn_status nn_tensor_move_into(nn_tensor *t, nn_tensor *target, size_t offset);
/* ---- end fusion ---- */

/* Free a storage's buffer and header (its last tensor and capture are gone). */
void nn_storage_destroy(nn_ctx *ctx, nn_storage *storage);

/* ---- context (context.c) ---- */

/* Buffer operations of the core, recorded while a capture records. */
nn_status nn_ctx_fill(nn_ctx *ctx, nn_buffer_ref dst, float value, size_t count);
nn_status nn_ctx_copy(nn_ctx *ctx, nn_buffer_ref dst, nn_buffer_ref src, size_t bytes);
nn_status nn_ctx_write(nn_ctx *ctx, nn_buffer_ref dst, const void *src, size_t bytes);

nn_status nn_ctx_track_step_tensor(nn_ctx *ctx, nn_tensor *t);
void nn_ctx_untrack_step_tensor(nn_ctx *ctx, nn_tensor *t);
/* The backend's nn_backend.conv_keeps_columns for this layer. */
bool nn_ctx_conv_keeps_columns(nn_ctx *ctx, const nn_conv_params *p);
/* The backend's capability query (nn_backend.supports) for a fused kernel. */
bool nn_ctx_supports(nn_ctx *ctx, nn_kernel kernel, const void *params);

/* Launch a kernel on the context's backend; a failure names the kernel. */
nn_status nn_ctx_run(nn_ctx *ctx, nn_kernel kernel, const nn_buffer_ref *args, int nargs,
                     const void *params);

/* ---- capture (capture.c) ---- */

/* The recording capture uses this storage: keep its memory until the
 * capture is freed. */
void nn_capture_pin(nn_ctx *ctx, nn_storage *storage);
/* A storage of >= bytes that the recording capture allocated and its step
 * has released (to reuse for the step's next temporary), or NULL. */
nn_storage *nn_capture_reuse(nn_ctx *ctx, size_t bytes);
/* The last tensor of a pinned storage is gone. */
void nn_capture_release(nn_ctx *ctx, nn_storage *storage);
/* Append a command to the recording capture (a copy of params and data). */
void nn_capture_record(nn_ctx *ctx, const nn_command *command, const void *data);
/* An operation failed while recording: the capture cannot be replayed. */
void nn_capture_fail(nn_ctx *ctx);
/* nn_ctx_free: free every capture still alive. */
void nn_capture_free_all(nn_ctx *ctx);

/* ---- autograd (autograd.c) ---- */

/* True when an op on these inputs must be recorded (grad mode on and some
 * input requires grad). NULL entries are skipped. */
bool nn_autograd_needed(nn_ctx *ctx, nn_tensor *const *inputs, int count);
/* Record a node producing `output`; marks output as requiring grad. The node
 * takes references to inputs and saved tensors. */
nn_node *nn_tape_record(nn_tensor *output, const char *op, nn_backward_fn backward,
                        nn_tensor *const *inputs, int input_count, nn_tensor *const *saved,
                        int saved_count);
/* Drop every node (and the references they hold). */
void nn_tape_clear(nn_ctx *ctx);
/* Whether an input of a node wants a gradient. */
bool nn_wants_grad(const nn_tensor *t);
/* The gradient tensor of t that a backward rule should write, and whether
 * to add into it (it already holds a gradient) or overwrite it. */
nn_status nn_grad_target(nn_tensor *t, nn_tensor **grad, int32_t *accumulate);

#endif
