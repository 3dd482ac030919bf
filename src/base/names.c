#include "names.h"

char nn_name_bad_char(const char *name) {
    for (const char *c = name; *c; c++)
        if (!(*c == '_' || (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
            return *c;
    return '\0';
}
