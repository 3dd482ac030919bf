/* SyncBatchNorm's reductions (batch_norm_sync.c), called by BatchNorm's
 * forward and backward (normalization.c) when its node has a sync object:
 * each turns this process's per-channel vectors into the job's, on the
 * device, through one nn_capture_host_call. */
#ifndef NN_OPS_BATCH_NORM_SYNC_H
#define NN_OPS_BATCH_NORM_SYNC_H

#include "nn_ops.h"
#include "op_common.h"

/* mean and var [C] (this batch's, biased, over `count` elements per
 * channel) become those of every process's batch; *global_count gets the
 * elements per channel over all of them. */
nn_status nn_batch_norm_sync_statistics(nn_batch_norm_sync *sync, nn_tensor *mean, nn_tensor *var, int64_t count,
                                        int64_t *global_count);
/* dx (+)= x's gradient with the batch statistics (mean, var) of every
 * process's batch: NORM_BACKWARD_DATA whose sums of w dy and w dy xhat
 * are reduced over the processes. p is the node's layout. */
nn_status nn_batch_norm_sync_backward_data(nn_batch_norm_sync *sync, const nn_norm_params *p, nn_tensor *x,
                                           nn_tensor *mean, nn_tensor *var, nn_tensor *weight, nn_tensor *dy,
                                           nn_tensor *dx);

#endif
