/* A strict parser for the one JSON shape safetensors uses. It is written for
 * hostile input (fuzzed: tests/fuzz/fuzz_safetensors_header.c): every read
 * is bounds-checked, numbers are unsigned 64-bit integers checked for
 * overflow, strings are copied with their escapes decoded, and memory grows
 * only with what the (size-limited) header actually contains. */
#include "safetensors_header.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    int size;
} dtype_table[] = {
    {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2},
    {"U16", 2},  {"F16", 2}, {"BF16", 2}, {"I32", 4},    {"U32", 4},     {"F32", 4},
    {"I64", 8},  {"U64", 8}, {"F64", 8},
};

static const char *dtype_lookup(const char *name, int *size) {
    for (size_t i = 0; i < sizeof dtype_table / sizeof dtype_table[0]; i++)
        if (strcmp(dtype_table[i].name, name) == 0) {
            *size = dtype_table[i].size;
            return dtype_table[i].name;
        }
    return NULL;
}

int nn_st_dtype_size(const char *dtype) {
    int size = 0;
    return dtype && dtype_lookup(dtype, &size) ? size : 0;
}

typedef struct parser {
    const char *who, *path;
    const char *s; /* the JSON text (not NUL-terminated) */
    size_t len, pos;
    nn_st_header *h;
} parser;

/* "who: path: <message> (header byte <pos>)" */
NN_PRINTF_FORMAT(2, 3) static nn_status fail(parser *p, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return nn_set_error(NN_ERR_IO, "%s: %s: bad safetensors header: %s (JSON byte %zu)", p->who,
                        p->path, msg, p->pos);
}

static void skip_ws(parser *p) {
    while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
                               p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
        p->pos++;
}

/* Skip whitespace, then consume `c` if it is next. */
static bool accept(parser *p, char c) {
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == c) {
        p->pos++;
        return true;
    }
    return false;
}

