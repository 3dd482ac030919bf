/* The per-context guard of the threading rule (ctx_guard.h): an atomic
 * owner, so an entry costs one compare-and-swap and no lock. */
#include "ctx_guard.h"

#include "internal.h"

/* A token unique to the calling thread: the address of a thread-local. */
static uintptr_t this_thread(void) {
    static _Thread_local char token;
    return (uintptr_t)&token;
}

nn_status nn_ctx_enter(nn_ctx *ctx, const char *fn) {
    uintptr_t self = this_thread();
    if (atomic_load_explicit(&ctx->guard.owner, memory_order_relaxed) == self) {
        ctx->guard.depth++;
        return NN_OK;
    }
    uintptr_t expected = 0;
    if (!atomic_compare_exchange_strong_explicit(&ctx->guard.owner, &expected, self, memory_order_acquire,
                                                 memory_order_relaxed))
        return nn_set_error(NN_ERR_STATE,
                            "%s: context %p is in use by another thread (a context belongs to one thread at a "
                            "time: give each thread its own context, or serialise the calls)",
                            fn, (void *)ctx);
    ctx->guard.depth = 1;
    return NN_OK;
}

void nn_ctx_leave(nn_ctx *ctx) {
    if (--ctx->guard.depth == 0) atomic_store_explicit(&ctx->guard.owner, 0, memory_order_release);
}
