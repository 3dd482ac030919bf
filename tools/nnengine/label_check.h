/* Labels of IDX data: the number of classes is inferred as the largest
 * label + 1, so one stray label (255 among 0..9) would silently make a
 * 256-class model. Refused with the label, its image count and its file:
 * labels with gaps below the largest (unless --classes K covers them), and
 * any label >= --classes K. */
#ifndef NNENGINE_LABEL_CHECK_H
#define NNENGINE_LABEL_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "nn_data.h"

/* classes: --classes K, or 0 when inferred. Returns an exit status, having
 * printed "nnengine COMMAND: ..." on failure. */
int check_labels(const char *command, const char *dir, const nn_dataset *train, const nn_dataset *test,
                 bool test_is_validation, int64_t classes);

#endif
