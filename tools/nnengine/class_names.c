#include "class_names.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/file_read.h"

#define MAX_FILE_BYTES (1 << 20) /* a million bytes of names is no class list */
#define MAX_NAME_BYTES 255

/* Whether s[0..n) is UTF-8 without control characters (names go into JSON
 * metadata and onto the terminal). */
static bool printable_utf8(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        if (c < 0x20 || c == 0x7f) return false;
        size_t extra = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : 4;
        if (extra == 4 || (extra && c < 0xC2) || c > 0xF4) return false;
        for (size_t k = 1; k <= extra; k++)
            if (i + k >= n || (s[i + k] & 0xC0) != 0x80) return false;
        i += extra + 1;
    }
    return true;
}

void class_names_free(char **names, int classes) {
    for (int i = 0; names && i < classes; i++) free(names[i]);
    free(names);
}

static char **refuse(const char *command, const char *path, char *text, char **names, int classes,
                     const char *why, long line) {
    if (line > 0) fprintf(stderr, "nnengine %s: --class-names %s: line %ld: %s\n", command, path, line, why);
    else fprintf(stderr, "nnengine %s: --class-names %s: %s\n", command, path, why);
    free(text);
    class_names_free(names, classes);
    return NULL;
}

char **class_names_read(const char *command, const char *path, int classes) {
    char unreadable[160];
    int64_t bytes = 0;
    FILE *f = nn_open_regular_file(path, &bytes, unreadable, sizeof unreadable); /* a FIFO is refused, not waited on */
    if (!f) return refuse(command, path, NULL, NULL, 0, unreadable, 0);
    char *text = malloc(MAX_FILE_BYTES + 1);
    size_t size = text ? fread(text, 1, MAX_FILE_BYTES + 1, f) : 0;
    bool failed = !text || ferror(f);
    fclose(f);
    if (failed) return refuse(command, path, text, NULL, 0, text ? "cannot read it" : "out of host memory", 0);
    if (size > MAX_FILE_BYTES) return refuse(command, path, text, NULL, 0, "larger than 1 MiB: not a list of names", 0);
    if (size > 0 && text[size - 1] == '\n') size--; /* the last line's newline */
    char **names = calloc((size_t)classes, sizeof *names);
    if (!names) return refuse(command, path, text, NULL, 0, "out of host memory", 0);
    int count = 0;
    size_t start = 0;
    for (long line = 1; size > 0 && start <= size; line++) {
        size_t end = start;
        while (end < size && text[end] != '\n') end++;
        size_t length = end - start;
        if (length > 0 && text[start + length - 1] == '\r') length--;
        if (count == classes) {
            char why[96];
            snprintf(why, sizeof why, "more than the data's %d classes", classes);
            return refuse(command, path, text, names, classes, why, line);
        }
        if (length == 0) return refuse(command, path, text, names, classes, "an empty name", line);
        if (length > MAX_NAME_BYTES) return refuse(command, path, text, names, classes, "a name longer than 255 bytes", line);
        if (!printable_utf8((const unsigned char *)text + start, length))
            return refuse(command, path, text, names, classes, "not UTF-8 text (or a control character)", line);
        if (!(names[count] = malloc(length + 1))) return refuse(command, path, text, names, classes, "out of host memory", 0);
        memcpy(names[count], text + start, length);
        names[count][length] = '\0';
        for (int earlier = 0; earlier < count; earlier++)
            if (strcmp(names[earlier], names[count]) == 0) {
                char why[96];
                snprintf(why, sizeof why, "repeats line %d's name (each class needs its own)", earlier + 1);
                count++;
                return refuse(command, path, text, names, classes, why, line);
            }
        count++;
        start = end + 1;
    }
    if (count != classes) {
        char why[96];
        snprintf(why, sizeof why, "%d name%s for the data's %d classes (one per line)", count, count == 1 ? "" : "s",
                 classes);
        return refuse(command, path, text, names, classes, why, 0);
    }
    free(text);
    return names;
}
