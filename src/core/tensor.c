/* Tensor lifetime, shape queries and host <-> device copies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "context_mismatch.h"
#include "backends/conv_layout.h"
#include "layout.h"

#define ELEMENT_BYTES 4 /* float32 and int32 */

static const char *dtype_name(nn_dtype dtype) { return dtype == NN_F32 ? "float32" : "int32"; }

/* Validates a user-supplied shape; on success stores the element count. */
static nn_status check_shape(const char *fn, int ndim, const int64_t *shape, int64_t *numel) {
    if (ndim < 1 || ndim > NN_MAX_DIMS)
        return nn_set_error(NN_ERR_SHAPE, "%s: ndim must be 1..%d, got %d", fn, NN_MAX_DIMS, ndim);
    if (!shape) return nn_set_error(NN_ERR_ARGUMENT, "%s: shape is NULL", fn);
    int64_t count = 1;
    for (int i = 0; i < ndim; i++) {
        char buf[96];
        if (shape[i] < 1)
            return nn_set_error(NN_ERR_SHAPE, "%s: dimension %d of shape %s must be >= 1", fn, i,
                                nn_format_shape(ndim, shape, buf, sizeof buf));
        if (count > INT64_MAX / ELEMENT_BYTES / shape[i])
            return nn_set_error(NN_ERR_SHAPE, "%s: shape %s is too large", fn,
                                nn_format_shape(ndim, shape, buf, sizeof buf));
        count *= shape[i];
    }
    *numel = count;
    return NN_OK;
}

static nn_tensor *tensor_struct(nn_ctx *ctx, nn_dtype dtype, int ndim, const int64_t *shape,
                                int64_t numel) {
    nn_tensor *t = calloc(1, sizeof *t);
    if (!t) return NN_FAIL_NULL(NN_ERR_MEMORY, "out of host memory for a tensor header");
    t->ctx = ctx;
    t->dtype = dtype;
    t->ndim = ndim;
    memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
    t->numel = numel;
    t->refcount = 1;
    t->step_slot = -1;
    t->live_next = ctx->live_head;
    if (ctx->live_head) ctx->live_head->live_prev = t;
    ctx->live_head = t;
    return t;
}

static void storage_release(nn_ctx *ctx, nn_storage *storage);

static void unlink_live(nn_tensor *t) {
    if (t->live_prev) t->live_prev->live_next = t->live_next;
    else t->ctx->live_head = t->live_next;
    if (t->live_next) t->live_next->live_prev = t->live_prev;
}

/* Storage of `bytes` for a tensor: from the recording capture's own pool
 * when it has a released one that fits, else from the backend. */
static nn_storage *storage_new(nn_ctx *ctx, size_t bytes) {
    nn_storage *storage = ctx->recording ? nn_capture_reuse(ctx, bytes) : NULL;
    if (storage) {
        storage->version = 0; /* a new tensor's */
        return storage;
    }
    storage = calloc(1, sizeof *storage);
    if (!storage) return NN_FAIL_NULL(NN_ERR_MEMORY, "out of host memory for a tensor");
    storage->bytes = bytes;
    storage->buffer = ctx->backend->alloc(ctx->backend, storage->bytes);
    if (!storage->buffer) {
        free(storage);
        return NULL; /* the backend named the size */
    }
    storage->refcount = 1;
    storage->allocated_in = ctx->recording;
    return storage;
}

static nn_tensor *alloc_entered(nn_ctx *ctx, nn_dtype dtype, int ndim, const int64_t *shape, bool step_owned) {
    int64_t numel;
    if (check_shape("nn_tensor_alloc", ndim, shape, &numel) != NN_OK) return NULL;
    nn_storage *storage = storage_new(ctx, (size_t)numel * ELEMENT_BYTES);
    if (!storage) return NULL;
    nn_tensor *t = tensor_struct(ctx, dtype, ndim, shape, numel);
    if (!t) {
        storage->refcount = 0;
        if (storage->pins > 0) nn_capture_release(ctx, storage);
        else nn_storage_destroy(ctx, storage);
        return NULL;
    }
    t->storage = storage;
    if (step_owned && nn_ctx_track_step_tensor(ctx, t) != NN_OK) {
        nn_tensor_release(t);
        return NULL;
    }
    return t;
}

