/* nnengine train's logs (trainer.h): --log's epoch lines are written by
 * cmd_train.c through epoch_log.h; here, what a log that cannot be written
 * does, --log-steps' lines and --tensorboard's scalars. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "trainer.h"

/* A log that cannot be written (a full disk) is a loss to report, not a
 * reason to stop: it is closed with a warning naming the failure, training
 * goes on and writes its --save and --checkpoint, and the run exits 1.
 * `file`, where given, is closed and cleared. */
void train_lose_log(trainer *t, const char *flag, const char *path, FILE **file, int error) {
    fprintf(stderr, "nnengine train: %s %s: writing failed (%s); that log stops here, training goes on (the run "
            "will exit 1)\n", flag, path, error ? strerror(error) : "a write error");
    if (file && *file) fclose(*file);
    if (file) *file = NULL;
    t->logs_lost = true;
}

/* Whether the lines written to f so far reached the file: errno says why not. */
bool train_log_flushed(FILE *f) {
    errno = 0;
    return fflush(f) == 0 && !ferror(f);
}

/* The logs closed at the end: a failing close loses their last lines. */
void train_close_logs(trainer *t) {
    FILE **files[2] = {&t->log, &t->step_log};
    const char *flags[2] = {"--log", "--log-steps"}, *paths[2] = {t->config.log, t->config.log_steps};
    for (int i = 0; i < 2; i++) {
        if (!*files[i]) continue;
        errno = 0;
        const int closed = fclose(*files[i]);
        *files[i] = NULL;
        if (closed != 0) train_lose_log(t, flags[i], paths[i], NULL, errno);
    }
}

/* --log-steps: step `step` of the epoch, its loss summed over `images`
 * images of this rank; rank 0's line gives the mean over every rank's images
 * and their number. */
nn_status train_log_step(trainer *t, int epoch, int64_t step, double loss_sum, int64_t images) {
    double v[2] = {loss_sum, (double)images};
    nn_status st = dist_train_sum(&t->dist, v, 2); /* every rank takes part; rank 0 writes */
    errno = 0;
    if (st == NN_OK && t->step_log &&
        fprintf(t->step_log, "{\"epoch\": %d, \"step\": %lld, \"loss\": %.9g, \"images\": %lld}\n", epoch,
                (long long)step, v[0] / (v[1] > 0 ? v[1] : 1), (long long)v[1]) < 0)
        train_lose_log(t, "--log-steps", t->config.log_steps, &t->step_log, errno);
    return st;
}

/* An epoch's figures as TensorBoard scalars, the epoch as the step. */
bool train_tensorboard_epoch(tensorboard *tb, const epoch_stats *s, const char *test_name) {
    if (!test_name) { /* --no-eval: the train figures only */
        const char *tags[3] = {"train/loss", "train/accuracy", "train/images_per_s"};
        double values[3] = {s->train_loss, s->train_acc, s->images_per_s};
        return tensorboard_scalars(tb, s->epoch, tags, values, 3);
    }
    char test_loss[32], test_acc[32];
    snprintf(test_loss, sizeof test_loss, "%s/loss", test_name);
    snprintf(test_acc, sizeof test_acc, "%s/accuracy", test_name);
    const char *tags[5] = {"train/loss", "train/accuracy", test_loss, test_acc, "train/images_per_s"};
    double values[5] = {s->train_loss, s->train_acc, s->test_loss, s->test_acc, s->images_per_s};
    return tensorboard_scalars(tb, s->epoch, tags, values, 5);
}
