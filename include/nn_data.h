/* Datasets: images and labels in host memory, as loaded from IDX files (the
 * MNIST / Fashion-MNIST format, raw or gzip-compressed) or from one folder per
 * class of PNG/JPEG images; a seeded shuffle, a train/validation split, and
 * the gather of a batch into float32 with optional mean/std normalisation.
 *
 * Pixels stay uint8 in memory (60,000 28x28 images are 47 MB) and become
 * floats only batch by batch. */
#ifndef NN_DATA_H
#define NN_DATA_H

#include <stdbool.h>
#include <stdint.h>
#include "nn_error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nn_dataset {
    int64_t count;             /* images */
    int channels, height, width;
    int classes;               /* labels are in [0, classes) */
    uint8_t *pixels;           /* count x channels x height x width */
    int32_t *labels;           /* count */
    char **class_names;        /* classes names (folder names, or "0".."9" for IDX) */
    int64_t skipped;           /* files in class folders that were not readable images */
    char first_skipped[512];   /* the first of them, with the reason, for the report */
    char skipped_entries[512]; /* entries that are no image file or class folder, in one line:
                                  "skipped 3 entries in DIR: 2 dangling links, 1 FIFO"; "" if none */
} nn_dataset;

/* Load an IDX image file (magic 0x803, N x rows x cols uint8) and its label
 * file (magic 0x801, N uint8). Either may be gzip-compressed. Fails with
 * NN_ERR_IO naming the file for a missing file, a wrong magic number, a
 * truncated file, or counts that differ. */
nn_status nn_dataset_load_idx(const char *images_path, const char *labels_path, nn_dataset *out);

/* Load DIR/<class>/<image> for every sub-folder of DIR (classes in sorted
 * name order, label = position). Images are PNG or JPEG, recognised by their
 * content; colour images are converted to grayscale (channels = 1). Every
 * image must have the size of the first one (an image of another size is an
 * error naming it). Files that are not readable images are skipped and
 * counted in `skipped`; a class folder without a readable image is an error. */
nn_status nn_dataset_load_folders(const char *dir, nn_dataset *out);

/* Load the training and test sets found in DIR:
 *  - IDX: DIR/train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz],
 *    t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz];
 *  - folders with a split: DIR/train/<class>/..., DIR/test/<class>/...;
 *  - folders without one: DIR/<class>/... Then `validation_fraction` of the
 *    images, chosen by `seed`, are held out as the test set and
 *    *test_is_validation is set.
 * The test set may be loaded with NULL test (only the training set). */
nn_status nn_dataset_load_dir(const char *dir, double validation_fraction, uint64_t seed,
                              nn_dataset *train, nn_dataset *test, bool *test_is_validation);

/* Keep only the first `limit` images (limit <= 0 or >= count: no change). */
void nn_dataset_truncate(nn_dataset *ds, int64_t limit);

/* Mean and standard deviation of all pixels, scaled to [0, 1]. */
void nn_dataset_pixel_stats(const nn_dataset *ds, double *mean, double *std);

void nn_dataset_free(nn_dataset *ds);

/* The order of epoch `epoch`: a permutation of 0..n-1 that depends only on
 * (seed, epoch), so a run resumed at an epoch sees the same order. */
nn_status nn_shuffle_indices(int64_t *indices, int64_t n, uint64_t seed, uint64_t epoch);

/* Data parallelism: rank `rank` of `ranks` trains on its share of every
 * global batch of ranks x batch images of the epoch's order: positions
 * [rank x batch, (rank + 1) x batch) of each full global batch and, of the
 * last, smaller one, an equal share (the at most ranks - 1 images left over
 * are skipped that epoch). nn_shard_indices moves this rank's images of
 * order (count entries) to its front, in order; nn_shard_count says how
 * many there are (the same on every rank; -1 for bad arguments). */
nn_status nn_shard_indices(int64_t *order, int64_t count, int64_t batch, int rank, int ranks);
int64_t nn_shard_count(int64_t count, int64_t batch, int ranks);

/* Gather images indices[0..n-1] into x (n x channels x height x width,
 * value = (pixel / 255 - mean) / std) and their labels into y (may be NULL). */
nn_status nn_dataset_gather(const nn_dataset *ds, const int64_t *indices, int64_t n, float mean,
                            float std, float *x, int32_t *y);

#ifdef __cplusplus
}
#endif
#endif
