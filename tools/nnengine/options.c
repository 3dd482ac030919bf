#include "options.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suggest.h"

static const option_spec *find_option(const command_spec *command, const char *name, size_t length) {
    for (int i = 0; i < command->option_count; i++) {
        const char *candidate = command->options[i].name;
        if (strlen(candidate) == length && strncmp(candidate, name, length) == 0)
            return &command->options[i];
    }
    return NULL;
}

static int bad(const command_spec *command, const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "nnengine %s: ", command->name);
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n(see: nnengine %s --help)\n", command->name);
    return EXIT_BAD_INPUT;
}

/* An unknown flag, with the known one it may be a typo of (and --help). */
static int unknown_flag(const command_spec *command, const char *word, size_t length) {
    const char *names[256];
    int count = 0;
    for (int i = 0; i < command->option_count && count < 255; i++) names[count++] = command->options[i].name;
    names[count++] = "--help";
    const char *near = suggest_name(word, length, names, count);
    char hint[96] = "";
    if (near) snprintf(hint, sizeof hint, " (did you mean %s?)", near);
    return bad(command, "unknown flag '%s'%s", word, hint);
}

static int set_value(const command_spec *command, const option_spec *option, const char *value) {
    char *end = NULL;
    errno = 0;
    switch (option->type) {
    case OPTION_INT: {
        long long v = strtoll(value, &end, 10);
        if (end == value || *end || errno)
            return bad(command, "%s needs a whole number, got '%s'", option->name, value);
        if (v < option->min || v > option->max) {
            char range[96];
            snprintf(range, sizeof range, "%s must be in [%.0f, %.0f]", option->name, option->min,
                     option->max);
            return bad(command, "%s, got %s", range, value);
        }
        *(int64_t *)option->target = v;
        return EXIT_OK;
    }
    case OPTION_FLOAT: {
        double v = strtod(value, &end);
        if (end == value || *end || errno || !isfinite(v))
            return bad(command, "%s needs a number, got '%s'", option->name, value);
        if (v < option->min || v > option->max) {
            char range[96];
            snprintf(range, sizeof range, "%s must be in [%g, %g]", option->name, option->min,
                     option->max);
            return bad(command, "%s, got %s", range, value);
        }
        *(double *)option->target = v;
        return EXIT_OK;
    }
    case OPTION_STRING:
        if (!*value) return bad(command, "%s needs a value%s", option->name, "");
        *(const char **)option->target = value;
        return EXIT_OK;
    case OPTION_STRING_LIST: {
        option_strings *list = option->target;
        if (!*value) return bad(command, "%s needs a value%s", option->name, "");
        if (list->count == OPTION_LIST_MAX) return bad(command, "%s is given more than %s times", option->name, "32");
        list->values[list->count++] = value;
        return EXIT_OK;
    }
    case OPTION_SWITCH:
        break;
    }
    return bad(command, "%s takes no value%s", option->name, "");
}

static bool is_required(const command_spec *command, const char *name) {
    for (const char *const *r = command->required; r && *r; r++)
        if (strcmp(*r, name) == 0) return true;
    return false;
}

/* When a required flag is absent: "--weights FILE and --data DIR are
 * required", naming every required flag of the command. */
static int check_required(const command_spec *command) {
    int count = 0;
    bool missing = false;
    for (const char *const *r = command->required; r && *r; r++, count++) {
        const option_spec *option = find_option(command, *r, strlen(*r));
        if (option && !*(const char **)option->target) missing = true;
    }
    if (!missing) return EXIT_OK;
    char names[256] = "";
    size_t used = 0;
    for (int i = 0; i < count && used < sizeof names; i++) {
        const option_spec *option = find_option(command, command->required[i], strlen(command->required[i]));
        const char *joint = i == 0 ? "" : i + 1 == count ? " and " : ", ";
        used += (size_t)snprintf(names + used, sizeof names - used, "%s%s %s", joint, command->required[i],
                                 option && option->metavar ? option->metavar : "VALUE");
    }
    return bad(command, "%s %s required", names, count == 1 ? "is" : "are");
}

int options_parse(const command_spec *command, int argc, char **argv, bool *help_requested) {
    *help_requested = false;
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            *help_requested = true;
            return EXIT_OK;
        }
    int positional = 0;
    for (int i = 0; i < argc; i++) {
        const char *word = argv[i];
        if (strncmp(word, "--", 2) != 0 || strlen(word) == 2) {
            if (positional == command->positional_count)
                return bad(command, "unexpected argument '%s'%s", word, "");
            command->positional[positional++] = word;
            continue;
        }
        /* --flag VALUE or --flag=VALUE */
        const char *equals = strchr(word, '=');
        size_t length = equals ? (size_t)(equals - word) : strlen(word);
        const option_spec *option = find_option(command, word, length);
        if (!option) return unknown_flag(command, word, length);
        if (option->type == OPTION_SWITCH) {
            if (equals) return bad(command, "%s takes no value%s", option->name, "");
            *(bool *)option->target = true;
            continue;
        }
        const char *value = equals ? equals + 1 : NULL;
        if (!value) {
            if (i + 1 == argc) return bad(command, "%s needs a value (%s)", option->name, option->metavar);
            value = argv[++i];
        }
        int status = set_value(command, option, value);
        if (status != EXIT_OK) return status;
    }
    if (positional < command->positional_count)
        return bad(command, "missing argument; usage: nnengine %s%s", command->usage, "");
    return check_required(command);
}

bool options_parse_or_help(const command_spec *command, int argc, char **argv, int *exit_status) {
    bool help;
    *exit_status = options_parse(command, argc, argv, &help);
    if (*exit_status != EXIT_OK) return true;
    if (help) options_print_help(command);
    return help;
}

void options_print_help(const command_spec *command) {
    printf("usage: nnengine %s\n\n%s\n", command->usage, command->summary);
    if (command->description) printf("\n%s\n", command->description);
    if (command->option_count) printf("\noptions:\n");
    for (int i = 0; i < command->option_count; i++) {
        const option_spec *option = &command->options[i];
        char left[64];
        snprintf(left, sizeof left, "%s%s%s", option->name, option->metavar ? " " : "",
                 option->metavar ? option->metavar : "");
        printf("  %-26s %s%s\n", left, option->help, is_required(command, option->name) ? " (required)" : "");
    }
    printf("  %-26s %s\n", "-h, --help", "show this help");
}

int options_parse_int_list(const char *text, int64_t *values, int capacity) {
    int count = 0;
    const char *p = text;
    while (*p) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || count == capacity) return -1;
        values[count++] = v;
        if (*end == ',') end++;
        else if (*end) return -1;
        p = end;
    }
    return count;
}
