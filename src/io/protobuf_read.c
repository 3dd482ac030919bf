#include "protobuf_read.h"

#include <stdlib.h>
#include <string.h>

#include "protobuf.h"

nn_pb_reader nn_pb_reader_of(const void *data, size_t size) {
    const uint8_t *p = data;
    return (nn_pb_reader){p, size ? p + size : p, NULL}; /* an empty field's data may be NULL */
}

static bool varint(nn_pb_reader *r, uint64_t *value) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end) {
            r->failed = "truncated (a number runs past the end)";
            return false;
        }
        const uint8_t b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *value = v;
            return true;
        }
    }
    r->failed = "a number longer than 10 bytes";
    return false;
}

static bool fixed(nn_pb_reader *r, int bytes, uint64_t *value) {
    if (r->end - r->p < bytes) {
        r->failed = "truncated (a fixed-size field runs past the end)";
        return false;
    }
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v |= (uint64_t)r->p[i] << (8 * i); /* little-endian on the wire */
    r->p += bytes;
    *value = v;
    return true;
}

bool nn_pb_next(nn_pb_reader *r, nn_pb_field *f) {
    if (r->failed || r->p >= r->end) return false;
    uint64_t key;
    if (!varint(r, &key)) return false;
    *f = (nn_pb_field){.field = (int)(key >> 3), .wire = (int)(key & 7)};
    if (key >> 3 == 0 || key >> 3 > 536870911u) {
        r->failed = "a field number out of range";
        return false;
    }
    switch (f->wire) {
    case NN_PB_VARINT: return varint(r, &f->number);
    case NN_PB_FIXED64: return fixed(r, 8, &f->number);
    case NN_PB_FIXED32: return fixed(r, 4, &f->number);
    case NN_PB_BYTES: {
        uint64_t size;
        if (!varint(r, &size)) return false;
        if (size > (uint64_t)(r->end - r->p)) {
            r->failed = "truncated (a field's bytes run past the end)";
            return false;
        }
        f->data = r->p, f->size = (size_t)size;
        r->p += size;
        return true;
    }
    default: r->failed = "an unknown or deprecated wire type"; return false;
    }
}

nn_pb_reader nn_pb_sub(const nn_pb_field *f) { return nn_pb_reader_of(f->data, f->size); }

char *nn_pb_strdup(const nn_pb_field *f) {
    const size_t n = f->wire == NN_PB_BYTES ? strnlen((const char *)f->data, f->size) : 0;
    char *s = malloc(n + 1);
    if (!s) return NULL;
    if (n) memcpy(s, f->data, n);
    s[n] = '\0';
    return s;
}

/* Room for `more` values after *count in *values. */
static bool grow(nn_pb_reader *r, void **values, int64_t count, int64_t more, size_t size) {
    if (more > (int64_t)(SIZE_MAX / 2 / size) - count) {
        r->failed = "too many values";
        return false;
    }
    void *bigger = realloc(*values, (size_t)(count + more) * size + 1);
    if (!bigger) {
        r->failed = "out of host memory";
        return false;
    }
    *values = bigger;
    return true;
}

bool nn_pb_append_varints(nn_pb_reader *r, const nn_pb_field *f, int64_t **values, int64_t *count) {
    if (f->wire == NN_PB_VARINT) {
        if (!grow(r, (void **)values, *count, 1, sizeof **values)) return false;
        (*values)[(*count)++] = (int64_t)f->number;
        return true;
    }
    if (f->wire != NN_PB_BYTES) {
        r->failed = "a repeated integer of the wrong wire type";
        return false;
    }
    nn_pb_reader packed = nn_pb_sub(f);
    int64_t n = 0; /* each varint ends in a byte below 0x80 */
    for (size_t i = 0; i < f->size; i++) n += f->data[i] < 0x80;
    if (!grow(r, (void **)values, *count, n, sizeof **values)) return false;
    uint64_t v;
    while (packed.p < packed.end) {
        if (!varint(&packed, &v)) {
            r->failed = packed.failed;
            return false;
        }
        (*values)[(*count)++] = (int64_t)v;
    }
    return true;
}

bool nn_pb_append_floats(nn_pb_reader *r, const nn_pb_field *f, float **values, int64_t *count) {
    const uint8_t *from;
    int64_t n;
    if (f->wire == NN_PB_FIXED32) {
        uint32_t bits = (uint32_t)f->number;
        if (!grow(r, (void **)values, *count, 1, sizeof **values)) return false;
        memcpy(&(*values)[(*count)++], &bits, 4);
        return true;
    }
    if (f->wire != NN_PB_BYTES || f->size % 4) {
        r->failed = f->wire == NN_PB_BYTES ? "packed floats not a multiple of 4 bytes"
                                           : "a repeated float of the wrong wire type";
        return false;
    }
    from = f->data, n = (int64_t)(f->size / 4);
    if (!grow(r, (void **)values, *count, n, sizeof **values)) return false;
    for (int64_t i = 0; i < n; i++) {
        const uint32_t bits = (uint32_t)from[4 * i] | (uint32_t)from[4 * i + 1] << 8 |
                              (uint32_t)from[4 * i + 2] << 16 | (uint32_t)from[4 * i + 3] << 24;
        memcpy(&(*values)[(*count)++], &bits, 4);
    }
    return true;
}