static nn_status expect(parser *p, char c) {
    if (accept(p, c)) return NN_OK;
    if (p->pos >= p->len) return fail(p, "expected '%c', the header ends", c);
    return fail(p, "expected '%c', found '%c'", c, p->s[p->pos]);
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static nn_status read_hex4(parser *p, unsigned *out) {
    if (p->len - p->pos < 4) return fail(p, "truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int d = hex_value(p->s[p->pos + (size_t)i]);
        if (d < 0) return fail(p, "bad \\u escape");
        v = v * 16 + (unsigned)d;
    }
    p->pos += 4;
    *out = v;
    return NN_OK;
}

static size_t put_utf8(char *dst, unsigned cp) {
    if (cp < 0x80) {
        dst[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        dst[0] = (char)(0xC0 | (cp >> 6));
        dst[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        dst[0] = (char)(0xE0 | (cp >> 12));
        dst[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        dst[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    dst[0] = (char)(0xF0 | (cp >> 18));
    dst[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    dst[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    dst[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A JSON string into a new NUL-terminated buffer. A decoded string is never
 * longer than its escaped form, so one allocation of the raw length is enough. */
static nn_status parse_string(parser *p, char **out) {
    *out = NULL;
    NN_TRY(expect(p, '"'));
    /* Find the closing quote first: the raw span bounds the decoded length. */
    size_t end = p->pos;
    while (end < p->len && p->s[end] != '"') end += p->s[end] == '\\' ? 2 : 1;
    if (end >= p->len) return fail(p, "unterminated string");
    size_t cap = end - p->pos + 1;
    char *buf = malloc(cap);
    if (!buf) return nn_set_error(NN_ERR_MEMORY, "%s: %s: out of host memory", p->who, p->path);
    size_t n = 0;
    for (;;) {
        if (p->pos >= p->len) {
            free(buf);
            return fail(p, "unterminated string");
        }
        unsigned char c = (unsigned char)p->s[p->pos++];
        if (c == '"') break;
        if (c < 0x20) {
            free(buf);
            p->pos--;
            return fail(p, "control character 0x%02x in a string", c);
        }
        if (c != '\\') {
            buf[n++] = (char)c;
            continue;
        }
        if (p->pos >= p->len) {
            free(buf);
            return fail(p, "unterminated string");
        }
        char e = p->s[p->pos++];
        unsigned cp;
        switch (e) {
        case '"': buf[n++] = '"'; break;
        case '\\': buf[n++] = '\\'; break;
        case '/': buf[n++] = '/'; break;
        case 'b': buf[n++] = '\b'; break;
        case 'f': buf[n++] = '\f'; break;
        case 'n': buf[n++] = '\n'; break;
        case 'r': buf[n++] = '\r'; break;
        case 't': buf[n++] = '\t'; break;
        case 'u':
            if (read_hex4(p, &cp) != NN_OK) {
                free(buf);
                return NN_ERR_IO;
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) { /* a surrogate pair: 12 escaped bytes -> 4 */
                unsigned low;
                if (p->len - p->pos < 2 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u') {
                    free(buf);
                    return fail(p, "unpaired UTF-16 surrogate in a \\u escape");
                }
                p->pos += 2;
                if (read_hex4(p, &low) != NN_OK) {
                    free(buf);
                    return NN_ERR_IO;
                }
                if (low < 0xDC00 || low > 0xDFFF) {
                    free(buf);
                    return fail(p, "unpaired UTF-16 surrogate in a \\u escape");
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                free(buf);
                return fail(p, "unpaired UTF-16 surrogate in a \\u escape");
            } else if (cp == 0) {
                free(buf);
                return fail(p, "\\u0000 in a string (names cannot contain NUL)");
            }
            n += put_utf8(buf + n, cp); /* <= 4 bytes from >= 6 escaped ones */
            break;
        default:
            free(buf);
            p->pos--;
            return fail(p, "bad escape '\\%c' in a string", e);
        }
    }
    buf[n] = '\0';
    *out = buf;
    return NN_OK;
}

static nn_status parse_u64(parser *p, const char *what, uint64_t *out) {
    skip_ws(p);
    size_t start = p->pos;
    uint64_t v = 0;
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
        unsigned d = (unsigned)(p->s[p->pos] - '0');
        if (v > (UINT64_MAX - d) / 10) return fail(p, "%s does not fit in 64 bits", what);
        v = v * 10 + d;
        p->pos++;
    }
    if (p->pos == start) return fail(p, "%s must be a non-negative integer", what);
    if (p->pos < p->len && (p->s[p->pos] == '.' || p->s[p->pos] == 'e' || p->s[p->pos] == 'E'))
        return fail(p, "%s must be an integer", what);
    if (p->pos - start > 1 && p->s[start] == '0') {
        p->pos = start;
        return fail(p, "%s has a leading zero", what);
    }
    *out = v;
    return NN_OK;
}

/* [u64, ...] into values (at most `max`); returns the count in *count. */
static nn_status parse_u64_array(parser *p, const char *what, uint64_t *values, int max,
                                 int *count) {
    *count = 0;
    NN_TRY(expect(p, '['));
    if (accept(p, ']')) return NN_OK;
    do {
        if (*count == max) return fail(p, "%s has more than %d entries", what, max);
        NN_TRY(parse_u64(p, what, &values[(*count)++]));
    } while (accept(p, ','));
    return expect(p, ']');
}

static nn_status parse_entry(parser *p, nn_st_entry *e) {
    bool seen_dtype = false, seen_shape = false, seen_offsets = false;
    NN_TRY(expect(p, '{'));
    if (!accept(p, '}')) {
        do {
            size_t key_pos = p->pos;
            char *key;
            NN_TRY(parse_string(p, &key));
            nn_status s = expect(p, ':');
            if (s == NN_OK && strcmp(key, "dtype") == 0 && !seen_dtype) {
                char *dtype;
                s = parse_string(p, &dtype);
                if (s == NN_OK) {
                    e->dtype = dtype_lookup(dtype, &e->element_size);
                    if (!e->dtype) {
                        p->pos = key_pos;
                        s = fail(p, "tensor '%s' has unknown dtype \"%.40s\"", e->name, dtype);
                    }
                    free(dtype);
                }
                seen_dtype = true;
            } else if (s == NN_OK && strcmp(key, "shape") == 0 && !seen_shape) {
                uint64_t dims[NN_ST_MAX_DIMS];
                s = parse_u64_array(p, "a shape", dims, NN_ST_MAX_DIMS, &e->ndim);
                for (int i = 0; s == NN_OK && i < e->ndim; i++) {
                    if (dims[i] > (uint64_t)INT64_MAX) s = fail(p, "a dimension is too large");
                    e->shape[i] = (int64_t)dims[i];
                }
                seen_shape = true;
            } else if (s == NN_OK && strcmp(key, "data_offsets") == 0 && !seen_offsets) {
                uint64_t offsets[2];
                int n;
                s = parse_u64_array(p, "data_offsets", offsets, 2, &n);
                if (s == NN_OK && n != 2) s = fail(p, "data_offsets must hold 2 numbers, got %d", n);
                if (s == NN_OK) {
                    e->begin = offsets[0];
                    e->end = offsets[1];
                }
                seen_offsets = true;
            } else if (s == NN_OK) {
                p->pos = key_pos;
                s = fail(p, "tensor '%s' has %s key \"%.40s\"", e->name,
                         strcmp(key, "dtype") && strcmp(key, "shape") && strcmp(key, "data_offsets")
                             ? "an unknown" : "a repeated",
                         key);
            }
            free(key);
            NN_TRY(s);
        } while (accept(p, ','));
        NN_TRY(expect(p, '}'));
    }
    if (!seen_dtype || !seen_shape || !seen_offsets)
        return fail(p, "tensor '%s' lacks \"%s\"", e->name,
                    !seen_dtype ? "dtype" : !seen_shape ? "shape" : "data_offsets");
    /* The byte range must be exactly numel * element size. */
    uint64_t bytes = (uint64_t)e->element_size;
    for (int i = 0; i < e->ndim; i++) {
        if (e->shape[i] != 0 && bytes > UINT64_MAX / (uint64_t)e->shape[i])
            return fail(p, "tensor '%s' is too large", e->name);
        bytes *= (uint64_t)e->shape[i];
    }
    if (e->end < e->begin)
        return fail(p, "tensor '%s' has data_offsets [%llu, %llu] that end before they begin",
                    e->name, (unsigned long long)e->begin, (unsigned long long)e->end);
    if (e->end - e->begin != bytes)
        return fail(p, "tensor '%s' (%s, %d dims) needs %llu bytes but data_offsets [%llu, %llu] "
                       "hold %llu", e->name, e->dtype, e->ndim, (unsigned long long)bytes,
                    (unsigned long long)e->begin, (unsigned long long)e->end,
                    (unsigned long long)(e->end - e->begin));
    return NN_OK;
}

static nn_status parse_metadata(parser *p) {
    nn_st_header *h = p->h;
    if (h->meta) return fail(p, "\"__metadata__\" appears twice");
    NN_TRY(expect(p, '{'));
    int capacity = 0;
    h->meta = calloc(1, sizeof *h->meta); /* marks "seen" even when empty */
    if (!h->meta) return nn_set_error(NN_ERR_MEMORY, "%s: %s: out of host memory", p->who, p->path);
    capacity = 1;
    if (accept(p, '}')) return NN_OK;
    do {
        if (h->meta_count == capacity) {
            nn_st_meta *grown = realloc(h->meta, (size_t)capacity * 2 * sizeof *grown);
            if (!grown) return nn_set_error(NN_ERR_MEMORY, "%s: %s: out of host memory", p->who, p->path);
            h->meta = grown;
            capacity *= 2;
        }
        nn_st_meta *m = &h->meta[h->meta_count];
        m->key = m->value = NULL;
        h->meta_count++;
        NN_TRY(parse_string(p, &m->key));
        NN_TRY(expect(p, ':'));
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] != '"')
            return fail(p, "metadata value of \"%.40s\" must be a string", m->key);
        NN_TRY(parse_string(p, &m->value));
    } while (accept(p, ','));
    return expect(p, '}');
}

static nn_status parse_object(parser *p) {
    nn_st_header *h = p->h;
    int capacity = 0;
    NN_TRY(expect(p, '{'));
    if (accept(p, '}')) return NN_OK;
    do {
        char *name;
        NN_TRY(parse_string(p, &name));
        nn_status s = expect(p, ':');
        if (s == NN_OK && strcmp(name, "__metadata__") == 0) {
            free(name);
            NN_TRY(parse_metadata(p));
            continue;
        }
        if (s == NN_OK && h->count == capacity) {
            int grown_capacity = capacity ? capacity * 2 : 8;
            nn_st_entry *grown = realloc(h->entries, (size_t)grown_capacity * sizeof *grown);
            if (grown) {
                h->entries = grown;
                capacity = grown_capacity;
            } else {
                s = nn_set_error(NN_ERR_MEMORY, "%s: %s: out of host memory", p->who, p->path);
            }
        }
        if (s != NN_OK) {
            free(name);
            return s;
        }
        nn_st_entry *e = &h->entries[h->count++];
        memset(e, 0, sizeof *e);
        e->name = name;
        NN_TRY(parse_entry(p, e));
    } while (accept(p, ','));
    return expect(p, '}');
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const nn_st_entry *)a)->name, ((const nn_st_entry *)b)->name);
}

static int by_begin(const void *a, const void *b) {
    const nn_st_entry *x = *(const nn_st_entry *const *)a, *y = *(const nn_st_entry *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end; /* empty tensors first at a shared offset */
}

/* Names unique; byte ranges tile [0, data_size) with no gap or overlap. */
static nn_status check_layout(parser *p) {
    nn_st_header *h = p->h;
    p->pos = p->len;
    if (h->count == 0) {
        if (h->data_size != 0)
            return fail(p, "no tensors, but %llu data bytes follow the header",
                        (unsigned long long)h->data_size);
        return NN_OK;
    }
    qsort(h->entries, (size_t)h->count, sizeof *h->entries, by_name);
    for (int i = 1; i < h->count; i++)
        if (strcmp(h->entries[i - 1].name, h->entries[i].name) == 0)
            return fail(p, "tensor '%s' appears twice", h->entries[i].name);
    const nn_st_entry **order = malloc((size_t)h->count * sizeof *order);
    if (!order) return nn_set_error(NN_ERR_MEMORY, "%s: %s: out of host memory", p->who, p->path);
    for (int i = 0; i < h->count; i++) order[i] = &h->entries[i];
    qsort(order, (size_t)h->count, sizeof *order, by_begin);
    uint64_t expected = 0;
    nn_status s = NN_OK;
    for (int i = 0; i < h->count && s == NN_OK; i++) {
        const nn_st_entry *e = order[i];
        if (e->begin != expected)
            s = fail(p, "tensor '%s' starts at data byte %llu, but the previous tensor ends at %llu "
                        "(offsets must tile the data with no gap or overlap)", e->name,
                     (unsigned long long)e->begin, (unsigned long long)expected);
        expected = e->end;
    }
    if (s == NN_OK && expected != h->data_size)
        s = fail(p, "the tensors cover %llu data bytes, but the file holds %llu after the header%s",
                 (unsigned long long)expected, (unsigned long long)h->data_size,
                 expected > h->data_size ? " (truncated file?)" : "");
    free(order);
    return s;
}

uint64_t nn_st_header_length(const uint8_t first[8]) {
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | first[i];
    return n;
}

nn_status nn_st_parse(const char *who, const char *path, const uint8_t *file, size_t size,
                      nn_st_header *out) {
    memset(out, 0, sizeof *out);
    if (size < 8)
        return nn_set_error(NN_ERR_IO, "%s: %s: not a safetensors file: %zu bytes, the header "
                                       "length alone takes 8", who, path, size);
    const uint64_t n = nn_st_header_length(file);
    if (n > NN_ST_MAX_HEADER)
        return nn_set_error(NN_ERR_IO, "%s: %s: bad safetensors header: claims %llu bytes, more "
                                       "than the %u allowed", who, path, (unsigned long long)n,
                            NN_ST_MAX_HEADER);
    if (n > size - 8)
        return nn_set_error(NN_ERR_IO, "%s: %s: truncated safetensors file: the header claims "
                                       "%llu bytes, only %zu follow", who, path,
                            (unsigned long long)n, size - 8);
    parser p = {.who = who, .path = path, .s = (const char *)file + 8, .len = (size_t)n, .h = out};
    out->data_start = 8 + n;
    out->data_size = size - 8 - n;
    skip_ws(&p);
    if (p.pos >= p.len || p.s[p.pos] != '{') {
        nn_status s = fail(&p, "the header must be a JSON object");
        return s;
    }
    nn_status s = parse_object(&p);
    if (s == NN_OK) {
        skip_ws(&p);
        if (p.pos != p.len) s = fail(&p, "unexpected bytes after the JSON object");
    }
    if (s == NN_OK) s = check_layout(&p);
    if (s != NN_OK) nn_st_header_free(out);
    return s;
}

void nn_st_header_free(nn_st_header *h) {
    for (int i = 0; i < h->count; i++) free(h->entries[i].name);
    for (int i = 0; i < h->meta_count; i++) {
        free(h->meta[i].key);
        free(h->meta[i].value);
    }
    free(h->entries);
    free(h->meta);
    memset(h, 0, sizeof *h);
}

const nn_st_entry *nn_st_find(const nn_st_header *h, const char *name) {
    /* Entries are sorted by name after a successful parse. */
    nn_st_entry key = {.name = (char *)name};
    return h->count ? bsearch(&key, h->entries, (size_t)h->count, sizeof key, by_name) : NULL;
}

const char *nn_st_meta_get(const nn_st_header *h, const char *key) {
    for (int i = 0; i < h->meta_count; i++)
        if (strcmp(h->meta[i].key, key) == 0) return h->meta[i].value;
    return NULL;
}
