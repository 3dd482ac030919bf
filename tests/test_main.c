#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#define MAX_TESTS 1024
#define MAX_REPORTED_FAILURES 8

static struct {
    const char *name;
    nn_test_fn fn;
} tests[MAX_TESTS];
static int test_count;
static int current_failures;

void nn_test_register(const char *name, nn_test_fn fn) {
    if (test_count == MAX_TESTS) {
        fprintf(stderr, "test.h: more than %d tests; raise MAX_TESTS\n", MAX_TESTS);
        exit(2);
    }
    tests[test_count].name = name;
    tests[test_count].fn = fn;
    test_count++;
}

void nn_test_fail(const char *file, int line, const char *fmt, ...) {
    current_failures++;
    if (current_failures > MAX_REPORTED_FAILURES) return;
    fprintf(stdout, "    %s:%d: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
}

int nn_test_failures(void) { return current_failures; }

static int by_name(const void *a, const void *b) {
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    return strcmp(x, y);
}

int main(int argc, char **argv) {
    const char *filter = argc > 1 ? argv[1] : NULL;
    /* Kernel variants by the heuristic, the same on every run and machine;
     * test_vulkan_tune.c turns the tuner on for itself. */
    setenv("NN_ENGINE_VULKAN_TUNE", "off", 0);
    /* Constructors run in link order; sort so runs read the same everywhere. */
    qsort(tests, (size_t)test_count, sizeof tests[0], by_name);
    int passed = 0, failed = 0;
    for (int i = 0; i < test_count; i++) {
        if (filter && !strstr(tests[i].name, filter)) continue;
        current_failures = 0;
        tests[i].fn();
        if (current_failures == 0) {
            passed++;
            printf("ok   %s\n", tests[i].name);
        } else {
            failed++;
            printf("FAIL %s (%d failed checks)\n", tests[i].name, current_failures);
        }
        fflush(stdout);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
