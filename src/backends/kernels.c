/* The registry's facts of each kernel (kernel_list.h), as a table indexed
 * by kernel id, and the checks every backend's run() makes with them. */
#include "kernels.h"

#include "backend.h"
#include "base/error.h"

typedef struct kernel_info {
    const char *name;
    int args;
    size_t params_size;
    unsigned written, optional;
} kernel_info;

static const kernel_info kKernels[NN_KERNEL_COUNT] = {
#define NN_KERNEL_INFO(ID, name, params, args, written, optional) \
    [NN_KERNEL_##ID] = {#name, args, sizeof(params), written, optional},
    NN_KERNEL_LIST(NN_KERNEL_INFO)
#undef NN_KERNEL_INFO
};

/* The kernel's row, or NULL for an id outside the table. */
static const kernel_info *info(nn_kernel kernel) {
    return (unsigned)kernel < NN_KERNEL_COUNT ? &kKernels[kernel] : NULL;
}

const char *nn_kernel_name(nn_kernel kernel) {
    const kernel_info *k = info(kernel);
    return k ? k->name : "unknown kernel";
}

nn_status nn_kernel_check_call(const char *backend, nn_kernel kernel, const nn_buffer_ref *args, int nargs,
                               const void *params) {
    const kernel_info *k = info(kernel);
    if (!k) return nn_set_error(NN_ERR_BACKEND, "%s: no kernel with id %d", backend, (int)kernel);
    if (nargs != k->args || !params || (nargs > 0 && !args))
        return nn_set_error(NN_ERR_BACKEND, "%s %s: called with %d buffers (wants %d)%s", backend, k->name, nargs,
                            k->args, params ? "" : " and no parameters");
    for (int i = 0; i < nargs; i++)
        if (!args[i].buffer && !(k->optional & NN_ARG(i)))
            return nn_set_error(NN_ERR_ARGUMENT, "%s %s: buffer argument %d is missing", backend, k->name, i);
    return NN_OK;
}

nn_status nn_gather_check_augment(const char *backend, nn_kernel kernel, const nn_gather_params *p) {
    if (!p->crop_pad && !p->flip) return NN_OK;
    const int height = p->width > 0 ? p->plane / p->width : 0;
    if (p->width <= 0 || p->plane % p->width != 0 || p->crop_pad < 0 || p->crop_pad >= p->width ||
        p->crop_pad >= height || (p->flip != 0 && p->flip != 1))
        return nn_set_error(NN_ERR_ARGUMENT, "%s %s: augmentation crop_pad %d, flip %d does not fit images of width %d "
                            "and %d pixels", backend, nn_kernel_name(kernel), p->crop_pad, p->flip, p->width, p->plane);
    if (p->draw_row < 0 || (int64_t)p->draw_row + p->rows > INT32_MAX)
        return nn_set_error(NN_ERR_ARGUMENT, "%s %s: draw_row %d with %d rows is outside [0, %d]", backend,
                            nn_kernel_name(kernel), p->draw_row, p->rows, INT32_MAX);
    return NN_OK;
}

size_t nn_kernel_params_size(nn_kernel kernel) {
    const kernel_info *k = info(kernel);
    return k ? k->params_size : 0;
}

int nn_kernel_arg_count(nn_kernel kernel) {
    const kernel_info *k = info(kernel);
    return k ? k->args : 0;
}

unsigned nn_kernel_written_args(nn_kernel kernel) {
    const kernel_info *k = info(kernel);
    return k ? k->written : ~0u; /* unknown: assume it writes everything */
}

unsigned nn_kernel_launch_written_args(nn_kernel kernel, const void *params) {
    if (kernel == NN_KERNEL_CUSTOM && params) return ((const nn_custom_params *)params)->written;
    return nn_kernel_written_args(kernel);
}

unsigned nn_kernel_optional_args(nn_kernel kernel) {
    const kernel_info *k = info(kernel);
    return k ? k->optional : 0;
}
