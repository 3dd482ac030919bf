/* The index of an image folder: paths and labels of DIR/<class>/<file>,
 * nothing decoded. Each file's first bytes are checked here (cheap: one
 * small read per file), so empty files and files that are not PNG or JPEG
 * are skipped before training; a body that fails to decode is found by the
 * loader. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "data/class_folders.h"
#include "data/dataset_internal.h"
#include "data/image_internal.h"
#include "io/file_read.h"

void nn_image_index_free(nn_image_index *index) {
    if (!index) return;
    for (int c = 0; c < index->classes && index->class_names; c++) free(index->class_names[c]);
    for (int64_t i = 0; i < index->count && index->paths; i++) free(index->paths[i]);
    free(index->class_names);
    free(index->paths);
    free(index->labels);
    memset(index, 0, sizeof *index);
}

/* 1 when the file starts like a PNG or JPEG; else the reason in `why`. */
static int looks_like_image(const char *path, char *why, size_t why_size) {
    int64_t size;
    FILE *f = nn_open_regular_file(path, &size, why, why_size);
    if (!f) return 0;
    uint8_t head[8];
    size_t got = fread(head, 1, sizeof head, f);
    fclose(f);
    return nn_image_signature_ok(head, got, why, why_size);
}

/* The index being built, and the room its arrays have. */
typedef struct indexer {
    nn_image_index *index;
    int64_t capacity;
} indexer;

static nn_status append(indexer *ix, char *path, int label) {
    nn_image_index *index = ix->index;
    if (index->count == ix->capacity) {
        int64_t capacity = ix->capacity ? ix->capacity * 2 : 256;
        char **paths = realloc(index->paths, (size_t)capacity * sizeof *paths);
        if (paths) index->paths = paths;
        int32_t *labels = realloc(index->labels, (size_t)capacity * sizeof *labels);
        if (labels) index->labels = labels;
        if (!paths || !labels) {
            free(path);
            return nn_set_error(NN_ERR_MEMORY, "out of memory indexing %lld images",
                                (long long)index->count);
        }
        ix->capacity = capacity;
    }
    index->paths[index->count] = path;
    index->labels[index->count++] = label;
    return NN_OK;
}

/* One file of class `label`: indexed when it starts like a PNG or JPEG. */
static nn_status take_image(void *user, const char *path, int label, bool *kept, char *why,
                            size_t why_size) {
    indexer *ix = user;
    *kept = looks_like_image(path, why, why_size);
    if (!*kept) return NN_OK;
    char *copy = strdup(path);
    return copy ? append(ix, copy, label)
                : nn_set_error(NN_ERR_MEMORY, "out of memory indexing %s", path);
}

_Static_assert(sizeof((nn_image_index *)0)->first_skipped == NN_CLASS_WALK_WHY, "the walk's report fits");

nn_status nn_image_index_load(const char *dir, nn_image_index *out) {
    if (!dir || !out) return nn_set_error(NN_ERR_ARGUMENT, "nn_image_index_load: NULL argument");
    memset(out, 0, sizeof *out);
    NN_TRY(nn_image_codecs_check("nn_image_index_load", dir));
    indexer ix = {out, 0};
    /* The index owns the sorted class names (freed with it). */
    nn_class_walk walk = {.take = take_image, .user = &ix, .example = "PetImages/Cat", .wanted = "PNG or JPEG image",
                          NN_CLASS_WALK_INTO(out)};
    nn_status status = nn_walk_class_folders(dir, &walk);
    if (status != NN_OK) nn_image_index_free(out);
    return status;
}

