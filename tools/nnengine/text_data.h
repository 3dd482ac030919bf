/* A text file as bytes for a language model (nnengine train gpt-mini
 * --text FILE): the whole file in memory, its first part trained on and
 * its last --val-fraction held out, training windows drawn at random
 * offsets from (seed, step) alone, so a resumed run draws what an
 * uninterrupted one would. */
#ifndef NNENGINE_TEXT_DATA_H
#define NNENGINE_TEXT_DATA_H

#include <stdbool.h>
#include <stdint.h>

typedef struct text_data {
    uint8_t *bytes;
    int64_t size;        /* bytes used: the file's, or its first --limit */
    int64_t train_size;  /* bytes [0, train_size) are trained on, the rest held out */
    int64_t invalid_utf8; /* byte sequences that are not UTF-8 (trained on all the same) */
} text_data;

/* Reads path (its first `limit` bytes; 0: all) and holds out the last
 * val_fraction of it. A window is context + 1 bytes (the inputs and their
 * successors): the training part must hold one, and so must the held-out
 * part unless val_fraction is 0. EXIT_OK, or an exit status after printing
 * why as "nnengine COMMAND: ...". */
int text_data_load(const char *command, const char *path, int64_t limit, double val_fraction, int context,
                   text_data *out);
void text_data_free(text_data *t);

/* Optimizer step `step`'s batch: `batch` windows of the training bytes at
 * offsets drawn from (seed, step, row); x gets each window's first context
 * bytes, y the ones after them (batch x context int32 each). */
void text_data_training_batch(const text_data *t, uint64_t seed, int64_t step, int batch, int context, int32_t *x,
                              int32_t *y);
/* The held-out bytes as consecutive windows that do not overlap: how many
 * there are within the first `limit` held-out bytes (0: all), and window
 * `first`..first+count-1 into x and y. */
int64_t text_data_validation_windows(const text_data *t, int context, int64_t limit);
void text_data_validation_batch(const text_data *t, int64_t first, int count, int context, int32_t *x, int32_t *y);

#endif
