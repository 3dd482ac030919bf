/* POSIX calls the C tests use that Windows' C runtime lacks, for the Windows
 * test build only: mk/windows.mk force-includes this header into every test
 * file, so the tests themselves stay as they are. */
#ifndef NN_TESTS_WINDOWS_POSIX_COMPAT_H
#define NN_TESTS_WINDOWS_POSIX_COMPAT_H

#include <direct.h>
#include <io.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int setenv(const char *name, const char *value, int overwrite);
int unsetenv(const char *name);
void *memmem(const void *haystack, size_t haystack_size, const void *needle, size_t needle_size);
/* Windows folders have no mode bits. */
#define mkdir(path, mode) _mkdir(path)

#endif
