/* A plain test runner: TEST(name) registers a function; CHECK* record a
 * failure with file:line and carry on. The runner's last line is
 * "N passed, N failed". Run one test or a group by giving a substring of
 * its name: build/tests/nn_tests conv */
#ifndef NN_TEST_H
#define NN_TEST_H

#include <math.h>
#include <stdio.h>

#include "base/error.h" /* NN_PRINTF_FORMAT */

typedef void (*nn_test_fn)(void);
void nn_test_register(const char *name, nn_test_fn fn);
void nn_test_fail(const char *file, int line, const char *fmt, ...)
    NN_PRINTF_FORMAT(3, 4);
/* Failures recorded so far in the running test (to stop early if wanted). */
int nn_test_failures(void);
/* Seconds on a monotonic clock, and whether NN_TESTS_TIMES asks for the parts' times. */
double nn_test_seconds(void);
int nn_test_show_times(void);

#define TEST(name)                                                                  \
    static void name(void);                                                         \
    __attribute__((constructor)) static void name##_register(void) {                \
        nn_test_register(#name, name);                                              \
    }                                                                               \
    static void name(void)

#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (!(cond)) nn_test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);         \
    } while (0)

#define CHECK_MSG(cond, ...)                                                        \
    do {                                                                            \
        if (!(cond)) nn_test_fail(__FILE__, __LINE__, __VA_ARGS__);                 \
    } while (0)

/* |got - want| <= tol * max(1, |want|) */
#define CHECK_CLOSE(got, want, tol)                                                 \
    do {                                                                            \
        double got_ = (double)(got), want_ = (double)(want);                        \
        double scale_ = fabs(want_) > 1.0 ? fabs(want_) : 1.0;                       \
        if (!(fabs(got_ - want_) <= (tol) * scale_))                                \
            nn_test_fail(__FILE__, __LINE__, "%s = %.9g, want %.9g (tol %g)", #got, \
                         got_, want_, (double)(tol));                               \
    } while (0)

#endif
