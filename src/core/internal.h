/* The library's private view of contexts, tensors and the autograd tape.
 * Included by src/ only. */
#ifndef NN_CORE_INTERNAL_H
#define NN_CORE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "nn_engine.h"
#include "backends/backend.h"
#include "ctx_guard.h"
#include "base/error.h"
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
    /* Writes through the API (nn_tensor_write, copy and fill, an optimizer
     * step): a node's backward refuses inputs written after it was
     * recorded, as PyTorch's version counters (autograd.c). Views share it. */
    uint64_t version;
} nn_storage;

typedef struct nn_node nn_node; /* core/graph.h */
typedef struct nn_op nn_op;

struct nn_tensor {
    nn_ctx *ctx;
    nn_dtype dtype;
    int ndim;
    int64_t shape[NN_MAX_DIMS];
    int64_t numel;
    /* How the storage holds the elements (core/layout.h): dense (row-major
     * over shape), or channels-last for a 4-D activation. Its gradient has
     * the same layout. */
    nn_layout layout;
    /* NULL until the kernels that compute it run (core/graph.h): while its
     * operation is pending (producer), or when fused kernels left it
     * unwritten (recipe). */
    nn_storage *storage;
    size_t offset; /* bytes into storage, for views */
    int refcount;
    nn_node *producer; /* its pending node, or NULL */
    nn_node *recipe;   /* owned: how to compute it when fused kernels did not, or NULL */
    /* A pending node that writes it in place (BatchNorm's running
     * statistics), or NULL: a read, write or copy of it flushes first. */
    nn_node *pending_writer;

    bool requires_grad;
    nn_tensor *grad;     /* owned; same shape */
    bool grad_written;   /* non-leaf: this backward pass has written grad */
    bool retain_grad;    /* non-leaf: keep grad after backward (nn_tensor_retain_grad) */
    nn_node *grad_fn;    /* the tape node that produced it; NULL for leaves */
    bool is_result;      /* produced by a recorded op (stays set after the tape is cleared) */

    int64_t step_slot;   /* index in ctx->step_tensors, or -1 when not step-owned */
    /* True while nn_backward walks from this tensor, whose gradient is then
     * exactly the seed 1 (a loss's gradient can be handed on, no kernel). */
    bool grad_seeded;
    int tape_readers; /* during nn_backward: the tape's nodes that read it (nn_tape_consumers) */
    int readers_left; /* during nn_backward, for a leaf: those whose backward has not run yet */
    int pending_readers;    /* during a flush: the pending nodes that read it (core/fusion.c) */
    nn_node *pending_reader; /* ... the last of them */
    nn_tensor *live_prev, *live_next; /* every live tensor of the context */
};

/* A leaf's gradient is complete: every node of the tape that reads it has
 * run its backward (its kernels are issued, maybe not finished). */
typedef nn_status (*nn_grad_ready_fn)(void *user, nn_tensor *leaf);

struct nn_ctx {
    nn_ctx_guard guard; /* the threading rule (ctx_guard.h) */
    nn_backend *backend;
    nn_rng rng;
    bool grad_enabled;
    /* An ONNX export is tracing the model's forward (io/onnx_export.c):
     * custom functions record their composition (nn_function_def.compose). */
    bool tracing_export;

    nn_node **tape;
    int64_t tape_count, tape_capacity;

    nn_node **pending; /* recorded, not yet run (core/graph.h) */
    int64_t pending_count, pending_capacity;
    bool flushing;
    bool fusion_off; /* nn_ctx_set_fusion(ctx, false) */
    int32_t precision;        /* nn_ctx_set_precision: what operations record */
    int32_t memory_format;    /* nn_ctx_set_memory_format: the layout convolutions' outputs take */
    int32_t launch_precision; /* the precision of the node whose kernels are being issued */

    nn_tensor **step_tensors; /* slots may be NULL after an early free */
    int64_t step_count, step_capacity, step_live;

    nn_tensor *live_head; /* every tensor not yet freed */

    nn_capture *recording;     /* the capture being recorded, or NULL */
    nn_capture *captures;      /* every capture alive (a list through capture->next) */
    uint64_t next_capture_id;
    uint64_t constants_version; /* nn_ctx_constants_changed: recordings made before refuse to replay */
    /* dropout (ops/dropout.c): the draw counter lives on the device (a
     * persistent uint32 tensor, freed with the context's live tensors) so
     * that a replayed step draws a fresh mask; the key is drawn from `rng`
     * once per generator generation (nn_ctx_manual_seed starts a new one). */
    nn_tensor *dropout_counter;
    uint32_t dropout_key[2];
    uint64_t dropout_generation;
    /* Hears of each leaf whose gradient a backward pass has completed, while
     * the pass goes on (autograd.c), or NULL: nn_ctx_set_grad_ready. */
    nn_grad_ready_fn grad_ready;
    void *grad_ready_user;
    bool background; /* nn_ctx_set_background */
    int64_t commands_issued; /* kernels, fills, copies and writes, ever */
};

