#include "posix_compat.h"

int setenv(const char *name, const char *value, int overwrite) {
    if (!overwrite && getenv(name)) return 0;
    return _putenv_s(name, value) == 0 ? 0 : -1;
}

/* An empty value removes the variable from the environment on Windows. */
int unsetenv(const char *name) { return _putenv_s(name, "") == 0 ? 0 : -1; }

void *memmem(const void *haystack, size_t haystack_size, const void *needle, size_t needle_size) {
    const char *h = haystack;
    if (needle_size == 0) return (void *)h;
    for (size_t i = 0; i + needle_size <= haystack_size; i++)
        if (memcmp(h + i, needle, needle_size) == 0) return (void *)(h + i);
    return NULL;
}
