/* One rank of `mpirun -n N nnengine train` (dist_train.h). */
#include "dist_train.h"

#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <unistd.h>
#endif
#include "options.h"
#include "platform/host_info.h"
#include "setup.h"

/* --device auto or vulkan: rank r on its host takes that host's GPU r (mod
 * their number), unless NN_ENGINE_VULKAN_DEVICE already says which. */
static void pick_gpu(const char *device) {
    if (strcmp(device, "cpu") == 0 || getenv("NN_ENGINE_VULKAN_DEVICE")) return;
    int count = nn_list_devices(NULL, 0), gpus = 0;
    nn_device_info *devices = calloc((size_t)(count > 0 ? count : 1), sizeof *devices);
    if (!devices) return;
    count = nn_list_devices(devices, count);
    for (int i = 0; i < count; i++)
        if (strcmp(devices[i].backend, "vulkan") == 0 && devices[i].index >= 0 && devices[i].usable) gpus++;
    free(devices);
    if (gpus == 0) return;
    char index[16];
    snprintf(index, sizeof index, "%d", nn_dist_local_rank() % gpus);
#ifdef _WIN32
    _putenv_s("NN_ENGINE_VULKAN_DEVICE", index);
#else
    setenv("NN_ENGINE_VULKAN_DEVICE", index, 1);
#endif
}

/* Ranks > 0 keep what they print: shown only if they fail. */
static void quiet_rank(dist_train *d) {
#ifdef _WIN32
    (void)d; /* ranks exist only with MPI, which the Windows build has not */
#else
    FILE *kept = tmpfile();
    fflush(stderr);
    d->real_stderr_fd = kept ? dup(STDERR_FILENO) : -1;
    if (d->real_stderr_fd >= 0 && dup2(fileno(kept), STDERR_FILENO) >= 0) {
        d->quiet_fd = dup(fileno(kept));
    } else {
        if (d->real_stderr_fd >= 0) close(d->real_stderr_fd);
        d->real_stderr_fd = -1;
    }
    if (kept) fclose(kept);
    if (!freopen("/dev/null", "w", stdout)) fprintf(stderr, "rank %d: cannot silence stdout\n", d->rank);
#endif
}

#ifndef _WIN32
/* What the rank printed while quiet, to the real stderr. */
static void replay_quiet(int from, int to) {
    char buffer[4096];
    ssize_t n;
    if (lseek(from, 0, SEEK_SET) < 0) return;
    while ((n = read(from, buffer, sizeof buffer)) > 0)
        if (write(to, buffer, (size_t)n) != n) return;
}
#endif

int dist_train_start(dist_train *d, const char *device, int64_t global_batch, int64_t *batch, int64_t *threads) {
    memset(d, 0, sizeof *d);
    d->size = 1;
    d->real_stderr_fd = d->quiet_fd = -1;
    int launched_size = 1;
    if (!nn_dist_launched(&launched_size)) {
        if (global_batch > 0) *batch = global_batch;
        return EXIT_OK;
    }
    if (!nn_dist_available()) {
        fprintf(stderr, "nnengine train: started by mpirun as one of %d processes, but this build of nn-engine has no "
                        "MPI: install libopenmpi-dev and rebuild (make MPI=1), or run one process\n", launched_size);
        return EXIT_BAD_INPUT;
    }
    if (nn_dist_init() != NN_OK) {
        fprintf(stderr, "nnengine train: %s\n", library_error());
        return EXIT_FAILURE_RUNTIME;
    }
    d->active = true;
    d->rank = nn_dist_rank();
    d->size = nn_dist_size();
    if (d->rank > 0) quiet_rank(d);
    if (global_batch > 0) {
        if (global_batch % d->size) {
            fprintf(stderr, "nnengine train: --global-batch %lld is not a multiple of the %d ranks\n",
                    (long long)global_batch, d->size);
            return EXIT_BAD_INPUT;
        }
        *batch = global_batch / d->size;
    }
    int cores = nn_host_online_cores();
    if (*threads == 0 && strcmp(device, "cpu") == 0)
        *threads = cores / nn_dist_local_size() > 0 ? cores / nn_dist_local_size() : 1;
    pick_gpu(device);
    fprintf(stderr, "data parallel: %d ranks (%s), %d on this host; this is rank %d\n", d->size, nn_dist_library(),
            nn_dist_local_size(), d->rank);
    return EXIT_OK;
}

