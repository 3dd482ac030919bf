/* The divergence guard (loss_guard.h). */
#include "loss_guard.h"

#include <math.h>
#include <stdio.h>

/* What the checkpoint file holds now, if one was asked for. */
static void say_checkpoint(const loss_guard *g) {
    if (!g->checkpoint) return;
    if (g->checkpoint_epoch >= 0)
        fprintf(stderr, "; %s keeps the state after epoch %lld", g->checkpoint, (long long)g->checkpoint_epoch);
    else
        fprintf(stderr, "; no epoch finished, so %s was not written", g->checkpoint);
}

void loss_guard_begin_epoch(loss_guard *g, int64_t first_step) { g->checked_step = first_step - 1; }

bool loss_guard_check_skips(loss_guard *g, int epoch, int64_t steps, int64_t skipped, double scale) {
    if (steps <= 0 || skipped < steps) return true;
    if (g->allow_nan) {
        if (!g->warned)
            fprintf(stderr, "nnengine train: warning: fp16 loss scaling skipped all %lld steps of epoch %d (gradients "
                            "not finite, scale now %g); training on (--allow-nan)\n", (long long)steps, epoch, scale);
        g->warned = true;
        return true;
    }
    fprintf(stderr, "nnengine train: fp16 loss scaling skipped all %lld steps of epoch %d (gradients not finite, scale "
                    "now %g): the weights did not move, training diverged; stopped without saving", (long long)steps,
            epoch, scale);
    say_checkpoint(g);
    fprintf(stderr, ". --allow-nan trains on regardless\n");
    return false;
}

bool loss_guard_check(loss_guard *g, int epoch, int64_t step, double loss_sum) {
    if (isfinite(loss_sum)) {
        g->checked_step = step;
        return true;
    }
    const long long from = (long long)g->checked_step + 1, to = (long long)step;
    if (g->allow_nan) {
        if (!g->warned)
            fprintf(stderr, "\nnnengine train: warning: the training loss became %s in epoch %d, steps %lld-%lld; "
                            "training on (--allow-nan)\n", isnan(loss_sum) ? "nan" : "inf", epoch, from, to);
        g->warned = true;
        return true;
    }
    fprintf(stderr, "\nnnengine train: the training loss became %s in epoch %d, steps %lld-%lld: training diverged "
                    "(a learning rate too high, or data not normalised?); stopped without saving", isnan(loss_sum)
                    ? "nan" : "inf", epoch, from, to);
    say_checkpoint(g);
    fprintf(stderr, ". --allow-nan trains on regardless\n");
    return false;
}
