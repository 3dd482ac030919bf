/* `mpirun -n N nnengine train ...`: one rank of a data-parallel run
 * (nn_dist.h). Rank 0 prints, logs and writes files; the other ranks keep
 * their messages and print them, naming the rank, only when they fail. Every
 * rank computes the same shuffled order and trains on its shard of each
 * global batch of N x --batch images, so the steps see the images one
 * process would see at batch N x --batch. */
#ifndef NNENGINE_DIST_TRAIN_H
#define NNENGINE_DIST_TRAIN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "nn_engine.h"

typedef struct dist_train {
    bool active;   /* launched as one of several ranks */
    int rank, size;
    /* Ranks > 0: file descriptor 2 goes to a temporary file until they
     * finish, shown only if they fail; quiet_fd is that file, real_stderr_fd
     * the original (-1: none). Descriptors, not stderr's FILE, because
     * libraries (Vulkan drivers) keep the FILE they saw at start. */
    int quiet_fd, real_stderr_fd;
} dist_train;

/* Joins the job when mpirun started this process (else d->active is false
 * and nothing changes). Sets *batch from global_batch (> 0) and, for CPU
 * ranks, *threads to the host's cores shared among its ranks; picks this
 * rank's GPU by its rank on the host. EXIT_OK or an exit code after saying why. */
int dist_train_start(dist_train *d, const char *device, int64_t global_batch, int64_t *batch, int64_t *threads);
/* Rank 0, or no job: the rank that prints and writes files. */
bool dist_train_is_main(const dist_train *d);
/* This rank's images of an epoch of `count` images at `batch` per rank. */
int64_t dist_train_shard_count(const dist_train *d, int64_t count, int64_t batch);
/* order (a permutation of count images) becomes this rank's shard, in place
 * (nn_shard_indices: the rule the image loader's nn_loader_shard follows too). */
void dist_train_shard_order(const dist_train *d, int64_t *order, int64_t count, int64_t batch);
/* Rank 0's weights and buffers to every rank, and opt's gradients averaged
 * over the ranks from now on. */
nn_status dist_train_prepare(dist_train *d, nn_module *net, nn_optimizer *opt);
/* --sync-bn: every BatchNorm of net takes its statistics over all ranks
 * (nn_dist_sync_batch_norm). EXIT_OK or an exit code after saying why: a
 * run without mpirun, or a model without BatchNorm. */
int dist_train_sync_batch_norm(const dist_train *d, nn_module *net, const char *model);
/* Sums count doubles over the ranks (no job: unchanged). */
nn_status dist_train_sum(const dist_train *d, double *values, int count);
/* Rank 0's count doubles to every rank, replacing theirs (no job: unchanged). */
nn_status dist_train_from_main(const dist_train *d, double *values, int count);
/* The end: a rank that failed prints its messages naming itself and exits
 * without leaving the job, which makes mpirun end it; otherwise leaves it. */
int dist_train_finish(dist_train *d, int status);

#endif
