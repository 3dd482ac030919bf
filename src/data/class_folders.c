/* The walk of labelled image folders, DIR/<class>/<file> (class_folders.h). */
#include "data/class_folders.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "data/dataset_internal.h"
#include "platform/files.h"

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

/* Entries of DIR and its class folders that are neither, counted by kind
 * for the walk's one-line summary. */
enum { ODD_DANGLING, ODD_LINK_LOOP, ODD_FIFO, ODD_SOCKET, ODD_DEVICE, ODD_FOLDER, ODD_FOLDER_LOOP,
       ODD_UNREADABLE, ODD_KINDS };
static const char *const kOddNames[ODD_KINDS][2] = {
    {"dangling link", "dangling links"}, {"link loop", "link loops"}, {"FIFO", "FIFOs"},
    {"socket", "sockets"},               {"device", "devices"},       {"folder", "folders"},
    {"folder loop", "folder loops"},     {"unreadable entry", "unreadable entries"}};
typedef struct odd_entries {
    int64_t count[ODD_KINDS];
    dev_t top_dev; /* DIR and its ancestors: a class folder linking to one is a loop */
    ino_t top_ino[64];
    int top_count;
} odd_entries;

/* What a skipped entry is: an entry that stat could not follow, or one of
 * the wrong type (-1 for one that is skipped silently: a plain file among
 * the class folders, such as a README). */
static int odd_kind(const char *path, int stat_errno, const nn_file_status *st, bool want_dirs) {
    if (stat_errno) {
        nn_file_status link;
        if (nn_file_lstat(path, &link) == 0 && S_ISLNK(link.st_mode))
            return stat_errno == ELOOP ? ODD_LINK_LOOP : ODD_DANGLING;
        return ODD_UNREADABLE;
    }
    if (S_ISFIFO(st->st_mode)) return ODD_FIFO;
    if (S_ISSOCK(st->st_mode)) return ODD_SOCKET;
    if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) return ODD_DEVICE;
    if (!want_dirs && S_ISDIR(st->st_mode)) return ODD_FOLDER;
    return -1;
}

static bool is_top_or_ancestor(const odd_entries *odd, const nn_file_status *st) {
    if (st->st_ino == 0) return false; /* no file numbers (Windows): loops cannot be told apart */
    for (int i = 0; i < odd->top_count; i++)
        if (st->st_dev == odd->top_dev && st->st_ino == odd->top_ino[i]) return true;
    return false;
}

/* Records DIR and the folders above it (a link to any of them would walk in circles). */
static void note_top(odd_entries *odd, const char *dir) {
    char *real = nn_file_resolve(dir);
    if (!real) return;
    nn_file_status st;
    for (size_t len = strlen(real); odd->top_count < 64; ) {
        real[len] = '\0';
        if (nn_file_stat(len ? real : "/", &st) != 0) break;
        odd->top_dev = st.st_dev;
        odd->top_ino[odd->top_count++] = st.st_ino;
        if (len == 0) break;
        const char *slash = nn_file_last_separator(real);
        len = slash ? (size_t)(slash - real) : 0;
    }
    free(real);
}

/* "skipped 3 entries in DIR: 2 dangling links, 1 FIFO", or "" when none. */
static void summarise(const odd_entries *odd, const char *dir, char *out, size_t size) {
    int64_t total = 0;
    for (int k = 0; k < ODD_KINDS; k++) total += odd->count[k];
    out[0] = '\0';
    if (total == 0) return;
    size_t used = (size_t)snprintf(out, size, "skipped %lld entr%s in %s:", (long long)total,
                                   total == 1 ? "y" : "ies", dir);
    const char *sep = " ";
    for (int k = 0; k < ODD_KINDS && used < size; k++) {
        if (!odd->count[k]) continue;
        used += (size_t)snprintf(out + used, size - used, "%s%lld %s", sep, (long long)odd->count[k],
                                 kOddNames[k][odd->count[k] != 1]);
        sep = ", ";
    }
}

/* Whether a file name is an IDX file's (train-images-idx3-ubyte.gz, ...). */
static bool is_idx_name(const char *name) {
    return strstr(name, "-idx") && strstr(name, "-ubyte");
}

