/* SyncBatchNorm (nn_batch_norm_synced): BatchNorm whose batch statistics
 * are those of every process's batch. Its sync object holds a persistent
 * exchange tensor [2 C] on the device and host staging; at each reduction
 * the per-channel vectors go into the exchange, a host call (nn_capture_host_call)
 * reads it, sums over the processes with the caller's reduce and writes the
 * result back, and the kernels after it read the exchange. A captured step
 * keeps the host call, so every replay reduces again; the exchange outlives
 * the step's tensors, which a replay's host call could not name.
 *
 * Forward: the processes' means and variances combine as sums of count,
 * count * mean and count * (var + mean^2), in double (exact algebra on the
 * float statistics, so no digits are lost as from float sums of squares).
 * Backward: the sums of w dy and w dy xhat (NORM_BACKWARD_SUMS) are summed,
 * scaled by count / global count so NORM_BACKWARD_FROM_SUMS's division by
 * this batch's count gives the mean over every batch: PyTorch's
 * SyncBatchNorm. The weight's and bias's gradients stay this process's, as
 * there (the data-parallel optimizer averages them).
 *
 * A host call's user data must outlive the capture: each (sync, direction,
 * count) gets one record, kept with the sync object, so a batch size seen
 * twice reuses its record. */
#include <stdio.h>
#include <stdlib.h>

#include "batch_norm_sync.h"
#include "core/internal.h"

typedef struct sync_point {
    nn_batch_norm_sync *sync;
    bool backward;
    int64_t count; /* this process's elements per channel */
    struct sync_point *next;
} sync_point;

struct nn_batch_norm_sync {
    nn_ctx *ctx;
    int channels;
    nn_stats_reduce_fn reduce;
    void *user;
    nn_tensor *exchange;          /* [2 C] */
    nn_tensor *first, *second;    /* its halves, [C] each */
    float *staging;               /* 2 C */
    double *sums;                 /* 2 C + 1: the vectors and the count */
    int64_t global_count;         /* set by the last forward reduction */
    sync_point *points;
};

nn_batch_norm_sync *nn_batch_norm_sync_new(nn_ctx *ctx, int channels, nn_stats_reduce_fn reduce, void *user) {
    const char *fn = "nn_batch_norm_sync_new";
    if (!ctx || !reduce || channels < 1)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: need ctx, reduce and channels >= 1; got ctx %s, reduce %s, "
                                             "channels %d", fn, ctx ? "set" : "NULL", reduce ? "set" : "NULL",
                            channels);
    nn_batch_norm_sync *s = calloc(1, sizeof *s);
    if (!s) return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", fn);
    *s = (nn_batch_norm_sync){.ctx = ctx, .channels = channels, .reduce = reduce, .user = user};
    const int64_t both = 2 * (int64_t)channels, one = channels;
    s->staging = malloc(sizeof *s->staging * (size_t)both);
    s->sums = malloc(sizeof *s->sums * (size_t)(both + 1));
    if (!s->staging || !s->sums) {
        nn_batch_norm_sync_free(s);
        return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory for %d channels", fn, channels);
    }
    s->exchange = nn_tensor_new(ctx, NN_F32, 1, &both);
    s->first = s->exchange ? nn_tensor_view_at(s->exchange, 0, 1, &one) : NULL;
    s->second = s->first ? nn_tensor_view_at(s->exchange, sizeof(float) * (size_t)channels, 1, &one) : NULL;
    if (!s->second) {
        nn_batch_norm_sync_free(s); /* the tensor's error stays the last */
        return NULL;
    }
    return s;
}

void nn_batch_norm_sync_free(nn_batch_norm_sync *s) {
    if (!s) return;
    for (sync_point *p = s->points, *next; p; p = next) {
        next = p->next;
        free(p);
    }
    nn_tensor_free(s->second);
    nn_tensor_free(s->first);
    nn_tensor_free(s->exchange);
    free(s->sums);
    free(s->staging);
    free(s);
}

int nn_batch_norm_sync_channels(const nn_batch_norm_sync *s) { return s ? s->channels : 0; }
nn_ctx *nn_batch_norm_sync_ctx(const nn_batch_norm_sync *s) { return s ? s->ctx : NULL; }

static sync_point *point_of(nn_batch_norm_sync *s, bool backward, int64_t count) {
    for (sync_point *p = s->points; p; p = p->next)
        if (p->backward == backward && p->count == count) return p;
    sync_point *p = malloc(sizeof *p);
    if (!p) return NN_FAIL_NULL(NN_ERR_MEMORY, "nn_batch_norm_synced: out of host memory");
    *p = (sync_point){s, backward, count, s->points};
    s->points = p;
    return p;
}

