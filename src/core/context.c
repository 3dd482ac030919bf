/* Contexts: device choice, the step's tensors, grad mode, the generator. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "backends/registry.h"
#include "graph.h"

nn_ctx *nn_ctx_new(const nn_ctx_options *options) {
    nn_ctx_options defaults = {"cpu", 0, 0};
    if (!options) options = &defaults;
    const char *device = options->device ? options->device : "cpu";
    if (options->threads < 0)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_ctx_new: threads must be >= 0 (0 = one per core), got %d",
                            options->threads);
    nn_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return NN_FAIL_NULL(NN_ERR_MEMORY, "nn_ctx_new: out of host memory");
    ctx->backend = nn_backend_open("nn_ctx_new", device, options->threads);
    if (!ctx->backend) {
        free(ctx);
        return NULL; /* the backend said why */
    }
    ctx->grad_enabled = true;
    nn_rng_seed(&ctx->rng, options->seed);
    return ctx;
}

/* The recipes of unwritten tensors hold tensors: released first, through
 * the tensors' own release, before the remaining tensors are freed. */
static void release_recipes(nn_ctx *ctx) {
    int64_t count = 0;
    for (nn_tensor *t = ctx->live_head; t; t = t->live_next) count += t->recipe != NULL;
    nn_node **recipes = count ? malloc((size_t)count * sizeof *recipes) : NULL;
    count = 0;
    for (nn_tensor *t = ctx->live_head; t; t = t->live_next)
        if (t->recipe && recipes) {
            recipes[count++] = t->recipe;
            t->recipe = NULL;
        }
    for (int64_t i = 0; i < count; i++) nn_node_release(recipes[i]);
    free(recipes);
}

void nn_ctx_free(nn_ctx *ctx) {
    if (!ctx) return;
    /* Refused while another thread is inside: freeing it would pull the
     * memory from under that thread (the context stays allocated). */
    if (nn_ctx_enter(ctx, "nn_ctx_free") != NN_OK) return;
    nn_ctx_drop_pending(ctx);
    nn_capture_free_all(ctx);
    nn_tape_clear(ctx);
    release_recipes(ctx);
    /* Free every tensor still alive, whoever holds it. Storage is shared by
     * views, so release it by count; grads are on the live list themselves. */
    nn_tensor *t = ctx->live_head;
    while (t) {
        nn_tensor *next = t->live_next;
        if (t->storage && --t->storage->refcount == 0) {
            ctx->backend->free(ctx->backend, t->storage->buffer);
            free(t->storage);
        }
        free(t);
        t = next;
    }
    free(ctx->step_tensors);
    free(ctx->tape);
    ctx->backend->destroy(ctx->backend);
    free(ctx);
}

const char *nn_ctx_device_name(const nn_ctx *ctx) { return ctx ? ctx->backend->description : ""; }
int nn_ctx_threads(const nn_ctx *ctx) { return ctx ? ctx->backend->threads : 0; }

nn_status nn_ctx_sync(nn_ctx *ctx) {
    if (!ctx) return nn_set_error(NN_ERR_ARGUMENT, "nn_ctx_sync: ctx is NULL");
    NN_TRY(nn_ctx_enter(ctx, "nn_ctx_sync"));
    nn_status status = nn_ctx_flush(ctx, NULL);
    if (status == NN_OK) status = ctx->backend->sync(ctx->backend);
    nn_ctx_leave(ctx);
    return status;
}

nn_status nn_ctx_manual_seed(nn_ctx *ctx, uint64_t seed) {
    if (!ctx) return nn_set_error(NN_ERR_ARGUMENT, "nn_ctx_manual_seed: ctx is NULL");
    NN_TRY(nn_ctx_enter(ctx, "nn_ctx_manual_seed"));
    nn_rng_seed(&ctx->rng, seed);
    nn_ctx_leave(ctx);
    return NN_OK;
}

/* The setters enter the guard as any call that changes the context: the
 * owning thread reads these flags while recording, so a write from another
 * thread would race with it. Refused, they keep the setting and return it. */
bool nn_ctx_set_grad_enabled(nn_ctx *ctx, bool enabled) {
    if (!ctx) return false;
    bool previous = ctx->grad_enabled;
    if (nn_ctx_enter(ctx, "nn_ctx_set_grad_enabled") != NN_OK) return previous;
    ctx->grad_enabled = enabled;
    nn_ctx_leave(ctx);
    return previous;
}

bool nn_ctx_grad_enabled(const nn_ctx *ctx) { return ctx && ctx->grad_enabled; }

bool nn_ctx_set_fusion(nn_ctx *ctx, bool enabled) {
    if (!ctx) return false;
    bool previous = !ctx->fusion_off;
    if (nn_ctx_enter(ctx, "nn_ctx_set_fusion") != NN_OK) return previous;
    ctx->fusion_off = !enabled;
    nn_ctx_leave(ctx);
    return previous;
}

