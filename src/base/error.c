#include "error.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Per thread, like errno: a failure on one thread never garbles another's. */
static _Thread_local char last_message[1024];
static _Thread_local nn_status last_status = NN_OK;

nn_status nn_set_error(nn_status status, const char *fmt, ...) {
    /* Formatted apart first: an argument may be nn_last_error() itself. */
    char message[sizeof last_message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    /* Messages quote files' contents (metadata, names): a control character
     * there (an escape sequence) must not reach a terminal as one. */
    for (char *c = message; *c; c++)
        if (((unsigned char)*c < 0x20 && *c != '\n' && *c != '\t') || *c == 0x7f) *c = '?';
    memcpy(last_message, message, sizeof last_message);
    last_status = status;
    return status;
}

const char *nn_last_error(void) { return last_message; }
nn_status nn_last_status(void) { return last_status; }

void nn_clear_error(void) {
    last_message[0] = '\0';
    last_status = NN_OK;
}

const char *nn_status_name(nn_status status) {
    switch (status) {
    case NN_OK: return "ok";
    case NN_ERR_ARGUMENT: return "invalid argument";
    case NN_ERR_SHAPE: return "shape error";
    case NN_ERR_DTYPE: return "dtype error";
    case NN_ERR_MEMORY: return "out of memory";
    case NN_ERR_STATE: return "invalid state";
    case NN_ERR_BACKEND: return "backend error";
    case NN_ERR_IO: return "i/o error";
    }
    return "unknown status";
}

const char *nn_format_shape(int ndim, const int64_t *shape, char *buf, size_t size) {
    size_t used = 0;
    if (size == 0) return buf;
    used += (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < ndim && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (used < size) snprintf(buf + used, size - used, "]");
    return buf;
}
