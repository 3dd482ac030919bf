#include "file_read.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "platform/files.h"

const char *nn_file_kind_name(unsigned mode) {
    if (S_ISREG(mode)) return "a regular file";
    if (S_ISDIR(mode)) return "a folder";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISLNK(mode)) return "a symbolic link";
    return "not a regular file";
}

int nn_open_regular_fd(const char *path, int64_t *size, char *why, size_t why_size) {
    /* O_NONBLOCK: opening a FIFO with no writer returns at once instead of
     * waiting; fstat of the opened descriptor then decides (no race with a
     * stat of the name). */
    int fd = nn_file_open_for_inspection(path);
    if (fd < 0) {
        int err = errno;
        nn_file_status st; /* Windows refuses to open a folder (EACCES): say what it is */
        if (nn_file_stat(path, &st) == 0 && !S_ISREG(st.st_mode))
            snprintf(why, why_size, "is %s, not a regular file", nn_file_kind_name(st.st_mode));
        else
            snprintf(why, why_size, "cannot open (%s)", strerror(err));
        return -1;
    }
    nn_file_status st;
    if (nn_file_fstat(fd, &st) != 0) {
        snprintf(why, why_size, "cannot read its status (%s)", strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, why_size, "is %s, not a regular file", nn_file_kind_name(st.st_mode));
        close(fd);
        return -1;
    }
    if (nn_file_make_blocking(fd) != 0) {
        snprintf(why, why_size, "cannot read (%s)", strerror(errno));
        close(fd);
        return -1;
    }
    *size = (int64_t)st.st_size;
    return fd;
}

FILE *nn_open_regular_file(const char *path, int64_t *size, char *why, size_t why_size) {
    int fd = nn_open_regular_fd(path, size, why, why_size);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        snprintf(why, why_size, "cannot read (%s)", strerror(errno));
        close(fd);
    }
    return f;
}