nn_status nn_ctx_track_step_tensor(nn_ctx *ctx, nn_tensor *t) {
    if (ctx->step_live >= NN_MAX_STEP_TENSORS)
        return nn_set_error(NN_ERR_MEMORY, "%lld tensors made since the last step end, the limit (NN_MAX_STEP_TENSORS): "
                            "end each step with nn_ctx_step_end (Python: nn_engine.end_batch()), or free results "
                            "no longer needed", (long long)ctx->step_live);
    if (ctx->step_count == ctx->step_capacity) {
        int64_t capacity = ctx->step_capacity ? ctx->step_capacity * 2 : 256;
        nn_tensor **grown = realloc(ctx->step_tensors, (size_t)capacity * sizeof *grown);
        if (!grown) return nn_set_error(NN_ERR_MEMORY, "out of host memory tracking step tensors");
        ctx->step_tensors = grown;
        ctx->step_capacity = capacity;
    }
    t->step_slot = ctx->step_count;
    ctx->step_tensors[ctx->step_count++] = t;
    ctx->step_live++;
    return NN_OK;
}

void nn_ctx_untrack_step_tensor(nn_ctx *ctx, nn_tensor *t) {
    ctx->step_tensors[t->step_slot] = NULL;
    t->step_slot = -1;
    ctx->step_live--;
}

static nn_status step_end_entered(nn_ctx *ctx) {
    /* What the step recorded runs even if nothing read it: operations may
     * have effects beyond their output (a dropout draw advances its counter). */
    nn_status flushed = nn_ctx_flush(ctx, NULL);
    nn_tape_clear(ctx);
    for (int64_t i = 0; i < ctx->step_count; i++) {
        nn_tensor *t = ctx->step_tensors[i];
        if (!t) continue;
        t->step_slot = -1;
        nn_tensor_release(t);
    }
    ctx->step_count = 0;
    ctx->step_live = 0;
    return flushed;
}

nn_status nn_ctx_step_end(nn_ctx *ctx) {
    if (!ctx) return nn_set_error(NN_ERR_ARGUMENT, "nn_ctx_step_end: ctx is NULL");
    NN_TRY(nn_ctx_enter(ctx, "nn_ctx_step_end"));
    nn_status status = step_end_entered(ctx);
    nn_ctx_leave(ctx);
    return status;
}

int64_t nn_ctx_step_tensor_count(const nn_ctx *ctx) { return ctx ? ctx->step_live : 0; }

int64_t nn_ctx_tape_length(const nn_ctx *ctx) { return ctx ? ctx->tape_count : 0; }

/* While a capture records, every command is appended to it and then run;
 * a failure makes the capture unusable (nn_capture_end says why). */
static nn_status after_command(nn_ctx *ctx, nn_status status) {
    if (status != NN_OK && ctx->recording) nn_capture_fail(ctx);
    return status;
}

bool nn_ctx_conv_keeps_columns(nn_ctx *ctx, const nn_conv_params *p) {
    return ctx->backend->conv_keeps_columns && ctx->backend->conv_keeps_columns(ctx->backend, p);
}

bool nn_ctx_supports(nn_ctx *ctx, nn_kernel kernel, const void *params) {
    return ctx->backend->supports && ctx->backend->supports(ctx->backend, kernel, params);
}

/* A command from outside the operations (an optimizer, a device loop)
 * runs after what the operations recorded before it. */
static nn_status before_command(nn_ctx *ctx) {
    ctx->commands_issued++;
    return ctx->pending_count ? nn_ctx_flush(ctx, NULL) : NN_OK;
}

static nn_status run_entered(nn_ctx *ctx, nn_kernel kernel, const nn_buffer_ref *args, int nargs, const void *params) {
    NN_TRY(before_command(ctx));
    if (ctx->recording) {
        size_t size = nn_kernel_params_size(kernel);
        /* A kernel without a known parameter size cannot be replayed. */
        if (nargs < 0 || nargs > NN_COMMAND_MAX_ARGS || size == 0 || size > NN_COMMAND_MAX_PARAMS || !params) {
            nn_status st = nn_set_error(NN_ERR_BACKEND, "capture: kernel %s with %d arguments cannot be recorded",
                                        nn_kernel_name(kernel), nargs);
            return after_command(ctx, st);
        }
        nn_command cmd = {.kind = NN_COMMAND_RUN, .kernel = kernel, .nargs = nargs};
        memcpy(cmd.args, args, (size_t)nargs * sizeof *args);
        memcpy(cmd.params, params, size);
        nn_capture_record(ctx, &cmd, NULL);
    }
    return after_command(ctx, ctx->backend->run(ctx->backend, kernel, args, nargs, params));
}

nn_status nn_ctx_run(nn_ctx *ctx, nn_kernel kernel, const nn_buffer_ref *args, int nargs,
                     const void *params) {
    NN_TRY(nn_ctx_enter(ctx, "nn_ctx_run"));
    nn_status status = run_entered(ctx, kernel, args, nargs, params);
    nn_ctx_leave(ctx);
    return status;
}

static nn_status fill_entered(nn_ctx *ctx, nn_buffer_ref dst, float value, size_t count) {
    NN_TRY(before_command(ctx));
    if (ctx->recording) {
        nn_command cmd = {.kind = NN_COMMAND_FILL, .nargs = 1, .args = {dst}, .value = value, .count = count};
        nn_capture_record(ctx, &cmd, NULL);
    }
    return after_command(ctx, ctx->backend->fill(ctx->backend, dst, value, count));
}

