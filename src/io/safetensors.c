#include "safetensors.h"
#include "io/file_read.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "atomic_file.h"

static const char *st_dtype(nn_dtype dtype) { return dtype == NN_F32 ? "F32" : "I32"; }

/* ---- writing ---- */

/* A growing text buffer for the JSON header. */
typedef struct text {
    char *data;
    size_t len, cap;
    bool failed;
} text;

static void put(text *t, const char *s, size_t n) {
    if (t->failed) return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (t->len + n + 1 > cap) cap *= 2;
        char *grown = realloc(t->data, cap);
        if (!grown) {
            t->failed = true;
            return;
        }
        t->data = grown;
        t->cap = cap;
    }
    memcpy(t->data + t->len, s, n);
    t->len += n;
    t->data[t->len] = '\0';
}

static void put_str(text *t, const char *s) { put(t, s, strlen(s)); }

static void put_json_string(text *t, const char *s) {
    put(t, "\"", 1);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        char esc[8];
        if (*c == '"' || *c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*c;
            put(t, esc, 2);
        } else if (*c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *c);
            put(t, esc, 6);
        } else {
            put(t, (const char *)c, 1);
        }
    }
    put(t, "\"", 1);
}

static void put_u64(text *t, uint64_t v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    put_str(t, buf);
}

static nn_status check_names(const char *who, const char *path, const nn_st_binding *tensors,
                             int count) {
    for (int i = 0; i < count; i++) {
        if (!tensors[i].name || !*tensors[i].name)
            return nn_set_error(NN_ERR_ARGUMENT, "%s: %s: tensor %d has no name", who, path, i);
        if (!tensors[i].tensor)
            return nn_set_error(NN_ERR_ARGUMENT, "%s: %s: tensor '%s' is NULL", who, path,
                                tensors[i].name);
        if (strcmp(tensors[i].name, "__metadata__") == 0)
            return nn_set_error(NN_ERR_ARGUMENT, "%s: %s: '__metadata__' is reserved", who, path);
        for (int j = 0; j < i; j++)
            if (strcmp(tensors[i].name, tensors[j].name) == 0)
                return nn_set_error(NN_ERR_ARGUMENT, "%s: %s: two tensors are named '%s'", who,
                                    path, tensors[i].name);
    }
    return NN_OK;
}

/* The JSON header, padded with spaces to a multiple of 8 bytes (as the
 * reference writer does) so the data section starts aligned. */
static nn_status build_header(const char *who, const char *path, const nn_st_binding *tensors,
                              int count, const nn_st_meta *meta, int meta_count, text *t) {
    put_str(t, "{");
    if (meta_count > 0) {
        put_str(t, "\"__metadata__\":{");
        for (int i = 0; i < meta_count; i++) {
            if (i) put_str(t, ",");
            put_json_string(t, meta[i].key);
            put_str(t, ":");
            put_json_string(t, meta[i].value);
        }
        put_str(t, "}");
    }
    uint64_t offset = 0;
    for (int i = 0; i < count; i++) {
        const nn_tensor *x = tensors[i].tensor;
        if (i || meta_count > 0) put_str(t, ",");
        put_json_string(t, tensors[i].name);
        put_str(t, ":{\"dtype\":\"");
        put_str(t, st_dtype(x->dtype));
        put_str(t, "\",\"shape\":[");
        for (int d = 0; d < x->ndim; d++) {
            if (d) put_str(t, ",");
            put_u64(t, (uint64_t)x->shape[d]);
        }
        put_str(t, "],\"data_offsets\":[");
        put_u64(t, offset);
        put_str(t, ",");
        offset += (uint64_t)x->numel * 4;
        put_u64(t, offset);
        put_str(t, "]}");
    }
    put_str(t, "}");
    while (t->len % 8) put_str(t, " ");
    if (t->failed) return nn_set_error(NN_ERR_MEMORY, "%s: %s: out of host memory", who, path);
    return NN_OK;
}

nn_status nn_st_save(const char *who, const char *path, const nn_st_binding *tensors, int count,
                     const nn_st_meta *meta, int meta_count) {
    if (!path || !*path) return nn_set_error(NN_ERR_ARGUMENT, "%s: path is NULL or empty", who);
    NN_TRY(check_names(who, path, tensors, count));
    text header = {0};
    nn_status status = build_header(who, path, tensors, count, meta, meta_count, &header);
    if (status != NN_OK) {
        free(header.data);
        return status;
    }
    nn_atomic_file *f = nn_atomic_open(who, path);
    if (!f) {
        free(header.data);
        return nn_last_status();
    }
    uint8_t length[8];
    for (int i = 0; i < 8; i++) length[i] = (uint8_t)((uint64_t)header.len >> (8 * i));
    status = nn_atomic_write(f, length, 8);
    if (status == NN_OK) status = nn_atomic_write(f, header.data, header.len);
    free(header.data);
    /* Tensor bytes: little-endian float32/int32, which is the host layout on
     * every machine we build for (x86-64, aarch64). */
    for (int i = 0; i < count && status == NN_OK; i++) {
        const nn_tensor *x = tensors[i].tensor;
        size_t bytes = (size_t)x->numel * 4;
        void *host = malloc(bytes);
        if (!host) {
            status = nn_set_error(NN_ERR_MEMORY, "%s: %s: out of host memory for '%s' (%zu bytes)",
                                  who, path, tensors[i].name, bytes);
            break;
        }
        status = nn_tensor_read(x, host, bytes);
        if (status == NN_OK) status = nn_atomic_write(f, host, bytes);
        free(host);
    }
    if (status != NN_OK) {
        nn_atomic_abort(f);
        return status;
    }
    return nn_atomic_commit(f);
}

