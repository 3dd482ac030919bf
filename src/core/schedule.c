/* The order a captured step's commands are issued in (schedule.h). */
#include "schedule.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"

/* A command writing no more than this is light: a loss's sum, a step
 * counter, the loss's seed, a learning-rate lookup. */
#define LIGHT_BYTES 64

/* Whether two arguments share bytes (bytes 0: to the end of the buffer). */
static bool overlap(nn_buffer_ref a, nn_buffer_ref b) {
    if (!a.buffer || a.buffer != b.buffer) return false;
    const size_t a_end = a.bytes ? a.offset + a.bytes : SIZE_MAX, b_end = b.bytes ? b.offset + b.bytes : SIZE_MAX;
    return a.offset < b_end && b.offset < a_end;
}

/* Bit i: command argument i is written. A kernel's written arguments are
 * also read (accumulating ones are), so every argument counts as read. */
static unsigned written_args(const nn_command *c) {
    switch (c->kind) {
    case NN_COMMAND_RUN: return nn_kernel_launch_written_args(c->kernel, c->params);
    case NN_COMMAND_FILL:
    case NN_COMMAND_COPY:
    case NN_COMMAND_WRITE: return 1u;
    }
    return ~0u;
}

/* Whether b must stay after a: one writes what the other touches. */
static bool conflict(const nn_command *a, const nn_command *b) {
    const unsigned wa = written_args(a), wb = written_args(b);
    for (int i = 0; i < a->nargs; i++)
        for (int j = 0; j < b->nargs; j++)
            if ((((wa >> i) & 1u) || ((wb >> j) & 1u)) && overlap(a->args[i], b->args[j])) return true;
    return false;
}

/* Trailing commands: light ones, and fills. Nothing in their level waits
 * for them, so they are issued after its other commands, whose launches
 * they would otherwise delay (bench/README.md). */
static bool trailing(const nn_command *c) {
    if (c->kind == NN_COMMAND_FILL) return true;
    const unsigned w = written_args(c);
    for (int i = 0; i < c->nargs; i++)
        if (((w >> i) & 1u) && (!c->args[i].bytes || c->args[i].bytes > LIGHT_BYTES)) return false;
    return true;
}

/* The longest run of dependent steps in a command's kernel, where its kind
 * says (0 elsewhere): a GEMM's (and GEMM_EPILOGUE's) k, the sum every
 * output walks through in order, then its m * n. In a level the longest go
 * first. Every command of a level must finish before the next level
 * starts, and launches are serial, so a long command launched last ends
 * the level late; and a level with more workgroups than the GPU holds at
 * once runs the first launched first. Longest first shortened a level of
 * GEMMs (bench/README.md). Other kernels keep their issue order: a longer
 * convolution kernel issued first made its level slower (bench/README.md). */
static void serial_length(const nn_command *c, int64_t *length, int64_t *size) {
    *length = *size = 0;
    if (c->kind != NN_COMMAND_RUN || (c->kernel != NN_KERNEL_GEMM && c->kernel != NN_KERNEL_GEMM_EPILOGUE)) return;
    const nn_gemm_params *p = (const nn_gemm_params *)(const void *)c->params; /* first in both kernels' params */
    *length = p->k;
    *size = (int64_t)p->m * p->n;
}

/* A convolution's weight gradient goes first in its level, ahead even of
 * the level's own kernels: its splits fill the device with long workgroups
 * about once, and launched behind another kernel (a BatchNorm's reduction)
 * they ran up to 2.5 times as long as alone (bench/README.md). */
static bool issued_first(const nn_command *c) {
    return c->kind == NN_COMMAND_RUN && c->kernel == NN_KERNEL_CONV2D_BACKWARD_WEIGHT;
}

typedef struct slot {
    int64_t level, index;
    int64_t length, size; /* serial_length */
    bool first;           /* issued_first */
    bool trailing;
    bool deferred; /* not trailing, and in a later level than its earliest */
} slot;

