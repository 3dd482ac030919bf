#include "context_mismatch.h"

#include <string.h>

#include "base/error.h"

nn_status nn_error_other_context(nn_status code, const char *op, const char *first, const nn_ctx *first_ctx, const char *other,
                                 const nn_ctx *other_ctx) {
    const char *first_device = nn_ctx_device_name(first_ctx), *other_device = nn_ctx_device_name(other_ctx);
    /* Two contexts of one device (two nn_ctx_new of "cpu"): the devices' names cannot tell them apart. */
    if (strcmp(first_device, other_device) == 0)
        return nn_set_error(code, "%s: %s and %s belong to two different contexts, both on %s; one "
                                          "operation's tensors must come from one context", op, other, first,
                            first_device);
    return nn_set_error(code, "%s: %s is on %s, %s on %s; move one to the other's device (Python: .to(); "
                                      "C: read it and write it into a tensor of the other context)", op, other,
                        other_device, first, first_device);
}