nn_status nn_ctx_fill(nn_ctx *ctx, nn_buffer_ref dst, float value, size_t count) {
    NN_TRY(nn_ctx_enter(ctx, "nn_ctx_fill"));
    nn_status status = fill_entered(ctx, dst, value, count);
    nn_ctx_leave(ctx);
    return status;
}

static nn_status copy_entered(nn_ctx *ctx, nn_buffer_ref dst, nn_buffer_ref src, size_t bytes) {
    NN_TRY(before_command(ctx));
    if (ctx->recording) {
        nn_command cmd = {.kind = NN_COMMAND_COPY, .nargs = 2, .args = {dst, src}, .count = bytes};
        nn_capture_record(ctx, &cmd, NULL);
    }
    return after_command(ctx, ctx->backend->copy(ctx->backend, dst, src, bytes));
}

nn_status nn_ctx_copy(nn_ctx *ctx, nn_buffer_ref dst, nn_buffer_ref src, size_t bytes) {
    NN_TRY(nn_ctx_enter(ctx, "nn_ctx_copy"));
    nn_status status = copy_entered(ctx, dst, src, bytes);
    nn_ctx_leave(ctx);
    return status;
}

static nn_status write_entered(nn_ctx *ctx, nn_buffer_ref dst, const void *src, size_t bytes) {
    NN_TRY(before_command(ctx));
    if (ctx->recording) {
        nn_command cmd = {.kind = NN_COMMAND_WRITE, .nargs = 1, .args = {dst}, .count = bytes};
        nn_capture_record(ctx, &cmd, src);
    }
    return after_command(ctx, ctx->backend->write(ctx->backend, dst, src, bytes));
}

nn_status nn_ctx_write(nn_ctx *ctx, nn_buffer_ref dst, const void *src, size_t bytes) {
    NN_TRY(nn_ctx_enter(ctx, "nn_ctx_write"));
    nn_status status = write_entered(ctx, dst, src, bytes);
    nn_ctx_leave(ctx);
    return status;
}

nn_status nn_ctx_set_precision(nn_ctx *ctx, nn_precision precision) {
    if (!ctx) return nn_set_error(NN_ERR_ARGUMENT, "nn_ctx_set_precision: ctx is NULL");
    if (!nn_precision_name(precision))
        return nn_set_error(NN_ERR_ARGUMENT, "nn_ctx_set_precision: precision %d is not fp32 (0), fp16 (1) or bf16 (2)",
                            (int)precision);
    NN_TRY(nn_ctx_enter(ctx, "nn_ctx_set_precision"));
    ctx->precision = precision;
    nn_ctx_leave(ctx);
    return NN_OK;
}

nn_precision nn_ctx_precision(const nn_ctx *ctx) { return ctx ? (nn_precision)ctx->precision : NN_PRECISION_FP32; }

const char *nn_precision_name(nn_precision precision) {
    switch (precision) {
    case NN_PRECISION_FP32: return "fp32";
    case NN_PRECISION_FP16: return "fp16";
    case NN_PRECISION_BF16: return "bf16";
    }
    return NULL;
}

nn_status nn_precision_parse(const char *name, nn_precision *out) {
    for (nn_precision p = NN_PRECISION_FP32; p <= NN_PRECISION_BF16; p++)
        if (name && strcmp(name, nn_precision_name(p)) == 0) {
            *out = p;
            return NN_OK;
        }
    return nn_set_error(NN_ERR_ARGUMENT, "precision '%s' is not fp32, fp16 or bf16", name ? name : "(null)");
}

bool nn_ctx_matrix_cores(const nn_ctx *ctx, nn_precision precision) {
    return ctx && nn_precision_name(precision) && (ctx->backend->matrix_core_precisions >> precision & 1u);
}

nn_memory_format nn_ctx_set_memory_format(nn_ctx *ctx, nn_memory_format format) {
    if (!ctx) {
        nn_set_error(NN_ERR_ARGUMENT, "nn_ctx_set_memory_format: ctx is NULL");
        return NN_MEMORY_FORMAT_AUTO;
    }
    const nn_memory_format previous = (nn_memory_format)ctx->memory_format;
    if (format != NN_MEMORY_FORMAT_AUTO && format != NN_MEMORY_FORMAT_CONTIGUOUS &&
        format != NN_MEMORY_FORMAT_CHANNELS_LAST) {
        nn_set_error(NN_ERR_ARGUMENT, "nn_ctx_set_memory_format: format %d is not AUTO (0), CONTIGUOUS (1) or "
                                      "CHANNELS_LAST (2)", (int)format);
        return previous;
    }
    if (nn_ctx_enter(ctx, "nn_ctx_set_memory_format") != NN_OK) return previous;
    ctx->memory_format = format;
    nn_ctx_leave(ctx);
    return previous;
}

nn_memory_format nn_ctx_memory_format(const nn_ctx *ctx) {
    return ctx ? (nn_memory_format)ctx->memory_format : NN_MEMORY_FORMAT_AUTO;
}
