/* The shared-memory route (shared_memory_route.h). Each device copies its
 * gradients into its own piece of the window and, after a barrier, sums
 * every piece itself in rank order, reading the others' pieces where they
 * lie: the gradients cross the bus once each way and no CPU touches them.
 * MPI's own reductions run on one CPU core and were the step's largest
 * cost (bench/README.md).
 *
 * The copies start during backward: the context tells us when each
 * parameter's gradient is complete (nn_ctx_set_grad_ready), and a bucket of
 * parameters is copied as soon as all of its gradients are, while the
 * device goes on with the layers below. Before the first copy of a step, a
 * host call waits until every rank's device has finished reading the
 * pieces for the step before (a sync and a barrier); after the last, the
 * average waits until every piece is written (a sync and a barrier), then
 * sums. In a captured step the copies are recorded commands and both waits
 * are host calls, so replays do the same. */
#include "shared_memory_route.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/kernels.h"
#include "core/internal.h"
#include "nn_capture.h"
#include "nn_dist.h"
#include "transport.h"

/* Which buckets one step's backward copied early. A captured step keeps
 * its record for its replays. */
typedef struct early_copies {
    bool *copied;  /* per bucket */
    bool waited;   /* the readers' wait ran before the first copy */
    bool recopy;   /* a gradient was not in the flat buffer yet: copy every bucket at the end */
    struct early_copies *next;
} early_copies;

typedef struct step_average {
    shared_route *route;
    early_copies *early;
} step_average;

struct shared_route {
    const nn_param_set *set;
    dist_shared_memory *shared;
    nn_tensor **pieces;     /* pieces[r]: local rank r's, as this device sees it */
    int me;                 /* this rank's piece */
    /* Buckets: runs of whole parameters in flat order, up to
     * NN_DIST_BUCKET_FLOATS each (one parameter may be more). */
    int bucket_count;
    int *param_bucket;      /* per parameter */
    int *bucket_params;     /* parameters per bucket */
    int64_t *bucket_first;  /* first element */
    int64_t *bucket_size;   /* elements */
    int *ready;             /* parameters told complete this step, per bucket */
    bool watching;          /* the context's grad-ready hook is ours */
    early_copies *current;  /* this step's, while its backward runs */
    early_copies *kept;     /* captured steps' */
    step_average **averages; /* host calls' user data, kept while captures may call them */
    int average_count, average_capacity;
};

static nn_buffer_ref range_ref(const nn_tensor *t, int64_t first, int64_t n) {
    nn_buffer_ref ref = nn_tensor_ref(t);
    ref.offset += (size_t)first * sizeof(float);
    ref.bytes = (size_t)n * sizeof(float);
    return ref;
}

static nn_status copy_bucket(shared_route *r, int b) {
    const int64_t first = r->bucket_first[b], n = r->bucket_size[b];
    return nn_ctx_copy(r->set->ctx, range_ref(r->pieces[r->me], first, n), range_ref(r->set->flat_grads, first, n),
                       (size_t)n * sizeof(float));
}

/* Every rank's device has finished reading the pieces of the step before. */
static nn_status wait_for_readers(void *user) {
    shared_route *r = user;
    NN_TRY(nn_ctx_sync(r->set->ctx));
    return dist_local_barrier();
}

static early_copies *new_early_copies(shared_route *r) {
    early_copies *e = calloc(1, sizeof *e);
    if (e) e->copied = calloc((size_t)r->bucket_count, sizeof *e->copied);
    if (!e || !e->copied) {
        free(e);
        return NN_FAIL_NULL(NN_ERR_MEMORY, "nn_dist_data_parallel: out of host memory");
    }
    return e;
}

static void free_early_copies(early_copies *e) {
    if (!e) return;
    free(e->copied);
    free(e);
}

/* The grad-ready hook: a bucket whose parameters are all complete is
 * copied now (a count that passes a multiple again, after a second backward
 * before the update, copies the accumulated sums again). */
static nn_status gradient_complete(void *user, nn_tensor *leaf) {
    shared_route *r = user;
    int p = 0;
    while (p < r->set->count && r->set->params[p] != leaf) p++;
    if (p == r->set->count) return NN_OK; /* not one of ours */
    if (!r->current && !(r->current = new_early_copies(r))) return nn_last_status();
    /* A gradient made anew joins the flat buffer only at the update. */
    if (!leaf->grad || leaf->grad->storage != r->set->flat_grads->storage) r->current->recopy = true;
    const int b = r->param_bucket[p];
    if (++r->ready[b] % r->bucket_params[b] != 0 || r->current->recopy) return NN_OK;
    if (!r->current->waited) {
        NN_TRY(nn_capture_host_call(r->set->ctx, wait_for_readers, r));
        r->current->waited = true;
    }
    NN_TRY(copy_bucket(r, b));
    r->current->copied[b] = true;
    return NN_OK;
}

