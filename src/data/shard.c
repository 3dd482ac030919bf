/* One rank's share of an epoch's order under data parallelism (nn_data.h):
 * the one rule the CLI's in-memory datasets and the image loader both use. */
#include "base/error.h"
#include "nn_data.h"

static nn_status check_shard(const char *fn, int64_t count, int64_t batch, int rank, int ranks) {
    if (count < 0) return nn_set_error(NN_ERR_ARGUMENT, "%s: count %lld < 0", fn, (long long)count);
    if (batch < 1) return nn_set_error(NN_ERR_ARGUMENT, "%s: batch %lld < 1", fn, (long long)batch);
    if (ranks < 1 || rank < 0 || rank >= ranks)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: rank %d of %d ranks is not in [0, ranks) with ranks >= 1", fn,
                            rank, ranks);
    if (batch > INT64_MAX / ranks)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: batch %lld x %d ranks overflows", fn, (long long)batch, ranks);
    return NN_OK;
}

int64_t nn_shard_count(int64_t count, int64_t batch, int ranks) {
    if (check_shard("nn_shard_count", count, batch, 0, ranks) != NN_OK) return -1;
    const int64_t global = batch * ranks, tail = count % global;
    return count / global * batch + tail / ranks;
}

nn_status nn_shard_indices(int64_t *order, int64_t count, int64_t batch, int rank, int ranks) {
    nn_status st = check_shard("nn_shard_indices", count, batch, rank, ranks);
    if (st != NN_OK) return st;
    if (!order && count > 0) return nn_set_error(NN_ERR_ARGUMENT, "nn_shard_indices: order is NULL");
    const int64_t global = batch * ranks, full = count / global, share = count % global / ranks;
    int64_t at = 0; /* this rank's images go to the front: each comes from a later position */
    for (int64_t g = 0; g < full; g++)
        for (int64_t i = 0; i < batch; i++) order[at++] = order[g * global + rank * batch + i];
    for (int64_t i = 0; i < share; i++) order[at++] = order[full * global + rank * share + i];
    return NN_OK;
}
