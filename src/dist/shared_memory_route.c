/* The shared-memory route (shared_memory_route.h). Each device copies its
 * gradients into its own piece of the window and, after a barrier, sums
 * every piece itself in rank order, reading the others' pieces where they
 * lie: the gradients cross the bus once each way and no CPU touches them.
 * MPI's own reductions run on one CPU core and were the step's largest
 * cost (bench/README.md).
 *
 * The work starts during backward: the context tells us when each
 * parameter's gradient is complete (nn_ctx_set_grad_ready), and a bucket of
 * parameters is copied as soon as all of its gradients are. Once half the
 * values are copied, at the first later bucket that needed more backward
 * work, the ranks meet (a host call: a sync and a barrier) and the buckets
 * copied by halfway are summed while backward goes on below; the rest are
 * summed after the update's meeting. One more meeting, before the first copy of a step,
 * waits until every rank's device has finished reading the pieces of the
 * step before. The copies and sums are background commands: a captured
 * step spreads them over the levels of backward that they may run beside
 * (core/schedule.c), so the bus works while the GPU computes. */
#include "shared_memory_route.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/kernels.h"
#include "core/graph.h"
#include "core/internal.h"
#include "nn_capture.h"
#include "nn_dist.h"
#include "transport.h"

/* Copies and sums go in pieces of at most this many values, so that the
 * scheduler can spread one large parameter's over several levels. */
#define CHUNK_FLOATS NN_DIST_BUCKET_FLOATS

/* A run of whole parameters in flat order, up to NN_DIST_BUCKET_FLOATS
 * values (one parameter may be more). */
typedef struct bucket {
    int64_t first, size; /* elements */
    int params;
    /* This step's, while its backward runs (recorded once in a capture): */
    int ready;           /* parameters told complete */
    bool copied, summed;
    bool by_halfway;     /* copied by halfway, averaged at its meeting (the same on every rank) */
} bucket;

struct shared_route {
    const nn_param_set *set;
    dist_shared_memory *shared;
    nn_tensor **pieces;     /* pieces[r]: local rank r's, as this device sees it */
    int me;                 /* this rank's piece */
    bucket *buckets;
    int bucket_count;
    int *param_bucket;      /* per parameter */
    bool watching;          /* the context's grad-ready hook is ours */
    /* This step's, while its backward runs (recorded once in a capture): */
    int64_t copied_floats;
    bool waited;            /* the readers' meeting ran before the first copy */
    bool halfway;           /* half the values are copied: meet at a later bucket */
    int64_t last_copy_mark; /* the context's commands issued after the last copy */
    bool met;               /* the halfway meeting ran */
    bool recopy;            /* a gradient was not in the flat buffer yet: copy every bucket at the end */
};

static nn_buffer_ref range_ref(const nn_tensor *t, int64_t first, int64_t n) {
    nn_buffer_ref ref = nn_tensor_ref(t);
    ref.offset += (size_t)first * sizeof(float);
    ref.bytes = (size_t)n * sizeof(float);
    return ref;
}

static nn_status copy_bucket(shared_route *r, int b) {
    nn_ctx *ctx = r->set->ctx;
    nn_status st = NN_OK;
    nn_ctx_set_background(ctx, true);
    bucket *k = &r->buckets[b];
    for (int64_t first = k->first, end = first + k->size; first < end && st == NN_OK; first += CHUNK_FLOATS) {
        const int64_t n = end - first < CHUNK_FLOATS ? end - first : CHUNK_FLOATS;
        st = nn_ctx_copy(ctx, range_ref(r->pieces[r->me], first, n), range_ref(r->set->flat_grads, first, n),
                         (size_t)n * sizeof(float));
    }
    nn_ctx_set_background(ctx, false);
    k->copied = true;
    r->copied_floats += k->size;
    return st;
}

/* (((p0 + p1) + p2) + ...) * 1/N over one range, on every rank alike. The
 * first sum reads this rank's own piece from the device, where the same
 * values still are (half the bus traffic with 2 ranks); later ones read the
 * sum so far there. */
static nn_status average_range(shared_route *r, int64_t first, int64_t n) {
    const nn_buffer_ref grads = range_ref(r->set->flat_grads, first, n);
    const nn_pointwise_params add = {.n = n, .op = NN_EW_ADD};
    nn_status st = NN_OK;
    nn_ctx_set_background(r->set->ctx, true); /* the sums read over the bus, the scaling does not */
    for (int q = 1; q < r->shared->count && st == NN_OK; q++) {
        const nn_buffer_ref a = q > 1 || r->me == 0 ? grads : range_ref(r->pieces[0], first, n);
        const nn_buffer_ref b = q == 1 && r->me == 1 ? grads : range_ref(r->pieces[q], first, n);
        const nn_buffer_ref args[3] = {a, b, grads};
        st = nn_ctx_run(r->set->ctx, NN_KERNEL_ELEMENTWISE, args, 3, &add);
    }
    nn_ctx_set_background(r->set->ctx, false);
    NN_TRY(st);
    const nn_pointwise_params scale = {.n = n, .op = NN_EW_SCALE, .alpha = 1.0f / (float)r->shared->count};
    const nn_buffer_ref args[3] = {grads, nn_optional_ref(NULL), grads};
    return nn_ctx_run(r->set->ctx, NN_KERNEL_ELEMENTWISE, args, 3, &scale);
}

