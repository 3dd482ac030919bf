/* A text file as bytes for a language model (text_data.h). */
#include "text_data.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "platform/files.h"

/* Byte sequences that are not well-formed UTF-8 (RFC 3629: no overlong
 * forms, surrogates or code points past U+10FFFF), each counted once. */
static int64_t count_invalid_utf8(const uint8_t *s, int64_t n) {
    int64_t bad = 0;
    for (int64_t i = 0; i < n;) {
        const uint8_t c = s[i];
        int len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
        uint32_t cp = len == 2 ? c & 0x1fu : len == 3 ? c & 0x0fu : c & 0x07u;
        bool ok = len > 0 && i + len <= n;
        for (int k = 1; ok && k < len; k++) {
            ok = (s[i + k] & 0xc0) == 0x80;
            cp = cp << 6 | (s[i + k] & 0x3fu);
        }
        if (ok && len > 1) {
            static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
            ok = cp >= least[len] && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
        }
        if (ok) {
            i += len;
        } else {
            bad++;
            i++;
        }
    }
    return bad;
}

/* The whole file (or its first limit bytes), read in growing chunks so that
 * a pipe reads as well as a file. */
static uint8_t *read_bytes(FILE *f, int64_t limit, int64_t *size) {
    size_t capacity = 1 << 16, used = 0;
    uint8_t *data = malloc(capacity);
    while (data) {
        size_t want = capacity - used;
        if (limit > 0 && (int64_t)(used + want) > limit) want = (size_t)(limit - (int64_t)used);
        size_t got = want ? fread(data + used, 1, want, f) : 0;
        used += got;
        if (got < want || (limit > 0 && (int64_t)used >= limit)) break;
        uint8_t *grown = realloc(data, capacity * 2);
        if (!grown) {
            free(data);
            return NULL;
        }
        data = grown;
        capacity *= 2;
    }
    *size = (int64_t)used;
    return data;
}

int text_data_load(const char *command, const char *path, int64_t limit, double val_fraction, int context,
                   text_data *out) {
    memset(out, 0, sizeof *out);
    FILE *f = nn_file_fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "nnengine %s: --text %s: %s\n", command, path, strerror(errno));
        return EXIT_BAD_INPUT;
    }
    int64_t size = 0;
    out->bytes = read_bytes(f, limit, &size);
    const bool failed = ferror(f) != 0;
    fclose(f);
    if (!out->bytes) {
        fprintf(stderr, "nnengine %s: --text %s: out of host memory reading it\n", command, path);
        return EXIT_FAILURE_RUNTIME;
    }
    if (failed) {
        fprintf(stderr, "nnengine %s: --text %s: reading failed (a folder, or an unreadable file?)\n", command, path);
        text_data_free(out);
        return EXIT_BAD_INPUT;
    }
    out->size = size;
    out->train_size = size - (int64_t)((double)size * val_fraction);
    const int64_t held_out = size - out->train_size, window = (int64_t)context + 1;
    if (out->train_size < window || (val_fraction > 0 && held_out < window)) {
        fprintf(stderr, "nnengine %s: --text %s has %lld bytes%s: %lld to train on and %lld held out "
                        "(--val-fraction %g), but a window of --context %d takes %lld of each; give a longer text, "
                        "a shorter --context or a smaller --val-fraction (0: none held out)\n", command, path,
                (long long)size, limit > 0 ? " (--limit)" : "", (long long)out->train_size, (long long)held_out,
                val_fraction, context, (long long)window);
        text_data_free(out);
        return EXIT_BAD_INPUT;
    }
    out->invalid_utf8 = count_invalid_utf8(out->bytes, size);
    return EXIT_OK;
}

void text_data_free(text_data *t) {
    free(t->bytes);
    memset(t, 0, sizeof *t);
}

/* SplitMix64's finaliser: a well-mixed 64-bit value of x. */
static uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static void copy_window(const uint8_t *from, int context, int32_t *x, int32_t *y) {
    for (int j = 0; j < context; j++) {
        x[j] = from[j];
        y[j] = from[j + 1];
    }
}

void text_data_training_batch(const text_data *t, uint64_t seed, int64_t step, int batch, int context, int32_t *x,
                              int32_t *y) {
    const uint64_t starts = (uint64_t)(t->train_size - context); /* offsets where a window of context + 1 fits */
    for (int row = 0; row < batch; row++) {
        const uint64_t draw = mix(mix(mix(seed) ^ (uint64_t)step) ^ (uint64_t)row);
        /* the modulo's bias is below starts / 2^64: nothing next to sampling noise */
        copy_window(t->bytes + draw % starts, context, x + (size_t)row * context, y + (size_t)row * context);
    }
}

int64_t text_data_validation_windows(const text_data *t, int context, int64_t limit) {
    int64_t held_out = t->size - t->train_size;
    if (limit > 0 && limit < held_out) held_out = limit;
    return held_out > context ? (held_out - 1) / context : 0;
}

void text_data_validation_batch(const text_data *t, int64_t first, int count, int context, int32_t *x, int32_t *y) {
    for (int i = 0; i < count; i++)
        copy_window(t->bytes + t->train_size + (first + i) * context, context, x + (size_t)i * context,
                    y + (size_t)i * context);
}
