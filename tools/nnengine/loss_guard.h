/* The divergence guard: a training loss that is no longer finite stops the
 * run (exit 1, the last good checkpoint kept) unless --allow-nan. It reads
 * only the running loss sums the loop reads back anyway (at each progress
 * tick and at the epoch's end), so it adds no device round trip; the steps
 * it names are those since the previous read. */
#ifndef NNENGINE_LOSS_GUARD_H
#define NNENGINE_LOSS_GUARD_H

#include <stdbool.h>
#include <stdint.h>

typedef struct loss_guard {
    bool allow_nan;        /* --allow-nan: warn once and train on */
    bool warned;
    const char *checkpoint; /* --checkpoint, named in the message (or NULL) */
    int64_t checkpoint_epoch; /* the epoch whose state the checkpoint file holds, or -1: not written yet */
    int64_t checked_step;  /* the last step whose sum was found finite */
} loss_guard;

/* A new epoch whose first step is first_step (1-based). */
void loss_guard_begin_epoch(loss_guard *g, int64_t first_step);
/* The running sum after `step` steps of `epoch`: true to go on; false
 * (after saying where it diverged) to stop. */
bool loss_guard_check(loss_guard *g, int epoch, int64_t step, double loss_sum);
/* fp16 loss scaling skipped `skipped` of the epoch's `steps` optimizer
 * steps (gradients not finite): when it skipped every one, the weights did
 * not move and training has diverged as surely as with a NaN loss (issue
 * 40, item 4). True to go on; false (after saying so) to stop. */
bool loss_guard_check_skips(loss_guard *g, int epoch, int64_t steps, int64_t skipped, double scale);

#endif