nn_tensor *nn_tensor_alloc(nn_ctx *ctx, nn_dtype dtype, int ndim, const int64_t *shape,
                           bool step_owned) {
    if (nn_ctx_enter(ctx, "nn_tensor_alloc") != NN_OK) return NULL;
    nn_tensor *t = alloc_entered(ctx, dtype, ndim, shape, step_owned);
    nn_ctx_leave(ctx);
    return t;
}

static nn_tensor *deferred_entered(nn_ctx *ctx, nn_dtype dtype, int ndim, const int64_t *shape) {
    int64_t numel;
    if (check_shape("nn_tensor_deferred", ndim, shape, &numel) != NN_OK) return NULL;
    nn_tensor *t = tensor_struct(ctx, dtype, ndim, shape, numel);
    if (t && nn_ctx_track_step_tensor(ctx, t) != NN_OK) {
        nn_tensor_release(t);
        return NULL;
    }
    return t;
}

nn_tensor *nn_tensor_deferred(nn_ctx *ctx, nn_dtype dtype, int ndim, const int64_t *shape) {
    if (nn_ctx_enter(ctx, "nn_tensor_deferred") != NN_OK) return NULL;
    nn_tensor *t = deferred_entered(ctx, dtype, ndim, shape);
    nn_ctx_leave(ctx);
    return t;
}

nn_status nn_tensor_attach_storage(nn_tensor *t) {
    if (t->storage) return NN_OK;
    t->storage = storage_new(t->ctx, (size_t)t->numel * ELEMENT_BYTES);
    return t->storage ? NN_OK : nn_last_status();
}

nn_status nn_tensor_share_storage(nn_tensor *t, nn_tensor *source, size_t offset) {
    if (!source->storage) NN_TRY(nn_tensor_materialize(source));
    t->storage = source->storage;
    t->storage->refcount++;
    t->offset = source->offset + offset;
    return NN_OK;
}

static nn_tensor *view_at_entered(nn_tensor *source, size_t offset, int ndim, const int64_t *shape) {
    int64_t numel;
    if (check_shape("nn_tensor_view_at", ndim, shape, &numel) != NN_OK) return NULL;
    if (!source->storage && nn_tensor_materialize(source) != NN_OK) return NULL;
    size_t end = source->offset + offset + (size_t)numel * ELEMENT_BYTES;
    if (end > source->storage->bytes)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_tensor_view_at: %zu bytes at offset %zu exceed the storage (%zu)",
                            (size_t)numel * ELEMENT_BYTES, offset, source->storage->bytes);
    nn_tensor *t = tensor_struct(source->ctx, source->dtype, ndim, shape, numel);
    if (!t) return NULL;
    t->storage = source->storage;
    t->storage->refcount++;
    t->offset = source->offset + offset;
    return t;
}

nn_tensor *nn_tensor_view_at(nn_tensor *source, size_t offset, int ndim, const int64_t *shape) {
    if (nn_ctx_enter(source->ctx, "nn_tensor_view_at") != NN_OK) return NULL;
    nn_tensor *t = view_at_entered(source, offset, ndim, shape);
    nn_ctx_leave(source->ctx);
    return t;
}

size_t nn_ctx_host_import_alignment(const nn_ctx *ctx) {
    return ctx->backend->import_host ? ctx->backend->host_import_alignment : 0;
}

