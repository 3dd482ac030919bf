#include "thread_pool.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "platform/wait_word.h"

/* One job at a time. A job is split into `active` fixed ranges (range r is
 * always the same items, run with worker index r), so a reduction's partials
 * are the same bits every run whoever runs them. Which thread runs a range is
 * not fixed: the caller and the workers claim ranges from one counter, so a
 * worker the host has not scheduled never holds the caller up -- the caller
 * runs its range instead.
 *
 * Between jobs, workers (and the caller, waiting for the last range) spin for
 * a bounded while and then sleep on a futex: back-to-back kernels of a
 * training step skip the ~100 us wake-up (bench/README.md), and a pool whose
 * caller is busy elsewhere (Python, the data loader, another process on the
 * cores) stops taking CPU time after SPIN_NS. */
#define SPIN_NS 50000

/* Adaptive pools (nn_thread_pool_new_adaptive) time one parallel job in
 * SAMPLE_EVERY: the CPU time its ranges took (thread CPU time, so a range
 * whose thread the host preempted counts only its work) against the job's
 * wall time, summed over windows of WINDOW_SAMPLES. Where the workers do not
 * pay (less than MIN_SPEEDUP), the caller runs every range itself and the
 * workers sleep, trying them again after a pause that doubles with each probe
 * that fails (PROBE_FIRST_NS to PROBE_MAX_NS). A window already EARLY_NS long
 * and below EARLY_SPEEDUP ends at once: a probe on a busy host costs little. */
#define SAMPLE_EVERY 4
#define WINDOW_SAMPLES 32
#define MIN_SPEEDUP 1.15
#define EARLY_NS 2000000LL
#define EARLY_SPEEDUP 0.7
#define PROBE_FIRST_NS 1000000000LL
#define PROBE_MAX_NS 16000000000LL

/* The claim word: the job's generation (high 32 bits), the next unclaimed
 * range (bits 16-31) and the job's range count (bits 0-15). A worker woken
 * for one job can never claim a range of the next one: the generation in the
 * word no longer matches. */
#define CLAIM(gen, next, active) (((uint64_t)(gen) << 32) | ((uint64_t)(next) << 16) | (uint64_t)(active))
#define CLAIM_GEN(w) ((uint32_t)((w) >> 32))
#define CLAIM_NEXT(w) ((int)(((w) >> 16) & 0xffff))
#define CLAIM_ACTIVE(w) ((int)((w)&0xffff))

struct nn_thread_pool {
    int size;
    pthread_t *threads;
    _Atomic uint32_t generation; /* futex word the workers sleep on */
    _Atomic uint32_t done;       /* ranges finished in this job; futex word the caller sleeps on */
    _Atomic uint64_t claim;
    _Atomic int sleepers;        /* workers asleep (or about to be) on generation */
    _Atomic int caller_sleeping;
    _Atomic int shutting_down;
    _Atomic int64_t range_ns;    /* timed jobs: the ranges' thread CPU time */
    /* the current job, written before generation is bumped */
    nn_parallel_fn fn;
    void *arg;
    int64_t count;
    bool timed;
    /* adaptive pools only (touched by the caller alone) */
    bool adaptive, serial;
    uint64_t jobs;
    int window_jobs;
    int64_t window_range_ns, window_wall_ns;
    int64_t probe_at_ns, probe_wait_ns;
};

static int64_t clock_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t now_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Spins until *word != seen or SPIN_NS pass; true when it changed. The clock
 * is read every 64 rounds only. */
static bool spin_until_changed(_Atomic uint32_t *word, uint32_t seen, const _Atomic int *stop) {
    int64_t deadline = 0;
    for (unsigned i = 1;; i++) {
        if (atomic_load_explicit(word, memory_order_acquire) != seen) return true;
        if (stop && atomic_load_explicit(stop, memory_order_relaxed)) return true;
        cpu_relax();
        if (i % 64 == 0) {
            int64_t now = now_ns();
            if (!deadline) deadline = now + SPIN_NS;
            else if (now >= deadline) return false;
        }
    }
}

