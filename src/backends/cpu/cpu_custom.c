/* A custom kernel on the CPU (include/nn_custom.h): the user's C function,
 * called on the calling thread with the buffers as host pointers. */
#include <stdio.h>
#include <string.h>

#include "backends/custom_kernels.h"
#include "base/error.h"
#include "cpu_backend.h"

/* Elements from the reference to the end of its extent or buffer. */
static int64_t words_of(nn_buffer_ref ref) {
    if (!ref.buffer) return 0;
    size_t bytes = ref.bytes ? ref.bytes : ref.buffer->bytes - ref.offset;
    return (int64_t)(bytes / 4);
}

nn_status nn_cpu_run_custom(nn_backend *self, const nn_custom_params *p, const nn_buffer_ref *a) {
    const nn_custom_kernel *k = nn_custom_kernel_find(p->id);
    if (!k) return nn_set_error(NN_ERR_STATE, "cpu custom kernel #%d: the kernel was freed", (int)p->id);
    if (!k->cpu)
        return nn_set_error(NN_ERR_BACKEND, "cpu: custom kernel %s has no CPU function (nn_custom_kernel_desc.cpu)",
                            k->name);
    nn_custom_cpu_call call = {.params = p->params, .params_size = p->params_size, .user = k->cpu_user};
    memcpy(call.grid, p->grid, sizeof call.grid);
    for (int i = 0; i < NN_CUSTOM_MAX_BUFFERS; i++) {
        call.buffers[i] = a[i].buffer ? (void *)nn_cpu_f32(a[i]) : NULL;
        call.counts[i] = words_of(a[i]);
        if (a[i].buffer) call.buffer_count = i + 1;
    }
    if (k->cpu(&call) != 0) {
        call.error[sizeof call.error - 1] = '\0';
        return nn_set_error(NN_ERR_BACKEND, "custom kernel %s failed on the CPU: %s", k->name,
                            call.error[0] ? call.error : "(no message)");
    }
    return NN_OK;
}
