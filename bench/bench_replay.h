/* The per-kernel benchmarks' clock (bench_conv_layers.c, bench_norm_layers.c):
 * the median time of one launch of a captured sequence of `reps` launches. */
#ifndef NN_BENCH_REPLAY_H
#define NN_BENCH_REPLAY_H

#include <stdio.h>
#include <stdlib.h>

#include "bench_timing.h"
#include "nn_capture.h"
#include "nn_engine.h"

/* Replays discarded before the timed ones: at least two, and this many
 * milliseconds of them. A GPU idle for a moment (a process starting, the
 * host's work between two kernels' measurements) starts at a fraction of
 * its clock, and a kernel's few timed replays ran at up to three times
 * their time before it rose (bench/README.md). */
#define BENCH_REPLAY_WARM_MS 250.0

static inline void bench_replay_once(nn_ctx *ctx, nn_capture *c, const char *program) {
    if (nn_replay(c, 1) != NN_OK || nn_ctx_sync(ctx) != NN_OK) {
        fprintf(stderr, "%s: replay: %s\n", program, nn_last_error());
        exit(1);
    }
}

/* Median milliseconds over `runs` replays of `c` (after the warm-up's),
 * divided by `reps`; frees c. A failed replay ends `program`, naming it. */
static inline double bench_replay_median_ms(nn_ctx *ctx, nn_capture *c, int reps, int runs, const char *program) {
    double *times = malloc(sizeof *times * (size_t)runs);
    if (!times) {
        fprintf(stderr, "%s: out of host memory\n", program);
        exit(1);
    }
    const double warm_from = now_ms();
    for (int i = 0; i < 2 || now_ms() - warm_from < BENCH_REPLAY_WARM_MS; i++) bench_replay_once(ctx, c, program);
    for (int i = 0; i < runs; i++) {
        const double t0 = now_ms();
        bench_replay_once(ctx, c, program);
        times[i] = (now_ms() - t0) / reps;
    }
    const double ms = median(times, runs);
    free(times);
    nn_capture_free(c);
    return ms;
}

#endif