static nn_tensor *over_host_entered(nn_ctx *ctx, void *host, int64_t numel) {
    if (!ctx->backend->import_host)
        return NN_FAIL_NULL(NN_ERR_BACKEND, "nn_tensor_over_host: %s cannot use host memory in place",
                            ctx->backend->description);
    if (numel < 1) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_tensor_over_host: numel must be >= 1, got %lld",
                                       (long long)numel);
    nn_storage *storage = calloc(1, sizeof *storage);
    if (!storage) return NN_FAIL_NULL(NN_ERR_MEMORY, "out of host memory for a tensor");
    storage->bytes = (size_t)numel * ELEMENT_BYTES;
    storage->buffer = ctx->backend->import_host(ctx->backend, host, storage->bytes);
    if (!storage->buffer) {
        free(storage);
        return NULL; /* the backend said why */
    }
    storage->refcount = 1;
    nn_tensor *t = tensor_struct(ctx, NN_F32, 1, &numel, numel);
    if (!t) {
        nn_storage_destroy(ctx, storage);
        return NULL;
    }
    t->storage = storage;
    return t;
}

nn_tensor *nn_tensor_over_host(nn_ctx *ctx, void *host, int64_t numel) {
    if (nn_ctx_enter(ctx, "nn_tensor_over_host") != NN_OK) return NULL;
    nn_tensor *t = over_host_entered(ctx, host, numel);
    nn_ctx_leave(ctx);
    return t;
}

nn_status nn_tensor_move_into(nn_tensor *t, nn_tensor *target, size_t offset) {
    if (!target->storage) NN_TRY(nn_tensor_materialize(target));
    size_t bytes = (size_t)t->numel * ELEMENT_BYTES;
    size_t at = target->offset + offset;
    if (at + bytes > target->storage->bytes)
        return nn_set_error(NN_ERR_ARGUMENT, "nn_tensor_move_into: %zu bytes at offset %zu exceed the target (%zu)",
                            bytes, at, target->storage->bytes);
    nn_buffer_ref dst = {target->storage->buffer, at, bytes};
    NN_TRY(nn_ctx_copy(t->ctx, dst, nn_tensor_ref(t), bytes));
    storage_release(t->ctx, t->storage);
    t->storage = target->storage;
    t->storage->refcount++;
    t->offset = at;
    return NN_OK;
}

nn_tensor *nn_tensor_retain(nn_tensor *t) {
    if (t) t->refcount++;
    return t;
}

void nn_storage_destroy(nn_ctx *ctx, nn_storage *storage) {
    ctx->backend->free(ctx->backend, storage->buffer);
    free(storage);
}

static void storage_release(nn_ctx *ctx, nn_storage *storage) {
    if (--storage->refcount > 0) return;
    if (storage->pins > 0) nn_capture_release(ctx, storage); /* a capture still uses the memory */
    else nn_storage_destroy(ctx, storage);
}

static void release_entered(nn_tensor *t) {
    if (--t->refcount > 0) return;
    nn_tensor_release(t->grad);
    if (t->recipe) nn_node_release(t->recipe);
    if (t->storage) storage_release(t->ctx, t->storage);
    unlink_live(t);
    free(t);
}

void nn_tensor_release(nn_tensor *t) {
    if (!t) return;
    nn_ctx *ctx = t->ctx;
    /* Refused: the tensor stays allocated (freed with its context) rather
     * than corrupting the context another thread is using. */
    if (nn_ctx_enter(ctx, "nn_tensor_free") != NN_OK) return;
    release_entered(t);
    nn_ctx_leave(ctx);
}

nn_buffer_ref nn_tensor_ref(const nn_tensor *t) {
    /* A tensor whose kernels have not run: run them (a failure is reported
     * by the kernel that receives the missing argument). */
    if (!t->storage && nn_tensor_materialize((nn_tensor *)t) != NN_OK) return (nn_buffer_ref){NULL, 0, 0};
    /* A kernel argument made while recording belongs to the captured step. */
    if (t->ctx->recording) nn_capture_pin(t->ctx, t->storage);
    nn_buffer_ref ref = {t->storage->buffer, t->offset, (size_t)t->numel * ELEMENT_BYTES};
    return ref;
}

nn_buffer_ref nn_optional_ref(const nn_tensor *t) {
    nn_buffer_ref none = {NULL, 0, 0};
    return t ? nn_tensor_ref(t) : none;
}

/* ---- public API ---- */