bool nn_folder_exists(const char *path) {
    nn_file_status st;
    return nn_file_stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

nn_status nn_folder_check(const char *dir) {
    nn_file_status st;
    if (nn_file_stat(dir, &st) != 0) return nn_set_error(NN_ERR_IO, "%s: no such folder", dir);
    if (S_ISDIR(st.st_mode)) return NN_OK;
    return nn_set_error(NN_ERR_IO, "%s: %s, not a folder (give the folder that holds the data)", dir,
                        S_ISREG(st.st_mode) ? "a file" : "an entry");
}

/* Sorted entries of `dir` (hidden ones skipped) that are folders when
 * `want_dirs`, else regular files. */
static nn_status list_entries(const char *dir, bool want_dirs, name_list *out, odd_entries *odd) {
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
        nn_file_status st;
        int stat_errno = nn_file_stat(path, &st) == 0 ? 0 : errno;
        int odd_kind_of = odd_kind(path, stat_errno, &st, want_dirs);
        if (odd_kind_of < 0 && want_dirs && S_ISDIR(st.st_mode) && is_top_or_ancestor(odd, &st))
            odd_kind_of = ODD_FOLDER_LOOP;
        if (odd_kind_of >= 0) odd->count[odd_kind_of]++;
        if (odd_kind_of >= 0 || (want_dirs ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))) continue;
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
static nn_status walk_class(nn_class_walk *walk, const char *class_dir, int label, odd_entries *odd) {
    name_list files;
    NN_TRY(list_entries(class_dir, false, &files, odd));
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
    const char *idx_file = NULL;
    for (int i = 0; status == NN_OK && kept == 0 && i < files.count && !idx_file; i++)
        if (is_idx_name(files.names[i])) idx_file = files.names[i];
    if (idx_file)
        status = nn_set_error(NN_ERR_IO, "%s holds IDX files (%s), not images of a class: give that folder "
                                         "itself as the data folder (Fashion-MNIST-style IDX data)",
                              class_dir, idx_file);
    else if (status == NN_OK && kept == 0)
        status = nn_set_error(NN_ERR_IO, "%s: class folder has no %s", class_dir, walk->wanted);
    name_list_free(&files);
    return status;
}

nn_status nn_walk_class_folders(const char *dir, nn_class_walk *walk) {
    *walk->class_names = NULL;
    *walk->classes = 0;
    *walk->skipped = 0;
    walk->first_skipped[0] = '\0';
    walk->skipped_entries[0] = '\0';
    NN_TRY(nn_folder_check(dir));
    odd_entries odd = {0};
    note_top(&odd, dir);
    name_list classes;
    NN_TRY(list_entries(dir, true, &classes, &odd));
    if (classes.count == 0) {
        name_list_free(&classes);
        return nn_set_error(NN_ERR_IO, "%s: no class folders (expected DIR/<class>/<image>, e.g. %s/...)", dir,
                            walk->example);
    }
    nn_status status = NN_OK;
    char class_dir[4096];
    /* A class's name is saved with the weights and printed: no control characters in it. */
    for (int c = 0; status == NN_OK && c < classes.count; c++)
        for (const unsigned char *p = (const unsigned char *)classes.names[c]; status == NN_OK && *p; p++)
            if (*p < 0x20 || *p == 0x7f)
                status = nn_set_error(NN_ERR_IO, "%s: class folder %d's name holds a control character (byte 0x%02x "
                                                 "at %d): rename it", dir, c, *p,
                                      (int)(p - (const unsigned char *)classes.names[c]));
    for (int c = 0; status == NN_OK && c < classes.count; c++) {
        status = nn_join_path(class_dir, sizeof class_dir, dir, classes.names[c]);
        if (status == NN_OK) status = walk_class(walk, class_dir, c, &odd);
    }
    summarise(&odd, dir, walk->skipped_entries, NN_CLASS_WALK_WHY);
    if (status != NN_OK) {
        name_list_free(&classes);
        return status;
    }
    *walk->class_names = classes.names; /* the caller's from here on */
    *walk->classes = classes.count;
    return NN_OK;
}
