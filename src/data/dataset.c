/* Dataset utilities: finding the train and test sets in a folder, the
 * validation split, shuffling, statistics and gathering batches. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/rng.h"
#include "data/class_folders.h"
#include "data/dataset_internal.h"
#include "platform/files.h"

/* The shuffle stream of the validation split, apart from every epoch's. */
#define SPLIT_STREAM UINT64_MAX

nn_status nn_join_path(char *out, size_t size, const char *dir, const char *name) {
    int n = snprintf(out, size, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= size)
        return nn_set_error(NN_ERR_ARGUMENT, "path too long: %.200s/%.200s...", dir, name);
    return NN_OK;
}

void nn_dataset_free(nn_dataset *ds) {
    if (!ds) return;
    if (ds->class_names)
        for (int c = 0; c < ds->classes; c++) free(ds->class_names[c]);
    free(ds->class_names);
    free(ds->pixels);
    free(ds->labels);
    memset(ds, 0, sizeof *ds);
}

nn_status nn_dataset_name_classes_by_number(nn_dataset *ds) {
    ds->class_names = calloc((size_t)ds->classes, sizeof *ds->class_names);
    if (!ds->class_names) return nn_set_error(NN_ERR_MEMORY, "out of memory naming classes");
    for (int c = 0; c < ds->classes; c++) {
        char name[16];
        snprintf(name, sizeof name, "%d", c);
        ds->class_names[c] = strdup(name);
        if (!ds->class_names[c]) return nn_set_error(NN_ERR_MEMORY, "out of memory naming classes");
    }
    return NN_OK;
}

void nn_dataset_truncate(nn_dataset *ds, int64_t limit) {
    if (ds && limit > 0 && limit < ds->count) ds->count = limit;
}

void nn_dataset_pixel_stats(const nn_dataset *ds, double *mean, double *std) {
    int64_t n = ds->count * ds->channels * ds->height * ds->width;
    /* Integer histogram: exact, and independent of summation order. */
    int64_t histogram[256] = {0};
    for (int64_t i = 0; i < n; i++) histogram[ds->pixels[i]]++;
    double sum = 0, sum_sq = 0;
    for (int v = 0; v < 256; v++) {
        double x = v / 255.0;
        sum += histogram[v] * x;
        sum_sq += histogram[v] * x * x;
    }
    double m = n ? sum / n : 0;
    double var = n ? sum_sq / n - m * m : 0;
    *mean = m;
    *std = sqrt(var > 0 ? var : 0);
}

nn_status nn_shuffle_indices(int64_t *indices, int64_t n, uint64_t seed, uint64_t epoch) {
    if (!indices && n > 0) return nn_set_error(NN_ERR_ARGUMENT, "nn_shuffle_indices: indices is NULL");
    nn_rng rng;
    /* Distinct streams per epoch: mix the epoch into the seed (splitmix64's constant). */
    nn_rng_seed(&rng, seed ^ (epoch + 1) * 0x9E3779B97F4A7C15ull);
    for (int64_t i = 0; i < n; i++) indices[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        /* Unbiased index in [0, i] from 64 random bits (n < 2^32 in practice). */
        uint64_t r = (uint64_t)nn_rng_next_u32(&rng) << 32 | nn_rng_next_u32(&rng);
        int64_t j = (int64_t)(r % (uint64_t)(i + 1));
        int64_t t = indices[i];
        indices[i] = indices[j];
        indices[j] = t;
    }
    return NN_OK;
}

nn_status nn_dataset_gather(const nn_dataset *ds, const int64_t *indices, int64_t n, float mean,
                            float std, float *x, int32_t *y) {
    if (!ds || !indices || !x) return nn_set_error(NN_ERR_ARGUMENT, "nn_dataset_gather: NULL argument");
    if (!(std > 0)) return nn_set_error(NN_ERR_ARGUMENT, "nn_dataset_gather: std must be > 0, got %g", std);
    int64_t image = (int64_t)ds->channels * ds->height * ds->width;
    /* x = (p / 255 - mean) / std = p * scale + shift */
    float scale = 1.0f / (255.0f * std), shift = -mean / std;
    for (int64_t i = 0; i < n; i++) {
        if (indices[i] < 0 || indices[i] >= ds->count)
            return nn_set_error(NN_ERR_ARGUMENT, "nn_dataset_gather: index %lld outside [0, %lld)",
                                (long long)indices[i], (long long)ds->count);
        const uint8_t *src = ds->pixels + indices[i] * image;
        float *dst = x + i * image;
        for (int64_t k = 0; k < image; k++) dst[k] = src[k] * scale + shift;
        if (y) y[i] = ds->labels[indices[i]];
    }
    return NN_OK;
}

