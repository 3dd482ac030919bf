/* The label check of IDX data (label_check.h). */
#include "label_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "options.h"

/* The label file of `prefix` (train, t10k) in dir, as the loader finds it. */
static void label_file(const char *dir, const char *prefix, char *path, size_t size) {
    snprintf(path, size, "%s/%s-labels-idx1-ubyte.gz", dir, prefix);
    if (access(path, F_OK) != 0) snprintf(path, size, "%s/%s-labels-idx1-ubyte", dir, prefix);
}

/* The first label >= classes in ds, with its count; -1 when none. */
static int32_t label_past(const nn_dataset *ds, int64_t classes, int64_t *count) {
    int32_t found = -1;
    *count = 0;
    for (int64_t i = 0; i < ds->count; i++)
        if (ds->labels[i] >= classes && (found < 0 || ds->labels[i] == found)) {
            found = ds->labels[i];
            (*count)++;
        }
    return found;
}

int check_labels(const char *command, const char *dir, const nn_dataset *train, const nn_dataset *test,
                 bool test_is_validation, int64_t classes) {
    char path[4096];
    const nn_dataset *sets[2] = {train, test};
    const char *prefixes[2] = {"train", test_is_validation ? "train" : "t10k"};
    if (classes > 0) {
        for (int s = 0; s < 2; s++) {
            int64_t count;
            int32_t label = label_past(sets[s], classes, &count);
            if (label < 0) continue;
            label_file(dir, prefixes[s], path, sizeof path);
            fprintf(stderr, "nnengine %s: label %d (%lld image%s) in %s is >= --classes %lld\n", command, label,
                    (long long)count, count == 1 ? "" : "s", path, (long long)classes);
            return EXIT_BAD_INPUT;
        }
        return EXIT_OK;
    }
    /* Inferred: every label below the largest must have an image. */
    int top = train->classes > test->classes ? train->classes : test->classes;
    if (top <= 0) return EXIT_OK;
    int64_t *counts = calloc((size_t)top, sizeof *counts);
    if (!counts) return EXIT_OK; /* the check is a help, not needed to train */
    for (int s = 0; s < 2; s++)
        for (int64_t i = 0; i < sets[s]->count; i++)
            if (sets[s]->labels[i] >= 0 && sets[s]->labels[i] < top) counts[sets[s]->labels[i]]++;
    int missing = 0, first_missing = -1, last_missing = -1;
    for (int c = 0; c < top; c++)
        if (counts[c] == 0) {
            missing++;
            if (first_missing < 0) first_missing = c;
            last_missing = c;
        }
    int64_t top_count = counts[top - 1];
    free(counts);
    if (missing == 0) return EXIT_OK;
    label_file(dir, prefixes[0], path, sizeof path);
    fprintf(stderr, "nnengine %s: %s: label %d (%lld image%s) makes %d classes, but %d label%s below it (%d to %d) "
                    "ha%s no image of its own: a stray label? Fix the labels, or give --classes K (K > %d) to train "
                    "with the gaps\n", command, path, top - 1, (long long)top_count, top_count == 1 ? "" : "s", top,
            missing, missing == 1 ? "" : "s", first_missing, last_missing, missing == 1 ? "s" : "ve", top - 1);
    return EXIT_BAD_INPUT;
}