/* Sets the context's grad-ready hook (fn NULL clears it); refused while
 * another user's is set. */
nn_status nn_ctx_set_grad_ready(nn_ctx *ctx, nn_grad_ready_fn fn, void *user);

/* Commands recorded from now until it is set false again are background
 * ones (nn_command.background): they move data over the bus and may run
 * anywhere their dependencies allow. */
static inline void nn_ctx_set_background(nn_ctx *ctx, bool background) { ctx->background = background; }

/* ---- tensors (tensor.c) ---- */

/* A new tensor with its own (uninitialised) storage. step_owned: belongs to
 * the current step (an op's result) rather than the caller. */
nn_tensor *nn_tensor_alloc(nn_ctx *ctx, nn_dtype dtype, int ndim, const int64_t *shape,
                           bool step_owned);
/* A step-owned tensor with no storage yet (an operation's output, given
 * storage when its kernels run: core/graph.h). */
nn_tensor *nn_tensor_deferred(nn_ctx *ctx, nn_dtype dtype, int ndim, const int64_t *shape);
/* t shares `source`'s storage from `offset` bytes past source's offset (a
 * view operation's launch; source is materialized first). */
nn_status nn_tensor_share_storage(nn_tensor *t, nn_tensor *source, size_t offset);
nn_tensor *nn_tensor_retain(nn_tensor *t);
void nn_tensor_release(nn_tensor *t);
/* Its storage's version (nn_storage.version; 0 before it has storage), and
 * the note that the API wrote it (the version goes up). */
uint64_t nn_tensor_version(const nn_tensor *t);
void nn_tensor_written(nn_tensor *t);
nn_buffer_ref nn_tensor_ref(const nn_tensor *t);
/* The tensor's argument, or an absent one for NULL. */
nn_buffer_ref nn_optional_ref(const nn_tensor *t);
/* ---- tensors living inside a larger buffer (an optimizer's flat buffers) ---- */
/* A caller-owned (not step-owned) tensor over `source`'s storage starting
 * `offset` bytes after source's own offset; offset + its size must fit. */
nn_tensor *nn_tensor_view_at(nn_tensor *source, size_t offset, int ndim, const int64_t *shape);
/* A caller-owned float32 tensor of `numel` values over host memory the
 * caller owns and keeps until the tensor is freed: the device reads and
 * writes it in place (backend.h, import_host). NULL with the error where the
 * backend cannot, or host and its size are not nn_ctx_host_import_alignment
 * aligned. */
nn_tensor *nn_tensor_over_host(nn_ctx *ctx, void *host, int64_t numel);
/* The alignment nn_tensor_over_host needs, or 0 where the backend cannot. */
size_t nn_ctx_host_import_alignment(const nn_ctx *ctx);
/* Copy t's data to `target`'s storage at `offset` bytes past target's
 * offset (a device copy) and make t live there from now on; t's old storage
 * is released. Views made of t before keep the old storage, so callers move
 * only tensors that are their storage's sole user. */
nn_status nn_tensor_move_into(nn_tensor *t, nn_tensor *target, size_t offset);

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

/* A value that kernels take as a constant, and that recordings therefore
 * hold as recorded, has changed (an optimizer's momentum or betas): every
 * capture recorded on ctx before now refuses to replay. */
void nn_ctx_constants_changed(nn_ctx *ctx);

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
 * input requires grad, or is itself on the tape without requiring grad: an
 * int32 result such as argmax's or a comparison's, traced for ONNX export).
 * NULL entries are skipped. */
bool nn_autograd_needed(nn_ctx *ctx, nn_tensor *const *inputs, int count);
/* Put a node on the tape (it takes a reference); marks its output as
 * requiring grad when it is float32 and an input requires grad. */
nn_status nn_tape_push(nn_node *node);
/* Drop every node (and the references they hold). */
void nn_tape_clear(nn_ctx *ctx);
/* Whether an input of a node wants a gradient. */
bool nn_wants_grad(const nn_tensor *t);
/* The gradient tensor of t that a backward rule should write, and whether
 * to add into it (it already holds a gradient) or overwrite it. */
nn_status nn_grad_target(nn_tensor *t, nn_tensor **grad, int32_t *accumulate);
/* During nn_backward: how many nodes on the tape (up to the loss's) read t. */
int nn_tape_consumers(const nn_tensor *t);

#endif
