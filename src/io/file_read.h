/* Opening a user-given path for reading: only a regular file (after
 * following links) is opened, and a FIFO, socket or device node is refused
 * without blocking (a FIFO with no writer would make open() or read() wait
 * forever). Every reader of a path a user gives (weights, training states,
 * IDX files, images) opens it here. */
#ifndef NN_IO_FILE_READ_H
#define NN_IO_FILE_READ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A descriptor open for reading (close-on-exec, blocking again), its size in
 * *size; -1 with the reason (no path) in `why`: "cannot open (...)", "is a
 * FIFO, not a regular file", ... */
int nn_open_regular_fd(const char *path, int64_t *size, char *why, size_t why_size);
/* The same as a stdio stream ("rb"); NULL with the reason. */
FILE *nn_open_regular_file(const char *path, int64_t *size, char *why, size_t why_size);
/* What a file of mode st_mode is, for messages: "a FIFO", "a folder", ... */
const char *nn_file_kind_name(unsigned mode);

#endif
