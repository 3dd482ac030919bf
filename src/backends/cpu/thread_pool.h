/* A fixed pool of worker threads for the CPU backend's kernels. The calling
 * thread takes part, so a pool of 1 runs everything inline. */
#ifndef NN_THREAD_POOL_H
#define NN_THREAD_POOL_H

#include <stdbool.h>
#include <stdint.h>

typedef struct nn_thread_pool nn_thread_pool;

/* The most threads a pool takes (a job's range count is 16 bits). */
#define NN_THREAD_POOL_MAX 4096

/* fn handles items [begin, end); worker is in [0, size) and is unique among
 * the calls running at once, so it can index per-thread scratch space. */
typedef void (*nn_parallel_fn)(void *arg, int64_t begin, int64_t end, int worker);

/* NULL when threads cannot be created (the caller reports it). The pool
 * always runs its jobs on all its threads. */
nn_thread_pool *nn_thread_pool_new(int threads);
/* A pool that measures whether its workers pay (their ranges' run time
 * against the jobs' wall time) and, where they do not (a busy host), runs the
 * ranges on the calling thread alone for a while, trying the workers again
 * later. The ranges, and so the results, stay the same bits. */
nn_thread_pool *nn_thread_pool_new_adaptive(int threads);
void nn_thread_pool_free(nn_thread_pool *pool);
int nn_thread_pool_size(const nn_thread_pool *pool);
/* An adaptive pool that currently runs its jobs on the calling thread alone. */
bool nn_thread_pool_is_serial(const nn_thread_pool *pool);

/* Split [0, count) into at most size() contiguous ranges of at least
 * min_chunk items and run them in parallel; returns when all are done.
 * Range r is always the same items, run with worker index r.
 * Not reentrant: fn must not call nn_parallel_for on the same pool. */
void nn_parallel_for(nn_thread_pool *pool, int64_t count, int64_t min_chunk, nn_parallel_fn fn,
                     void *arg);

#endif
