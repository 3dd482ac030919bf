/* The CPU backend's worker pool: every item runs once, range r is always the
 * same items under worker index r (so partial sums are the same bits), and an
 * adaptive pool whose workers do not pay runs its jobs on the caller alone
 * with the same ranges. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/thread_pool.h"
#include "test.h"

typedef struct visit_job {
    _Atomic int *hits;       /* per item */
    int *worker_of;          /* per item: the worker index that ran it */
    _Atomic int *busy;       /* per worker index: calls running now */
    _Atomic int overlaps;    /* a worker index used by two calls at once */
} visit_job;

static void visit(void *raw, int64_t begin, int64_t end, int worker) {
    visit_job *job = raw;
    if (atomic_fetch_add(&job->busy[worker], 1) != 0) atomic_fetch_add(&job->overlaps, 1);
    for (int64_t i = begin; i < end; i++) {
        atomic_fetch_add(&job->hits[i], 1);
        job->worker_of[i] = worker;
    }
    atomic_fetch_sub(&job->busy[worker], 1);
}

/* Runs `count` items with `min_chunk` and checks each ran once, in ranges
 * that are contiguous, in worker order, and the same as `want` when given. */
static void check_job(nn_thread_pool *pool, int64_t count, int64_t min_chunk, int *worker_of, const int *want) {
    visit_job job = {.hits = calloc((size_t)count, sizeof(_Atomic int)), .worker_of = worker_of,
                     .busy = calloc(NN_THREAD_POOL_MAX, sizeof(_Atomic int))};
    nn_parallel_for(pool, count, min_chunk, visit, &job);
    int bad_hits = 0, out_of_order = 0, differ = 0;
    for (int64_t i = 0; i < count; i++) {
        bad_hits += atomic_load(&job.hits[i]) != 1;
        out_of_order += i > 0 && worker_of[i] < worker_of[i - 1];
        differ += want && worker_of[i] != want[i];
    }
    CHECK_MSG(bad_hits == 0, "count %lld: %d items not run exactly once", (long long)count, bad_hits);
    CHECK_MSG(out_of_order == 0, "count %lld: ranges not in worker order", (long long)count);
    CHECK_MSG(differ == 0, "count %lld: %d items ran under another worker index than before", (long long)count, differ);
    CHECK_MSG(atomic_load(&job.overlaps) == 0, "count %lld: a worker index ran twice at once", (long long)count);
    free(job.hits);
    free(job.busy);
}

TEST(thread_pool_runs_every_item_once_in_fixed_ranges) {
    const int64_t counts[] = {1, 2, 3, 7, 97, 1009, 65537};
    for (int threads = 1; threads <= 5; threads += 2) {
        nn_thread_pool *pool = nn_thread_pool_new(threads);
        CHECK(pool != NULL);
        if (!pool) return;
        CHECK(nn_thread_pool_size(pool) == threads);
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
            int *first = malloc(sizeof(int) * (size_t)counts[c]), *again = malloc(sizeof(int) * (size_t)counts[c]);
            check_job(pool, counts[c], 1, first, NULL);
            for (int repeat = 0; repeat < 50; repeat++) check_job(pool, counts[c], 1, again, first);
            /* min_chunk caps the ranges: 1009 items in chunks of 500 use two workers at most. */
            check_job(pool, counts[c], 500, again, NULL);
            int most = 0;
            for (int64_t i = 0; i < counts[c]; i++) most = again[i] > most ? again[i] : most;
            CHECK_MSG(most <= (counts[c] + 499) / 500 - 1, "count %lld, min_chunk 500: worker %d ran",
                      (long long)counts[c], most);
            free(first), free(again);
        }
        nn_thread_pool_free(pool);
    }
}

/* Jobs of almost no work: the wake-ups cost more than the ranges, so an
 * adaptive pool stops using its workers -- with the same ranges as before. */
TEST(thread_pool_adaptive_drops_workers_that_do_not_pay) {
    nn_thread_pool *pool = nn_thread_pool_new_adaptive(3);
    CHECK(pool != NULL);
    if (!pool) return;
    CHECK(!nn_thread_pool_is_serial(pool));
    int before[7], after[7];
    check_job(pool, 7, 1, before, NULL);
    for (int i = 0; i < 4096 && !nn_thread_pool_is_serial(pool); i++) check_job(pool, 7, 1, after, before);
    CHECK_MSG(nn_thread_pool_is_serial(pool), "the workers are still used for empty jobs");
    check_job(pool, 7, 1, after, before);
    nn_thread_pool_free(pool);
    /* A fixed pool never drops them. */
    pool = nn_thread_pool_new(3);
    for (int i = 0; i < 1024; i++) check_job(pool, 7, 1, after, before);
    CHECK(!nn_thread_pool_is_serial(pool));
    nn_thread_pool_free(pool);
}
