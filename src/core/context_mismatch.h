/* The error for tensors (or a module and a tensor) of two contexts: it
 * names both devices and how to bring them together. */
#ifndef NN_CORE_CONTEXT_MISMATCH_H
#define NN_CORE_CONTEXT_MISMATCH_H

#include "nn_context.h"
#include "nn_error.h"

/* Sets and returns `code` (NN_ERR_STATE for an operation's inputs,
 * NN_ERR_ARGUMENT for what is being registered): "OP: OTHER is on DEVICE, FIRST on DEVICE;
 * ..." (`first` being the operation's leading tensor, the one its result
 * would live with). */
nn_status nn_error_other_context(nn_status code, const char *op, const char *first, const nn_ctx *first_ctx, const char *other,
                                 const nn_ctx *other_ctx);

#endif
