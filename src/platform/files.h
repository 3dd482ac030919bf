/* Files by UTF-8 path on every system: POSIX calls on Linux; on Windows the
 * path is converted to UTF-16 for the wide calls, so names outside the ANSI
 * code page (non-ASCII folders, user names) work. Same return conventions as
 * POSIX (-1 / NULL with errno set). */
#ifndef NN_PLATFORM_FILES_H
#define NN_PLATFORM_FILES_H

#include <stdio.h>
#include <sys/stat.h>

#ifdef _WIN32
typedef struct _stat64 nn_file_status;
/* Kinds of file Windows does not have. */
#ifndef S_ISLNK
#define S_ISLNK(mode) 0
#endif
#ifndef S_ISSOCK
#define S_ISSOCK(mode) 0
#endif
#ifndef S_ISBLK
#define S_ISBLK(mode) 0
#endif
#else
typedef struct stat nn_file_status;
#endif

FILE *nn_file_fopen(const char *path, const char *mode);
int nn_file_stat(const char *path, nn_file_status *status);
/* The link itself rather than its target (Windows: as nn_file_stat). */
int nn_file_lstat(const char *path, nn_file_status *status);
int nn_file_fstat(int fd, nn_file_status *status);
/* Opens for reading without waiting on a FIFO with no writer, never the
 * controlling terminal, closed on exec; nn_file_make_blocking undoes the
 * first before reading. */
int nn_file_open_for_inspection(const char *path);
int nn_file_make_blocking(int fd);
/* Creates a new file (fails with EEXIST when there is one), binary, closed on exec. */
int nn_file_create_new(const char *path, int mode);
/* Copies mode and owner (where permitted) of `old` to the open file (Windows:
 * nothing to copy, the folder's access rules apply). */
int nn_file_keep_mode(int fd, const nn_file_status *old);
/* Everything written to the descriptor reaches the disk. */
int nn_file_sync(int fd);
/* Renames `from` over `to` in one step (MoveFileExW with write-through on
 * Windows, which makes the rename itself durable too). */
int nn_file_replace(const char *from, const char *to);
/* Makes the last rename in the folder holding `path` durable (Windows:
 * nn_file_replace already did). */
int nn_file_sync_folder_of(const char *path);
int nn_file_remove(const char *path);
int nn_file_make_folder(const char *path);
/* The folder and any missing folders above it (mkdir -p): 0 when it exists
 * afterwards, -1 with errno from the first folder that could not be made. */
int nn_file_make_folders(const char *path);
/* Removes an empty folder. */
int nn_file_remove_folder(const char *path);
/* The absolute path with links resolved, malloc'd; NULL with errno set. */
char *nn_file_resolve(const char *path);
/* The position of the last path separator in `path` ('/', and '\\' on Windows), or NULL. */
const char *nn_file_last_separator(const char *path);
/* Descriptors 0, 1 and 2 open (on /dev/null where one was closed), so a
 * file a program opens never becomes its standard output by chance: with
 * stdout closed (`>&-`) a log opened first would take descriptor 1 and
 * receive what the program prints (Windows: nothing to do). */
void nn_file_keep_standard_streams_open(void);

#endif
