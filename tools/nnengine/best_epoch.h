/* --save-best and --patience: the best epoch so far by the held-out set's
 * accuracy (or loss), and how many epochs have passed without a better one. */
#ifndef NNENGINE_BEST_EPOCH_H
#define NNENGINE_BEST_EPOCH_H

#include <stdbool.h>
#include <stdint.h>

#include "progress.h"

typedef struct best_epoch {
    bool by_loss;      /* lower test loss is better; otherwise higher test accuracy */
    bool any;          /* an epoch has been seen */
    double best;       /* its metric */
    int epoch;         /* the best epoch */
    int64_t stale;     /* epochs since it */
} best_epoch;

/* "accuracy" or "loss" into *by_loss; false for anything else. */
bool best_epoch_parse_metric(const char *name, bool *by_loss);

/* Takes the epoch's test metrics; true when it is the best so far (a NaN
 * loss never is). */
bool best_epoch_update(best_epoch *b, const epoch_stats *s);

/* The best epoch for a training state (nn_train_progress's best_epoch,
 * best_metric and best_by): epoch 0 when none yet. */
void best_epoch_save(const best_epoch *b, int64_t *epoch, double *metric, char *by, int by_size);

/* The best epoch a training state kept after `epochs_done` epochs (none
 * when `epoch` is 0); false, nothing changed, when it was compared by
 * another metric than b's. */
bool best_epoch_restore(best_epoch *b, int64_t epochs_done, int64_t epoch, double metric, const char *by);

/* "accuracy 88.12%" or "loss 0.3214" of the best epoch. */
void best_epoch_describe(const best_epoch *b, char *out, int size);

#endif