/* The average: every piece written, then ((p0 + p1) + p2) + ... and * 1/N
 * on every rank alike. The first sum reads this rank's own piece from the
 * device, where the same values still are (half the bus traffic with 2
 * ranks); later ones read the sum so far there. */
static nn_status average(shared_route *r, const early_copies *early) {
    nn_ctx *ctx = r->set->ctx;
    const int64_t n = r->set->total;
    if (!early || !early->waited) NN_TRY(wait_for_readers(r));
    for (int b = 0; b < r->bucket_count; b++)
        if (!early || early->recopy || !early->copied[b]) NN_TRY(copy_bucket(r, b));
    NN_TRY(nn_ctx_sync(ctx));
    NN_TRY(dist_local_barrier());
    const nn_buffer_ref grads = range_ref(r->set->flat_grads, 0, n);
    const nn_pointwise_params add = {.n = n, .op = NN_EW_ADD};
    for (int q = 1; q < r->shared->count; q++) {
        const nn_buffer_ref first = q > 1 || r->me == 0 ? grads : range_ref(r->pieces[0], 0, n);
        const nn_buffer_ref second = q == 1 && r->me == 1 ? grads : range_ref(r->pieces[q], 0, n);
        const nn_buffer_ref args[3] = {first, second, grads};
        NN_TRY(nn_ctx_run(ctx, NN_KERNEL_ELEMENTWISE, args, 3, &add));
    }
    const nn_pointwise_params scale = {.n = n, .op = NN_EW_SCALE, .alpha = 1.0f / (float)r->shared->count};
    const nn_buffer_ref args[3] = {grads, nn_optional_ref(NULL), grads};
    return nn_ctx_run(ctx, NN_KERNEL_ELEMENTWISE, args, 3, &scale);
}

static nn_status average_step(void *user) {
    step_average *s = user;
    return average(s->route, s->early);
}

nn_status shared_route_average_all(shared_route *r) { return average(r, NULL); }

static nn_status keep_average(shared_route *r, step_average *s) {
    if (r->average_count == r->average_capacity) {
        int cap = r->average_capacity ? 2 * r->average_capacity : 8;
        step_average **grown = realloc(r->averages, (size_t)cap * sizeof *grown);
        if (!grown) return nn_set_error(NN_ERR_MEMORY, "nn_dist_data_parallel: out of host memory");
        r->averages = grown;
        r->average_capacity = cap;
    }
    r->averages[r->average_count++] = s;
    return NN_OK;
}

nn_status shared_route_before_update(shared_route *r) {
    nn_ctx *ctx = r->set->ctx;
    early_copies *early = r->current;
    r->current = NULL;
    for (int b = 0; b < r->bucket_count; b++) r->ready[b] = 0;
    if (!ctx->recording) { /* eager: the call runs now */
        step_average s = {r, early};
        nn_status st = nn_capture_host_call(ctx, average_step, &s);
        free_early_copies(early);
        return st;
    }
    /* Recorded: replays call it again, with this step's record. */
    if (early) {
        early->next = r->kept;
        r->kept = early;
    }
    step_average *s = malloc(sizeof *s);
    if (!s) return nn_set_error(NN_ERR_MEMORY, "nn_dist_data_parallel: out of host memory");
    *s = (step_average){r, early};
    nn_status st = keep_average(r, s);
    if (st != NN_OK) {
        free(s);
        return st;
    }
    return nn_capture_host_call(ctx, average_step, s);
}

static nn_status make_buckets(shared_route *r) {
    const nn_param_set *set = r->set;
    r->param_bucket = calloc((size_t)set->count, sizeof *r->param_bucket);
    r->bucket_params = calloc((size_t)set->count, sizeof *r->bucket_params);
    r->bucket_first = calloc((size_t)set->count, sizeof *r->bucket_first);
    r->bucket_size = calloc((size_t)set->count, sizeof *r->bucket_size);
    r->ready = calloc((size_t)set->count, sizeof *r->ready);
    if (!r->param_bucket || !r->bucket_params || !r->bucket_first || !r->bucket_size || !r->ready)
        return nn_set_error(NN_ERR_MEMORY, "nn_dist_data_parallel: out of host memory");
    int b = -1;
    for (int p = 0; p < set->count; p++) {
        const int64_t size = nn_tensor_numel(set->params[p]);
        if (b < 0 || r->bucket_size[b] + size > NN_DIST_BUCKET_FLOATS) {
            b++;
            r->bucket_first[b] = set->offsets[p];
        }
        r->param_bucket[p] = b;
        r->bucket_params[b]++;
        r->bucket_size[b] = set->offsets[p] + size - r->bucket_first[b];
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
    free_early_copies(r->current);
    while (r->kept) {
        early_copies *next = r->kept->next;
        free_early_copies(r->kept);
        r->kept = next;
    }
    for (int i = 0; i < r->average_count; i++) free(r->averages[i]);
    free(r->averages);
    free(r->param_bucket);
    free(r->bucket_params);
    free(r->bucket_first);
    free(r->bucket_size);
    free(r->ready);
    free(r);
}
