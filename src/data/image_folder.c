/* The seed's dataset layout: DIR/<class>/<image>, one sub-folder per class
 * (sorted by name; label = position), PNG or JPEG images of one size. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "data/dataset_internal.h"

void nn_name_list_free(nn_name_list *list) {
    for (int i = 0; i < list->count; i++) free(list->names[i]);
    free(list->names);
    memset(list, 0, sizeof *list);
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_directory(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

nn_status nn_list_entries(const char *dir, int want_dirs, nn_name_list *out) {
    memset(out, 0, sizeof *out);
    DIR *d = opendir(dir);
    if (!d) return nn_set_error(NN_ERR_IO, "%s: cannot open folder (%s)", dir, strerror(errno));
    struct dirent *entry;
    char path[4096];
    nn_status status = NN_OK;
    while (status == NN_OK && (entry = readdir(d))) {
        if (entry->d_name[0] == '.') continue;
        if (nn_join_path(path, sizeof path, dir, entry->d_name) != NN_OK) {
            status = NN_ERR_ARGUMENT;
            break;
        }
        struct stat st;
        if (stat(path, &st) != 0) continue; /* a dangling link is not an entry */
        if (want_dirs ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) continue;
        if (out->count == out->capacity) {
            int capacity = out->capacity ? out->capacity * 2 : 64;
            char **grown = realloc(out->names, (size_t)capacity * sizeof *grown);
            if (!grown) {
                status = nn_set_error(NN_ERR_MEMORY, "%s: out of memory listing the folder", dir);
                break;
            }
            out->names = grown;
            out->capacity = capacity;
        }
        out->names[out->count] = strdup(entry->d_name);
        if (!out->names[out->count])
            status = nn_set_error(NN_ERR_MEMORY, "%s: out of memory listing the folder", dir);
        else
            out->count++;
    }
    closedir(d);
    if (status != NN_OK) {
        nn_name_list_free(out);
        return status;
    }
    /* An empty folder leaves names NULL, which qsort must not be given (UBSan). */
    if (out->count > 1) qsort(out->names, (size_t)out->count, sizeof *out->names, compare_names);
    return NN_OK;
}

/* Whole file into memory; a failure is a reason (the file is skipped). */
static int read_file(const char *path, uint8_t **data, size_t *size, char *why, size_t why_size) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, why_size, "cannot open (%s)", strerror(errno));
        return 0;
    }
    fseek(f, 0, SEEK_END);
    long length = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (length < 0) {
        fclose(f);
        snprintf(why, why_size, "cannot read its size");
        return 0;
    }
    *data = malloc(length > 0 ? (size_t)length : 1);
    if (!*data) {
        fclose(f);
        snprintf(why, why_size, "out of memory for %ld bytes", length);
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
        int64_t capacity = loader->capacity ? loader->capacity * 2 : 1024;
        size_t image_bytes = (size_t)ds->height * ds->width;
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

static nn_status load_class(folder_loader *loader, const char *class_dir, int label) {
    nn_name_list files;
    NN_TRY(nn_list_entries(class_dir, 0, &files));
    nn_dataset *ds = loader->ds;
    int64_t before = ds->count;
    nn_status status = NN_OK;
    char path[4096], why[256];
    for (int i = 0; status == NN_OK && i < files.count; i++) {
        status = nn_join_path(path, sizeof path, class_dir, files.names[i]);
        if (status != NN_OK) break;
        uint8_t *data = NULL;
        size_t size = 0;
        nn_gray_image image = {0};
        int ok = read_file(path, &data, &size, why, sizeof why) &&
                 nn_decode_gray(data, size, &image, why, sizeof why) == NN_OK;
        free(data);
        if (!ok) {
            if (ds->skipped++ == 0)
                snprintf(ds->first_skipped, sizeof ds->first_skipped, "%.400s: %.100s", path, why);
            continue;
        }
        status = append_image(loader, &image, label, path);
        free(image.pixels);
    }
    nn_name_list_free(&files);
    if (status == NN_OK && ds->count == before)
        status = nn_set_error(NN_ERR_IO, "%s: class folder has no readable PNG or JPEG image",
                              class_dir);
    return status;
}

nn_status nn_dataset_load_folders(const char *dir, nn_dataset *out) {
    if (!dir || !out) return nn_set_error(NN_ERR_ARGUMENT, "nn_dataset_load_folders: NULL argument");
    memset(out, 0, sizeof *out);
    if (!is_directory(dir)) return nn_set_error(NN_ERR_IO, "%s: no such folder", dir);
    nn_name_list classes;
    NN_TRY(nn_list_entries(dir, 1, &classes));
    if (classes.count == 0) {
        nn_name_list_free(&classes);
        return nn_set_error(NN_ERR_IO,
                            "%s: no class folders (expected DIR/<class>/<image>, e.g. mnist/0/...)",
                            dir);
    }
    folder_loader loader = {out, 0};
    nn_status status = NN_OK;
    char class_dir[4096];
    for (int c = 0; status == NN_OK && c < classes.count; c++) {
        status = nn_join_path(class_dir, sizeof class_dir, dir, classes.names[c]);
        if (status == NN_OK) status = load_class(&loader, class_dir, c);
    }
    if (status != NN_OK) {
        nn_name_list_free(&classes);
        nn_dataset_free(out);
        return status;
    }
    out->classes = classes.count;
    out->class_names = classes.names; /* the dataset keeps the sorted names */
    return NN_OK;
}