static void range_of(int64_t count, int active, int r, int64_t *begin, int64_t *end) {
    int64_t base = count / active, extra = count % active;
    *begin = r * base + (r < extra ? r : extra);
    *end = *begin + base + (r < extra ? 1 : 0);
}

/* Claims and runs ranges of job `gen` until none is left. */
static void run_ranges(nn_thread_pool *pool, uint32_t gen) {
    uint64_t w = atomic_load_explicit(&pool->claim, memory_order_acquire);
    for (;;) {
        if (CLAIM_GEN(w) != gen || CLAIM_NEXT(w) >= CLAIM_ACTIVE(w)) return;
        if (!atomic_compare_exchange_weak_explicit(&pool->claim, &w, w + (1u << 16), memory_order_acq_rel,
                                                   memory_order_acquire))
            continue;
        int r = CLAIM_NEXT(w), active = CLAIM_ACTIVE(w);
        bool timed = pool->timed;
        int64_t begin, end, start = timed ? clock_ns(CLOCK_THREAD_CPUTIME_ID) : 0;
        range_of(pool->count, active, r, &begin, &end);
        if (begin < end) pool->fn(pool->arg, begin, end, r);
        if (timed)
            atomic_fetch_add_explicit(&pool->range_ns, clock_ns(CLOCK_THREAD_CPUTIME_ID) - start, memory_order_relaxed);
        /* seq_cst pairs with the caller's store of caller_sleeping. */
        if (atomic_fetch_add(&pool->done, 1) + 1 == (uint32_t)active && atomic_load(&pool->caller_sleeping))
            nn_wake_word(&pool->done, 1);
        w = atomic_load_explicit(&pool->claim, memory_order_acquire);
    }
}

/* The caller, once no range is left to claim: until `active` ranges are done. */
static void wait_for_ranges(nn_thread_pool *pool, uint32_t active) {
    int64_t deadline = 0;
    for (unsigned i = 1; atomic_load_explicit(&pool->done, memory_order_acquire) != active; i++) {
        cpu_relax();
        if (i % 64 != 0) continue;
        int64_t now = now_ns();
        if (!deadline) deadline = now + SPIN_NS;
        else if (now >= deadline) break;
    }
    for (uint32_t d; (d = atomic_load(&pool->done)) != active;) {
        /* seq_cst store then load, against the worker's increment then load. */
        atomic_store(&pool->caller_sleeping, 1);
        if (atomic_load(&pool->done) == d) nn_wait_word(&pool->done, d);
        atomic_store(&pool->caller_sleeping, 0);
    }
}

static void *worker_main(void *raw) {
    nn_thread_pool *pool = raw;
    uint32_t seen = atomic_load(&pool->generation);
    for (;;) {
        if (!spin_until_changed(&pool->generation, seen, &pool->shutting_down)) {
            atomic_fetch_add(&pool->sleepers, 1);
            while (atomic_load(&pool->generation) == seen && !atomic_load(&pool->shutting_down))
                nn_wait_word(&pool->generation, seen);
            atomic_fetch_sub(&pool->sleepers, 1);
        }
        if (atomic_load(&pool->shutting_down)) break;
        seen = atomic_load_explicit(&pool->generation, memory_order_acquire);
        run_ranges(pool, seen);
    }
    return NULL;
}

nn_thread_pool *nn_thread_pool_new(int threads) {
    if (threads < 1) threads = 1;
    if (threads > NN_THREAD_POOL_MAX) threads = NN_THREAD_POOL_MAX;
    nn_thread_pool *pool = calloc(1, sizeof *pool);
    if (!pool) return NULL;
    pool->threads = calloc((size_t)threads, sizeof *pool->threads);
    if (!pool->threads) {
        free(pool);
        return NULL;
    }
    pool->size = 1; /* workers started so far, for cleanup on failure */
    for (int i = 1; i < threads; i++) {
        if (pthread_create(&pool->threads[i], NULL, worker_main, pool) != 0) {
            nn_thread_pool_free(pool);
            return NULL;
        }
        pool->size = i + 1;
    }
    return pool;
}

