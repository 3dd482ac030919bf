/* Command-line flags, declared as a table: each command lists its flags with
 * a type, a destination and a help line, and one parser checks them all
 * (unknown flags, missing values, numbers out of range) with messages that
 * name the command and the flag. */
#ifndef NNENGINE_OPTIONS_H
#define NNENGINE_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

typedef enum option_type {
    OPTION_INT,    /* int64_t, within [min, max] */
    OPTION_FLOAT,  /* double, within [min, max] */
    OPTION_STRING, /* const char * (points into argv) */
    OPTION_SWITCH, /* bool, set to true when present; takes no value */
    OPTION_STRING_LIST, /* option_strings: repeatable, each value appended */
} option_type;

/* How many of `count` items a limit flag takes (--limit, --eval-limit):
 * the first `limit`, or all of them for 0 (or a limit past the count). */
static inline int64_t option_first_or_all(int64_t limit, int64_t count) {
    return limit > 0 && limit < count ? limit : count;
}

/* The values of a repeatable flag (pointing into argv), in the order given. */
#define OPTION_LIST_MAX 32
typedef struct option_strings {
    const char *values[OPTION_LIST_MAX];
    int count;
} option_strings;

typedef struct option_spec {
    const char *name; /* "--epochs" */
    option_type type;
    void *target;
    double min, max;  /* numeric range, inclusive */
    const char *metavar;
    const char *help;
} option_spec;

typedef struct command_spec {
    const char *name;        /* "train" */
    const char *usage;       /* "train MODEL --data DIR [options]" */
    const char *summary;     /* one line */
    const char *description; /* paragraphs after the usage, may be NULL */
    int positional_count;    /* positional arguments required (e.g. MODEL) */
    const char **positional; /* where they go */
    const option_spec *options;
    int option_count;
    const char *const *required; /* string flags it cannot run without (NULL-terminated), or NULL */
} command_spec;

/* Exit statuses: 2 for anything the user gave wrong (flags, files, data). */
enum { EXIT_OK = 0, EXIT_FAILURE_RUNTIME = 1, EXIT_BAD_INPUT = 2 };

/* Parses argv[0..argc-1] (the words after the command name). Returns
 * EXIT_OK, or EXIT_BAD_INPUT after printing the problem to stderr (a
 * required flag missing: all the required ones named). Sets
 * *help_requested when --help/-h is present (then nothing else is checked). */
int options_parse(const command_spec *command, int argc, char **argv, bool *help_requested);

/* options_parse, then the --help text when asked for. Returns true when the
 * command is done (help printed, or a bad flag reported): it then returns
 * *exit_status. */
bool options_parse_or_help(const command_spec *command, int argc, char **argv, int *exit_status);

/* The command's --help text on stdout. */
void options_print_help(const command_spec *command);

/* "1,1,28,28" -> dims; returns the count or -1 when malformed. */
int options_parse_int_list(const char *text, int64_t *values, int capacity);

#endif
