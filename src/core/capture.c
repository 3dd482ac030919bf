/* Step capture and replay (nn_capture.h). While a capture records, the
 * context's kernel launches and buffer operations are appended to its
 * command list as they run (context.c), and every storage a command touches
 * is pinned: its memory stays reserved for the capture even after its tensor
 * is freed. Storages the step allocates and releases go to the capture's own
 * pool and serve the step's later temporaries, so a captured step needs about
 * the memory of an eager one and never shares memory with eager work that
 * runs between replays. At the end the backend may turn the list into a plan
 * (Vulkan: one recorded command buffer); replay issues the plan, or the
 * commands one by one.
 *
 * A host call (nn_capture_host_call) splits the list into segments: each is
 * reordered and planned on its own, and a replay issues a segment, calls the
 * host function, issues the next. A device cannot run host code (MPI's
 * all-reduce) inside a command buffer, so that is where the step waits for
 * the device; without host calls a capture is one segment, as before. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "nn_capture.h"
#include "schedule.h"

/* A host function recorded at a point of the step (nn_capture_host_call). */
typedef struct host_call {
    int64_t at; /* the commands before it */
    nn_host_fn fn;
    void *user;
} host_call;

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

    host_call *calls; /* calls[k] runs after commands [0, calls[k].at) */
    int64_t call_count, call_capacity;
    void **plans;     /* one per segment (call_count + 1): the backend's, or NULL: command by command */
    uint64_t constants_version; /* the context's when recording began (nn_ctx_constants_changed) */
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
    copy->background = ctx->background;
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
    c->constants_version = ctx->constants_version;
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
    for (int64_t k = 0; c->plans && k <= c->call_count; k++)
        if (c->plans[k]) ctx->backend->plan_free(ctx->backend, c->plans[k]);
    free(c->plans);
    free(c->calls);
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

/* The commands of segment k: between host calls k - 1 and k. */
static void segment(const nn_capture *c, int64_t k, int64_t *first, int64_t *count) {
    *first = k > 0 ? c->calls[k - 1].at : 0;
    *count = (k < c->call_count ? c->calls[k].at : c->count) - *first;
}

/* Each segment reordered and planned on its own: no command moves across a
 * host call, whose host function reads and writes what the commands around it do. */
static nn_status plan_segments(nn_capture *c) {
    nn_backend *b = c->ctx->backend;
    c->plans = calloc((size_t)(c->call_count + 1), sizeof *c->plans);
    if (!c->plans) return nn_set_error(NN_ERR_MEMORY, "nn_capture_end: out of host memory");
    for (int64_t k = 0; k <= c->call_count; k++) {
        int64_t first, count;
        segment(c, k, &first, &count);
        if (count == 0) continue;
        NN_TRY(nn_schedule_commands(c->commands + first, count));
        if (b->plan_new && b->plan_new(b, c->commands + first, count, &c->plans[k]) != NN_OK) {
            c->plans[k] = NULL;
            return nn_last_status();
        }
    }
    return NN_OK;
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
    if (plan_segments(c) != NN_OK) {
        destroy(c); /* the scheduler or the backend said why */
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

/* Segment k `times` times in a row: its plan, or its commands one by one. */
static nn_status issue_segment(nn_capture *c, int64_t k, int64_t times) {
    nn_backend *b = c->ctx->backend;
    if (c->plans[k]) return b->plan_replay(b, c->plans[k], times);
    int64_t first, count;
    segment(c, k, &first, &count);
    for (int64_t t = 0; t < times; t++)
        for (int64_t i = first; i < first + count; i++) NN_TRY(nn_command_issue(b, &c->commands[i]));
    return NN_OK;
}

static nn_status replay_entered(nn_capture *c, int64_t times) {
    if (times < 1) return nn_set_error(NN_ERR_ARGUMENT, "nn_replay: times must be >= 1, got %lld", (long long)times);
    nn_ctx *ctx = c->ctx;
    if (ctx->recording)
        return nn_set_error(NN_ERR_STATE, "nn_replay: a capture is recording on this context; end it first");
    if (c->constants_version != ctx->constants_version)
        return nn_set_error(NN_ERR_STATE, "nn_replay: a value the recorded kernels hold as a constant has changed since "
                                          "the step was recorded (an optimizer's option other than lr: "
                                          "nn_optimizer_set_group_option); record the step again, or run it eagerly");
    NN_TRY(nn_ctx_flush(ctx, NULL));
    if (c->call_count == 0) return issue_segment(c, 0, times);
    for (int64_t t = 0; t < times; t++)
        for (int64_t k = 0; k <= c->call_count; k++) {
            NN_TRY(issue_segment(c, k, 1));
            if (k < c->call_count) NN_TRY(c->calls[k].fn(c->calls[k].user));
        }
    return NN_OK;
}

void nn_ctx_constants_changed(nn_ctx *ctx) { ctx->constants_version++; }

nn_status nn_replay(nn_capture *c, int64_t times) {
    if (!c) return nn_set_error(NN_ERR_ARGUMENT, "nn_replay: capture is NULL");
    NN_TRY(nn_ctx_enter(c->ctx, "nn_replay"));
    nn_status status = replay_entered(c, times);
    nn_ctx_leave(c->ctx);
    return status;
}

int64_t nn_capture_command_count(const nn_capture *c) { return c ? c->count : 0; }

/* While recording, fn runs with the recording paused: what it does on the
 * device (reading the gradients, writing their average) is its own, done
 * again by each replay's call, never replayed as recorded commands. */
static nn_status host_call_entered(nn_ctx *ctx, nn_host_fn fn, void *user) {
    NN_TRY(nn_ctx_flush(ctx, NULL)); /* the operations before the call are the segment's */
    nn_capture *c = ctx->recording;
    if (!c) return fn(user);
    if (!c->failed && !grow((void **)&c->calls, &c->call_capacity, c->call_count + 1, sizeof *c->calls))
        fail(c, "out of host memory recording the step");
    if (c->failed) return nn_set_error(NN_ERR_STATE, "nn_capture_host_call: the recording failed before: %s", c->failure);
    ctx->recording = NULL;
    nn_status status = fn(user);
    ctx->recording = c;
    if (status != NN_OK) {
        nn_capture_fail(ctx);
        return status;
    }
    c->calls[c->call_count++] = (host_call){c->count, fn, user};
    return NN_OK;
}

nn_status nn_capture_host_call(nn_ctx *ctx, nn_host_fn fn, void *user) {
    if (!ctx) return nn_set_error(NN_ERR_ARGUMENT, "nn_capture_host_call: ctx is NULL");
    if (!fn) return nn_set_error(NN_ERR_ARGUMENT, "nn_capture_host_call: fn is NULL");
    NN_TRY(nn_ctx_enter(ctx, "nn_capture_host_call"));
    nn_status status = host_call_entered(ctx, fn, user);
    nn_ctx_leave(ctx);
    return status;
}

int64_t nn_capture_host_call_count(const nn_capture *c) { return c ? c->call_count : 0; }

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
