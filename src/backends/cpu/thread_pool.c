#include "thread_pool.h"

#include <pthread.h>
#include <stdlib.h>

/* One job at a time: the caller publishes (fn, arg, ranges), bumps the
 * generation and wakes the workers; each worker runs its own range and the
 * last one to finish signals the caller. Static ranges keep results
 * reproducible: the same worker always gets the same items. */
struct nn_thread_pool {
    int size;
    pthread_t *threads;
    pthread_mutex_t lock;
    pthread_cond_t work_ready;
    pthread_cond_t work_done;
    uint64_t generation;
    int pending;
    int shutting_down;
    /* the current job */
    nn_parallel_fn fn;
    void *arg;
    int64_t count;
    int active; /* workers taking part in this job */
};

static void job_range(const nn_thread_pool *pool, int worker, int64_t *begin, int64_t *end) {
    int64_t base = pool->count / pool->active, extra = pool->count % pool->active;
    *begin = worker * base + (worker < extra ? worker : extra);
    *end = *begin + base + (worker < extra ? 1 : 0);
}

typedef struct worker_start {
    nn_thread_pool *pool;
    int index;
} worker_start;

static void *worker_main(void *raw) {
    worker_start start = *(worker_start *)raw;
    free(raw);
    nn_thread_pool *pool = start.pool;
    uint64_t seen = 0;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (pool->generation == seen && !pool->shutting_down)
            pthread_cond_wait(&pool->work_ready, &pool->lock);
        if (pool->shutting_down) break;
        seen = pool->generation;
        if (start.index >= pool->active) continue;
        pthread_mutex_unlock(&pool->lock);
        int64_t begin, end;
        job_range(pool, start.index, &begin, &end);
        if (begin < end) pool->fn(pool->arg, begin, end, start.index);
        pthread_mutex_lock(&pool->lock);
        if (--pool->pending == 0) pthread_cond_signal(&pool->work_done);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

nn_thread_pool *nn_thread_pool_new(int threads) {
    if (threads < 1) threads = 1;
    nn_thread_pool *pool = calloc(1, sizeof *pool);
    if (!pool) return NULL;
    pool->size = threads;
    pool->threads = calloc((size_t)threads, sizeof *pool->threads);
    if (!pool->threads) {
        free(pool);
        return NULL;
    }
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->work_ready, NULL);
    pthread_cond_init(&pool->work_done, NULL);
    for (int i = 1; i < threads; i++) {
        worker_start *start = malloc(sizeof *start);
        if (!start) goto fail;
        start->pool = pool;
        start->index = i;
        if (pthread_create(&pool->threads[i], NULL, worker_main, start) != 0) {
            free(start);
            goto fail;
        }
        pool->size = i + 1; /* workers actually started, for cleanup */
    }
    pool->size = threads;
    return pool;
fail:
    nn_thread_pool_free(pool);
    return NULL;
}

void nn_thread_pool_free(nn_thread_pool *pool) {
    if (!pool) return;
    pthread_mutex_lock(&pool->lock);
    pool->shutting_down = 1;
    pthread_cond_broadcast(&pool->work_ready);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 1; i < pool->size; i++)
        if (pool->threads[i]) pthread_join(pool->threads[i], NULL);
    pthread_mutex_destroy(&pool->lock);
    pthread_cond_destroy(&pool->work_ready);
    pthread_cond_destroy(&pool->work_done);
    free(pool->threads);
    free(pool);
}

int nn_thread_pool_size(const nn_thread_pool *pool) { return pool ? pool->size : 1; }

void nn_parallel_for(nn_thread_pool *pool, int64_t count, int64_t min_chunk, nn_parallel_fn fn,
                     void *arg) {
    if (count <= 0) return;
    if (min_chunk < 1) min_chunk = 1;
    int64_t by_size = (count + min_chunk - 1) / min_chunk;
    int active = pool ? pool->size : 1;
    if (by_size < active) active = (int)by_size;
    if (active <= 1) {
        fn(arg, 0, count, 0);
        return;
    }
    pthread_mutex_lock(&pool->lock);
    pool->fn = fn;
    pool->arg = arg;
    pool->count = count;
    pool->active = active;
    pool->pending = active - 1;
    pool->generation++;
    pthread_cond_broadcast(&pool->work_ready);
    pthread_mutex_unlock(&pool->lock);

    int64_t begin, end;
    job_range(pool, 0, &begin, &end);
    fn(arg, begin, end, 0);

    pthread_mutex_lock(&pool->lock);
    while (pool->pending > 0) pthread_cond_wait(&pool->work_done, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
}