/* A copy of the listed images (in the given order) with the same classes. */
static nn_status copy_subset(const nn_dataset *src, const int64_t *indices, int64_t n,
                             nn_dataset *dst) {
    memset(dst, 0, sizeof *dst);
    dst->channels = src->channels;
    dst->height = src->height;
    dst->width = src->width;
    dst->classes = src->classes;
    size_t image = (size_t)src->channels * src->height * src->width;
    dst->pixels = malloc(n * image + 1);
    dst->labels = malloc(n * sizeof *dst->labels + 1);
    dst->class_names = calloc((size_t)src->classes, sizeof *dst->class_names);
    if (!dst->pixels || !dst->labels || !dst->class_names) goto out_of_memory;
    for (int c = 0; c < src->classes; c++)
        if (!(dst->class_names[c] = strdup(src->class_names[c]))) goto out_of_memory;
    for (int64_t i = 0; i < n; i++) {
        memcpy(dst->pixels + i * image, src->pixels + indices[i] * image, image);
        dst->labels[i] = src->labels[indices[i]];
    }
    dst->count = n;
    return NN_OK;
out_of_memory:
    nn_dataset_free(dst);
    return nn_set_error(NN_ERR_MEMORY, "out of memory splitting a dataset of %lld images",
                        (long long)src->count);
}

