/* Data-parallel training over MPI (docs/ARCHITECTURE.md, "Several
 * processes"). A job is N processes started by mpirun (one per GPU, or CPU
 * ranks), each holding a full copy of the model: every rank starts from rank
 * 0's weights (nn_dist_broadcast_module), trains on its own shard of each
 * global batch, and the optimizer averages the gradients over the ranks
 * before each update (nn_dist_data_parallel), so all copies stay equal and a
 * step equals one on the global batch, up to rounding.
 *
 *     nn_dist_init();                       // under mpirun -n N
 *     nn_dist_broadcast_module(net, 0);
 *     nn_dist_data_parallel(opt);
 *     ... the usual loop on this rank's batches ...
 *     nn_dist_finalize();
 *
 * The collectives are MPI's (Open MPI through pkg-config's ompi-c). A build
 * without MPI has these functions too: nn_dist_init then fails saying so,
 * and the rest refuse to run before it. Process-wide, like MPI: one thread at
 * a time (MPI_THREAD_SERIALIZED). Tensors go through host memory (device to
 * host, MPI, host to device), so any backend works; nn_dist_data_parallel
 * has a faster route on one host (below). */
#ifndef NN_DIST_H
#define NN_DIST_H

#include <stdbool.h>
#include <stdint.h>
#include "nn_layers.h"
#include "nn_module.h"
#include "nn_optim.h"
#include "nn_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nn_dist_op {
    NN_DIST_SUM = 0, /* the ranks' sum */
    NN_DIST_AVG = 1  /* the sum divided by the number of ranks */
} nn_dist_op;

/* Whether this build has MPI. */
bool nn_dist_available(void);
/* Whether the environment says mpirun (or another PMI launcher) started this
 * process as one of several (OMPI_COMM_WORLD_SIZE, PMI_SIZE); *size gets
 * their number (1 when not launched so). size may be NULL. */
bool nn_dist_launched(int *size);
/* Joins the job (MPI_Init_thread); later calls do nothing. Fails in a build
 * without MPI, saying so. */
nn_status nn_dist_init(void);
bool nn_dist_initialized(void);
/* This process's rank and the job's size; 0 and 1 before nn_dist_init.
 * The local ones count the ranks on this host (a GPU each). */
int nn_dist_rank(void);
int nn_dist_size(void);
int nn_dist_local_rank(void);
int nn_dist_local_size(void);
/* The MPI library, e.g. "Open MPI v4.1.4, ...", or why there is none. */
const char *nn_dist_library(void);

/* A float32 tensor summed (or averaged) over the ranks, in place: every
 * rank gets the same values. Every rank must call it with the same shape. */
nn_status nn_dist_all_reduce(nn_tensor *t, nn_dist_op op);
/* The same for count doubles in host memory (metrics). */
nn_status nn_dist_all_reduce_host(double *values, int64_t count, nn_dist_op op);
/* Rank root's values of t to every rank (any dtype, same shape on all). */
nn_status nn_dist_broadcast(nn_tensor *t, int root);
/* Every parameter and buffer of m (its state_dict) from rank root. */
nn_status nn_dist_broadcast_module(nn_module *m, int root);
/* Waits until every rank has called it. */
nn_status nn_dist_barrier(void);

/* Makes opt data-parallel: from now on each nn_optimizer_step first
 * averages the gradients over the ranks (sum / N, the same bits on every
 * rank), then updates as before. When every rank is on one host, through
 * memory they share: each device copies its gradients, in buckets of at
 * most NN_DIST_BUCKET_FLOATS as backward completes them, into its piece of
 * an MPI shared window that every device uses in place, and sums all
 * pieces itself: the buckets copied by the middle of backward while the
 * rest of backward runs, the others before the update (devices that cannot
 * use host memory in place, and NN_ENGINE_DIST_SHARED_MEMORY=0, take the
 * next route, saying so on stderr). Otherwise through MPI's all-reduce, in
 * buckets, each started while the next comes from the device, through
 * host staging made once and reused. Gradients accumulated over several
 * backward passes before the update are averaged as PyTorch's DDP does.
 * Inside a captured step the waits for the other ranks are host calls
 * (nn_capture_host_call), where a replay splits. Freed with opt; set once
 * per optimizer. */
#define NN_DIST_BUCKET_FLOATS (1 << 20)
nn_status nn_dist_data_parallel(nn_optimizer *opt);

/* SyncBatchNorm (PyTorch's convert_sync_batchnorm): every BatchNorm1d/2d
 * in m's tree takes its batch statistics in training over every rank's
 * batch (nn_layers.h's nn_batchnorm_set_sync with MPI's all-reduce), so
 * N ranks at batch B normalise as one process at batch N * B and their
 * running statistics agree. *converted (may be NULL) gets the number of
 * layers. Every rank converts the same model. */
nn_status nn_dist_sync_batch_norm(nn_module *m, int *converted);
/* One such sync object (for nn_batch_norm_synced on ctx, `channels`). */
nn_batch_norm_sync *nn_dist_batch_norm_sync_new(nn_ctx *ctx, int channels);

/* Ends the whole job at once with this exit code (MPI_Abort): for a rank that
 * cannot go on while the others wait for it. Returns only without a job. */
void nn_dist_abort(int code);
/* Leaves the job (MPI_Finalize); after it nothing else is reached. */
nn_status nn_dist_finalize(void);

#ifdef __cplusplus
}
#endif
#endif
