#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#ifdef _WIN32
#include <io.h>
#include <windows.h>
#include <direct.h>

/* A malloc'd UTF-16 copy of a UTF-8 string; NULL with errno set (EINVAL for
 * bytes that are not UTF-8). */
static wchar_t *widen(const char *text) {
    int count = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, text, -1, NULL, 0);
    if (count <= 0) {
        errno = EINVAL;
        return NULL;
    }
    wchar_t *wide = malloc((size_t)count * sizeof *wide);
    if (!wide) {
        errno = ENOMEM;
        return NULL;
    }
    MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, text, -1, wide, count);
    return wide;
}

FILE *nn_file_fopen(const char *path, const char *mode) {
    wchar_t *wide_path = widen(path), *wide_mode = widen(mode);
    FILE *f = wide_path && wide_mode ? _wfopen(wide_path, wide_mode) : NULL;
    free(wide_path);
    free(wide_mode);
    return f;
}

int nn_file_stat(const char *path, nn_file_status *status) {
    wchar_t *wide = widen(path);
    int result = wide ? _wstat64(wide, status) : -1;
    free(wide);
    return result;
}

int nn_file_lstat(const char *path, nn_file_status *status) { return nn_file_stat(path, status); }
int nn_file_fstat(int fd, nn_file_status *status) { return _fstat64(fd, status); }

static int open_wide(const char *path, int flags, int mode) {
    wchar_t *wide = widen(path);
    int fd = wide ? _wopen(wide, flags | _O_BINARY | _O_NOINHERIT, mode) : -1;
    free(wide);
    return fd;
}

int nn_file_open_for_inspection(const char *path) { return open_wide(path, _O_RDONLY, 0); }
int nn_file_make_blocking(int fd) { return 0; }

/* FILE_SHARE_DELETE: the Ctrl+C handler's nn_atomic_cleanup_all can delete
 * a temporary file while its save still holds it open (it goes with the
 * last handle, at the process's exit), as unlink does on Linux. */
int nn_file_create_new(const char *path, int mode) {
    wchar_t *wide = widen(path);
    HANDLE handle = wide ? CreateFileW(wide, GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_DELETE, NULL, CREATE_NEW,
                                       FILE_ATTRIBUTE_NORMAL, NULL)
                         : INVALID_HANDLE_VALUE;
    free(wide);
    if (handle == INVALID_HANDLE_VALUE) {
        DWORD error = GetLastError();
        if (wide) errno = error == ERROR_FILE_EXISTS || error == ERROR_ALREADY_EXISTS ? EEXIST
                          : error == ERROR_PATH_NOT_FOUND || error == ERROR_FILE_NOT_FOUND ? ENOENT
                                                                                             : EACCES;
        return -1;
    }
    int fd = _open_osfhandle((intptr_t)handle, _O_WRONLY | _O_BINARY);
    if (fd < 0) CloseHandle(handle);
    return fd;
}

int nn_file_keep_mode(int fd, const nn_file_status *old) { return 0; }
int nn_file_sync(int fd) { return _commit(fd); }

int nn_file_replace(const char *from, const char *to) {
    wchar_t *wide_from = widen(from), *wide_to = widen(to);
    int result = -1;
    if (wide_from && wide_to) {
        if (MoveFileExW(wide_from, wide_to, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)) result = 0;
        else errno = GetLastError() == ERROR_ACCESS_DENIED ? EACCES : EIO;
    }
    free(wide_from);
    free(wide_to);
    return result;
}

int nn_file_sync_folder_of(const char *path) { return 0; }

int nn_file_remove(const char *path) {
    wchar_t *wide = widen(path);
    int result = wide ? _wunlink(wide) : -1;
    free(wide);
    return result;
}

int nn_file_make_folder(const char *path) {
    wchar_t *wide = widen(path);
    int result = wide ? _wmkdir(wide) : -1;
    free(wide);
    return result;
}

int nn_file_remove_folder(const char *path) {
    wchar_t *wide = widen(path);
    int result = wide ? _wrmdir(wide) : -1;
    free(wide);
    return result;
}

