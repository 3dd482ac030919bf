/* The data-parallel optimizer (nn_dist_data_parallel): a gradient hook
 * (optimizer.h) that averages the gradients over the ranks before every
 * update, by one of two routes:
 *
 * - Every rank on one host, on devices that use host memory in place (the
 *   CPU; Vulkan with VK_EXT_external_memory_host): through memory the ranks
 *   share (shared_memory_route.h), the copies started during backward.
 * - Otherwise (ranks on several hosts, or NN_ENGINE_DIST_SHARED_MEMORY=0):
 *   device -> host staging (one buffer, reused) -> MPI all-reduce -> host ->
 *   device, in buckets: each bucket's reduction is started as soon as it is
 *   on the host, while the next one is read.
 *
 * Inside a captured step, where the ranks must wait for each other is a
 * host call (nn_capture_host_call), so a replay splits there: MPI's
 * all-reduce, or the shared-memory route's meetings. A command buffer
 * cannot wait for other processes, and splitting where the step needs
 * other ranks keeps everything else replayed as before.
 *
 * Determinism: every rank must get the same bits, or the copies drift
 * apart. Through shared memory every rank adds the pieces in rank order and
 * scales by 1/N with the same correctly rounded operations. Through MPI we
 * rely on Open MPI's reductions giving all ranks one result (each element is
 * reduced in one order and the result distributed; with 2 ranks a + b ==
 * b + a exactly); the 1/N scaling is the same multiplication on every rank. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_dist.h"
#include "optim/optimizer.h"
#include "shared_memory_route.h"
#include "transport.h"

typedef struct data_parallel {
    nn_optimizer *opt;
    /* Through MPI: */
    float *staging; /* the gradients on the host, reused every step */
    nn_tensor **buckets; /* views of the flat gradient buffer, made once */
    int bucket_count;
    shared_route *shared; /* through this host's shared memory, once open */
    bool route_chosen;    /* once the gradients are flat */
} data_parallel;

/* One piece of the gradients reduced as a unit: a bucket of the flat
 * buffer, or one parameter's own gradient (before all of them are flat). */
typedef struct piece {
    nn_tensor *grad;
    float *host;
    int64_t n;
    dist_request request;
} piece;

static void release(void *user) {
    data_parallel *dp = user;
    shared_route_free(dp->shared);
    for (int i = 0; i < dp->bucket_count; i++) nn_tensor_free(dp->buckets[i]);
    free(dp->buckets);
    free(dp->staging);
    free(dp);
}

static nn_status flat_buckets(data_parallel *dp) {
    if (dp->buckets) return NN_OK;
    const nn_param_set *set = &dp->opt->set;
    int count = (int)((set->total + NN_DIST_BUCKET_FLOATS - 1) / NN_DIST_BUCKET_FLOATS);
    dp->buckets = calloc((size_t)count, sizeof *dp->buckets);
    if (!dp->buckets) return nn_set_error(NN_ERR_MEMORY, "nn_dist_data_parallel: out of host memory");
    for (int b = 0; b < count; b++) {
        int64_t first = (int64_t)b * NN_DIST_BUCKET_FLOATS;
        int64_t n = set->total - first < NN_DIST_BUCKET_FLOATS ? set->total - first : NN_DIST_BUCKET_FLOATS;
        dp->buckets[b] = nn_tensor_view_at(set->flat_grads, (size_t)first * sizeof(float), 1, &n);
        if (!dp->buckets[b]) return nn_last_status();
        dp->bucket_count = b + 1;
    }
    return NN_OK;
}

/* The pieces of this step's gradients, laid out in the staging buffer. */
static nn_status list_pieces(data_parallel *dp, piece *pieces, int *count) {
    nn_param_set *set = &dp->opt->set;
    if (!dp->staging) {
        dp->staging = malloc(sizeof *dp->staging * (size_t)(set->total > 0 ? set->total : 1));
        if (!dp->staging) return nn_set_error(NN_ERR_MEMORY, "nn_dist_data_parallel: out of host memory for the "
                                              "%lld gradient values' staging buffer", (long long)set->total);
    }
    *count = 0;
    int64_t at = 0;
    if (nn_param_set_is_flat(set)) {
        NN_TRY(flat_buckets(dp));
        for (int b = 0; b < dp->bucket_count; b++, (*count)++) {
            pieces[*count] = (piece){dp->buckets[b], dp->staging + at, nn_tensor_numel(dp->buckets[b]), {-1}};
            at += pieces[*count].n;
        }
        return NN_OK;
    }
    /* Every rank runs the same model, so the same parameters have gradients. */
    for (int i = 0; i < set->count; i++) {
        nn_tensor *grad = set->params[i]->grad;
        if (!grad) continue;
        pieces[(*count)++] = (piece){grad, dp->staging + at, grad->numel, {-1}};
        at += grad->numel;
    }
    return NN_OK;
}

