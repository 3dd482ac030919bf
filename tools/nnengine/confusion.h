/* eval --confusion: counts of (true class, predicted class) over a dataset,
 * printed as per-class accuracy and the confusion matrix. */
#ifndef NNENGINE_CONFUSION_H
#define NNENGINE_CONFUSION_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct confusion {
    int classes;
    int64_t *counts; /* classes x classes: row = true class, column = predicted */
} confusion;

/* False when out of host memory. */
bool confusion_init(confusion *m, int classes);
void confusion_free(confusion *m);

/* Each row's prediction (its largest logit, the first on ties, as
 * count_correct) against its label; labels outside [0, classes) are not counted. */
void confusion_add(confusion *m, const float *logits, const int32_t *labels, int64_t rows);

/* Per-class accuracy (names when given, e.g. folder names) and, up to
 * CONFUSION_PRINT_MAX classes, the matrix. */
#define CONFUSION_PRINT_MAX 32
void confusion_print(const confusion *m, char *const *names, FILE *out);

#endif
