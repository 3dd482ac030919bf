/* The threading rule: a context belongs to one thread at a time. Every
 * public entry point that changes a context enters its guard, which
 * refuses a second thread with an error instead of letting two threads
 * corrupt the context's lists and reference counts. Included by src/ only. */
#ifndef NN_CORE_CTX_GUARD_H
#define NN_CORE_CTX_GUARD_H

#include <stdatomic.h>
#include <stdint.h>

#include "nn_error.h"

typedef struct nn_ctx nn_ctx;

typedef struct nn_ctx_guard {
    _Atomic uintptr_t owner; /* the owning thread's token, 0 when no thread is inside */
    int depth;               /* nested entries by the owner (only the owner touches it) */
} nn_ctx_guard;

/* Enter ctx for `fn` on this thread (re-entrant); NN_ERR_STATE naming fn
 * and the context when another thread is inside it. */
nn_status nn_ctx_enter(nn_ctx *ctx, const char *fn);
/* Leave what nn_ctx_enter entered. */
void nn_ctx_leave(nn_ctx *ctx);

#endif
