/* nnengine train's epochs (trainer.h): the steps of one epoch from either
 * data source (images held on the device, or photos decoded by the loader's
 * threads), stopped by Ctrl+C or --stop-after-step, then the epoch's
 * figures over every rank and the evaluation. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "evaluate.h"
#include "interrupt.h"
#include "trainer.h"

/* Steps between progress-bar updates on a terminal: each update waits for
 * the device to read the running sums. Without a terminal, an epoch's
 * steps go to the device at once. */
#define STEPS_PER_TICK 50
#define PHOTO_STEPS_PER_TICK 5

/* Steps submitted between two looks at Ctrl+C: replays queue up without a
 * read back, so this bounds only how long a first Ctrl+C waits. */
#define STEPS_PER_INTERRUPT_CHECK 16

/* Whether to stop for Ctrl+C or SIGTERM, agreed by every rank (a
 * collective under mpirun): a signal that reaches one rank, or the ranks at
 * different steps, as a batch scheduler's does, stops all of them at the
 * same step instead of leaving the others waiting for it. */
static bool stop_requested(trainer *t) {
    double asked = interrupt_requested() ? 1 : 0;
    if (t->dist.size > 1 && dist_train_sum(&t->dist, &asked, 1) != NN_OK) return false; /* the next collective says */
    return asked > 0;
}

/* Whether to stop before step `s` of the epoch: Ctrl+C, or --stop-after-step
 * (then t->stopped_by_step). */
static bool stop_before(trainer *t, int64_t s) {
    if (s == t->stop_step) return t->stopped_by_step = true;
    return stop_requested(t);
}

/* Steps [from, to) of the epoch, stopping early (t->interrupted_at) after
 * Ctrl+C or at --stop-after-step. */
static nn_status run_steps(trainer *t, int64_t from, int64_t to) {
    for (int64_t s = from; s < to;) {
        if (stop_before(t, s)) {
            t->interrupted_at = s;
            return NN_OK;
        }
        int64_t end = s + STEPS_PER_INTERRUPT_CHECK < to ? s + STEPS_PER_INTERRUPT_CHECK : to;
        if (t->stop_step > s && t->stop_step < end) end = t->stop_step;
        nn_status st = device_steps_run(&t->steps, s, end);
        if (st != NN_OK) return st;
        s = end;
    }
    return NN_OK;
}

/* A resumed epoch (resume_step > 0) starts its sums from its figures before
 * the stop, held by the main rank alone: the epoch's totals add every
 * rank's. carried_images: the images those sums hold, 0 otherwise. */
static bool carries_figures(const trainer *t) { return t->resume_step > 0 && dist_train_is_main(&t->dist); }
static nn_status resume_sums(trainer *t) {
    if (!carries_figures(t)) return NN_OK;
    return device_steps_set_sums(&t->steps, t->stopped_loss_sum, t->stopped_correct);
}
static int64_t carried_images(const trainer *t) { return carries_figures(t) ? t->stopped_images : 0; }

/* An epoch over a dataset held on the device: the steps are submitted
 * in runs of `tick` (all at once without a progress bar), from `first`
 * (a resumed interrupted epoch) on. The divergence guard reads the sums
 * read after each run. */
static nn_status device_epoch(trainer *t, progress *bar, int epoch, int64_t steps, int64_t first, int64_t *images,
                              double *loss_sum, double *correct) {
    const int64_t step_images = t->steps.batch * t->steps.accumulate; /* a full optimizer step's */
    int64_t count = t->steps.images - first * step_images, logged_seen = 0;
    double logged_sum = 0;
    nn_status st = device_steps_begin_epoch(&t->steps, t->order, epoch, first);
    if (st == NN_OK) st = resume_sums(t);
    const int64_t carried = carried_images(t); /* in the sums, not in `seen` */
    int64_t tick = t->config.log_steps ? 1 : bar->enabled ? STEPS_PER_TICK : steps;
    for (int64_t s = first; st == NN_OK && s < steps && t->interrupted_at < 0; s += tick) {
        int64_t to = s + tick < steps ? s + tick : steps;
        st = run_steps(t, s, to);
        if (t->interrupted_at >= 0) to = t->interrupted_at;
        if (st == NN_OK) st = device_steps_sums(&t->steps, loss_sum, correct);
        if (st == NN_OK && !loss_guard_check(&t->guard, epoch, to, *loss_sum)) st = NN_ERR_STATE;
        if (st == NN_OK) {
            int64_t seen = (to - first) * step_images < count ? (to - first) * step_images : count;
            progress_update(bar, to, seen, *loss_sum / (double)(seen + carried > 0 ? seen + carried : 1));
            if (t->config.log_steps) st = train_log_step(t, epoch, to, *loss_sum - logged_sum, seen - logged_seen);
            logged_sum = *loss_sum;
            logged_seen = seen;
        }
    }
    *images = t->interrupted_at >= 0 ? (t->interrupted_at - first) * step_images : count;
    return st;
}

