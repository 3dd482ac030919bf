/* Image folders for models that take photos at a fixed size (AlexNet): an
 * index of the files and two image loaders (nn_loader.h), one that decodes
 * the training batches ahead of the loop on worker threads, with the chosen
 * augmentation, and one for the evaluation pass. */
#ifndef NNENGINE_PHOTO_DATA_H
#define NNENGINE_PHOTO_DATA_H

#include <stdbool.h>
#include "nn_engine.h"
#include "nn_loader.h"
#include "confusion.h"
#include "progress.h"

typedef struct photo_options {
    int channels, height, width; /* the model's input */
    int64_t batch, limit;        /* limit: the first N training images (0: all) */
    int64_t eval_limit;          /* the first N test (or validation) images evaluated (0: all) */
    double validation_fraction;
    uint64_t seed;
    const char *normalize;       /* auto (ImageNet's mean and std), none, or MEAN,STD */
    const float *mean, *std;     /* when set: 3 per-channel values used instead of normalize */
    int workers;                 /* decoding threads; 0: one per core but one */
    bool flip, random_crop;
    int rank, ranks;             /* mpirun: the training loader gives this rank its share (nn_loader_shard) */
} photo_options;

typedef struct photo_data {
    nn_image_index train, test;
    bool test_is_validation;
    nn_loader *train_loader, *test_loader;
    int64_t evaluated; /* the test images the test loader gives */
    int classes;
    int channels, height, width;
    float mean[3], std[3];
    int workers;
} photo_data;

/* Indexes DIR (checking every file once, so broken ones are reported before
 * training, as the seed did) and starts the loaders. Returns an exit status;
 * on failure the reason is printed as "nnengine COMMAND: ...". */
int photo_data_load(const char *command, const char *dir, const photo_options *o, photo_data *out);
void photo_data_free(photo_data *d);

/* Mean cross-entropy and accuracy of `net` (in evaluation mode) on the test
 * images (the first eval_limit of them); each prediction also counted in
 * `matrix` when not NULL (the logits then read back batch by batch), the
 * images done shown on `bar` when not NULL. Returns the library's status. */
nn_status photo_evaluate(nn_ctx *ctx, nn_module *net, photo_data *d, progress *bar, double *loss, double *accuracy,
                         confusion *matrix);

#endif
