/* The normalisation and class names a checkpoint carries in its
 * __metadata__ (formats in nn_io.h): written as text, read back strictly. */
#include "model_info.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "safetensors.h"

/* Class names are printed and told apart: no control characters, no two alike. */
static nn_status check_class_names(const char *who, const char *where, char *const *names, int count,
                                   nn_status code) {
    for (int i = 0; i < count; i++) {
        for (const unsigned char *p = (const unsigned char *)names[i]; *p; p++)
            if (*p < 0x20 || *p == 0x7f)
                return nn_set_error(code, "%s: %s[%d] holds a control character (byte 0x%02x)", who, where, i, *p);
        for (int j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0)
                return nn_set_error(code, "%s: %s[%d] repeats %s[%d] (\"%.60s\")", who, where, i, where, j, names[i]);
    }
    return NN_OK;
}

nn_status nn_model_info_check(const char *who, const nn_model_info *info) {
    if (!info) return NN_OK;
    if (info->channels < 0 || info->channels > NN_MODEL_INFO_MAX_CHANNELS)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: info.channels must be 0..%d, got %d", who,
                            NN_MODEL_INFO_MAX_CHANNELS, info->channels);
    for (int c = 0; c < info->channels; c++) {
        if (!isfinite(info->mean[c]) || !isfinite(info->std[c]) || info->std[c] <= 0.0f)
            return nn_set_error(NN_ERR_ARGUMENT, "%s: info channel %d: mean %g must be finite and std %g "
                                                 "finite and > 0", who, c, (double)info->mean[c],
                                (double)info->std[c]);
    }
    if (info->class_count < 0 || (info->class_count > 0 && !info->class_names))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: info.class_count is %d but class_names is NULL", who,
                            info->class_count);
    for (int i = 0; i < info->class_count; i++)
        if (!info->class_names[i] || !*info->class_names[i])
            return nn_set_error(NN_ERR_ARGUMENT, "%s: info.class_names[%d] is NULL or empty", who, i);
    return check_class_names(who, "info.class_names", info->class_names, info->class_count, NN_ERR_ARGUMENT);
}

/* ---- writing ---- */

/* A growing string; `failed` once an allocation failed. */
typedef struct buffer {
    char *text;
    size_t len, cap;
    bool failed;
} buffer;

static void append(buffer *b, const char *s, size_t n) {
    if (b->failed) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        while (cap < b->len + n + 1) cap *= 2;
        char *grown = realloc(b->text, cap);
        if (!grown) {
            b->failed = true;
            return;
        }
        b->text = grown;
        b->cap = cap;
    }
    memcpy(b->text + b->len, s, n);
    b->len += n;
    b->text[b->len] = '\0';
}

static void append_str(buffer *b, const char *s) { append(b, s, strlen(s)); }

/* A JSON string literal: quotes, backslashes and control characters escaped. */
static void append_json_string(buffer *b, const char *s) {
    append_str(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char escaped[8];
        if (*p == '"' || *p == '\\') {
            escaped[0] = '\\';
            escaped[1] = (char)*p;
            append(b, escaped, 2);
        } else if (*p < 0x20) {
            snprintf(escaped, sizeof escaped, "\\u%04x", *p);
            append_str(b, escaped);
        } else {
            append(b, (const char *)p, 1);
        }
    }
    append_str(b, "\"");
}

char *nn_model_info_classes_json(const nn_model_info *info) {
    buffer b = {0};
    append_str(&b, "[");
    for (int i = 0; i < info->class_count; i++) {
        if (i) append_str(&b, ", ");
        append_json_string(&b, info->class_names[i]);
    }
    append_str(&b, "]");
    if (b.failed) {
        free(b.text);
        return NULL;
    }
    return b.text;
}

/* The shortest decimal (up to 9 digits) that reads back as the same float:
 * 0.485f is written "0.485", not "0.485000014". */
static void append_float(buffer *b, float v) {
    char text[32];
    for (int digits = 1; digits <= 9; digits++) {
        snprintf(text, sizeof text, "%.*g", digits, (double)v);
        if ((float)strtod(text, NULL) == v) break;
    }
    append_str(b, text);
}