/* A caller-owned tensor after checking what the caller passed; `fn` names
 * the public function in messages. */
static nn_tensor *caller_tensor(const char *fn, nn_ctx *ctx, nn_dtype dtype, int ndim,
                                const int64_t *shape) {
    if (!ctx) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: ctx is NULL", fn);
    if (dtype != NN_F32 && dtype != NN_I32)
        return NN_FAIL_NULL(NN_ERR_DTYPE, "%s: unknown dtype %d", fn, (int)dtype);
    int64_t numel;
    if (check_shape(fn, ndim, shape, &numel) != NN_OK) return NULL;
    return nn_tensor_alloc(ctx, dtype, ndim, shape, false);
}

nn_tensor *nn_tensor_new(nn_ctx *ctx, nn_dtype dtype, int ndim, const int64_t *shape) {
    nn_tensor *t = caller_tensor("nn_tensor_new", ctx, dtype, ndim, shape);
    /* All-zero bits are 0.0f and 0 alike. */
    if (t && nn_ctx_fill(ctx, nn_tensor_ref(t), 0.0f, (size_t)t->numel) != NN_OK) {
        nn_tensor_release(t);
        return NULL;
    }
    return t;
}

nn_tensor *nn_tensor_from_data(nn_ctx *ctx, nn_dtype dtype, int ndim, const int64_t *shape,
                               const void *data) {
    if (!data) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_tensor_from_data: data is NULL");
    nn_tensor *t = caller_tensor("nn_tensor_from_data", ctx, dtype, ndim, shape);
    if (t && nn_ctx_write(ctx, nn_tensor_ref(t), data, (size_t)t->numel * ELEMENT_BYTES) != NN_OK) {
        nn_tensor_release(t);
        return NULL;
    }
    return t;
}

void nn_tensor_free(nn_tensor *t) {
    if (!t) return;
    nn_ctx *ctx = t->ctx;
    if (nn_ctx_enter(ctx, "nn_tensor_free") != NN_OK) return; /* left to its context, as in nn_tensor_release */
    if (t->step_slot >= 0) nn_ctx_untrack_step_tensor(ctx, t);
    nn_tensor_release(t);
    nn_ctx_leave(ctx);
}

nn_status nn_tensor_persist(nn_tensor *t) {
    if (!t) return nn_set_error(NN_ERR_ARGUMENT, "nn_tensor_persist: tensor is NULL");
    if (t->step_slot < 0)
        return nn_set_error(NN_ERR_STATE,
                            "nn_tensor_persist: the tensor is not owned by the step (it was made "
                            "by nn_tensor_new/from_data, or persisted already)");
    /* The step's reference becomes the caller's. */
    NN_TRY(nn_ctx_enter(t->ctx, "nn_tensor_persist"));
    nn_ctx_untrack_step_tensor(t->ctx, t);
    nn_ctx_leave(t->ctx);
    return NN_OK;
}

static nn_status check_copy(const char *fn, const nn_tensor *t, const void *data, size_t bytes) {
    if (!t) return nn_set_error(NN_ERR_ARGUMENT, "%s: tensor is NULL", fn);
    if (!data) return nn_set_error(NN_ERR_ARGUMENT, "%s: data is NULL", fn);
    size_t want = (size_t)t->numel * ELEMENT_BYTES;
    if (bytes != want) {
        char buf[96];
        return nn_set_error(NN_ERR_ARGUMENT, "%s: %zu bytes given, tensor %s %s holds %zu", fn,
                            bytes, dtype_name(t->dtype),
                            nn_format_shape(t->ndim, t->shape, buf, sizeof buf), want);
    }
    return NN_OK;
}

/* A host copy of `bytes` for reordering between the logical order and a
 * channels-last storage. */
static void *reorder_buffer(const char *fn, size_t bytes) {
    void *buffer = malloc(bytes);
    if (!buffer) nn_set_error(NN_ERR_MEMORY, "%s: out of host memory reordering %zu bytes of a channels-last tensor",
                              fn, bytes);
    return buffer;
}

