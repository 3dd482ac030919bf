#include "confusion.h"

#include <stdlib.h>
#include <string.h>

bool confusion_init(confusion *m, int classes) {
    m->classes = classes;
    m->counts = calloc((size_t)classes * (size_t)classes, sizeof *m->counts);
    return m->counts != NULL;
}

void confusion_free(confusion *m) {
    free(m->counts);
    m->counts = NULL;
}

void confusion_add(confusion *m, const float *logits, const int32_t *labels, int64_t rows) {
    for (int64_t i = 0; i < rows; i++) {
        const float *row = logits + i * m->classes;
        int best = 0;
        for (int c = 1; c < m->classes; c++)
            if (row[c] > row[best]) best = c;
        if (labels[i] >= 0 && labels[i] < m->classes) m->counts[(int64_t)labels[i] * m->classes + best]++;
    }
}

/* "3 sneaker", or "3" where the class has no name besides its number (IDX). */
static void class_label(char *out, size_t size, int c, char *const *names) {
    char number[16];
    snprintf(number, sizeof number, "%d", c);
    bool named = names && names[c] && strcmp(names[c], number) != 0;
    snprintf(out, size, "%s%s%s", number, named ? " " : "", named ? names[c] : "");
}

static int digits(int64_t v) {
    int d = 1;
    while (v >= 10) v /= 10, d++;
    return d;
}

void confusion_print(const confusion *m, char *const *names, FILE *out) {
    const int k = m->classes;
    int name_width = 5; /* "class" */
    int64_t largest = 0;
    for (int c = 0; c < k; c++) {
        char label[64];
        class_label(label, sizeof label, c, names);
        int w = (int)strlen(label);
        if (w > name_width) name_width = w > 28 ? 28 : w;
        for (int p = 0; p < k; p++) largest = m->counts[(int64_t)c * k + p] > largest ? m->counts[(int64_t)c * k + p] : largest;
    }
    char label[64];
    fprintf(out, "per-class accuracy:\n  %-*s  %8s  %8s\n", name_width, "class", "images", "accuracy");
    for (int c = 0; c < k; c++) {
        int64_t total = 0;
        for (int p = 0; p < k; p++) total += m->counts[(int64_t)c * k + p];
        class_label(label, sizeof label, c, names);
        if (total) fprintf(out, "  %-*.*s  %8lld  %7.2f%%\n", name_width, name_width, label, (long long)total,
                           100.0 * m->counts[(int64_t)c * k + c] / (double)total);
        else fprintf(out, "  %-*.*s  %8d  %8s\n", name_width, name_width, label, 0, "-");
    }
    if (k > CONFUSION_PRINT_MAX) {
        fprintf(out, "(the confusion matrix is not printed for more than %d classes)\n", CONFUSION_PRINT_MAX);
        return;
    }
    int cell = digits(largest) > digits(k - 1) ? digits(largest) : digits(k - 1);
    fprintf(out, "confusion matrix (rows: true class, columns: predicted class):\n  %*s", name_width, "");
    for (int p = 0; p < k; p++) fprintf(out, " %*d", cell, p);
    fputc('\n', out);
    for (int c = 0; c < k; c++) {
        class_label(label, sizeof label, c, names);
        fprintf(out, "  %-*.*s", name_width, name_width, label);
        for (int p = 0; p < k; p++) fprintf(out, " %*lld", cell, (long long)m->counts[(int64_t)c * k + p]);
        fputc('\n', out);
    }
}
