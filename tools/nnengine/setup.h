/* What train and eval share: loading the data named by --data with its
 * normalisation, and opening the device named by --device. */
#ifndef NNENGINE_SETUP_H
#define NNENGINE_SETUP_H

#include <stdbool.h>
#include "evaluate.h"
#include "nn_data.h"

typedef struct data_setup {
    nn_dataset train, test;
    bool test_is_validation; /* the test set was held out of the training folders */
    int classes;
    normalization norm;
} data_setup;

/* Loads DIR's training and test sets, keeps the first `limit` training images
 * (0: all) and settles the normalisation: "auto" (the training pixels' mean
 * and std), "none" (0, 1) or "MEAN,STD". Returns an exit status; on failure
 * the reason is printed as "nnengine COMMAND: ...". */
int data_setup_load(const char *command, const char *dir, double validation_fraction,
                    uint64_t seed, int64_t limit, const char *normalize, data_setup *out);
void data_setup_free(data_setup *setup);

/* --normalize's "none" (0, 1) or "MEAN,STD" (both finite, STD >=
 * NORMALIZE_MIN_STD) into mean and std; false for any other text ("auto"
 * is each data kind's own), normalization_problem then says what is wrong. */
#define NORMALIZE_MIN_STD 1e-6
bool parse_fixed_normalization(const char *text, float *mean, float *std);
const char *normalization_problem(const char *text);

/* Opens the device ("auto", "cpu", "vulkan") and prints the choice to stderr.
 * NULL after printing why. */
nn_ctx *open_device(const char *command, const char *device, int threads, uint64_t seed);

/* nn_last_error(), or a host-memory message when the library set none. */
const char *library_error(void);

#endif
