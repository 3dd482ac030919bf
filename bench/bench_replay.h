/* The per-kernel benchmarks' clock (bench_conv_layers.c, bench_norm_layers.c):
 * the median time of one launch of a captured sequence of `reps` launches. */
#ifndef NN_BENCH_REPLAY_H
#define NN_BENCH_REPLAY_H

#include <stdio.h>
#include <stdlib.h>

#include "bench_timing.h"
#include "nn_capture.h"
#include "nn_engine.h"

/* Median milliseconds over `runs` replays of `c` (after two discarded),
 * divided by `reps`; frees c. A failed replay ends `program`, naming it. */
static inline double bench_replay_median_ms(nn_ctx *ctx, nn_capture *c, int reps, int runs, const char *program) {
    double *times = malloc(sizeof *times * (size_t)runs);
    if (!times) {
        fprintf(stderr, "%s: out of host memory\n", program);
        exit(1);
    }
    for (int i = 0; i < runs + 2; i++) {
        const double t0 = now_ms();
        if (nn_replay(c, 1) != NN_OK || nn_ctx_sync(ctx) != NN_OK) {
            fprintf(stderr, "%s: replay: %s\n", program, nn_last_error());
            exit(1);
        }
        if (i >= 2) times[i - 2] = (now_ms() - t0) / reps;
    }
    const double ms = median(times, runs);
    free(times);
    nn_capture_free(c);
    return ms;
}

#endif
