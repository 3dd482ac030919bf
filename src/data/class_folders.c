/* The walk of labelled image folders, DIR/<class>/<file> (class_folders.h). */
#include "data/class_folders.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "data/dataset_internal.h"

/* Names of folder entries. */
typedef struct name_list {
    char **names;
    int count, capacity;
} name_list;

static void name_list_free(name_list *list) {
    for (int i = 0; i < list->count; i++) free(list->names[i]);
    free(list->names);
    memset(list, 0, sizeof *list);
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

bool nn_folder_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Sorted entries of `dir` (hidden ones skipped) that are folders when
 * `want_dirs`, else regular files. */
static nn_status list_entries(const char *dir, bool want_dirs, name_list *out) {
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
        name_list_free(out);
        return status;
    }
    /* An empty folder leaves names NULL, which qsort must not be given (UBSan). */
    if (out->count > 1) qsort(out->names, (size_t)out->count, sizeof *out->names, compare_names);
    return NN_OK;
}

/* Offers the files of one class folder; NN_ERR_IO when none was kept. */
static nn_status walk_class(nn_class_walk *walk, const char *class_dir, int label) {
    name_list files;
    NN_TRY(list_entries(class_dir, false, &files));
    int64_t kept = 0;
    nn_status status = NN_OK;
    char path[4096], why[256];
    for (int i = 0; status == NN_OK && i < files.count; i++) {
        status = nn_join_path(path, sizeof path, class_dir, files.names[i]);
        if (status != NN_OK) break;
        bool taken = false;
        why[0] = '\0';
        status = walk->take(walk->user, path, label, &taken, why, sizeof why);
        if (status != NN_OK) break;
        if (taken) {
            kept++;
        } else if ((*walk->skipped)++ == 0) {
            snprintf(walk->first_skipped, NN_CLASS_WALK_WHY, "%.400s: %.100s", path, why);
        }
    }
    name_list_free(&files);
    if (status == NN_OK && kept == 0)
        status = nn_set_error(NN_ERR_IO, "%s: class folder has no %s", class_dir, walk->wanted);
    return status;
}

nn_status nn_walk_class_folders(const char *dir, nn_class_walk *walk) {
    *walk->class_names = NULL;
    *walk->classes = 0;
    *walk->skipped = 0;
    walk->first_skipped[0] = '\0';
    if (!nn_folder_exists(dir)) return nn_set_error(NN_ERR_IO, "%s: no such folder", dir);
    name_list classes;
    NN_TRY(list_entries(dir, true, &classes));
    if (classes.count == 0) {
        name_list_free(&classes);
        return nn_set_error(NN_ERR_IO, "%s: no class folders (expected DIR/<class>/<image>, e.g. %s/...)", dir,
                            walk->example);
    }
    nn_status status = NN_OK;
    char class_dir[4096];
    for (int c = 0; status == NN_OK && c < classes.count; c++) {
        status = nn_join_path(class_dir, sizeof class_dir, dir, classes.names[c]);
        if (status == NN_OK) status = walk_class(walk, class_dir, c);
    }
    if (status != NN_OK) {
        name_list_free(&classes);
        return status;
    }
    *walk->class_names = classes.names; /* the caller's from here on */
    *walk->classes = classes.count;
    return NN_OK;
}
