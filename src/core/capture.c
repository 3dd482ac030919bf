/* Step capture and replay (nn_capture.h). While a capture records, the
 * context's kernel launches and buffer operations are appended to its
 * command list as they run (context.c), and every storage a command touches
 * is pinned: its memory stays reserved for the capture even after its tensor
 * is freed. Storages the step allocates and releases go to the capture's own
 * pool and serve the step's later temporaries, so a captured step needs about
 * the memory of an eager one and never shares memory with eager work that
 * runs between replays. At the end the backend may turn the list into a plan
 * (Vulkan: one recorded command buffer); replay issues the plan, or the
 * commands one by one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "nn_capture.h"
#include "schedule.h"

struct nn_capture {
    nn_ctx *ctx;
    uint64_t id;
    nn_capture *next; /* in ctx->captures */

    nn_command *commands;
    int64_t count, capacity;

    nn_storage **pinned; /* every storage pinned by this capture */
    int64_t pinned_count, pinned_capacity;

    nn_storage **pool; /* allocated and released while recording: reusable */
    int64_t pool_count, pool_capacity;

    void *plan;       /* the backend's, or NULL: replayed command by command */
    bool failed;      /* an operation failed (or host memory ran out) while recording */
    char failure[256];
};

static bool grow(void **items, int64_t *capacity, int64_t needed, size_t item_size) {
    if (needed <= *capacity) return true;
    int64_t cap = *capacity ? *capacity * 2 : 64;
    while (cap < needed) cap *= 2;
    void *grown = realloc(*items, (size_t)cap * item_size);
    if (!grown) return false;
    *items = grown;
    *capacity = cap;
    return true;
}

static void fail(nn_capture *c, const char *why) {
    if (c->failed) return;
    c->failed = true;
    snprintf(c->failure, sizeof c->failure, "%s", why);
}

void nn_capture_fail(nn_ctx *ctx) {
    if (ctx->recording) fail(ctx->recording, nn_last_error());
}

void nn_capture_pin(nn_ctx *ctx, nn_storage *storage) {
    nn_capture *c = ctx->recording;
    if (storage->last_pin_id == c->id) return;
    if (!grow((void **)&c->pinned, &c->pinned_capacity, c->pinned_count + 1, sizeof *c->pinned)) {
        fail(c, "out of host memory recording the step");
        return;
    }
    c->pinned[c->pinned_count++] = storage;
    storage->pins++;
    storage->last_pin_id = c->id;
}

nn_storage *nn_capture_reuse(nn_ctx *ctx, size_t bytes) {
    nn_capture *c = ctx->recording;
    int64_t best = -1;
    for (int64_t i = 0; i < c->pool_count; i++)
        if (c->pool[i]->bytes >= bytes && (best < 0 || c->pool[i]->bytes < c->pool[best]->bytes)) best = i;
    if (best < 0) return NULL;
    nn_storage *s = c->pool[best];
    c->pool[best] = c->pool[--c->pool_count];
    s->released = false;
    s->refcount = 1;
    return s;
}

void nn_capture_release(nn_ctx *ctx, nn_storage *storage) {
    storage->released = true;
    nn_capture *c = ctx->recording;
    if (!c || storage->allocated_in != c) return; /* kept until its captures are freed */
    if (!grow((void **)&c->pool, &c->pool_capacity, c->pool_count + 1, sizeof *c->pool)) return;
    c->pool[c->pool_count++] = storage;
}

void nn_capture_record(nn_ctx *ctx, const nn_command *command, const void *data) {
    nn_capture *c = ctx->recording;
    if (c->failed) return;
    if (!grow((void **)&c->commands, &c->capacity, c->count + 1, sizeof *c->commands)) {
        fail(c, "out of host memory recording the step");
        return;
    }
    nn_command *copy = &c->commands[c->count];
    *copy = *command;
    copy->data = NULL;
    if (command->kind == NN_COMMAND_WRITE) {
        copy->data = malloc(command->count ? command->count : 1);
        if (!copy->data) {
            fail(c, "out of host memory recording the step");
            return;
        }
        memcpy(copy->data, data, command->count);
    }
    c->count++;
}

static nn_status begin_entered(nn_ctx *ctx) {
    if (ctx->recording)
        return nn_set_error(NN_ERR_STATE, "nn_capture_begin: a capture is already recording on this context");
    NN_TRY(nn_ctx_flush(ctx, NULL)); /* what was recorded before is not the step's */
    nn_capture *c = calloc(1, sizeof *c);
    if (!c) return nn_set_error(NN_ERR_MEMORY, "nn_capture_begin: out of host memory");
    c->ctx = ctx;
    c->id = ++ctx->next_capture_id;
    c->next = ctx->captures;
    ctx->captures = c;
    ctx->recording = c;
    return NN_OK;
}