/* The buckets copied and not yet averaged (only_by_halfway: of those, the
 * ones copied by halfway), in chunks. */
static nn_status average_copied(shared_route *r, bool only_by_halfway) {
    nn_status st = NN_OK;
    for (int b = 0; b < r->bucket_count && st == NN_OK; b++) {
        bucket *k = &r->buckets[b];
        if (!k->copied || k->summed || (only_by_halfway && !k->by_halfway)) continue;
        for (int64_t first = k->first, end = first + k->size; first < end && st == NN_OK; first += CHUNK_FLOATS)
            st = average_range(r, first, end - first < CHUNK_FLOATS ? end - first : CHUNK_FLOATS);
        k->summed = true;
    }
    return st;
}

/* Every rank's device has done what was issued before: the pieces it
 * wrote are there, and it has finished reading the others'. */
static nn_status meet(void *user) {
    shared_route *r = user;
    NN_TRY(nn_ctx_sync(r->set->ctx));
    return dist_local_barrier();
}

static nn_status meet_in_step(shared_route *r) { return nn_capture_host_call(r->set->ctx, meet, r); }

/* Forgets what the step's backward did (the counts of complete parameters
 * stay: they tell later passes apart). */
static void pass_done(shared_route *r) {
    for (bucket *k = r->buckets; k < r->buckets + r->bucket_count; k++) k->copied = k->summed = k->by_halfway = false;
    r->copied_floats = 0;
    r->waited = r->halfway = r->met = false;
}

static void step_done(shared_route *r) {
    pass_done(r);
    for (int b = 0; b < r->bucket_count; b++) r->buckets[b].ready = 0;
    r->recopy = false;
}

/* The grad-ready hook: a bucket whose parameters are all complete is
 * copied now (a count that passes a multiple again, after a second backward
 * before the update, copies the accumulated sums again). */
static nn_status gradient_complete(void *user, nn_tensor *leaf) {
    shared_route *r = user;
    int p = 0;
    while (p < r->set->count && r->set->params[p] != leaf) p++;
    if (p == r->set->count) return NN_OK; /* not one of ours */
    /* A gradient made anew joins the flat buffer only at the update. */
    if (!leaf->grad || leaf->grad->storage != r->set->flat_grads->storage) r->recopy = true;
    const int b = r->param_bucket[p];
    if (++r->buckets[b].ready % r->buckets[b].params != 0 || r->recopy) return NN_OK;
    if (r->buckets[b].copied) {
        /* A second backward before the update: the values averaged so far
         * now hold averages plus this rank's new gradients, and averaging
         * them again gives the average of the sums (as PyTorch's DDP). Once
         * nobody reads the pieces any more, the pass starts over. */
        NN_TRY(meet_in_step(r));
        pass_done(r);
        r->waited = true;
    }
    if (!r->waited) {
        NN_TRY(meet_in_step(r));
        r->waited = true;
    }
    /* At the first bucket past halfway that needed more backward work, so
     * that the copies before run beside at least one more layer's. Every
     * rank runs the same operations, so every rank meets here (devices that
     * split an operation into other kernels meet at the same bucket still),
     * and averages the same buckets then. */
    nn_ctx *ctx = r->set->ctx;
    if (r->halfway && !r->met) {
        NN_TRY(nn_ctx_flush(ctx, NULL));
        if (ctx->commands_issued > r->last_copy_mark) {
            NN_TRY(meet_in_step(r));
            NN_TRY(average_copied(r, true));
            r->met = true;
        }
    }
    NN_TRY(copy_bucket(r, b));
    if (!r->halfway && 2 * r->copied_floats >= r->set->total) {
        r->halfway = true;
        for (int c = 0; c < r->bucket_count; c++) r->buckets[c].by_halfway = r->buckets[c].copied;
    }
    r->last_copy_mark = ctx->commands_issued;
    return NN_OK;
}

/* The rest of the average. A gradient that was not in the flat buffer
 * during backward is there now: every bucket is copied and averaged again
 * (averaging an average gives its own bits back). */
nn_status shared_route_before_update(shared_route *r) {
    nn_status st = NN_OK;
    if (!r->waited || r->recopy) st = meet_in_step(r);
    for (int b = 0; b < r->bucket_count && st == NN_OK; b++) {
        if (r->recopy) r->buckets[b].copied = r->buckets[b].summed = false;
        if (!r->buckets[b].copied) st = copy_bucket(r, b);
    }
    if (st == NN_OK) st = meet_in_step(r);
    if (st == NN_OK) st = average_copied(r, false);
    step_done(r);
    return st;
}