/* The reduction itself, with the caller's message kept under the op's name. */
static nn_status reduce(nn_batch_norm_sync *s, int64_t count) {
    nn_status st = s->reduce(s->sums, count, s->user);
    if (st == NN_OK) return NN_OK;
    char why[512];
    snprintf(why, sizeof why, "%s", nn_last_error());
    return nn_set_error(st, "nn_batch_norm_synced: reducing the batch statistics over the processes: %s", why);
}

/* Host call: exchange = (mean, var) of this batch -> of every batch. */
static nn_status combine_statistics(void *user) {
    const sync_point *p = user;
    nn_batch_norm_sync *s = p->sync;
    const int C = s->channels;
    const double n = (double)p->count;
    NN_TRY(nn_tensor_read(s->exchange, s->staging, sizeof *s->staging * 2 * (size_t)C));
    for (int c = 0; c < C; c++) {
        const double mean = s->staging[c], var = s->staging[C + c];
        s->sums[c] = n * mean;
        s->sums[C + c] = n * (var + mean * mean);
    }
    s->sums[2 * C] = n;
    NN_TRY(reduce(s, 2 * (int64_t)C + 1));
    const double total = s->sums[2 * C];
    for (int c = 0; c < C; c++) {
        const double mean = s->sums[c] / total, var = s->sums[C + c] / total - mean * mean;
        s->staging[c] = (float)mean;
        s->staging[C + c] = (float)(var > 0.0 ? var : 0.0); /* rounding below 0 when var << mean^2 */
    }
    s->global_count = (int64_t)total;
    return nn_tensor_write(s->exchange, s->staging, sizeof *s->staging * 2 * (size_t)C);
}

/* Host call: exchange = the sums of w dy, w dy xhat over this batch -> over
 * every batch, times count / global count. */
static nn_status combine_gradient_sums(void *user) {
    const sync_point *p = user;
    nn_batch_norm_sync *s = p->sync;
    const int C = s->channels;
    NN_TRY(nn_tensor_read(s->exchange, s->staging, sizeof *s->staging * 2 * (size_t)C));
    for (int i = 0; i < 2 * C; i++) s->sums[i] = s->staging[i];
    s->sums[2 * C] = (double)p->count;
    NN_TRY(reduce(s, 2 * (int64_t)C + 1));
    const double scale = (double)p->count / s->sums[2 * C];
    for (int i = 0; i < 2 * C; i++) s->staging[i] = (float)(s->sums[i] * scale);
    return nn_tensor_write(s->exchange, s->staging, sizeof *s->staging * 2 * (size_t)C);
}

static nn_status copy(nn_ctx *ctx, nn_tensor *to, nn_tensor *from) {
    return nn_ctx_copy(ctx, nn_tensor_ref(to), nn_tensor_ref(from), sizeof(float) * (size_t)from->numel);
}

nn_status nn_batch_norm_sync_statistics(nn_batch_norm_sync *s, nn_tensor *mean, nn_tensor *var, int64_t count,
                                        int64_t *global_count) {
    sync_point *p = point_of(s, false, count);
    if (!p) return nn_last_status();
    NN_TRY(copy(s->ctx, s->first, mean));
    NN_TRY(copy(s->ctx, s->second, var));
    NN_TRY(nn_capture_host_call(s->ctx, combine_statistics, p));
    NN_TRY(copy(s->ctx, mean, s->first));
    NN_TRY(copy(s->ctx, var, s->second));
    *global_count = s->global_count;
    return NN_OK;
}

nn_status nn_batch_norm_sync_backward_data(nn_batch_norm_sync *s, const nn_norm_params *layout, nn_tensor *x,
                                           nn_tensor *mean, nn_tensor *var, nn_tensor *weight, nn_tensor *dy,
                                           nn_tensor *dx) {
    sync_point *p = point_of(s, true, layout->outer * layout->inner);
    if (!p) return nn_last_status();
    const nn_buffer_ref none = {0};
    nn_buffer_ref sums[7] = {nn_tensor_ref(x),  nn_tensor_ref(mean),         nn_tensor_ref(var),
                             weight ? nn_tensor_ref(weight) : none, nn_tensor_ref(dy), nn_tensor_ref(s->exchange),
                             none};
    NN_TRY(nn_ctx_run(s->ctx, NN_KERNEL_NORM_BACKWARD_SUMS, sums, 7, layout));
    NN_TRY(nn_capture_host_call(s->ctx, combine_gradient_sums, p));
    nn_buffer_ref apply[10] = {sums[0], sums[1], sums[2], sums[3], sums[4], nn_tensor_ref(dx), sums[5], none, none,
                               none};
    return nn_ctx_run(s->ctx, NN_KERNEL_NORM_BACKWARD_FROM_SUMS, apply, 10, layout);
}