/* "MEAN,STD;MEAN,STD..." */
static char *normalize_text(const nn_model_info *info) {
    buffer b = {0};
    for (int c = 0; c < info->channels; c++) {
        if (c) append_str(&b, ";");
        append_float(&b, info->mean[c]);
        append_str(&b, ",");
        append_float(&b, info->std[c]);
    }
    if (b.failed) {
        free(b.text);
        return NULL;
    }
    return b.text;
}

void nn_model_info_meta_free(nn_st_meta *meta, int count) {
    for (int i = 0; i < count; i++) {
        free(meta[i].key);
        free(meta[i].value);
    }
}

nn_status nn_model_info_to_meta(const char *who, const nn_model_info *info, nn_st_meta meta[2], int *count) {
    *count = 0;
    if (!info) return NN_OK;
    NN_TRY(nn_model_info_check(who, info));
    struct {
        const char *key;
        char *value;
    } entries[2] = {{NN_INFO_NORMALIZE_KEY, info->channels > 0 ? normalize_text(info) : NULL},
                    {NN_INFO_CLASSES_KEY, info->class_count > 0 ? nn_model_info_classes_json(info) : NULL}};
    bool wanted[2] = {info->channels > 0, info->class_count > 0};
    nn_status status = NN_OK;
    for (int i = 0; i < 2; i++) {
        if (!wanted[i]) continue;
        char *key = strdup(entries[i].key);
        if (!key || !entries[i].value) {
            free(key);
            free(entries[i].value);
            status = nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", who);
            continue;
        }
        meta[*count].key = key;
        meta[*count].value = entries[i].value;
        (*count)++;
    }
    if (status != NN_OK) {
        nn_model_info_meta_free(meta, *count);
        *count = 0;
    }
    return status;
}

/* ---- reading ---- */

static nn_status parse_normalize(const char *who, const char *path, const char *text, nn_model_info *info) {
    const char *p = text;
    int c = 0;
    while (*p) {
        if (c == NN_MODEL_INFO_MAX_CHANNELS)
            return nn_set_error(NN_ERR_IO, "%s: %s: metadata \"%s\" has more than %d channels", who, path,
                                NN_INFO_NORMALIZE_KEY, NN_MODEL_INFO_MAX_CHANNELS);
        char *end;
        double mean = strtod(p, &end);
        bool ok = end != p && *end == ',';
        double std = ok ? strtod(end + 1, &end) : 0.0;
        ok = ok && (*end == ';' || *end == '\0') && isfinite(mean) && isfinite(std) && std > 0.0;
        if (!ok)
            return nn_set_error(NN_ERR_IO, "%s: %s: metadata \"%s\" = \"%.60s\" is not MEAN,STD per channel "
                                           "(joined by ';', STD > 0)", who, path, NN_INFO_NORMALIZE_KEY, text);
        info->mean[c] = (float)mean;
        info->std[c] = (float)std;
        c++;
        p = *end ? end + 1 : end;
        if (*end == ';' && !*p)
            return nn_set_error(NN_ERR_IO, "%s: %s: metadata \"%s\" ends with ';'", who, path,
                                NN_INFO_NORMALIZE_KEY);
    }
    if (c == 0)
        return nn_set_error(NN_ERR_IO, "%s: %s: metadata \"%s\" is empty", who, path, NN_INFO_NORMALIZE_KEY);
    info->channels = c;
    return NN_OK;
}

static const char *skip_space(const char *p) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    return p;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* One JSON string at p (on its opening quote) into b as UTF-8; returns the
 * character after the closing quote, or NULL when malformed. Surrogate
 * pairs are refused: class names outside the basic plane are written
 * unescaped by every writer we know. */