static nn_status finish(piece *p, float scale) {
    NN_TRY(dist_all_reduce_wait(&p->request));
    for (int64_t i = 0; i < p->n; i++) p->host[i] *= scale;
    return nn_tensor_write(p->grad, p->host, sizeof(float) * (size_t)p->n);
}

/* The route is chosen once the gradients are flat (the first step makes
 * them so); until then, and where shared memory is not possible, MPI. */
static nn_status choose_route(data_parallel *dp) {
    if (dp->route_chosen || !nn_param_set_is_flat(&dp->opt->set)) return NN_OK;
    char why[320] = "";
    NN_TRY(shared_route_open(&dp->opt->set, &dp->shared, why, sizeof why));
    dp->route_chosen = true;
    const bool opened = dp->shared != NULL;
    /* The slower route is not taken silently: said by rank 0, and by a rank
     * whose own device refused. Several hosts take it by design. */
    const dist_group group = dist_transport_group();
    const bool own_reason = strncmp(why, "rank ", 5) == 0;
    if (!opened && group.local_size == group.size && (group.rank == 0 || own_reason))
        fprintf(stderr, "nn-engine: data parallel: gradients averaged through MPI, not shared memory: %s\n", why);
    if (own_reason) nn_clear_error();
    return NN_OK;
}

/* The host call: read each piece, start its reduction, and finish the
 * oldest when DIST_MAX_IN_FLIGHT are under way; then finish the rest. */
static nn_status average_gradients(void *user) {
    data_parallel *dp = user;
    NN_TRY(choose_route(dp));
    if (dp->shared) return shared_route_average_all(dp->shared);
    const nn_param_set *set = &dp->opt->set;
    const int capacity = set->count > (int)(set->total / NN_DIST_BUCKET_FLOATS) + 1
                             ? set->count : (int)(set->total / NN_DIST_BUCKET_FLOATS) + 1;
    piece *pieces = calloc((size_t)capacity, sizeof *pieces);
    if (!pieces) return nn_set_error(NN_ERR_MEMORY, "nn_dist_data_parallel: out of host memory");
    int count = 0, finished = 0;
    const float scale = 1.0f / (float)nn_dist_size();
    nn_status st = list_pieces(dp, pieces, &count);
    for (int i = 0; st == NN_OK && i < count; i++) {
        if (i - finished == DIST_MAX_IN_FLIGHT) st = finish(&pieces[finished++], scale);
        if (st == NN_OK) st = nn_tensor_read(pieces[i].grad, pieces[i].host, sizeof(float) * (size_t)pieces[i].n);
        if (st == NN_OK) st = dist_all_reduce_start(pieces[i].host, pieces[i].n, &pieces[i].request);
    }
    while (st == NN_OK && finished < count) st = finish(&pieces[finished++], scale);
    for (int i = finished; st != NN_OK && i < count; i++) dist_all_reduce_wait(&pieces[i].request); /* free the slots */
    free(pieces);
    return st;
}

static nn_status before_update(nn_optimizer *opt, void *user) {
    data_parallel *dp = user;
    if (dp->shared) return shared_route_before_update(dp->shared);
    return nn_capture_host_call(opt->set.ctx, average_gradients, user);
}

nn_status nn_dist_data_parallel(nn_optimizer *opt) {
    if (!opt) return nn_set_error(NN_ERR_ARGUMENT, "nn_dist_data_parallel: optimizer is NULL");
    if (!dist_transport_ready())
        return nn_set_error(NN_ERR_STATE, "nn_dist_data_parallel: not in a job: call nn_dist_init first%s",
                            dist_transport_built() ? "" : " (and this build of nn-engine has no MPI)");
    data_parallel *dp = calloc(1, sizeof *dp);
    if (!dp) return nn_set_error(NN_ERR_MEMORY, "nn_dist_data_parallel: out of host memory");
    dp->opt = opt;
    const nn_grad_hook hook = {before_update, release, dp};
    nn_status st = nn_optimizer_set_grad_hook(opt, &hook);
    if (st != NN_OK) release(dp);
    return st;
}
