/* What training shows: a progress bar per epoch on a terminal, one line per
 * epoch always, and one JSON object per epoch for --log. */
#ifndef NNENGINE_PROGRESS_H
#define NNENGINE_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct epoch_stats {
    int epoch;
    double train_loss, train_acc; /* accuracies are fractions in [0, 1] */
    double test_loss, test_acc;
    double seconds;      /* the epoch's training time (evaluation not included) */
    double images_per_s; /* training images / seconds */
} epoch_stats;

typedef struct progress {
    bool enabled;   /* stdout is a terminal */
    bool unicode;   /* the locale can draw block characters */
    int epoch, epochs;
    int64_t steps;
    double start, last_draw;
} progress;

double now_seconds(void);

void progress_init(progress *p, int epochs);
void progress_begin_epoch(progress *p, int epoch, int64_t steps);
/* Redraws at most ten times a second (and on the last step). */
void progress_update(progress *p, int64_t step, int64_t images, double running_loss);
/* "epoch 3/10 evaluating 2000/10000" in the bar's place (ten times a second at most). */
void progress_evaluating(progress *p, int64_t images, int64_t total);
/* Erases the bar so that the epoch line replaces it. */
void progress_clear(progress *p);

/* "epoch  3/10  train loss 0.3120 acc 88.61%  test loss ..." on stdout; test_name
 * NULL: "(not evaluated)" in place of the test figures (--no-eval). */
void print_epoch_line(const epoch_stats *s, int epochs, const char *test_name);
/* One JSON object and a newline; returns 0 when the write failed. */
int write_epoch_json(FILE *f, const epoch_stats *s);

#endif