char *nn_file_resolve(const char *path) {
    wchar_t *wide = widen(path);
    wchar_t *full = wide ? _wfullpath(NULL, wide, 0) : NULL;
    free(wide);
    if (!full) return NULL;
    int bytes = WideCharToMultiByte(CP_UTF8, 0, full, -1, NULL, 0, NULL, NULL);
    char *utf8 = bytes > 0 ? malloc((size_t)bytes) : NULL;
    if (utf8) WideCharToMultiByte(CP_UTF8, 0, full, -1, utf8, bytes, NULL, NULL);
    free(full);
    return utf8;
}

const char *nn_file_last_separator(const char *path) {
    const char *slash = strrchr(path, '/'), *backslash = strrchr(path, '\\');
    return slash > backslash ? slash : backslash;
}

void nn_file_keep_standard_streams_open(void) {}
#else
#include <unistd.h>

FILE *nn_file_fopen(const char *path, const char *mode) { return fopen(path, mode); }
int nn_file_stat(const char *path, nn_file_status *status) { return stat(path, status); }
int nn_file_lstat(const char *path, nn_file_status *status) { return lstat(path, status); }
int nn_file_fstat(int fd, nn_file_status *status) { return fstat(fd, status); }

int nn_file_open_for_inspection(const char *path) {
    return open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
}

int nn_file_make_blocking(int fd) {
    int flags = fcntl(fd, F_GETFL);
    return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
}

int nn_file_create_new(const char *path, int mode) { return open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode); }

int nn_file_keep_mode(int fd, const nn_file_status *old) {
    /* The owner only where permitted (root, or the same owner already). */
    if (fchown(fd, old->st_uid, old->st_gid) != 0) (void)0;
    return fchmod(fd, old->st_mode & 07777);
}

int nn_file_sync(int fd) { return fsync(fd); }
int nn_file_replace(const char *from, const char *to) { return rename(from, to); }

int nn_file_sync_folder_of(const char *path) {
    const char *slash = strrchr(path, '/');
    int fd;
    if (!slash || slash == path) {
        fd = open(slash ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    } else {
        size_t len = (size_t)(slash - path);
        char *dir = malloc(len + 1);
        if (!dir) return -1;
        memcpy(dir, path, len);
        dir[len] = '\0';
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        free(dir);
    }
    if (fd < 0) return -1;
    int result = fsync(fd);
    int err = errno;
    close(fd);
    errno = err;
    return result;
}

int nn_file_remove(const char *path) { return unlink(path); }
int nn_file_make_folder(const char *path) { return mkdir(path, 0777); }
int nn_file_remove_folder(const char *path) { return rmdir(path); }
char *nn_file_resolve(const char *path) { return realpath(path, NULL); }
const char *nn_file_last_separator(const char *path) { return strrchr(path, '/'); }

void nn_file_keep_standard_streams_open(void) {
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        const int opened = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY); /* the lowest free: fd */
        if (opened >= 0 && opened != fd) close(opened);
    }
}
#endif

int nn_file_make_folders(const char *path) {
    const size_t length = strlen(path);
    char *prefix = malloc(length + 1);
    if (!prefix) {
        errno = ENOMEM;
        return -1;
    }
    memcpy(prefix, path, length + 1);
    for (char *at = prefix + 1; *at; at++) {
#ifdef _WIN32
        const bool separator = *at == '/' || *at == '\\';
#else
        const bool separator = *at == '/';
#endif
        if (!separator || at[-1] == ':') continue; /* "C:\\" is no folder to make */
        const char kept = *at;
        *at = '\0';
        nn_file_make_folder(prefix); /* fails harmlessly where it exists; the last one says */
        *at = kept;
    }
    const int made = nn_file_make_folder(prefix);
    const int error = errno;
    free(prefix);
    nn_file_status st;
    if (made == 0 || (error == EEXIST && nn_file_stat(path, &st) == 0 && S_ISDIR(st.st_mode))) return 0;
    errno = error;
    return -1;
}
