/* Atomic file replacement: write everything to a temporary file in the
 * destination's directory, flush and fsync it, rename it over the
 * destination, then fsync the directory so the rename itself survives a
 * crash. Until the rename, the old file (if any) is untouched; any failure
 * removes the temporary file and leaves the destination as it was.
 * Only a regular file is replaced, keeping its mode (and owner where
 * permitted); a symbolic link to one is written through (the link stays,
 * its target is replaced, as torch.save does); anything else (a folder, a
 * FIFO, a device node, a dangling link) is refused. Temporary files in
 * flight are removed by nn_atomic_cleanup_all (nn_io.h) on a signal. */
#ifndef NN_IO_ATOMIC_FILE_H
#define NN_IO_ATOMIC_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

typedef struct nn_atomic_file nn_atomic_file;

/* Create the temporary file next to `path`. `who` prefixes error messages
 * (e.g. "nn_save_module"). NULL on failure, with the error set. */
nn_atomic_file *nn_atomic_open(const char *who, const char *path);
/* Append bytes. On failure the file is still open: call nn_atomic_abort. */
nn_status nn_atomic_write(nn_atomic_file *f, const void *data, size_t size);
/* Flush, fsync, rename over the destination, fsync the directory; frees f
 * in every case (on failure the temporary file is removed). */
nn_status nn_atomic_commit(nn_atomic_file *f);
/* Drop the temporary file and free f. NULL is ignored. */
void nn_atomic_abort(nn_atomic_file *f);

/* Test hook: when >= 0, the write that would take the file past this many
 * bytes fails as a full disk would (ENOSPC), so tests can check that a
 * failure mid-write leaves the old file intact. -1 (the default) = off.
 * Not thread-safe; only tests set it. */
extern int64_t nn_atomic_fail_after_bytes;

#endif