/* A view waiting for its launch (or elided) will share its source's storage. */
uint64_t nn_tensor_version(const nn_tensor *t) {
    while (t && !t->storage) {
        const nn_node *from = t->producer ? t->producer : t->recipe;
        if (!from || !from->op->view) break;
        t = from->inputs[0];
    }
    return t && t->storage ? t->storage->version : 0; /* storage still to come starts at 0 */
}

void nn_tensor_written(nn_tensor *t) {
    if (t && t->storage) t->storage->version++;
}

nn_status nn_tensor_write(nn_tensor *t, const void *data, size_t bytes) {
    NN_TRY(check_copy("nn_tensor_write", t, data, bytes));
    NN_TRY(nn_tensor_materialize(t)); /* its storage, and what was to write it first */
    nn_tensor_written(t);
    if (t->layout == NN_LAYOUT_DENSE) return nn_ctx_write(t->ctx, nn_tensor_ref(t), data, bytes);
    void *stored = reorder_buffer("nn_tensor_write", bytes);
    if (!stored) return nn_last_status();
    nn_layout_from_logical(t, data, stored);
    nn_status st = nn_ctx_write(t->ctx, nn_tensor_ref(t), stored, bytes);
    free(stored);
    return st;
}

static nn_status read_entered(const nn_tensor *t, void *data, size_t bytes) {
    if (t->ctx->recording) {
        nn_set_error(NN_ERR_STATE, "nn_tensor_read: reading a tensor while a capture records: a replayed step "
                                   "cannot return host values; read after nn_replay");
        nn_capture_fail(t->ctx);
        return NN_ERR_STATE;
    }
    NN_TRY(nn_tensor_materialize((nn_tensor *)t));
    if (t->layout == NN_LAYOUT_DENSE) return t->ctx->backend->read(t->ctx->backend, nn_tensor_ref(t), data, bytes);
    void *stored = reorder_buffer("nn_tensor_read", bytes);
    if (!stored) return nn_last_status();
    nn_status st = t->ctx->backend->read(t->ctx->backend, nn_tensor_ref(t), stored, bytes);
    if (st == NN_OK) nn_layout_to_logical(t, stored, data);
    free(stored);
    return st;
}

nn_status nn_tensor_read(const nn_tensor *t, void *data, size_t bytes) {
    NN_TRY(check_copy("nn_tensor_read", t, data, bytes));
    NN_TRY(nn_ctx_enter(t->ctx, "nn_tensor_read"));
    nn_status status = read_entered(t, data, bytes);
    nn_ctx_leave(t->ctx);
    return status;
}

/* Element by element in the logical order, one tensor channels-last (4-D)
 * and the other dense, of the same number of elements: one STRIDED_COPY
 * over the channels-last one's shape (sizes that fit the kernel's 32 bits:
 * the convolution that made it checked them). */
static nn_status copy_across_layouts(nn_tensor *dst, const nn_tensor *src) {
    const nn_tensor *last = src->layout == NN_LAYOUT_CHANNELS_LAST ? src : dst;
    const nn_strided_copy_params p =
        nn_channels_last_copy((int32_t)last->shape[0], (int32_t)last->shape[1], (int32_t)last->shape[2],
                              (int32_t)last->shape[3], last == dst, 0);
    const nn_buffer_ref args[2] = {nn_tensor_ref(src), nn_tensor_ref(dst)};
    return nn_ctx_run(dst->ctx, NN_KERNEL_STRIDED_COPY, args, 2, &p);
}

