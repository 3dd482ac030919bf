#include "atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int64_t nn_atomic_fail_after_bytes = -1;

struct nn_atomic_file {
    const char *who;
    char *path;     /* destination */
    char *tmp_path; /* "<path>.tmp.<pid>.<n>": same directory, so rename is atomic */
    FILE *stream;
    int64_t written;
};

static void free_file(nn_atomic_file *f) {
    free(f->path);
    free(f->tmp_path);
    free(f);
}

nn_atomic_file *nn_atomic_open(const char *who, const char *path) {
    if (!path || !*path) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: path is NULL or empty", who);
    nn_atomic_file *f = calloc(1, sizeof *f);
    size_t len = strlen(path);
    if (f) {
        f->who = who;
        f->path = strdup(path);
        f->tmp_path = malloc(len + 64);
    }
    if (!f || !f->path || !f->tmp_path) {
        if (f) free_file(f);
        return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: %s: out of host memory", who, path);
    }
    /* O_EXCL with a fresh name (not mkstemp) so the file gets the usual
     * 0666 & ~umask permissions rather than mkstemp's 0600. */
    static int counter;
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        snprintf(f->tmp_path, len + 64, "%s.tmp.%ld.%d", path, (long)getpid(),
                 __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
        fd = open(f->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
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
        unlink(f->tmp_path);
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
    unlink(f->tmp_path);
    free_file(f);
}

/* The directory holding `path` ("." when it has no slash). */
static int open_parent_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (slash == path) return open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    size_t len = (size_t)(slash - path);
    char *dir = malloc(len + 1);
    if (!dir) return -1;
    memcpy(dir, path, len);
    dir[len] = '\0';
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    return fd;
}

nn_status nn_atomic_commit(nn_atomic_file *f) {
    const char *step = NULL;
    if (fflush(f->stream) != 0) step = "flush";
    else if (fsync(fileno(f->stream)) != 0) step = "fsync";
    int err = errno;
    int closed = fclose(f->stream);
    f->stream = NULL;
    if (!step && closed != 0) {
        step = "close";
        err = errno;
    }
    if (!step && rename(f->tmp_path, f->path) != 0) {
        step = "rename";
        err = errno;
    }
    if (step) {
        nn_status s = nn_set_error(NN_ERR_IO, "%s: %s: %s of the temporary file failed: %s",
                                   f->who, f->path, step, strerror(err));
        nn_atomic_abort(f);
        return s;
    }
    /* The new file is in place; make the directory entry durable too. A
     * failure here is reported: the caller cannot be sure it survives a crash. */
    nn_status status = NN_OK;
    int dir = open_parent_dir(f->path);
    if (dir < 0 || fsync(dir) != 0)
        status = nn_set_error(NN_ERR_IO, "%s: %s: written, but syncing its directory failed: %s",
                              f->who, f->path, strerror(errno));
    if (dir >= 0) close(dir);
    free_file(f);
    return status;
}
