/* nn_ctx_memory_stats: the backend's memory counters. */
#include "internal.h"

nn_status nn_ctx_memory_stats(const nn_ctx *ctx, uint64_t *current, uint64_t *peak, uint64_t *reserved) {
    if (!ctx) return nn_set_error(NN_ERR_ARGUMENT, "nn_ctx_memory_stats: ctx is NULL");
    uint64_t c = 0, p = 0, r = 0;
    if (!ctx->backend->memory_stats)
        return nn_set_error(NN_ERR_BACKEND, "nn_ctx_memory_stats: the %s backend keeps no memory counters",
                            ctx->backend->name);
    ctx->backend->memory_stats(ctx->backend, &c, &p, &r);
    if (current) *current = c;
    if (peak) *peak = p;
    if (reserved) *reserved = r;
    return NN_OK;
}