nn_status nn_capture_begin(nn_ctx *ctx) {
    if (!ctx) return nn_set_error(NN_ERR_ARGUMENT, "nn_capture_begin: ctx is NULL");
    NN_TRY(nn_ctx_enter(ctx, "nn_capture_begin"));
    nn_status status = begin_entered(ctx);
    nn_ctx_leave(ctx);
    return status;
}

static void unlink_capture(nn_capture *c) {
    nn_capture **p = &c->ctx->captures;
    while (*p && *p != c) p = &(*p)->next;
    if (*p) *p = c->next;
}

static void destroy(nn_capture *c) {
    nn_ctx *ctx = c->ctx;
    if (ctx->recording == c) ctx->recording = NULL;
    if (c->plan) ctx->backend->plan_free(ctx->backend, c->plan);
    for (int64_t i = 0; i < c->count; i++) free(c->commands[i].data);
    for (int64_t i = 0; i < c->pinned_count; i++) {
        nn_storage *s = c->pinned[i];
        if (s->allocated_in == c) s->allocated_in = NULL;
        if (--s->pins == 0 && s->released) nn_storage_destroy(ctx, s);
    }
    unlink_capture(c);
    free(c->commands);
    free(c->pinned);
    free(c->pool);
    free(c);
}

static nn_capture *end_entered(nn_ctx *ctx) {
    nn_capture *c = ctx->recording;
    if (!c) return NN_FAIL_NULL(NN_ERR_STATE, "nn_capture_end: no capture is recording (call nn_capture_begin)");
    if (nn_ctx_flush(ctx, NULL) != NN_OK) nn_capture_fail(ctx); /* the step's operations not yet run */
    ctx->recording = NULL;
    if (c->failed) {
        char why[sizeof c->failure];
        memcpy(why, c->failure, sizeof why);
        destroy(c);
        return NN_FAIL_NULL(NN_ERR_STATE, "nn_capture_end: an operation failed while recording, so the step "
                                          "cannot be replayed: %s", why);
    }
    if (c->count == 0) {
        destroy(c);
        return NN_FAIL_NULL(NN_ERR_STATE, "nn_capture_end: nothing was recorded (no operation ran)");
    }
    nn_backend *b = ctx->backend;
    if (nn_schedule_commands(c->commands, c->count) != NN_OK) {
        destroy(c);
        return NULL;
    }
    if (b->plan_new && b->plan_new(b, c->commands, c->count, &c->plan) != NN_OK) {
        c->plan = NULL;
        destroy(c); /* the backend said why */
        return NULL;
    }
    return c;
}

nn_capture *nn_capture_end(nn_ctx *ctx) {
    if (!ctx) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_capture_end: ctx is NULL");
    if (nn_ctx_enter(ctx, "nn_capture_end") != NN_OK) return NULL;
    nn_capture *c = end_entered(ctx);
    nn_ctx_leave(ctx);
    return c;
}

static nn_status replay_entered(nn_capture *c, int64_t times) {
    if (times < 1) return nn_set_error(NN_ERR_ARGUMENT, "nn_replay: times must be >= 1, got %lld", (long long)times);
    nn_ctx *ctx = c->ctx;
    if (ctx->recording)
        return nn_set_error(NN_ERR_STATE, "nn_replay: a capture is recording on this context; end it first");
    NN_TRY(nn_ctx_flush(ctx, NULL));
    nn_backend *b = ctx->backend;
    if (c->plan) return b->plan_replay(b, c->plan, times);
    for (int64_t t = 0; t < times; t++)
        for (int64_t i = 0; i < c->count; i++) NN_TRY(nn_command_issue(b, &c->commands[i]));
    return NN_OK;
}

nn_status nn_replay(nn_capture *c, int64_t times) {
    if (!c) return nn_set_error(NN_ERR_ARGUMENT, "nn_replay: capture is NULL");
    NN_TRY(nn_ctx_enter(c->ctx, "nn_replay"));
    nn_status status = replay_entered(c, times);
    nn_ctx_leave(c->ctx);
    return status;
}

int64_t nn_capture_command_count(const nn_capture *c) { return c ? c->count : 0; }

/* Replays may still be running: the backend's plan_free waits for its
 * plan; the memory released here is only reused by work submitted later,
 * which the backend orders after them. */
void nn_capture_free(nn_capture *c) {
    if (!c) return;
    nn_ctx *ctx = c->ctx;
    if (nn_ctx_enter(ctx, "nn_capture_free") != NN_OK) return; /* freed with its context instead */
    destroy(c);
    nn_ctx_leave(ctx);
}

void nn_capture_free_all(nn_ctx *ctx) {
    while (ctx->captures) destroy(ctx->captures);
}
