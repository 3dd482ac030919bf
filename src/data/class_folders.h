/* Labelled image folders, DIR/<class>/<file>: one sub-folder per class,
 * sorted by name (label = position), each file offered in name order. The
 * one walk of that layout, shared by the dataset loader (image_folder.c,
 * decoding every image) and the photo index (image_index.c, checking each
 * file's signature), with the checks and messages both give. */
#ifndef NN_DATA_CLASS_FOLDERS_H
#define NN_DATA_CLASS_FOLDERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nn_error.h"

/* Takes the file at `path`, of class `label`, and says in *kept whether it
 * did; a file it skips is counted, with the reason it writes to `why`. A
 * status other than NN_OK, with its message, ends the walk. */
typedef nn_status (*nn_class_file_fn)(void *user, const char *path, int label, bool *kept, char *why,
                                      size_t why_size);

typedef struct nn_class_walk {
    /* Given. */
    nn_class_file_fn take;
    void *user;
    const char *example; /* a class folder, shown when DIR has none: "mnist/0" */
    const char *wanted;  /* what each class folder must keep one of: "PNG or JPEG image" */
    /* Where the walk writes what it found (the caller's dataset or index;
     * class_names only after a walk that succeeded). */
    char ***class_names;   /* sorted, label = position; the caller frees each and the array */
    int *classes;
    int64_t *skipped;      /* files `take` skipped */
    char *first_skipped;   /* [NN_CLASS_WALK_WHY]: the first of them, "path: why" */
    /* [NN_CLASS_WALK_WHY]: entries that are no file or folder to take, in one
     * line: "skipped 3 entries in DIR: 2 dangling links, 1 FIFO"; "" if none. */
    char *skipped_entries;
} nn_class_walk;

#define NN_CLASS_WALK_WHY 512
/* The destinations of a walk into `out`, a dataset or an index (fields
 * class_names, classes, skipped and first_skipped[NN_CLASS_WALK_WHY]). */
#define NN_CLASS_WALK_INTO(out)                                                                        \
    .class_names = &(out)->class_names, .classes = &(out)->classes, .skipped = &(out)->skipped,         \
    .first_skipped = (out)->first_skipped, .skipped_entries = (out)->skipped_entries

/* Offers every file of DIR's class folders to walk->take. NN_ERR_IO naming
 * DIR when it is no folder or holds no class folder, naming a class folder
 * where none of its files was kept (saying so when it holds IDX files); a
 * failure of `take` as it returned it. A class folder that is DIR or a
 * folder above it (a link loop) is skipped and counted. */
nn_status nn_walk_class_folders(const char *dir, nn_class_walk *walk);

/* Whether `path` is a folder (following links). */
bool nn_folder_exists(const char *path);
/* NN_OK when `dir` is a folder, else an I/O error saying what it is: no
 * such folder, or a file (or other entry) that is not a folder. */
nn_status nn_folder_check(const char *dir);

#endif