/* The loader leaves out a batch whose every image failed to decode: under
 * mpirun this rank would then take a step fewer than the others and the
 * job would wait for it forever, so it stops the job instead. `got` is the
 * batch the loader delivered (the batch count at the epoch's end), `want`
 * the one this step expects. */
static nn_status every_rank_has_the_batch(trainer *t, int64_t got, int64_t want) {
    if (!t->dist.active || got == want) return NN_OK;
    char first[600];
    nn_loader_failures(t->photo.train_loader, first, sizeof first);
    snprintf(t->epoch_failure, sizeof t->epoch_failure,
             "rank %d: every image of its share of global batch %lld failed to decode (the first failure: %s); "
             "the other ranks would wait for its step forever", t->dist.rank, (long long)want + 1, first);
    return NN_ERR_IO;
}

/* An epoch of photos decoded by the loader's threads while the device
 * trains on the previous batch. */
static nn_status photo_epoch(trainer *t, progress *bar, int epoch, int64_t *images, double *loss_sum,
                             double *correct) {
    nn_status st = device_steps_begin_host_epoch(&t->steps);
    if (st == NN_OK) st = resume_sums(t);
    const int64_t carried = carried_images(t); /* in the sums, not in `seen` */
    if (st == NN_OK) st = nn_loader_start_epoch(t->photo.train_loader, epoch - 1);
    nn_batch b;
    int64_t step = 0, seen = 0, logged_seen = 0;
    double logged_sum = 0;
    /* A resumed interrupted epoch: its first batches were trained on. */
    while (st == NN_OK && step < t->resume_step && (st = nn_loader_next(t->photo.train_loader, &b)) == NN_OK &&
           b.count > 0)
        step++;
    bool stopped = false;
    while (st == NN_OK && !(stopped = stop_before(t, step)) && (st = nn_loader_next(t->photo.train_loader, &b)) == NN_OK &&
           b.count > 0) {
        st = every_rank_has_the_batch(t, b.first / t->steps.batch, step);
        if (st == NN_OK) st = device_steps_host_step(&t->steps, b.images, b.labels, b.count);
        seen += b.count;
        step++;
        if (st == NN_OK && t->config.log_steps) { /* every rank takes part: it sums over the ranks */
            st = device_steps_sums(&t->steps, loss_sum, correct);
            if (st == NN_OK) st = train_log_step(t, epoch, step, *loss_sum - logged_sum, seen - logged_seen);
            logged_sum = *loss_sum, logged_seen = seen;
        }
        if (st == NN_OK && bar->enabled && step % PHOTO_STEPS_PER_TICK == 0) {
            st = device_steps_sums(&t->steps, loss_sum, correct);
            if (st == NN_OK && !loss_guard_check(&t->guard, epoch, step, *loss_sum)) st = NN_ERR_STATE;
            progress_update(bar, step, seen, *loss_sum / (double)(seen + carried));
        }
    }
    if (st == NN_OK && stopped) t->interrupted_at = step;
    if (st == NN_OK && t->interrupted_at < 0)
        st = every_rank_has_the_batch(t, nn_loader_batches(t->photo.train_loader), step);
    if (st == NN_OK) st = device_steps_sums(&t->steps, loss_sum, correct);
    if (st == NN_OK && !loss_guard_check(&t->guard, epoch, step, *loss_sum)) st = NN_ERR_STATE;
    char first[600];
    int64_t failed = nn_loader_failures(t->photo.train_loader, first, sizeof first);
    if (st == NN_OK && failed > t->photo_failures_reported) {
        progress_clear(bar);
        fprintf(stderr, "left out %lld image%s that failed to decode (the first: %s)\n", (long long)failed,
                failed == 1 ? "" : "s", first);
        t->photo_failures_reported = failed;
    }
    *images = seen;
    return st;
}