/* ---- reading ---- */

/* path opened for reading, a regular file, and its size; NULL with the error set. */
static FILE *open_for_reading(const char *who, const char *path, int64_t *size) {
    if (!path || !*path) {
        nn_set_error(NN_ERR_ARGUMENT, "%s: path is NULL or empty", who);
        return NULL;
    }
    char why[128];
    FILE *f = nn_open_regular_file(path, size, why, sizeof why);
    if (!f) nn_set_error(NN_ERR_IO, "%s: %s: %s", who, path, why);
    return f;
}

nn_status nn_st_read_header(const char *who, const char *path, nn_st_header *header) {
    memset(header, 0, sizeof *header);
    int64_t file_size;
    FILE *f = open_for_reading(who, path, &file_size);
    if (!f) return nn_last_status();
    uint8_t length[8] = {0};
    const size_t got = fread(length, 1, sizeof length, f);
    const uint64_t n = nn_st_header_length(length);
    /* A short file or an oversized length: nn_st_parse says which from these 8 bytes. */
    const size_t keep = got == sizeof length && n <= NN_ST_MAX_HEADER && n <= (uint64_t)file_size - 8 ? 8 + (size_t)n
                                                                                                      : got;
    uint8_t *bytes = malloc(keep > 8 ? keep : 8);
    nn_status status = NN_OK;
    if (!bytes) status = nn_set_error(NN_ERR_MEMORY, "%s: %s: out of host memory for %zu bytes", who, path, keep);
    if (status == NN_OK) {
        memcpy(bytes, length, got);
        if (keep > got && fread(bytes + got, 1, keep - got, f) != keep - got)
            status = nn_set_error(NN_ERR_IO, "%s: %s: could not read its %zu header bytes%s", who, path, keep,
                                  ferror(f) ? " (read error)" : " (the file shrank while reading)");
    }
    fclose(f);
    if (status == NN_OK) status = nn_st_parse(who, path, bytes, got < 8 ? got : (size_t)file_size, header);
    free(bytes);
    return status;
}

nn_status nn_st_open(const char *who, const char *path, nn_st_file *file) {
    memset(file, 0, sizeof *file);
    int64_t file_size;
    FILE *f = open_for_reading(who, path, &file_size);
    if (!f) return nn_last_status();
    size_t size = (size_t)file_size;
    uint8_t *bytes = malloc(size ? size : 1);
    if (!bytes) {
        fclose(f);
        return nn_set_error(NN_ERR_MEMORY, "%s: %s: out of host memory for %zu bytes", who, path,
                            size);
    }
    size_t got = fread(bytes, 1, size, f);
    int read_error = ferror(f);
    fclose(f);
    if (got != size || read_error) {
        free(bytes);
        return nn_set_error(NN_ERR_IO, "%s: %s: read %zu of %zu bytes%s", who, path, got, size,
                            read_error ? " (read error)" : " (the file shrank while reading)");
    }
    nn_status status = nn_st_parse(who, path, bytes, size, &file->header);
    if (status != NN_OK) {
        free(bytes);
        return status;
    }
    file->bytes = bytes;
    file->size = size;
    return NN_OK;
}

void nn_st_close(nn_st_file *file) {
    free(file->bytes);
    nn_st_header_free(&file->header);
    memset(file, 0, sizeof *file);
}

/* PyTorch keeps counters (BatchNorm's num_batches_tracked) as int64
 * scalars: an I64 entry loads into an int32 tensor when every value fits,
 * and a scalar ([]) into a one-element tensor. */
static bool widened_int(const nn_st_entry *e, const nn_tensor *t) {
    return t->dtype == NN_I32 && strcmp(e->dtype, "I64") == 0;
}

static nn_status check_entry(const char *who, const char *path, const nn_st_entry *e,
                             const nn_tensor *t) {
    if (strcmp(e->dtype, st_dtype(t->dtype)) != 0 && !widened_int(e, t))
        return nn_set_error(NN_ERR_DTYPE, "%s: %s: tensor '%s' is %s in the file, expected %s",
                            who, path, e->name, e->dtype, st_dtype(t->dtype));
    bool same = e->ndim == t->ndim;
    for (int d = 0; same && d < t->ndim; d++) same = e->shape[d] == t->shape[d];
    if (!same && !(e->ndim == 0 && t->numel == 1)) {
        char fs[160], ts[96];
        return nn_set_error(NN_ERR_SHAPE, "%s: %s: tensor '%s' has shape %s in the file, expected %s",
                            who, path, e->name, nn_format_shape(e->ndim, e->shape, fs, sizeof fs),
                            nn_format_shape(t->ndim, t->shape, ts, sizeof ts));
    }
    return NN_OK;
}

