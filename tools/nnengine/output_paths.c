/* Outputs that name the same file, found before a run writes either
 * (output_paths.h). */
#include "output_paths.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "platform/files.h"
#include "setup.h"

int check_writable_outputs(const char *command, const output_path *outputs, int count) {
    for (int i = 0; i < count; i++)
        if (outputs[i].path && nn_check_writable_path(outputs[i].path) != NN_OK) {
            fprintf(stderr, "nnengine %s: %s: %s\n", command, outputs[i].flag, library_error());
            return EXIT_BAD_INPUT;
        }
    return EXIT_OK;
}

/* Where `path` leads: its resolved form if it exists (links followed),
 * else its folder's resolved form and its name; the path as given when
 * the folder does not exist either (writing there fails on its own). */
static char *place_of(const char *path) {
    char *resolved = nn_file_resolve(path);
    if (resolved) return resolved;
    const char *sep = nn_file_last_separator(path);
    const char *name = sep ? sep + 1 : path;
    char *folder = NULL;
    if (!sep) folder = nn_file_resolve(".");
    else if (sep == path) folder = nn_file_resolve("/");
    else {
        char *head = malloc((size_t)(sep - path) + 1);
        if (head) {
            memcpy(head, path, (size_t)(sep - path));
            head[sep - path] = '\0';
            folder = nn_file_resolve(head);
            free(head);
        }
    }
    const size_t bytes = (folder ? strlen(folder) : strlen(path)) + strlen(name) + 2;
    char *place = malloc(bytes);
    if (place && folder) snprintf(place, bytes, "%s/%s", folder, name);
    else if (place) snprintf(place, bytes, "%s", path);
    free(folder);
    return place;
}

static bool same_file(const char *a, const char *b, const char *place_a, const char *place_b) {
    if (place_a && place_b && strcmp(place_a, place_b) == 0) return true;
    nn_file_status sa, sb;
    if (nn_file_stat(a, &sa) != 0 || nn_file_stat(b, &sb) != 0) return false;
    return sa.st_ino != 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino; /* Windows reports no inodes */
}

bool paths_name_the_same_file(const char *a, const char *b) {
    char *place_a = place_of(a), *place_b = place_of(b);
    const bool same = same_file(a, b, place_a, place_b);
    free(place_a), free(place_b);
    return same;
}

int check_distinct_outputs(const char *command, const output_path *outputs, int count) {
    char **places = calloc((size_t)(count > 0 ? count : 1), sizeof *places);
    if (!places) {
        fprintf(stderr, "nnengine %s: out of host memory\n", command);
        return EXIT_FAILURE_RUNTIME;
    }
    int status = EXIT_OK;
    for (int i = 0; i < count; i++)
        if (outputs[i].path) places[i] = place_of(outputs[i].path);
    for (int i = 0; i < count && status == EXIT_OK; i++)
        for (int j = i + 1; j < count && status == EXIT_OK && outputs[i].path; j++)
            if (outputs[j].path && same_file(outputs[i].path, outputs[j].path, places[i], places[j])) {
                fprintf(stderr, "nnengine %s: %s %s and %s %s name the same file: writing one would destroy the "
                        "other; give them different paths\n", command, outputs[i].flag, outputs[i].path,
                        outputs[j].flag, outputs[j].path);
                status = EXIT_BAD_INPUT;
            }
    for (int i = 0; i < count; i++) free(places[i]);
    free(places);
    return status;
}
