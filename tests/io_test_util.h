/* Helpers shared by the file-format tests: scratch directories, raw file
 * writing and reading, and small models with random parameters. */
#ifndef NN_IO_TEST_UTIL_H
#define NN_IO_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "nn_engine.h"

/* A fresh directory under /tmp (static buffer; one at a time). */
const char *io_test_dir(void);
/* "<dir>/<name>" in a static rotating buffer. */
const char *io_test_path(const char *dir, const char *name);
/* Remove the directory and everything in it (one level deep). */
void io_test_rmdir(const char *dir);
/* Number of entries in a directory besides . and .. */
int io_test_dir_entries(const char *dir);

int io_test_write_bytes(const char *path, const void *data, size_t size);
/* The whole file (malloc'd; caller frees) or NULL. */
uint8_t *io_test_read_bytes(const char *path, size_t *size);
/* A safetensors file from a JSON header and data bytes (no padding added). */
int io_test_write_safetensors(const char *path, const char *json, const void *data, size_t size);

/* An MLP with awkward sizes: fc1 Linear(3, 5), relu, fc2 Linear(5, 7). */
nn_module *io_test_mlp(nn_ctx *ctx);
/* Overwrite every parameter with uniform values from the xorshift state. */
void io_test_randomize(nn_module *m, uint64_t *state);
/* All parameters bit-identical between two modules of the same shape. */
int io_test_same_params(const nn_module *a, const nn_module *b);
/* Copy of every parameter's values concatenated (caller frees). */
float *io_test_snapshot(const nn_module *m, size_t *count);

#endif