/* The entry's values as the tensor's 32-bit words: the file's bytes, or
 * int64 values narrowed (refused, naming the tensor, when one does not fit).
 * *owned is set when the words were allocated. */
static nn_status entry_words(const char *who, const char *path, const nn_st_file *file, const nn_st_entry *e,
                             const nn_tensor *t, const void **words, void **owned) {
    const unsigned char *bytes = file->bytes + file->header.data_start + e->begin;
    *owned = NULL;
    *words = bytes;
    if (!widened_int(e, t)) return NN_OK;
    int32_t *narrow = malloc((size_t)t->numel * sizeof *narrow);
    if (!narrow) return nn_set_error(NN_ERR_MEMORY, "%s: %s: out of host memory", who, path);
    for (int64_t i = 0; i < t->numel; i++) {
        int64_t v;
        memcpy(&v, bytes + i * 8, sizeof v);
        if (v < INT32_MIN || v > INT32_MAX) {
            free(narrow);
            return nn_set_error(NN_ERR_DTYPE, "%s: %s: tensor '%s' (I64) holds %lld, outside the int32 range of the "
                                              "model's tensor", who, path, e->name, (long long)v);
        }
        narrow[i] = (int32_t)v;
    }
    *owned = narrow;
    *words = narrow;
    return NN_OK;
}

bool nn_st_name_under(const char *name, const char *child) {
    const size_t n = strlen(child);
    return strncmp(name, child, n) == 0 && name[n] == '.';
}

nn_status nn_st_assign(const char *who, const char *path, const nn_st_file *file,
                       const nn_st_binding *tensors, int count) {
    return nn_st_assign_except(who, path, file, tensors, count, NULL);
}

nn_status nn_st_assign_except(const char *who, const char *path, const nn_st_file *file,
                              const nn_st_binding *tensors, int count, const char *except) {
    const nn_st_header *h = &file->header;
    /* 1. Every expected name is present with the right dtype and shape. */
    for (int i = 0; i < count; i++) {
        const nn_st_entry *e = nn_st_find(h, tensors[i].name);
        if (!e)
            return nn_set_error(NN_ERR_ARGUMENT, "%s: %s: tensor '%s' is missing from the file",
                                who, path, tensors[i].name);
        NN_TRY(check_entry(who, path, e, tensors[i].tensor));
    }
    /* 2. Nothing else is in the file (a different model, or a typo). */
    for (int k = 0; k < h->count; k++) {
        bool known = except && nn_st_name_under(h->entries[k].name, except);
        for (int i = 0; i < count && !known; i++) known = strcmp(h->entries[k].name, tensors[i].name) == 0;
        if (!known)
            return nn_set_error(NN_ERR_ARGUMENT, "%s: %s: the file holds tensor '%s', which the "
                                                 "model does not have", who, path,
                                h->entries[k].name);
    }
    /* 3. Keep the current values, so a failing device write can be undone. */
    void **backup = calloc((size_t)count + 1, sizeof *backup);
    if (!backup) return nn_set_error(NN_ERR_MEMORY, "%s: %s: out of host memory", who, path);
    nn_status status = NN_OK;
    for (int i = 0; i < count && status == NN_OK; i++) {
        size_t bytes = (size_t)tensors[i].tensor->numel * 4;
        backup[i] = malloc(bytes);
        if (!backup[i]) status = nn_set_error(NN_ERR_MEMORY, "%s: %s: out of host memory", who, path);
        else status = nn_tensor_read(tensors[i].tensor, backup[i], bytes);
    }
    /* 4. Write; on failure restore what was written. */
    int written = 0;
    for (int i = 0; i < count && status == NN_OK; i++, written++) {
        const nn_st_entry *e = nn_st_find(h, tensors[i].name);
        const void *words;
        void *owned;
        status = entry_words(who, path, file, e, tensors[i].tensor, &words, &owned);
        if (status == NN_OK)
            status = nn_tensor_write(tensors[i].tensor, words, (size_t)tensors[i].tensor->numel * 4);
        free(owned);
    }
    if (status != NN_OK) {
        char message[1024];
        snprintf(message, sizeof message, "%s", nn_last_error());
        for (int i = 0; i < written; i++)
            nn_tensor_write(tensors[i].tensor, backup[i], (size_t)tensors[i].tensor->numel * 4);
        nn_set_error(status, "%s", message);
    }
    for (int i = 0; i < count; i++) free(backup[i]);
    free(backup);
    return status;
}
