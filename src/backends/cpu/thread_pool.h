/* A fixed pool of worker threads for the CPU backend's kernels. The calling
 * thread takes part as worker 0, so a pool of 1 runs everything inline. */
#ifndef NN_THREAD_POOL_H
#define NN_THREAD_POOL_H

#include <stdint.h>

typedef struct nn_thread_pool nn_thread_pool;

/* fn handles items [begin, end); worker is in [0, size) and is unique among
 * the calls running at once, so it can index per-thread scratch space. */
typedef void (*nn_parallel_fn)(void *arg, int64_t begin, int64_t end, int worker);

/* NULL when threads cannot be created (the caller reports it). */
nn_thread_pool *nn_thread_pool_new(int threads);
void nn_thread_pool_free(nn_thread_pool *pool);
int nn_thread_pool_size(const nn_thread_pool *pool);

/* Split [0, count) into at most size() contiguous ranges of at least
 * min_chunk items and run them in parallel; returns when all are done.
 * Not reentrant: fn must not call nn_parallel_for on the same pool. */
void nn_parallel_for(nn_thread_pool *pool, int64_t count, int64_t min_chunk, nn_parallel_fn fn,
                     void *arg);

#endif