/* dst = the listed images of src, in that order, with src's classes. */
static nn_status copy_subset(const nn_image_index *src, const int64_t *indices, int64_t n,
                             nn_image_index *dst) {
    memset(dst, 0, sizeof *dst);
    dst->class_names = calloc((size_t)src->classes, sizeof *dst->class_names);
    dst->paths = calloc((size_t)n + 1, sizeof *dst->paths);
    dst->labels = malloc(((size_t)n + 1) * sizeof *dst->labels);
    if (dst->class_names) dst->classes = src->classes;
    if (dst->paths) dst->count = n; /* paths not yet copied are NULL: free() is safe */
    int ok = dst->class_names && dst->paths && dst->labels;
    for (int c = 0; ok && c < src->classes; c++)
        ok = (dst->class_names[c] = strdup(src->class_names[c])) != NULL;
    for (int64_t i = 0; ok && i < n; i++) {
        ok = (dst->paths[i] = strdup(src->paths[indices[i]])) != NULL;
        dst->labels[i] = src->labels[indices[i]];
    }
    if (ok) return NN_OK;
    nn_image_index_free(dst);
    return nn_set_error(NN_ERR_MEMORY, "out of memory splitting an index of %lld images",
                        (long long)src->count);
}

/* nn_image_index_load, then nn_image_index_verify when asked. */
static nn_status load_checked(const char *dir, int verify_threads, nn_image_index *out) {
    NN_TRY(nn_image_index_load(dir, out));
    nn_status status = verify_threads > 0 ? nn_image_index_verify(out, verify_threads) : NN_OK;
    if (status != NN_OK) nn_image_index_free(out);
    return status;
}

nn_status nn_image_index_load_dir(const char *dir, double validation_fraction, uint64_t seed,
                                  int verify_threads, nn_image_index *train, nn_image_index *test,
                                  bool *test_is_validation) {
    if (!dir || !train) return nn_set_error(NN_ERR_ARGUMENT, "nn_image_index_load_dir: NULL argument");
    bool unused;
    if (!test_is_validation) test_is_validation = &unused;
    *test_is_validation = false;
    memset(train, 0, sizeof *train);
    if (test) memset(test, 0, sizeof *test);
    NN_TRY(nn_folder_check(dir));
    if (verify_threads < 0 || verify_threads > 256)
        return nn_set_error(NN_ERR_ARGUMENT, "nn_image_index_load_dir: verify_threads %d is not in 0..256",
                            verify_threads);
    char train_dir[4096], test_dir[4096];
    NN_TRY(nn_join_path(train_dir, sizeof train_dir, dir, "train"));
    NN_TRY(nn_join_path(test_dir, sizeof test_dir, dir, "test"));
    if (nn_folder_exists(train_dir) && nn_folder_exists(test_dir)) {
        NN_TRY(load_checked(train_dir, verify_threads, train));
        if (!test) return NN_OK;
        nn_status status = load_checked(test_dir, verify_threads, test);
        if (status == NN_OK && test->classes > train->classes)
            status = nn_set_error(NN_ERR_IO, "%s: the test set has %d classes, the training set %d",
                                  dir, test->classes, train->classes);
        if (status != NN_OK) {
            nn_image_index_free(train);
            nn_image_index_free(test);
        }
        return status;
    }
    NN_TRY(load_checked(dir, verify_threads, train));
    if (!test) return NN_OK;
    /* The same held-out images as nn_dataset_load_dir for this seed. */
    int64_t *order, n_val;
    nn_image_index all = *train, rest;
    nn_status status = nn_validation_split(all.count, validation_fraction, seed, &order, &n_val);
    if (status == NN_OK) {
        status = copy_subset(&all, order, n_val, test);
        if (status == NN_OK) status = copy_subset(&all, order + n_val, all.count - n_val, &rest);
        if (status != NN_OK) nn_image_index_free(test);
        free(order);
    }
    if (status != NN_OK) {
        nn_image_index_free(train);
        return status;
    }
    rest.skipped = all.skipped;
    memcpy(rest.first_skipped, all.first_skipped, sizeof rest.first_skipped);
    memcpy(rest.skipped_entries, all.skipped_entries, sizeof rest.skipped_entries);
    nn_image_index_free(&all);
    *train = rest;
    *test_is_validation = true;
    return NN_OK;
}