static const char *read_json_string(const char *p, buffer *b) {
    if (*p != '"') return NULL;
    for (p++; *p != '"'; p++) {
        if (!*p || (unsigned char)*p < 0x20) return NULL;
        if (*p != '\\') {
            append(b, p, 1);
            continue;
        }
        p++;
        const char *simple = strchr("\"\\/bfnrt", *p);
        if (*p && simple) {
            static const char decoded[] = "\"\\/\b\f\n\r\t";
            append(b, &decoded[simple - "\"\\/bfnrt"], 1);
            continue;
        }
        if (*p != 'u') return NULL;
        unsigned code = 0;
        for (int i = 1; i <= 4; i++) {
            int d = hex_digit(p[i]);
            if (d < 0) return NULL;
            code = code * 16 + (unsigned)d;
        }
        p += 4;
        if (code == 0 || (code >= 0xD800 && code <= 0xDFFF)) return NULL;
        char utf8[3];
        if (code < 0x80) {
            utf8[0] = (char)code;
            append(b, utf8, 1);
        } else if (code < 0x800) {
            utf8[0] = (char)(0xC0 | (code >> 6));
            utf8[1] = (char)(0x80 | (code & 0x3F));
            append(b, utf8, 2);
        } else {
            utf8[0] = (char)(0xE0 | (code >> 12));
            utf8[1] = (char)(0x80 | ((code >> 6) & 0x3F));
            utf8[2] = (char)(0x80 | (code & 0x3F));
            append(b, utf8, 3);
        }
    }
    return p + 1;
}

static nn_status parse_classes(const char *who, const char *path, const char *text, nn_model_info *info) {
    const char *p = skip_space(text);
    bool ok = *p == '[';
    p = ok ? skip_space(p + 1) : p;
    int count = 0, cap = 0;
    char **names = NULL;
    bool memory = false;
    while (ok && *p != ']') {
        if (count > 0) {
            ok = *p == ',';
            p = skip_space(p + 1);
            if (!ok) break;
        }
        buffer b = {0};
        const char *after = read_json_string(p, &b);
        ok = after && !b.failed && b.len > 0;
        memory = after && b.failed;
        if (ok && count == cap) {
            cap = cap ? cap * 2 : 16;
            char **grown = realloc(names, (size_t)cap * sizeof *names);
            if (!grown) ok = false, memory = true;
            else names = grown;
        }
        if (!ok) {
            free(b.text);
            break;
        }
        names[count++] = b.text;
        p = skip_space(after);
    }
    if (ok) ok = *skip_space(p + 1) == '\0' && count > 0;
    if (!ok) {
        for (int i = 0; i < count; i++) free(names[i]);
        free(names);
        if (memory) return nn_set_error(NN_ERR_MEMORY, "%s: %s: out of host memory", who, path);
        return nn_set_error(NN_ERR_IO, "%s: %s: metadata \"%s\" = \"%.60s\" is not a non-empty JSON list of "
                                       "non-empty strings", who, path, NN_INFO_CLASSES_KEY, text);
    }
    char where[96];
    snprintf(where, sizeof where, "%s: metadata \"%s\"", path, NN_INFO_CLASSES_KEY);
    nn_status checked = check_class_names(who, where, names, count, NN_ERR_IO);
    if (checked != NN_OK) {
        for (int i = 0; i < count; i++) free(names[i]);
        free(names);
        return checked;
    }
    info->class_count = count;
    info->class_names = names;
    return NN_OK;
}

void nn_model_info_free(nn_model_info *info) {
    if (!info) return;
    for (int i = 0; i < info->class_count; i++) free(info->class_names[i]);
    free(info->class_names);
    memset(info, 0, sizeof *info);
}

nn_status nn_read_model_info(const char *path, nn_model_info *info) {
    const char *who = "nn_read_model_info";
    if (!info) return nn_set_error(NN_ERR_ARGUMENT, "%s: info is NULL", who);
    memset(info, 0, sizeof *info);
    if (!path || !*path) return nn_set_error(NN_ERR_ARGUMENT, "%s: path is NULL or empty", who);
    nn_st_file file;
    NN_TRY(nn_st_open(who, path, &file));
    nn_model_info read = {0};
    const char *normalize = nn_st_meta_get(&file.header, NN_INFO_NORMALIZE_KEY);
    const char *classes = nn_st_meta_get(&file.header, NN_INFO_CLASSES_KEY);
    nn_status status = normalize ? parse_normalize(who, path, normalize, &read) : NN_OK;
    if (status == NN_OK && classes) status = parse_classes(who, path, classes, &read);
    nn_st_close(&file);
    if (status != NN_OK) {
        nn_model_info_free(&read);
        return status;
    }
    *info = read;
    return NN_OK;
}
