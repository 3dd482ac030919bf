/* The data-parallel shard rule (nn_shard_indices, nn_shard_count) against
 * its definition written out position by position: on awkward counts,
 * batches and rank counts, the ranks' shards are disjoint, each step of
 * every rank holds images of the same global batch, the union is every
 * image but the at most ranks - 1 left over of the last global batch, and
 * bad arguments are refused naming the function and the values. */
#include <stdlib.h>
#include <string.h>

#include "nn_data.h"
#include "nn_engine.h"
#include "test.h"

/* The rank that trains on global position p, or -1 (left over). */
static int owner(int64_t p, int64_t count, int64_t batch, int ranks) {
    int64_t global = batch * ranks, full = count / global;
    if (p / global < full) return (int)(p % global / batch);
    int64_t t = p - full * global, share = (count - full * global) / ranks;
    return share > 0 && t < share * ranks ? (int)(t / share) : -1;
}

TEST(shard_indices_follow_the_definition) {
    const int64_t counts[] = {0, 1, 2, 7, 23, 64, 65, 97};
    const int64_t batches[] = {1, 3, 5, 16};
    for (int ranks = 1; ranks <= 4; ranks++)
        for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
            for (size_t bi = 0; bi < sizeof batches / sizeof batches[0]; bi++) {
                const int64_t count = counts[ci], batch = batches[bi];
                int64_t *base = malloc(sizeof(int64_t) * (size_t)(count + 1));
                int *seen = calloc((size_t)count + 1, sizeof *seen);
                /* A shuffled order, so that positions and image ids differ. */
                CHECK(nn_shuffle_indices(base, count, 11, (uint64_t)ranks) == NN_OK);
                const int64_t n = nn_shard_count(count, batch, ranks);
                int64_t total = 0;
                for (int rank = 0; rank < ranks; rank++) {
                    int64_t *order = malloc(sizeof(int64_t) * (size_t)(count + 1));
                    memcpy(order, base, sizeof(int64_t) * (size_t)count);
                    CHECK(nn_shard_indices(order, count, batch, rank, ranks) == NN_OK);
                    int64_t k = 0; /* the rank's k-th image is the next position it owns */
                    for (int64_t p = 0; p < count; p++) {
                        if (owner(p, count, batch, ranks) != rank) continue;
                        CHECK_MSG(k < n && order[k] == base[p], "count %lld batch %lld rank %d/%d: slot %lld",
                                  (long long)count, (long long)batch, rank, ranks, (long long)k);
                        /* Step k / batch of this rank lies in global batch k / batch. */
                        CHECK(p / (batch * ranks) == k / batch);
                        seen[base[p]]++;
                        k++;
                    }
                    CHECK_MSG(k == n, "count %lld batch %lld rank %d/%d: %lld images, nn_shard_count %lld",
                              (long long)count, (long long)batch, rank, ranks, (long long)k, (long long)n);
                    total += k;
                    free(order);
                }
                int64_t left_over = count % (batch * ranks) % ranks;
                CHECK(total == count - left_over);
                for (int64_t i = 0; i < count; i++) CHECK(seen[i] <= 1);
                if (ranks == 1) CHECK(n == count);
                free(base);
                free(seen);
            }
}

TEST(shard_indices_refuse_bad_arguments) {
    int64_t order[4] = {0, 1, 2, 3};
    CHECK(nn_shard_indices(order, 4, 2, 2, 2) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "nn_shard_indices") && strstr(nn_last_error(), "rank 2 of 2"));
    CHECK(nn_shard_indices(order, 4, 2, -1, 2) == NN_ERR_ARGUMENT);
    CHECK(nn_shard_indices(order, 4, 0, 0, 2) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "batch 0"));
    CHECK(nn_shard_indices(order, -3, 2, 0, 1) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "count -3"));
    CHECK(nn_shard_indices(NULL, 4, 2, 0, 1) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "order is NULL"));
    CHECK(nn_shard_count(4, 2, 0) == -1);
    CHECK(strstr(nn_last_error(), "nn_shard_count") && strstr(nn_last_error(), "0 ranks"));
    CHECK(nn_shard_count(4, INT64_MAX / 2, 3) == -1);
    CHECK(strstr(nn_last_error(), "overflows"));
    /* Nothing was moved by the refused calls. */
    for (int i = 0; i < 4; i++) CHECK(order[i] == i);
}