nn_status nn_tensor_copy(nn_tensor *dst, const nn_tensor *src) {
    if (!dst || !src) return nn_set_error(NN_ERR_ARGUMENT, "nn_tensor_copy: a tensor is NULL");
    if (dst->ctx != src->ctx)
        return nn_error_other_context(NN_ERR_STATE, "nn_tensor_copy", "dst", dst->ctx, "src", src->ctx);
    if (dst->dtype != src->dtype || dst->numel != src->numel) {
        char a[96], b[96];
        return nn_set_error(NN_ERR_SHAPE, "nn_tensor_copy: %s %s from %s %s: dtype or element count differs",
                            dtype_name(dst->dtype), nn_format_shape(dst->ndim, dst->shape, a, sizeof a),
                            dtype_name(src->dtype), nn_format_shape(src->ndim, src->shape, b, sizeof b));
    }
    NN_TRY(nn_tensor_materialize(dst));
    NN_TRY(nn_tensor_materialize((nn_tensor *)src));
    if (dst->storage == src->storage && dst->offset == src->offset) return NN_OK;
    nn_tensor_written(dst);
    if (dst->layout != src->layout) return copy_across_layouts(dst, src);
    return nn_ctx_copy(dst->ctx, nn_tensor_ref(dst), nn_tensor_ref(src), (size_t)dst->numel * ELEMENT_BYTES);
}

nn_status nn_tensor_fill(nn_tensor *t, float value) {
    if (!t) return nn_set_error(NN_ERR_ARGUMENT, "nn_tensor_fill: tensor is NULL");
    if (t->dtype != NN_F32)
        return nn_set_error(NN_ERR_DTYPE, "nn_tensor_fill: tensor is int32, fill takes float32");
    NN_TRY(nn_tensor_materialize(t));
    nn_tensor_written(t);
    return nn_ctx_fill(t->ctx, nn_tensor_ref(t), value, (size_t)t->numel);
}

nn_ctx *nn_tensor_ctx(const nn_tensor *t) { return t ? t->ctx : NULL; }
nn_dtype nn_tensor_dtype(const nn_tensor *t) { return t ? t->dtype : NN_F32; }
int nn_tensor_ndim(const nn_tensor *t) { return t ? t->ndim : 0; }
int64_t nn_tensor_numel(const nn_tensor *t) { return t ? t->numel : 0; }

int64_t nn_tensor_dim(const nn_tensor *t, int dim) {
    if (!t) return 0;
    if (dim < 0) dim += t->ndim;
    return dim >= 0 && dim < t->ndim ? t->shape[dim] : 0;
}

int nn_tensor_shape(const nn_tensor *t, int64_t *shape) {
    if (!t || !shape) return 0;
    memcpy(shape, t->shape, (size_t)t->ndim * sizeof *shape);
    return t->ndim;
}

const char *nn_tensor_shape_str(const nn_tensor *t, char *buf, size_t size) {
    if (!buf || size == 0) return buf;
    if (!t) {
        snprintf(buf, size, "(null)");
        return buf;
    }
    return nn_format_shape(t->ndim, t->shape, buf, size);
}

nn_status nn_tensor_set_requires_grad(nn_tensor *t, bool requires_grad) {
    if (!t) return nn_set_error(NN_ERR_ARGUMENT, "nn_tensor_set_requires_grad: tensor is NULL");
    if (requires_grad && t->dtype != NN_F32)
        return nn_set_error(NN_ERR_DTYPE,
                            "nn_tensor_set_requires_grad: only float32 tensors have gradients");
    if (!requires_grad && t->grad_fn)
        return nn_set_error(NN_ERR_STATE,
                            "nn_tensor_set_requires_grad: the tensor is the result of a recorded "
                            "operation; its requires_grad follows its inputs");
    t->requires_grad = requires_grad;
    return NN_OK;
}

bool nn_tensor_requires_grad(const nn_tensor *t) { return t && t->requires_grad; }
nn_tensor *nn_tensor_grad(const nn_tensor *t) { return t ? t->grad : NULL; }

nn_status nn_tensor_zero_grad(nn_tensor *t) {
    if (!t) return nn_set_error(NN_ERR_ARGUMENT, "nn_tensor_zero_grad: tensor is NULL");
    if (!t->grad) return NN_OK;
    return nn_tensor_fill(t->grad, 0.0f);
}

nn_status nn_tensor_retain_grad(nn_tensor *t) {
    if (!t) return nn_set_error(NN_ERR_ARGUMENT, "nn_tensor_retain_grad: tensor is NULL");
    t->retain_grad = true;
    return NN_OK;
}
