/* The safetensors container: an 8-byte little-endian header length N, N
 * bytes of JSON, then the raw little-endian tensor bytes. The JSON is an
 * object mapping each tensor name to {"dtype", "shape", "data_offsets"}
 * (offsets relative to the data section), plus an optional "__metadata__"
 * object of string values. https://github.com/huggingface/safetensors
 *
 * The parser checks everything a loader relies on, so callers never see an
 * inconsistent header: each tensor's byte range matches its dtype and shape,
 * and the ranges tile the data section exactly (no gap, no overlap, nothing
 * past the end), as the reference implementation requires. */
#ifndef NN_IO_SAFETENSORS_HEADER_H
#define NN_IO_SAFETENSORS_HEADER_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define NN_ST_MAX_DIMS 8
/* The reference implementation's limit; also bounds what a bad file can make us allocate. */
#define NN_ST_MAX_HEADER (100u * 1000u * 1000u)

typedef struct nn_st_entry {
    char *name;
    const char *dtype; /* "F32", "I32", ... (a constant from the dtype table) */
    int element_size;  /* bytes per element */
    int ndim;
    int64_t shape[NN_ST_MAX_DIMS];
    uint64_t begin, end; /* byte range within the data section */
} nn_st_entry;

typedef struct nn_st_meta {
    char *key, *value;
} nn_st_meta;

typedef struct nn_st_header {
    nn_st_entry *entries;
    int count;
    nn_st_meta *meta;
    int meta_count;
    uint64_t data_start; /* 8 + N: where the data section begins in the file */
    uint64_t data_size;
} nn_st_header;

/* N, the header's length: the file's first 8 bytes, little-endian. */
uint64_t nn_st_header_length(const uint8_t first[8]);

/* Parse and validate a whole file held in memory. `who` and `path` prefix
 * every message ("nn_load_module: ckpt.safetensors: ..."). On failure
 * returns NN_ERR_IO with the error set and *out empty. Only the first 8 +
 * N bytes (the length and the header) are read; `size` is the file's. */
nn_status nn_st_parse(const char *who, const char *path, const uint8_t *file, size_t size,
                      nn_st_header *out);
void nn_st_header_free(nn_st_header *h);

/* The entry or metadata value with this name; NULL when absent. */
const nn_st_entry *nn_st_find(const nn_st_header *h, const char *name);
const char *nn_st_meta_get(const nn_st_header *h, const char *key);

/* Bytes per element of a safetensors dtype name; 0 when unknown. */
int nn_st_dtype_size(const char *dtype);

#endif
