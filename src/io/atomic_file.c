#include "atomic_file.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/file_read.h"
#include "nn_io.h"
#include "platform/files.h"

int64_t nn_atomic_fail_after_bytes = -1;

struct nn_atomic_file {
    const char *who;
    char *path;     /* destination as given */
    char *target;   /* what is replaced: path, or the regular file a link at path points to */
    char *tmp_path; /* "<target>.tmp.<pid>.<n>": same directory, so rename is atomic */
    FILE *stream;
    int64_t written;
    int slot;       /* in the in-flight table, or -1 */
};

/* ---- the temporary files in flight, for a signal handler ----
 * A fixed table of paths: registering writes the path, then publishes it;
 * nn_atomic_cleanup_all only reads published slots and calls unlink, both
 * async-signal-safe. A save that finds the table full still works, it is
 * just not removed on a signal. */
#define IN_FLIGHT_SLOTS 32
#define SLOT_FREE 0
#define SLOT_FILLING 1
#define SLOT_PUBLISHED 2
static struct {
    int state;
    char path[PATH_MAX];
} in_flight[IN_FLIGHT_SLOTS];

static int register_temp(const char *tmp_path) {
    if (strlen(tmp_path) >= PATH_MAX) return -1;
    for (int i = 0; i < IN_FLIGHT_SLOTS; i++) {
        int expected = SLOT_FREE;
        if (!__atomic_compare_exchange_n(&in_flight[i].state, &expected, SLOT_FILLING, false,
                                         __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            continue;
        strcpy(in_flight[i].path, tmp_path);
        __atomic_store_n(&in_flight[i].state, SLOT_PUBLISHED, __ATOMIC_RELEASE);
        return i;
    }
    return -1;
}

static void unregister_temp(int slot) {
    if (slot >= 0) __atomic_store_n(&in_flight[slot].state, SLOT_FREE, __ATOMIC_RELEASE);
}

void nn_atomic_cleanup_all(void) {
    for (int i = 0; i < IN_FLIGHT_SLOTS; i++)
        if (__atomic_load_n(&in_flight[i].state, __ATOMIC_ACQUIRE) == SLOT_PUBLISHED) nn_file_remove(in_flight[i].path);
}

static void free_file(nn_atomic_file *f) {
    unregister_temp(f->slot);
    free(f->path);
    free(f->target);
    free(f->tmp_path);
    free(f);
}

/* The file a save to `path` replaces: `path` itself, or, for a symbolic
 * link, the file it points to (the link stays a link, as with torch.save
 * and most tools, which write through it). Only a regular file or nothing
 * may be there: *old says which (with its mode and owner). NULL with the
 * error set otherwise. */
static char *replaced_file(const char *who, const char *path, nn_file_status *old, bool *exists) {
    nn_file_status st;
    *exists = false;
    if (nn_file_lstat(path, &st) != 0) {
        if (errno != ENOENT)
            return NN_FAIL_NULL(NN_ERR_IO, "%s: %s: cannot inspect it: %s", who, path, strerror(errno));
        return strdup(path);
    }
    char *target = S_ISLNK(st.st_mode) ? nn_file_resolve(path) : strdup(path);
    if (!target && S_ISLNK(st.st_mode))
        return NN_FAIL_NULL(NN_ERR_IO, "%s: %s: a symbolic link whose target cannot be resolved (%s); "
                                       "refusing to replace it", who, path, strerror(errno));
    if (!target) return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: %s: out of host memory", who, path);
    if (nn_file_stat(target, &st) != 0 || !S_ISREG(st.st_mode)) {
        const char *kind = nn_file_stat(target, &st) == 0 ? nn_file_kind_name(st.st_mode) : strerror(errno);
        free(target);
        return NN_FAIL_NULL(NN_ERR_IO, "%s: %s is %s, not a regular file; refusing to replace it", who,
                            path, kind);
    }
    *old = st;
    *exists = true;
    return target;
}

/* Creates the temporary file next to `target`: O_EXCL with a fresh name (not
 * mkstemp), so that a new file gets the usual 0666 & ~umask permissions and
 * a replaced one keeps its own. */
static int create_temp(nn_atomic_file *f, size_t room, const nn_file_status *old, bool replaces) {
    static int counter;
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        snprintf(f->tmp_path, room, "%s.tmp.%ld.%d", f->target, (long)getpid(),
                 __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
        fd = nn_file_create_new(f->tmp_path, replaces ? 0600 : 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) return -1;
    f->slot = register_temp(f->tmp_path);
    if (replaces) {
        if (nn_file_keep_mode(fd, old) != 0) {
            int err = errno;
            close(fd);
            nn_file_remove(f->tmp_path);
            errno = err;
            return -1;
        }
    }
    return fd;
}

nn_atomic_file *nn_atomic_open(const char *who, const char *path) {
    if (!path || !*path) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: path is NULL or empty", who);
    nn_file_status old;
    bool replaces;
    char *target = replaced_file(who, path, &old, &replaces);
    if (!target) return NULL;
    nn_atomic_file *f = calloc(1, sizeof *f);
    size_t room = strlen(target) + 64;
    if (f) {
        f->who = who;
        f->slot = -1;
        f->target = target;
        f->path = strdup(path);
        f->tmp_path = malloc(room);
    }
    if (!f || !f->path || !f->tmp_path) {
        if (f) free_file(f);
        else free(target);
        return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: %s: out of host memory", who, path);
    }
    int fd = create_temp(f, room, &old, replaces);
    if (fd < 0) {
        int err = errno;
        free_file(f);
        return NN_FAIL_NULL(NN_ERR_IO, "%s: %s: cannot create a temporary file next to it: %s",
                            who, path, strerror(err));
    }
    f->stream = fdopen(fd, "wb");
    if (!f->stream) {
        int err = errno;
        close(fd);
        nn_file_remove(f->tmp_path);
        free_file(f);
        return NN_FAIL_NULL(NN_ERR_IO, "%s: %s: %s", who, path, strerror(err));
    }
    return f;
}

nn_status nn_atomic_write(nn_atomic_file *f, const void *data, size_t size) {
    if (nn_atomic_fail_after_bytes >= 0 && f->written + (int64_t)size > nn_atomic_fail_after_bytes)
        return nn_set_error(NN_ERR_IO, "%s: %s: write failed after %lld bytes: %s", f->who,
                            f->path, (long long)f->written, strerror(ENOSPC));
    if (size && fwrite(data, 1, size, f->stream) != size)
        return nn_set_error(NN_ERR_IO, "%s: %s: write failed after %lld bytes: %s", f->who,
                            f->path, (long long)f->written, strerror(errno));
    f->written += (int64_t)size;
    return NN_OK;
}

void nn_atomic_abort(nn_atomic_file *f) {
    if (!f) return;
    if (f->stream) fclose(f->stream);
    nn_file_remove(f->tmp_path);
    free_file(f);
}

nn_status nn_atomic_commit(nn_atomic_file *f) {
    const char *step = NULL;
    if (fflush(f->stream) != 0) step = "flush";
    else if (nn_file_sync(fileno(f->stream)) != 0) step = "fsync";
    int err = errno;
    int closed = fclose(f->stream);
    f->stream = NULL;
    if (!step && closed != 0) {
        step = "close";
        err = errno;
    }
    if (!step && nn_file_replace(f->tmp_path, f->target) != 0) {
        step = "rename";
        err = errno;
    }
    if (step) {
        nn_file_remove(f->tmp_path);
        nn_status s = nn_set_error(NN_ERR_IO, "%s: %s: %s of the temporary file failed: %s",
                                   f->who, f->path, step, strerror(err));
        nn_atomic_abort(f);
        return s;
    }
    /* The new file is in place; make the directory entry durable too. A
     * failure here is reported: the caller cannot be sure it survives a crash. */
    nn_status status = NN_OK;
    if (nn_file_sync_folder_of(f->target) != 0)
        status = nn_set_error(NN_ERR_IO, "%s: %s: written, but syncing its directory failed: %s",
                              f->who, f->path, strerror(errno));
    free_file(f);
    return status;
}

nn_status nn_check_writable_path(const char *path) {
    const char *who = "nn_check_writable_path";
    if (!path || !*path) return nn_set_error(NN_ERR_ARGUMENT, "%s: path is NULL or empty", who);
    nn_file_status old;
    bool exists;
    char *target = replaced_file(who, path, &old, &exists);
    if (!target) return nn_last_status();
    /* The one sure test that the folder takes new files (permissions, a
     * read-only mount, /proc): create and remove a probe file there. */
    size_t room = strlen(target) + 64;
    char *probe = malloc(room);
    nn_status status = NN_OK;
    if (!probe) {
        status = nn_set_error(NN_ERR_MEMORY, "%s: %s: out of host memory", who, path);
    } else {
        snprintf(probe, room, "%s.tmp.%ld.probe", target, (long)getpid());
        int fd = nn_file_create_new(probe, 0600);
        if (fd < 0) {
            const char *slash = nn_file_last_separator(target);
            int dir_len = !slash ? 1 : slash == target ? 1 : (int)(slash - target);
            status = nn_set_error(NN_ERR_IO, "%s: cannot write %s: cannot create files in the folder %.*s (%s)", who,
                                  path, dir_len, slash ? target : ".", strerror(errno));
        } else {
            close(fd);
            nn_file_remove(probe);
        }
    }
    free(probe);
    free(target);
    return status;
}
