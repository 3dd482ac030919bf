#include "pb_decode.h"

#include <string.h>

static int read_varint(const uint8_t *buf, size_t len, size_t *pos, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (*pos >= len) return -1;
        uint8_t b = buf[(*pos)++];
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

int pb_next(const uint8_t *buf, size_t len, size_t *pos, pb_field *f) {
    if (*pos >= len) return 0;
    uint64_t key;
    if (read_varint(buf, len, pos, &key)) return -1;
    memset(f, 0, sizeof *f);
    f->number = (int)(key >> 3);
    f->wire = (int)(key & 7);
    switch (f->wire) {
    case 0: return read_varint(buf, len, pos, &f->value) ? -1 : 1;
    case 1:
    case 5: {
        size_t n = f->wire == 1 ? 8 : 4;
        if (len - *pos < n) return -1;
        for (size_t i = 0; i < n; i++) f->value |= (uint64_t)buf[*pos + i] << (8 * i);
        *pos += n;
        return 1;
    }
    case 2: {
        uint64_t n;
        if (read_varint(buf, len, pos, &n) || n > len - *pos) return -1;
        f->data = buf + *pos;
        f->size = (size_t)n;
        *pos += (size_t)n;
        return 1;
    }
    }
    return -1;
}

int pb_count(const uint8_t *buf, size_t len, int number) {
    size_t pos = 0;
    pb_field f;
    int n = 0, r;
    while ((r = pb_next(buf, len, &pos, &f)) == 1) n += f.number == number;
    return r < 0 ? -1 : n;
}

int pb_get(const uint8_t *buf, size_t len, int number, int k, pb_field *out) {
    size_t pos = 0;
    pb_field f;
    while (pb_next(buf, len, &pos, &f) == 1)
        if (f.number == number && k-- == 0) {
            *out = f;
            return 0;
        }
    return -1;
}

int pb_string_is(const uint8_t *buf, size_t len, int number, int k, const char *s) {
    pb_field f;
    return pb_get(buf, len, number, k, &f) == 0 && f.wire == 2 && f.size == strlen(s) &&
           memcmp(f.data, s, f.size) == 0;
}
