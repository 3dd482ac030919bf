#include "suggest.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static bool same_letter(char a, char b) { return tolower((unsigned char)a) == tolower((unsigned char)b); }

/* The edit distance between a[0, n) and b, ignoring case, with a swap of two
 * neighbouring letters one edit (the optimal string alignment distance), or
 * `limit` + 1 when it is above `limit` (names longer than 64 letters are
 * never near). */
static size_t distance(const char *a, size_t n, const char *b, size_t limit) {
    const size_t m = strlen(b);
    if (n > 64 || m > 64 || (n > m ? n - m : m - n) > limit) return limit + 1;
    size_t d[65][65];
    for (size_t i = 0; i <= n; i++) d[i][0] = i;
    for (size_t j = 0; j <= m; j++) d[0][j] = j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            size_t best = d[i - 1][j - 1] + (same_letter(a[i - 1], b[j - 1]) ? 0 : 1);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && same_letter(a[i - 1], b[j - 2]) && same_letter(a[i - 2], b[j - 1]) &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[n][m];
}

const char *suggest_name(const char *given, size_t given_length, const char *const *names, int count) {
    const size_t limit = given_length / 3 > 1 ? given_length / 3 : 1;
    const char *best = NULL;
    size_t best_distance = limit + 1;
    for (int i = 0; i < count; i++) {
        const size_t d = distance(given, given_length, names[i], limit);
        if (d < best_distance) best = names[i], best_distance = d;
    }
    return best;
}
