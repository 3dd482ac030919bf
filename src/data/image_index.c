/* The index of an image folder: paths and labels of DIR/<class>/<file>,
 * nothing decoded. Each file's first bytes are checked here (cheap: one
 * small read per file), so empty files and files that are not PNG or JPEG
 * are skipped before training; a body that fails to decode is found by the
 * loader. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "data/dataset_internal.h"
#include "data/image_internal.h"

void nn_image_index_free(nn_image_index *index) {
    if (!index) return;
    for (int c = 0; c < index->classes && index->class_names; c++) free(index->class_names[c]);
    for (int64_t i = 0; i < index->count && index->paths; i++) free(index->paths[i]);
    free(index->class_names);
    free(index->paths);
    free(index->labels);
    memset(index, 0, sizeof *index);
}

static int is_folder(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* 1 when the file starts like a PNG or JPEG; else the reason in `why`. */
static int looks_like_image(const char *path, char *why, size_t why_size) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, why_size, "cannot open (%s)", strerror(errno));
        return 0;
    }
    uint8_t head[8];
    size_t got = fread(head, 1, sizeof head, f);
    fclose(f);
    return nn_image_signature_ok(head, got, why, why_size);
}

static nn_status append(nn_image_index *index, int64_t *capacity, char *path, int label) {
    if (index->count == *capacity) {
        int64_t grown_capacity = *capacity ? *capacity * 2 : 256;
        char **paths = realloc(index->paths, (size_t)grown_capacity * sizeof *paths);
        if (paths) index->paths = paths;
        int32_t *labels = realloc(index->labels, (size_t)grown_capacity * sizeof *labels);
        if (labels) index->labels = labels;
        if (!paths || !labels) {
            free(path);
            return nn_set_error(NN_ERR_MEMORY, "out of memory indexing %lld images",
                                (long long)index->count);
        }
        *capacity = grown_capacity;
    }
    index->paths[index->count] = path;
    index->labels[index->count++] = label;
    return NN_OK;
}

static nn_status index_class(nn_image_index *index, int64_t *capacity, const char *class_dir,
                             int label) {
    nn_name_list files;
    NN_TRY(nn_list_entries(class_dir, 0, &files));
    int64_t before = index->count;
    nn_status status = NN_OK;
    char path[4096], why[128];
    for (int i = 0; status == NN_OK && i < files.count; i++) {
        status = nn_join_path(path, sizeof path, class_dir, files.names[i]);
        if (status != NN_OK) break;
        if (!looks_like_image(path, why, sizeof why)) {
            if (index->skipped++ == 0)
                snprintf(index->first_skipped, sizeof index->first_skipped, "%.400s: %.100s", path,
                         why);
            continue;
        }
        char *copy = strdup(path);
        status = copy ? append(index, capacity, copy, label)
                      : nn_set_error(NN_ERR_MEMORY, "out of memory indexing %s", path);
    }
    nn_name_list_free(&files);
    if (status == NN_OK && index->count == before)
        status = nn_set_error(NN_ERR_IO, "%s: class folder has no PNG or JPEG image", class_dir);
    return status;
}

nn_status nn_image_index_load(const char *dir, nn_image_index *out) {
    if (!dir || !out) return nn_set_error(NN_ERR_ARGUMENT, "nn_image_index_load: NULL argument");
    memset(out, 0, sizeof *out);
    if (!is_folder(dir)) return nn_set_error(NN_ERR_IO, "%s: no such folder", dir);
    nn_name_list classes;
    NN_TRY(nn_list_entries(dir, 1, &classes));
    if (classes.count == 0) {
        nn_name_list_free(&classes);
        return nn_set_error(NN_ERR_IO,
                            "%s: no class folders (expected DIR/<class>/<image>, "
                            "e.g. PetImages/Cat/...)",
                            dir);
    }
    /* The index owns the sorted names from here on (freed with it). */
    out->class_names = classes.names;
    out->classes = classes.count;
    int64_t capacity = 0;
    nn_status status = NN_OK;
    char class_dir[4096];
    for (int c = 0; status == NN_OK && c < classes.count; c++) {
        status = nn_join_path(class_dir, sizeof class_dir, dir, classes.names[c]);
        if (status == NN_OK) status = index_class(out, &capacity, class_dir, c);
    }
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
    if (!is_folder(dir)) return nn_set_error(NN_ERR_IO, "%s: no such folder", dir);
    if (verify_threads < 0 || verify_threads > 256)
        return nn_set_error(NN_ERR_ARGUMENT, "nn_image_index_load_dir: verify_threads %d is not in 0..256",
                            verify_threads);
    char train_dir[4096], test_dir[4096];
    NN_TRY(nn_join_path(train_dir, sizeof train_dir, dir, "train"));
    NN_TRY(nn_join_path(test_dir, sizeof test_dir, dir, "test"));
    if (is_folder(train_dir) && is_folder(test_dir)) {
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
    nn_image_index_free(&all);
    *train = rest;
    *test_is_validation = true;
    return NN_OK;
}