static int by_slot(const void *x, const void *y) {
    const slot *a = x, *b = y;
    if (a->level != b->level) return a->level < b->level ? -1 : 1;
    if (a->first != b->first) return a->first ? -1 : 1;
    if (a->trailing != b->trailing) return a->trailing ? 1 : -1;
    if (a->deferred != b->deferred) return a->deferred ? 1 : -1;
    if (a->length != b->length) return a->length > b->length ? -1 : 1;
    if (a->size != b->size) return a->size > b->size ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* Roughly how long a command keeps the GPU busy, in nanoseconds on a GPU
 * of about 20 TFLOP/s and 2 TB/s: only how the levels of one step compare
 * matters. GEMMs and convolutions by their products, other kernels by the
 * bytes they touch. */
static double busy_estimate(const nn_command *c) {
    if (c->kind == NN_COMMAND_RUN && (c->kernel == NN_KERNEL_GEMM || c->kernel == NN_KERNEL_GEMM_EPILOGUE)) {
        const nn_gemm_params *p = (const nn_gemm_params *)(const void *)c->params;
        return 2.0 * p->m * p->n * p->k * (p->batch > 1 ? p->batch : 1) / 20e3;
    }
    if (c->kind == NN_COMMAND_RUN && (c->kernel == NN_KERNEL_CONV2D_FORWARD ||
                                      c->kernel == NN_KERNEL_CONV2D_BACKWARD_DATA ||
                                      c->kernel == NN_KERNEL_CONV2D_BACKWARD_WEIGHT)) {
        const nn_conv_params *p = (const nn_conv_params *)(const void *)c->params;
        const nn_conv_geometry *g = &p->g;
        return 2.0 * g->batch * p->filters * g->channels / nn_conv_groups(p) * g->kernel_h * g->kernel_w * g->out_h *
               g->out_w / 20e3;
    }
    double bytes = c->kind == NN_COMMAND_RUN ? 0 : (double)c->count;
    for (int i = 0; c->kind == NN_COMMAND_RUN && i < c->nargs; i++) bytes += (double)c->args[i].bytes;
    return bytes / 2e3;
}

/* How long a background command keeps the bus busy (about 25 GB/s): a
 * copy's bytes, or a kernel's largest argument (the one in host memory). */
static double bus_estimate(const nn_command *c) {
    double bytes = c->kind == NN_COMMAND_RUN ? 0 : (double)c->count;
    for (int i = 0; c->kind == NN_COMMAND_RUN && i < c->nargs; i++)
        if ((double)c->args[i].bytes > bytes) bytes = (double)c->args[i].bytes;
    return bytes / 25.0;
}

/* Background commands (nn_command.background), in order, each to the level
 * between the commands it conflicts with that has the most work not yet
 * matched by background work: the bus then moves data while the GPU's units
 * compute, where at one level the barrier after it would wait for all of it.
 * Each is issued after its level's own kernels, as deferred ones are. */
static nn_status spread_background(const nn_command *commands, slot *slots, int64_t count, int64_t last) {
    double *room = calloc((size_t)last + 1, sizeof *room);
    if (!room) return nn_set_error(NN_ERR_MEMORY, "capture: out of host memory ordering %lld commands", (long long)count);
    for (int64_t i = 0; i < count; i++)
        if (!commands[i].background) room[slots[i].level] += busy_estimate(&commands[i]);
    for (int64_t i = 0; i < count; i++) {
        if (!commands[i].background) continue;
        int64_t lo = 0, hi = last;
        for (int64_t j = 0; j < count; j++) {
            if (j == i || !conflict(&commands[j < i ? j : i], &commands[j < i ? i : j])) continue;
            if (j < i && slots[j].level + 1 > lo) lo = slots[j].level + 1;
            if (j > i && slots[j].level - 1 < hi) hi = slots[j].level - 1;
        }
        if (lo > hi) continue; /* cannot happen: the levels above allow its own */
        int64_t best = lo;
        for (int64_t level = lo + 1; level <= hi; level++)
            if (room[level] > room[best]) best = level;
        room[best] -= bus_estimate(&commands[i]);
        slots[i].level = best;
        slots[i].deferred = true; /* after the level's own kernels */
    }
    free(room);
    return NN_OK;
}

/* Levels: each command first in the earliest level its conflicts allow,
 * which fixes how many levels (stretches) the step has and which commands
 * must be in each; then each in the latest level the commands after it
 * allow. So a command that nothing needs soon (a weight gradient only the
 * optimizer reads, a loss's sum) leaves the early levels, where it would
 * delay the barrier that the next level's kernels wait on, for a later
 * one, where it runs beside that level's own kernels; those are issued
 * first (deferred commands after them, trailing ones last), so the level's
 * critical kernels start first: deferring shortened the step, and issuing
 * deferred commands ahead of a level's own kernels lengthened it
 * (bench/README.md), except for the convolutions' weight gradients
 * (issued_first). Background commands stay in their earliest level
 * there, so that what they read is not deferred, and are then spread
 * (spread_background). */
nn_status nn_schedule_commands(nn_command *commands, int64_t count) {
    if (count < 2) return NN_OK;
    slot *slots = malloc((size_t)count * sizeof *slots);
    nn_command *ordered = malloc((size_t)count * sizeof *ordered);
    if (!slots || !ordered) {
        free(slots), free(ordered);
        return nn_set_error(NN_ERR_MEMORY, "capture: out of host memory ordering %lld commands", (long long)count);
    }
    int64_t last = 0; /* the highest level */
    for (int64_t i = 0; i < count; i++) {
        slots[i] = (slot){.level = 0, .index = i, .first = issued_first(&commands[i]),
                          .trailing = trailing(&commands[i]), .deferred = false};
        serial_length(&commands[i], &slots[i].length, &slots[i].size);
        for (int64_t j = 0; j < i; j++)
            if (slots[j].level >= slots[i].level && conflict(&commands[j], &commands[i]))
                slots[i].level = slots[j].level + 1;
        if (slots[i].level > last) last = slots[i].level;
    }
    /* Each command to its latest level: before the earliest later command
     * it conflicts with, else in the last (later ones first, so each sees
     * where those it precedes went). */
    for (int64_t i = count - 1; i >= 0; i--) {
        if (commands[i].background) continue;
        int64_t level = last;
        for (int64_t j = i + 1; j < count; j++)
            if (slots[j].level - 1 < level && conflict(&commands[i], &commands[j])) level = slots[j].level - 1;
        if (level > slots[i].level) slots[i].level = level, slots[i].deferred = !slots[i].trailing;
    }
    if (spread_background(commands, slots, count, last) != NN_OK) {
        free(slots), free(ordered);
        return nn_last_status();
    }
    qsort(slots, (size_t)count, sizeof *slots, by_slot);
    for (int64_t i = 0; i < count; i++) ordered[i] = commands[slots[i].index];
    memcpy(commands, ordered, (size_t)count * sizeof *ordered);
    free(slots), free(ordered);
    return NN_OK;
}
