/* Loss and accuracy of a model over a whole dataset, without gradients. */
#ifndef NNENGINE_EVALUATE_H
#define NNENGINE_EVALUATE_H

#include "nn_engine.h"
#include "nn_data.h"
#include "confusion.h"
#include "progress.h"

typedef struct normalization {
    float mean, std; /* x = (pixel / 255 - mean) / std */
} normalization;

/* Index of the largest of each row's `classes` logits equal to the label. */
int64_t count_correct(const float *logits, const int32_t *labels, int64_t rows, int classes);

/* Mean cross-entropy and accuracy (fraction) of `net` on `data`'s first
 * `limit` images (0: all); each prediction also counted in `matrix` when not
 * NULL; the images done shown on `bar` when not NULL. Returns the library's
 * status; the message is in nn_last_error(). */
nn_status evaluate(nn_ctx *ctx, nn_module *net, const nn_dataset *data, normalization norm, int classes,
                   int64_t limit, progress *bar, double *loss, double *accuracy, confusion *matrix);

#endif