nn_thread_pool *nn_thread_pool_new_adaptive(int threads) {
    nn_thread_pool *pool = nn_thread_pool_new(threads);
    if (pool) {
        pool->adaptive = pool->size > 1;
        pool->probe_wait_ns = PROBE_FIRST_NS;
    }
    return pool;
}

void nn_thread_pool_free(nn_thread_pool *pool) {
    if (!pool) return;
    atomic_store(&pool->shutting_down, 1);
    atomic_fetch_add(&pool->generation, 1);
    nn_wake_word(&pool->generation, INT_MAX);
    for (int i = 1; i < pool->size; i++) pthread_join(pool->threads[i], NULL);
    free(pool->threads);
    free(pool);
}

int nn_thread_pool_size(const nn_thread_pool *pool) { return pool ? pool->size : 1; }

bool nn_thread_pool_is_serial(const nn_thread_pool *pool) { return pool && pool->serial; }

/* Adaptive pools: closes a window of parallel jobs (dropping the workers when
 * they did not pay) or, in serial mode, starts a probe when its time comes. */
static void adapt(nn_thread_pool *pool, int64_t range_ns, int64_t wall_ns) {
    if (pool->serial) {
        if (now_ns() < pool->probe_at_ns) return;
        pool->serial = false;
        pool->window_jobs = 0, pool->window_range_ns = 0, pool->window_wall_ns = 0;
        return;
    }
    pool->window_jobs++;
    pool->window_range_ns += range_ns;
    pool->window_wall_ns += wall_ns;
    bool hopeless = pool->window_wall_ns >= EARLY_NS &&
                    (double)pool->window_range_ns < EARLY_SPEEDUP * (double)pool->window_wall_ns;
    if (pool->window_jobs < WINDOW_SAMPLES && !hopeless) return;
    bool pays = !hopeless && (double)pool->window_range_ns >= MIN_SPEEDUP * (double)pool->window_wall_ns;
    pool->window_jobs = 0, pool->window_range_ns = 0, pool->window_wall_ns = 0;
    if (pays) {
        pool->probe_wait_ns = PROBE_FIRST_NS;
        return;
    }
    pool->serial = true;
    pool->probe_at_ns = now_ns() + pool->probe_wait_ns;
    if (pool->probe_wait_ns < PROBE_MAX_NS) pool->probe_wait_ns *= 2;
}

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
    if (pool->serial) {
        /* The same ranges as in parallel, so the same bits. */
        for (int r = 0; r < active; r++) {
            int64_t begin, end;
            range_of(count, active, r, &begin, &end);
            if (begin < end) fn(arg, begin, end, r);
        }
        adapt(pool, 0, 0);
        return;
    }
    pool->timed = pool->adaptive && pool->jobs++ % SAMPLE_EVERY == 0;
    int64_t start = pool->timed ? now_ns() : 0;
    pool->fn = fn;
    pool->arg = arg;
    pool->count = count;
    atomic_store_explicit(&pool->range_ns, 0, memory_order_relaxed);
    atomic_store_explicit(&pool->done, 0, memory_order_relaxed);
    uint32_t gen = atomic_load_explicit(&pool->generation, memory_order_relaxed) + 1;
    atomic_store_explicit(&pool->claim, CLAIM(gen, 0, active), memory_order_release);
    /* seq_cst: a worker going to sleep either sees the new generation or is
     * counted in sleepers here. */
    atomic_store(&pool->generation, gen);
    if (atomic_load(&pool->sleepers) > 0) nn_wake_word(&pool->generation, active - 1);

    run_ranges(pool, gen);
    wait_for_ranges(pool, (uint32_t)active);
    atomic_thread_fence(memory_order_acquire);
    if (pool->timed) adapt(pool, atomic_load_explicit(&pool->range_ns, memory_order_relaxed), now_ns() - start);
}
