/* SyncBatchNorm over the job (nn_dist_sync_batch_norm): every BatchNorm of
 * a model gets a sync object whose reduction is MPI's all-reduce of
 * doubles. Each rank runs the same model, so the BatchNorm layers reduce
 * at the same points in the same order on every rank. */
#include "nn_dist.h"
#include "nn_layers.h"
#include "transport.h"

static nn_status all_reduce(double *values, int64_t count, void *user) {
    (void)user;
    return dist_all_reduce_doubles(values, count);
}

static nn_status check_ready(const char *fn) {
    if (dist_transport_ready()) return NN_OK;
    return nn_set_error(NN_ERR_STATE, "%s: not in a job: call nn_dist_init first%s", fn,
                        dist_transport_built() ? "" : " (and this build of nn-engine has no MPI)");
}

nn_batch_norm_sync *nn_dist_batch_norm_sync_new(nn_ctx *ctx, int channels) {
    if (check_ready("nn_dist_batch_norm_sync_new") != NN_OK) return NULL;
    return nn_batch_norm_sync_new(ctx, channels, all_reduce, NULL);
}

static nn_status convert(nn_module *m, int *converted) {
    const int channels = nn_batchnorm_channels(m);
    if (channels > 0) {
        nn_batch_norm_sync *sync = nn_dist_batch_norm_sync_new(nn_module_ctx(m), channels);
        if (!sync) return nn_last_status();
        NN_TRY(nn_batchnorm_set_sync(m, sync));
        (*converted)++;
    }
    for (int i = 0; i < nn_module_child_count(m); i++) NN_TRY(convert(nn_module_child_at(m, i), converted));
    return NN_OK;
}

nn_status nn_dist_sync_batch_norm(nn_module *m, int *converted) {
    const char *fn = "nn_dist_sync_batch_norm";
    if (!m) return nn_set_error(NN_ERR_ARGUMENT, "%s: module is NULL", fn);
    NN_TRY(check_ready(fn));
    int count = 0;
    nn_status st = convert(m, &count);
    if (converted) *converted = count;
    return st;
}