nn_status shared_route_average_all(shared_route *r) {
    r->recopy = true;
    return shared_route_before_update(r);
}

static nn_status make_buckets(shared_route *r) {
    const nn_param_set *set = r->set;
    r->param_bucket = calloc((size_t)set->count, sizeof *r->param_bucket);
    r->buckets = calloc((size_t)set->count, sizeof *r->buckets); /* at most one per parameter */
    if (!r->param_bucket || !r->buckets)
        return nn_set_error(NN_ERR_MEMORY, "nn_dist_data_parallel: out of host memory");
    int b = -1;
    for (int p = 0; p < set->count; p++) {
        const int64_t size = nn_tensor_numel(set->params[p]);
        if (b < 0 || r->buckets[b].size + size > NN_DIST_BUCKET_FLOATS) r->buckets[++b].first = set->offsets[p];
        r->param_bucket[p] = b;
        r->buckets[b].params++;
        r->buckets[b].size = set->offsets[p] + size - r->buckets[b].first;
    }
    r->bucket_count = b + 1;
    return NN_OK;
}

/* Whether every rank agrees (a logical and over the job). */
static nn_status all_agree(bool mine, bool *all) {
    double votes = mine ? 1.0 : 0.0;
    NN_TRY(dist_all_reduce_doubles(&votes, 1));
    *all = votes == (double)dist_transport_group().size;
    return NN_OK;
}

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

/* The window and this device's view of every piece; false with `why` when
 * a rank's device could not map them (collective). */
static nn_status map_pieces(shared_route *r, bool *mapped, char *why, size_t why_size) {
    nn_ctx *ctx = r->set->ctx;
    /* The strictest of the ranks' devices' alignments (powers of two). */
    double align = (double)nn_ctx_host_import_alignment(ctx);
    bool all = false;
    *mapped = false;
    NN_TRY(all_agree(align > 0, &all));
    if (!all) {
        snprintf(why, why_size, "a rank's device cannot use host memory in place");
        return NN_OK;
    }
    NN_TRY(dist_max_doubles(&align, 1));
    const size_t bytes = round_up((size_t)r->set->total * sizeof(float), (size_t)align);
    NN_TRY(dist_shared_memory_new(bytes, (size_t)align, &r->shared));
    r->pieces = calloc((size_t)r->shared->count, sizeof *r->pieces);
    bool mine = r->pieces != NULL;
    for (int q = 0; mine && q < r->shared->count; q++) {
        r->pieces[q] = nn_tensor_over_host(ctx, r->shared->pieces[q], (int64_t)(bytes / sizeof(float)));
        if (!r->pieces[q]) {
            snprintf(why, why_size, "rank %d: %s", dist_transport_group().rank, nn_last_error());
            mine = false;
        }
    }
    NN_TRY(all_agree(mine, &all));
    if (mine && !all) snprintf(why, why_size, "another rank's device could not map the shared memory");
    *mapped = all;
    return NN_OK;
}

nn_status shared_route_open(const nn_param_set *set, shared_route **route, char *why, size_t why_size) {
    *route = NULL;
    const dist_group group = dist_transport_group();
    const char *env = getenv("NN_ENGINE_DIST_SHARED_MEMORY");
    if (group.local_size != group.size || (env && strcmp(env, "0") == 0)) {
        snprintf(why, why_size, "%s", group.local_size != group.size ? "the ranks are on several hosts"
                                                                     : "NN_ENGINE_DIST_SHARED_MEMORY=0");
        return NN_OK;
    }
    shared_route *r = calloc(1, sizeof *r);
    if (!r) return nn_set_error(NN_ERR_MEMORY, "nn_dist_data_parallel: out of host memory");
    r->set = set;
    r->me = group.local_rank;
    bool mapped = false;
    nn_status st = make_buckets(r);
    if (st == NN_OK) st = map_pieces(r, &mapped, why, why_size);
    if (st != NN_OK || !mapped) {
        shared_route_free(r);
        return st;
    }
    /* Early copies where nobody else watches this context's gradients. */
    r->watching = nn_ctx_set_grad_ready(set->ctx, gradient_complete, r) == NN_OK;
    if (!r->watching) nn_clear_error();
    *route = r;
    return NN_OK;
}

void shared_route_free(shared_route *r) {
    if (!r) return;
    if (r->watching) nn_ctx_set_grad_ready(r->set->ctx, NULL, NULL);
    for (int q = 0; r->pieces && q < r->shared->count; q++) nn_tensor_free(r->pieces[q]);
    free(r->pieces);
    dist_shared_memory_free(r->shared); /* after the devices let go of it */
    free(r->param_bucket);
    free(r->buckets);
    free(r);
}
