/* Decoding every file of an index once before training, so that broken
 * files are found, counted and reported up front (as the seed did with
 * PetImages' broken files) rather than dropped from batches during the
 * first epoch. JPEGs are decoded at 1/8 scale: the whole entropy-coded
 * stream is still read and checked (a truncated or damaged file fails as it
 * would at full size), but the inverse DCT is a single coefficient. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "data/image_internal.h"

/* Run one epoch of a small loader over the index; *flags then marks the
 * files that failed. */
static nn_status decode_all(const nn_image_index *index, int threads, nn_loader **out) {
    nn_loader_options o = nn_loader_defaults();
    o.channels = 1, o.height = 8, o.width = 8, o.batch = 64, o.threads = threads, o.prefetch = 2;
    o.mean[0] = 0, o.std[0] = 1;
    nn_loader *loader = nn_loader_new(index, NULL, index->count, &o);
    if (!loader) return nn_last_status();
    *out = loader;
    nn_status status = nn_loader_start_epoch(loader, 0);
    nn_batch batch;
    while (status == NN_OK && (status = nn_loader_next(loader, &batch)) == NN_OK && batch.count > 0) {
    }
    /* Every file failing is not an error here: the classes left empty are. */
    if (status == NN_ERR_IO && nn_loader_failures(loader, NULL, 0) == index->count) status = NN_OK;
    return status;
}

nn_status nn_image_index_verify(nn_image_index *index, int threads) {
    if (!index) return nn_set_error(NN_ERR_ARGUMENT, "nn_image_index_verify: NULL index");
    if (threads < 1 || threads > 256)
        return nn_set_error(NN_ERR_ARGUMENT, "nn_image_index_verify: threads %d is not in 1..256",
                            threads);
    if (index->count == 0) return NN_OK;
    nn_loader *loader = NULL;
    nn_status status = decode_all(index, threads, &loader);
    if (status != NN_OK) {
        nn_loader_free(loader);
        return status;
    }
    char first[640];
    int64_t failed = nn_loader_failures(loader, first, sizeof first);
    const uint8_t *flags = nn_loader_failed_flags(loader);
    int64_t *kept_per_class = calloc((size_t)index->classes, sizeof *kept_per_class);
    int64_t *some_image = malloc((size_t)index->classes * sizeof *some_image); /* names a class folder */
    if (!kept_per_class || !some_image) {
        free(kept_per_class), free(some_image);
        nn_loader_free(loader);
        return nn_set_error(NN_ERR_MEMORY, "nn_image_index_verify: out of memory");
    }
    for (int c = 0; c < index->classes; c++) some_image[c] = -1;
    for (int64_t i = 0; i < index->count; i++) {
        some_image[index->labels[i]] = i;
        if (!flags[i]) kept_per_class[index->labels[i]]++;
    }
    for (int c = 0; c < index->classes && status == NN_OK; c++) {
        if (kept_per_class[c] > 0 || some_image[c] < 0) continue;
        /* The class folder is the image's path without its file name. */
        const char *path = index->paths[some_image[c]];
        const char *slash = strrchr(path, '/');
        int folder_length = slash ? (int)(slash - path) : (int)strlen(path);
        status = nn_set_error(NN_ERR_IO, "%.*s: class folder has no readable PNG or JPEG image (first: %s)",
                              folder_length, path, first);
    }
    if (status == NN_OK && failed > 0) {
        int64_t kept = 0;
        for (int64_t i = 0; i < index->count; i++) {
            if (flags[i]) {
                free(index->paths[i]);
                continue;
            }
            index->paths[kept] = index->paths[i];
            index->labels[kept++] = index->labels[i];
        }
        index->count = kept;
        if (index->skipped == 0)
            snprintf(index->first_skipped, sizeof index->first_skipped, "%.500s", first);
        index->skipped += failed;
    }
    free(kept_per_class), free(some_image);
    nn_loader_free(loader);
    return status;
}
