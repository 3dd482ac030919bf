/* The seed's dataset layout: DIR/<class>/<image>, one sub-folder per class
 * (sorted by name; label = position), PNG or JPEG images of one size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "data/class_folders.h"
#include "data/dataset_internal.h"
#include "data/image_internal.h"
#include "io/file_read.h"

/* Whole file into memory; a failure is a reason (the file is skipped). */
static int read_file(const char *path, uint8_t **data, size_t *size, char *why, size_t why_size) {
    int64_t length;
    FILE *f = nn_open_regular_file(path, &length, why, why_size);
    if (!f) return 0;
    *data = malloc(length > 0 ? (size_t)length : 1);
    if (!*data) {
        fclose(f);
        snprintf(why, why_size, "out of memory for %lld bytes", (long long)length);
        return 0;
    }
    *size = fread(*data, 1, (size_t)length, f);
    fclose(f);
    return 1;
}

typedef struct folder_loader {
    nn_dataset *ds;
    int64_t capacity; /* images the pixel and label arrays can hold */
} folder_loader;

static nn_status append_image(folder_loader *loader, const nn_gray_image *image, int label,
                              const char *path) {
    nn_dataset *ds = loader->ds;
    if (ds->count == 0) {
        ds->channels = 1;
        ds->height = image->height;
        ds->width = image->width;
    } else if (image->height != ds->height || image->width != ds->width) {
        return nn_set_error(NN_ERR_SHAPE, "%s: image is %dx%d, but the dataset's images are %dx%d",
                            path, image->width, image->height, ds->width, ds->height);
    }
    if (ds->count == loader->capacity) {
        size_t image_bytes = (size_t)ds->height * ds->width;
        /* Room for 1024 images at first, or 64 MiB of them when they are
         * large: a huge first image must not reserve room for a thousand. */
        int64_t first = (int64_t)(((size_t)64 << 20) / image_bytes);
        first = first < 1 ? 1 : first > 1024 ? 1024 : first;
        int64_t capacity = loader->capacity ? loader->capacity * 2 : first;
        uint8_t *pixels = realloc(ds->pixels, (size_t)capacity * image_bytes);
        if (pixels) ds->pixels = pixels;
        int32_t *labels = realloc(ds->labels, (size_t)capacity * sizeof *labels);
        if (labels) ds->labels = labels;
        if (!pixels || !labels)
            return nn_set_error(NN_ERR_MEMORY, "%s: out of memory after %lld images", path,
                                (long long)ds->count);
        loader->capacity = capacity;
    }
    size_t image_bytes = (size_t)ds->height * ds->width;
    memcpy(ds->pixels + (size_t)ds->count * image_bytes, image->pixels, image_bytes);
    ds->labels[ds->count++] = label;
    return NN_OK;
}

/* One file of class `label`: decoded and appended, or skipped when it is
 * no readable image. */
static nn_status take_image(void *user, const char *path, int label, bool *kept, char *why,
                            size_t why_size) {
    folder_loader *loader = user;
    uint8_t *data = NULL;
    size_t size = 0;
    nn_gray_image image = {0};
    *kept = read_file(path, &data, &size, why, why_size) &&
            nn_decode_gray(data, size, &image, why, why_size) == NN_OK;
    free(data);
    if (!*kept) return NN_OK;
    nn_status status = append_image(loader, &image, label, path);
    free(image.pixels);
    return status;
}

_Static_assert(sizeof((nn_dataset *)0)->first_skipped == NN_CLASS_WALK_WHY, "the walk's report fits");

nn_status nn_dataset_load_folders(const char *dir, nn_dataset *out) {
    if (!dir || !out) return nn_set_error(NN_ERR_ARGUMENT, "nn_dataset_load_folders: NULL argument");
    memset(out, 0, sizeof *out);
    NN_TRY(nn_image_codecs_check("nn_dataset_load_folders", dir));
    folder_loader loader = {out, 0};
    /* The dataset keeps the sorted class names. */
    nn_class_walk walk = {.take = take_image, .user = &loader, .example = "mnist/0",
                          .wanted = "readable PNG or JPEG image", NN_CLASS_WALK_INTO(out)};
    nn_status status = nn_walk_class_folders(dir, &walk);
    if (status != NN_OK) nn_dataset_free(out);
    return status;
}
