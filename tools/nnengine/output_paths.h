/* Files of one command that name the same file (issue 40, item 13):
 * `--save X --checkpoint X` would overwrite the training state with the
 * weights, `--log X --save X` the log, a --save link to the checkpoint its
 * target, `export --onnx X --weights X` the weights it reads. Paths are the same when they resolve to the same place (links,
 * "./", "..") or, for files that exist, are the same file (device and
 * inode where the system has them). */
#ifndef NNENGINE_OUTPUT_PATHS_H
#define NNENGINE_OUTPUT_PATHS_H

#include <stdbool.h>

typedef struct output_path {
    const char *flag; /* "--save" */
    const char *path; /* NULL: the flag was not given */
} output_path;

/* Whether each given path can be written (nn_check_writable_path), found
 * out before a run rather than after its hours of training: EXIT_OK, or
 * EXIT_BAD_INPUT having printed "nnengine COMMAND: FLAG: why" for the first
 * that cannot. */
int check_writable_outputs(const char *command, const output_path *outputs, int count);
/* Returns an exit status (EXIT_OK, or EXIT_BAD_INPUT having printed
 * "nnengine COMMAND: FLAG A and FLAG B name the same file ..."). */
int check_distinct_outputs(const char *command, const output_path *outputs, int count);
/* Whether paths a and b name the same file, by the rules above. */
bool paths_name_the_same_file(const char *a, const char *b);

#endif