int train_run_epoch(trainer *t, progress *bar, int epoch, epoch_stats *stats) {
    const train_config *c = &t->config;
    int64_t steps = device_steps_per_epoch(&t->steps);
    if (!t->photos) nn_shuffle_indices(t->order, t->data.train.count, (uint64_t)c->seed, (uint64_t)(epoch - 1));
    if (!t->photos) dist_train_shard_order(&t->dist, t->order, t->data.train.count, t->steps.batch);
    progress_begin_epoch(bar, epoch, steps);
    double start = now_seconds(), loss_sum = 0, correct = 0;
    int64_t count = 0, first = t->resume_step;
    /* --stop-after-step inside this epoch (at its end, the epoch finishes as any other). */
    const int64_t stop = c->stop_after_step - t->steps_done + first;
    t->stop_step = c->stop_after_step > 0 && stop > first && stop < steps ? stop : -1;
    loss_guard_begin_epoch(&t->guard, first + 1);
    nn_status st = t->photos ? photo_epoch(t, bar, epoch, &count, &loss_sum, &correct)
                             : device_epoch(t, bar, epoch, steps, first, &count, &loss_sum, &correct);
    const int64_t carried = carried_images(t); /* the sums hold them already */
    count += carried;
    if (st == NN_OK && t->interrupted_at >= 0) { /* Ctrl+C: no evaluation; the caller saves */
        progress_clear(bar);
        t->steps_done += t->interrupted_at - first;
        double so_far[3] = {loss_sum, correct, (double)count}; /* every rank's, for the checkpoint */
        if ((st = dist_train_sum(&t->dist, so_far, 3)) != NN_OK) {
            fprintf(stderr, "nnengine train: epoch %d: %s\n", epoch, library_error());
            return EXIT_FAILURE_RUNTIME;
        }
        if (!isfinite(so_far[0]) || !isfinite(so_far[1])) /* the state saves none: the resumed part's alone */
            so_far[0] = so_far[1] = so_far[2] = 0;
        t->stopped_loss_sum = so_far[0], t->stopped_correct = so_far[1], t->stopped_images = (int64_t)so_far[2];
        return EXIT_INTERRUPTED;
    }
    if (st == NN_OK && count == 0) st = NN_ERR_STATE;
    if (st != NN_OK) {
        progress_clear(bar);
        if (isfinite(loss_sum))
            fprintf(stderr, "nnengine train: epoch %d failed: %s\n", epoch,
                    t->epoch_failure[0] ? t->epoch_failure : library_error());
        return EXIT_FAILURE_RUNTIME; /* a non-finite loss: the guard said so */
    }
    t->steps_done += steps - first;
    t->resume_step = 0;
    /* data parallel: every rank's images; the throughput counts those this run trained on */
    double totals[4] = {loss_sum, correct, (double)count, (double)(count - carried)};
    if ((st = dist_train_sum(&t->dist, totals, 4)) != NN_OK) {
        fprintf(stderr, "nnengine train: epoch %d: %s\n", epoch, library_error());
        return EXIT_FAILURE_RUNTIME;
    }
    loss_sum = totals[0], correct = totals[1], count = (int64_t)totals[2];
    stats->epoch = epoch;
    stats->seconds = now_seconds() - start;
    stats->train_loss = loss_sum / count;
    stats->train_acc = correct / count;
    stats->images_per_s = totals[3] / stats->seconds;
    progress_clear(bar);
    /* --ema: the averaged weights are the ones evaluated (swapped in and back). */
    if (t->ema && (st = nn_ema_swap(t->ema)) != NN_OK) {
        fprintf(stderr, "nnengine train: %s\n", library_error());
        return EXIT_FAILURE_RUNTIME;
    }
    /* mpirun: rank 0 evaluates the whole test set and every rank takes its
     * figures (BatchNorm statistics differ by rank), so that --save-best and
     * --patience decide alike on every rank. */
    stats->test_loss = stats->test_acc = 0;
    if (c->no_eval) stats->test_loss = stats->test_acc = NAN; /* none: the logs write null or an empty field */
    else if (dist_train_is_main(&t->dist))
        st = t->photos ? photo_evaluate(t->ctx, t->net, &t->photo, bar, &stats->test_loss, &stats->test_acc, NULL)
                       : evaluate(t->ctx, t->net, &t->data.test, t->data.norm, t->data.classes, c->eval_limit, bar,
                                  &stats->test_loss, &stats->test_acc, NULL);
    double figures[2] = {stats->test_loss, stats->test_acc};
    if (st == NN_OK) st = dist_train_from_main(&t->dist, figures, 2);
    stats->test_loss = figures[0], stats->test_acc = figures[1];
    if (st == NN_OK && t->ema) st = nn_ema_swap(t->ema);
    if (st != NN_OK) {
        fprintf(stderr, "nnengine train: evaluation after epoch %d failed: %s\n", epoch, library_error());
        return EXIT_FAILURE_RUNTIME;
    }
    return EXIT_OK;
}