bool dist_train_is_main(const dist_train *d) { return !d->active || d->rank == 0; }

int64_t dist_train_shard_count(const dist_train *d, int64_t count, int64_t batch) {
    return d->active ? nn_shard_count(count, batch, d->size) : count;
}

void dist_train_shard_order(const dist_train *d, int64_t *order, int64_t count, int64_t batch) {
    if (d->active) nn_shard_indices(order, count, batch, d->rank, d->size);
}

nn_status dist_train_prepare(dist_train *d, nn_module *net, nn_optimizer *opt) {
    if (!d->active) return NN_OK;
    nn_status st = nn_dist_broadcast_module(net, 0);
    return st == NN_OK ? nn_dist_data_parallel(opt) : st;
}

int dist_train_sync_batch_norm(const dist_train *d, nn_module *net, const char *model) {
    if (!d->active) {
        fprintf(stderr, "nnengine train: --sync-bn takes BatchNorm statistics over the ranks of mpirun -n N; this "
                        "is one process (leave out --sync-bn)\n");
        return EXIT_BAD_INPUT;
    }
    int layers = 0;
    if (nn_dist_sync_batch_norm(net, &layers) != NN_OK) {
        fprintf(stderr, "nnengine train: --sync-bn: %s\n", nn_last_error());
        return EXIT_FAILURE_RUNTIME;
    }
    if (layers == 0) {
        fprintf(stderr, "nnengine train: --sync-bn: %s has no BatchNorm layers\n", model);
        return EXIT_BAD_INPUT;
    }
    fprintf(stderr, "sync-bn: %d BatchNorm layers take their statistics over the %d ranks\n", layers, d->size);
    return EXIT_OK;
}

nn_status dist_train_sum(const dist_train *d, double *values, int count) {
    return d->active ? nn_dist_all_reduce_host(values, count, NN_DIST_SUM) : NN_OK;
}

nn_status dist_train_from_main(const dist_train *d, double *values, int count) {
    if (!d->active) return NN_OK;
    if (d->rank != 0) /* a sum of rank 0's values and zeros is rank 0's values, bit for bit */
        for (int i = 0; i < count; i++) values[i] = 0;
    return nn_dist_all_reduce_host(values, count, NN_DIST_SUM);
}

int dist_train_finish(dist_train *d, int status) {
    if (!d->active) return status;
#ifndef _WIN32
    if (d->real_stderr_fd >= 0) {
        fflush(stderr);
        dup2(d->real_stderr_fd, STDERR_FILENO);
        close(d->real_stderr_fd);
        d->real_stderr_fd = -1;
        if (status != EXIT_OK) {
            fprintf(stderr, "rank %d of %d failed (exit %d):\n", d->rank, d->size, status);
            fflush(stderr);
            replay_quiet(d->quiet_fd, STDERR_FILENO);
        }
        close(d->quiet_fd);
    } else
#endif
    if (status != EXIT_OK) {
        fprintf(stderr, "rank %d of %d failed (exit %d): the messages above say why\n", d->rank, d->size, status);
    }
    /* A failed rank leaves without MPI_Finalize: mpirun then ends the whole
     * job (the others would wait for this rank forever) after passing its
     * output on, which MPI_Abort's immediate kill can lose. */
    fflush(NULL);
    if (status != EXIT_OK) return status;
    nn_dist_finalize();
    return status;
}