static int compare_index(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

nn_status nn_validation_split(int64_t count, double fraction, uint64_t seed, int64_t **order,
                              int64_t *n_validation) {
    *order = NULL;
    if (!(fraction > 0 && fraction < 1))
        return nn_set_error(NN_ERR_ARGUMENT,
                            "the data has no test set, and the validation fraction %g is not in (0, 1)",
                            fraction);
    int64_t n_val = (int64_t)llround(count * fraction);
    if (n_val < 1 || n_val >= count)
        return nn_set_error(NN_ERR_ARGUMENT,
                            "a validation fraction of %g of %lld images leaves an empty set",
                            fraction, (long long)count);
    int64_t *indices = malloc(count * sizeof *indices);
    if (!indices) return nn_set_error(NN_ERR_MEMORY, "out of memory splitting the dataset");
    nn_shuffle_indices(indices, count, seed, SPLIT_STREAM);
    /* Keep the files' order inside each part: sorted indices. */
    qsort(indices, (size_t)n_val, sizeof *indices, compare_index);
    qsort(indices + n_val, (size_t)(count - n_val), sizeof *indices, compare_index);
    *order = indices;
    *n_validation = n_val;
    return NN_OK;
}

/* Replace *all by its training part and write the held-out part to *validation. */
static nn_status split_validation(nn_dataset *all, double fraction, uint64_t seed,
                                  nn_dataset *validation) {
    int64_t *order, n_val;
    NN_TRY(nn_validation_split(all->count, fraction, seed, &order, &n_val));
    nn_dataset train;
    nn_status status = copy_subset(all, order, n_val, validation);
    if (status == NN_OK) status = copy_subset(all, order + n_val, all->count - n_val, &train);
    free(order);
    if (status != NN_OK) {
        nn_dataset_free(validation);
        return status;
    }
    train.skipped = all->skipped;
    memcpy(train.first_skipped, all->first_skipped, sizeof train.first_skipped);
    memcpy(train.skipped_entries, all->skipped_entries, sizeof train.skipped_entries);
    nn_dataset_free(all);
    *all = train;
    return NN_OK;
}

static int file_exists(const char *path) {
    nn_file_status st;
    return nn_file_stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* DIR/NAME.gz if present, else DIR/NAME; returns 0 when neither exists. */
static int find_idx(const char *dir, const char *name, char *path, size_t size) {
    char gz_name[128];
    snprintf(gz_name, sizeof gz_name, "%s.gz", name);
    if (nn_join_path(path, size, dir, gz_name) == NN_OK && file_exists(path)) return 1;
    return nn_join_path(path, size, dir, name) == NN_OK && file_exists(path);
}

/* The test set must describe the same task as the training set. */
static nn_status check_compatible(const char *dir, const nn_dataset *train, const nn_dataset *test) {
    if (test->channels != train->channels || test->height != train->height ||
        test->width != train->width)
        return nn_set_error(NN_ERR_SHAPE, "%s: test images are %dx%dx%d, training images %dx%dx%d",
                            dir, test->channels, test->height, test->width, train->channels,
                            train->height, train->width);
    if (test->classes > train->classes)
        return nn_set_error(NN_ERR_IO, "%s: the test set has %d classes, the training set %d", dir,
                            test->classes, train->classes);
    return NN_OK;
}

static nn_status load_idx_pair(const char *dir, const char *prefix, nn_dataset *out) {
    char images[4096], labels[4096], name[64];
    snprintf(name, sizeof name, "%s-images-idx3-ubyte", prefix);
    if (!find_idx(dir, name, images, sizeof images))
        return nn_set_error(NN_ERR_IO, "%s: missing %s[.gz]", dir, name);
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte", prefix);
    if (!find_idx(dir, name, labels, sizeof labels))
        return nn_set_error(NN_ERR_IO, "%s: missing %s[.gz]", dir, name);
    return nn_dataset_load_idx(images, labels, out);
}

static nn_status load_both(const char *dir, double validation_fraction, uint64_t seed,
                           nn_dataset *train, nn_dataset *test, bool *test_is_validation) {
    char path[4096], train_dir[4096], test_dir[4096];
    *test_is_validation = false;
    if (find_idx(dir, "train-images-idx3-ubyte", path, sizeof path)) {
        NN_TRY(load_idx_pair(dir, "train", train));
        if (!test) return NN_OK;
        if (find_idx(dir, "t10k-images-idx3-ubyte", path, sizeof path))
            return load_idx_pair(dir, "t10k", test);
    } else {
        NN_TRY(nn_join_path(train_dir, sizeof train_dir, dir, "train"));
        NN_TRY(nn_join_path(test_dir, sizeof test_dir, dir, "test"));
        if (nn_folder_exists(train_dir) && nn_folder_exists(test_dir)) {
            NN_TRY(nn_dataset_load_folders(train_dir, train));
            return test ? nn_dataset_load_folders(test_dir, test) : NN_OK;
        }
        nn_status status = nn_dataset_load_folders(dir, train);
        if (status != NN_OK && strstr(nn_last_error(), "no class folders"))
            return nn_set_error(NN_ERR_IO,
                                "%s: found neither IDX files (train-images-idx3-ubyte[.gz], ...) "
                                "nor class folders (DIR/<class>/<image>.png|jpg)",
                                dir);
        NN_TRY(status);
        if (!test) return NN_OK;
    }
    *test_is_validation = true;
    return split_validation(train, validation_fraction, seed, test);
}

nn_status nn_dataset_load_dir(const char *dir, double validation_fraction, uint64_t seed,
                              nn_dataset *train, nn_dataset *test, bool *test_is_validation) {
    if (!dir || !train) return nn_set_error(NN_ERR_ARGUMENT, "nn_dataset_load_dir: NULL argument");
    bool is_validation_unused;
    if (!test_is_validation) test_is_validation = &is_validation_unused;
    memset(train, 0, sizeof *train);
    if (test) memset(test, 0, sizeof *test);
    NN_TRY(nn_folder_check(dir));
    nn_status status = load_both(dir, validation_fraction, seed, train, test, test_is_validation);
    if (status == NN_OK && test) status = check_compatible(dir, train, test);
    if (status != NN_OK) {
        nn_dataset_free(train);
        if (test) nn_dataset_free(test);
    }
    return status;
}
