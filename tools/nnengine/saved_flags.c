#include "saved_flags.h"

#include <stdio.h>
#include <string.h>

/* A value's character as the text keeps it: "; " separates the flags there,
 * so a value's own ';' is kept as ','. */
static char kept_char(char c) { return c == ';' ? ',' : c; }

bool saved_flags_format(const rank_flag *flags, int count, char *out, size_t size) {
    size_t used = 0;
    if (size == 0) return false;
    out[0] = '\0';
    for (int i = 0; i < count; i++) {
        const int n = snprintf(out + used, size - used, "%s%s=", i ? "; " : "", flags[i].flag);
        if (n < 0 || (size_t)n >= size - used) return false;
        used += (size_t)n;
        for (const char *v = flags[i].value; *v; v++) {
            if (used + 1 >= size) return false;
            out[used++] = kept_char(*v);
        }
        out[used] = '\0';
    }
    return true;
}

/* The value `flag` has in such a text, into value[size] (truncated to
 * fit); false when the text does not name the flag. */
static bool saved_value(const char *saved, const char *flag, char *value, size_t size) {
    const size_t length = strlen(flag);
    for (const char *at = saved; (at = strstr(at, flag)) != NULL; at += length) {
        if ((at != saved && (at - saved < 2 || at[-2] != ';' || at[-1] != ' ')) || at[length] != '=') continue;
        const char *start = at + length + 1, *end = strstr(start, "; ");
        const size_t n = end ? (size_t)(end - start) : strlen(start);
        snprintf(value, size, "%.*s", (int)(n < size ? n : size - 1), start);
        return true;
    }
    return false;
}

bool saved_flags_differ(const char *saved, const rank_flag *flag, char *value, size_t size) {
    char mine[sizeof flag->value];
    snprintf(mine, sizeof mine, "%s", flag->value);
    for (char *c = mine; *c; c++) *c = kept_char(*c); /* as saved_flags_format wrote it */
    return saved_value(saved, flag->flag, value, size) && strcmp(value, mine) != 0;
}
