#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* NN_TESTS_TIMES=1 appends each test's wall time, to find what makes the suite long. */
int nn_test_show_times(void) {
    const char *times = getenv("NN_TESTS_TIMES");
    return times && strcmp(times, "0") != 0;
}

static int by_name(const void *a, const void *b) {
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    return strcmp(x, y);
}

double nn_test_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    const char *filter = argc > 1 ? argv[1] : NULL;
    /* NN_TESTS_TIMES=1 appends each test's wall time, to find what makes the suite long. */
    const int show_times = nn_test_show_times();
    /* Kernel variants by the heuristic, the same on every run and machine;
     * test_vulkan_tune.c turns the tuner on for itself. */
    setenv("NN_ENGINE_VULKAN_TUNE", "off", 0);
    /* Constructors run in link order; sort so runs read the same everywhere. */
    qsort(tests, (size_t)test_count, sizeof tests[0], by_name);
    int passed = 0, failed = 0;
    for (int i = 0; i < test_count; i++) {
        if (filter && !strstr(tests[i].name, filter)) continue;
        current_failures = 0;
        double start = nn_test_seconds();
        tests[i].fn();
        if (current_failures == 0) {
            passed++;
            printf("ok   %s", tests[i].name);
        } else {
            failed++;
            printf("FAIL %s (%d failed checks)", tests[i].name, current_failures);
        }
        if (show_times) printf(" [%.2f s]", nn_test_seconds() - start);
        putchar('\n');
        fflush(stdout);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
