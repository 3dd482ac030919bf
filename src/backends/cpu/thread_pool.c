#include "thread_pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

/* One job at a time: the caller publishes (fn, arg, count, active), bumps
 * the generation and runs range 0 itself; worker w runs range w. Static
 * ranges keep results reproducible: the same worker always gets the same
 * items, so a reduction's partials are the same bits every run.
 *
 * Waking a thread sleeping on a condition variable takes longer than most
 * kernels of a small model's training step (bench/README.md). So between
 * jobs, workers (and the caller, waiting for them) first spin on atomics
 * for a while and only then sleep: back-to-back kernels never pay the
 * wake-up, and an idle pool still sleeps after SPIN_ROUNDS. */
#define SPIN_ROUNDS 20000

struct nn_thread_pool {
    int size;
    pthread_t *threads;
    pthread_mutex_t lock;
    pthread_cond_t work_ready;
    pthread_cond_t work_done;
    _Atomic uint64_t generation;
    _Atomic int pending;
    _Atomic int shutting_down;
    /* the current job, written before generation is bumped */
    nn_parallel_fn fn;
    void *arg;
    int64_t count;
    int active; /* workers given a range in this job (all check in) */
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void job_range(const nn_thread_pool *pool, int worker, int64_t *begin, int64_t *end) {
    int64_t base = pool->count / pool->active, extra = pool->count % pool->active;
    *begin = worker * base + (worker < extra ? worker : extra);
    *end = *begin + base + (worker < extra ? 1 : 0);
}

/* Wait until the generation differs from `seen` (or shutdown); returns it. */
static uint64_t wait_for_job(nn_thread_pool *pool, uint64_t seen) {
    for (int i = 0; i < SPIN_ROUNDS; i++) {
        uint64_t g = atomic_load_explicit(&pool->generation, memory_order_acquire);
        if (g != seen || atomic_load_explicit(&pool->shutting_down, memory_order_acquire)) return g;
        cpu_relax();
    }
    pthread_mutex_lock(&pool->lock);
    while (atomic_load(&pool->generation) == seen && !atomic_load(&pool->shutting_down))
        pthread_cond_wait(&pool->work_ready, &pool->lock);
    uint64_t g = atomic_load(&pool->generation);
    pthread_mutex_unlock(&pool->lock);
    return g;
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
    for (;;) {
        seen = wait_for_job(pool, seen);
        if (atomic_load(&pool->shutting_down)) break;
        /* Every worker checks in, even one with no range this time: the
         * caller then knows nobody still reads the job when it writes the next. */
        if (start.index < pool->active) {
            int64_t begin, end;
            job_range(pool, start.index, &begin, &end);
            if (begin < end) pool->fn(pool->arg, begin, end, start.index);
        }
        if (atomic_fetch_sub_explicit(&pool->pending, 1, memory_order_acq_rel) == 1) {
            /* The last one out wakes the caller if it went to sleep. */
            pthread_mutex_lock(&pool->lock);
            pthread_cond_signal(&pool->work_done);
            pthread_mutex_unlock(&pool->lock);
        }
    }
    return NULL;
}

nn_thread_pool *nn_thread_pool_new(int threads) {
    if (threads < 1) threads = 1;
    nn_thread_pool *pool = calloc(1, sizeof *pool);
    if (!pool) return NULL;
    pool->threads = calloc((size_t)threads, sizeof *pool->threads);
    if (!pool->threads) {
        free(pool);
        return NULL;
    }
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->work_ready, NULL);
    pthread_cond_init(&pool->work_done, NULL);
    pool->size = 1; /* workers started so far, for cleanup on failure */
    for (int i = 1; i < threads; i++) {
        worker_start *start = malloc(sizeof *start);
        if (!start) goto fail;
        start->pool = pool;
        start->index = i;
        if (pthread_create(&pool->threads[i], NULL, worker_main, start) != 0) {
            free(start);
            goto fail;
        }
        pool->size = i + 1;
    }
    return pool;
fail:
    nn_thread_pool_free(pool);
    return NULL;
}

void nn_thread_pool_free(nn_thread_pool *pool) {
    if (!pool) return;
    pthread_mutex_lock(&pool->lock);
    atomic_store(&pool->shutting_down, 1);
    pthread_cond_broadcast(&pool->work_ready);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 1; i < pool->size; i++) pthread_join(pool->threads[i], NULL);
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
    pool->fn = fn;
    pool->arg = arg;
    pool->count = count;
    pool->active = active;
    atomic_store_explicit(&pool->pending, pool->size - 1, memory_order_relaxed);
    /* The release bump publishes the job fields to the spinning workers; the
     * broadcast under the lock reaches those already asleep. */
    pthread_mutex_lock(&pool->lock);
    atomic_fetch_add_explicit(&pool->generation, 1, memory_order_release);
    pthread_cond_broadcast(&pool->work_ready);
    pthread_mutex_unlock(&pool->lock);

    int64_t begin, end;
    job_range(pool, 0, &begin, &end);
    fn(arg, begin, end, 0);

    for (int i = 0; i < SPIN_ROUNDS; i++) {
        if (atomic_load_explicit(&pool->pending, memory_order_acquire) == 0) return;
        cpu_relax();
    }
    pthread_mutex_lock(&pool->lock);
    while (atomic_load(&pool->pending) > 0) pthread_cond_wait(&pool->work_done, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
}
