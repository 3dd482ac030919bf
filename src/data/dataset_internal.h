/* Shared by the dataset loaders. */
#ifndef NN_DATA_DATASET_INTERNAL_H
#define NN_DATA_DATASET_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "nn_data.h"

/* class_names = "0", "1", ... for datasets whose classes are numbers. */
nn_status nn_dataset_name_classes_by_number(nn_dataset *ds);

/* out = dir + "/" + name; NN_ERR_ARGUMENT naming the path when it does not
 * fit in `size` bytes (no path is silently cut short). */
nn_status nn_join_path(char *out, size_t size, const char *dir, const char *name);

/* The validation split of `count` items by `seed`: *order (malloc'd, to
 * free) lists the n_validation held-out indices, then the training ones,
 * each part sorted. NN_ERR_ARGUMENT for a fraction outside (0, 1) or one
 * that leaves either part empty. */
nn_status nn_validation_split(int64_t count, double fraction, uint64_t seed, int64_t **order,
                              int64_t *n_validation);

/* A decoded image: 8-bit grayscale, width x height. */
typedef struct nn_gray_image {
    int width, height;
    uint8_t *pixels;
} nn_gray_image;

/* Decode a PNG or JPEG held in memory (recognised by its signature) into
 * grayscale. On failure returns NN_ERR_IO and writes the reason (no path) to
 * `why`; nn_last_error() is not touched, since unreadable files are skipped. */
nn_status nn_decode_gray(const uint8_t *data, size_t size, nn_gray_image *out, char *why,
                         size_t why_size);

#endif
