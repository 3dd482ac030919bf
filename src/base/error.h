/* Internal side of nn_error.h: setting the thread's last error. */
#ifndef NN_CORE_ERROR_H
#define NN_CORE_ERROR_H

#include <stddef.h>
#include <stdint.h>
#include "nn_error.h"

/* Record a failure and return `status`, so callers can write
 * `return nn_set_error(NN_ERR_SHAPE, "nn_matmul: ...", ...);` */
#ifdef __MINGW32__
/* The Windows build uses mingw's C99 printf (__USE_MINGW_ANSI_STDIO): %zu, %lld. */
#define NN_PRINTF_FORMAT(fmt, args) __attribute__((format(gnu_printf, fmt, args)))
#else
#define NN_PRINTF_FORMAT(fmt, args) __attribute__((format(printf, fmt, args)))
#endif
nn_status nn_set_error(nn_status status, const char *fmt, ...) NN_PRINTF_FORMAT(2, 3);

/* Record a failure and return NULL, for functions returning pointers. */
#define NN_FAIL_NULL(status, ...) (nn_set_error((status), __VA_ARGS__), NULL)

/* Propagate a failed status unchanged (the callee already set the message). */
#define NN_TRY(expr)                          \
    do {                                      \
        nn_status try_status_ = (expr);       \
        if (try_status_ != NN_OK) return try_status_; \
    } while (0)

/* "[2, 3, 4]" into buf (size >= 64 recommended); returns buf. */
const char *nn_format_shape(int ndim, const int64_t *shape, char *buf, size_t size);

#endif
