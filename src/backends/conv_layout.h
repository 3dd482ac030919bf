/* The layouts of the convolution kernels' activations (kernels.h,
 * nn_conv_params.image_layout and output_layout): the checks every backend
 * makes, and a convolution with channels-last operands run through a
 * backend's dense kernels (the CPU's reference, and what Vulkan does for
 * the routes whose shaders read dense tensors only). */
#ifndef NN_CONV_LAYOUT_H
#define NN_CONV_LAYOUT_H

#include <stdbool.h>

#include "backend.h"

/* Both layouts are nn_layout values. */
nn_status nn_conv_layout_check(const char *backend, nn_kernel kernel, const nn_conv_params *p);
/* Whether either side is channels-last. */
static inline bool nn_conv_channels_last(const nn_conv_params *p) {
    return p->image_layout == NN_LAYOUT_CHANNELS_LAST || p->output_layout == NN_LAYOUT_CHANNELS_LAST;
}

/* What a backend lends the dense route: scratch buffers, and how one is
 * given back once the commands recorded so far that use it are done with
 * it (the CPU frees it; Vulkan keeps it until they have run). */
typedef struct nn_conv_dense_host {
    nn_buffer *(*scratch)(nn_backend *self, size_t bytes);
    void (*scratch_done)(nn_backend *self, nn_buffer *buffer);
} nn_conv_dense_host;

/* Run `kernel` (a CONV2D_* or DEPTHWISE_CONV2D_* kernel, args as
 * kernel_list.h has them) whose params have a channels-last side: each
 * channels-last operand it reads is copied to a dense scratch tensor
 * (STRIDED_COPY), the backend's own kernel runs on dense tensors, and a
 * channels-last result is copied back (added, where the kernel accumulates). */
nn_status nn_conv_through_dense(nn_backend *self, const nn_conv_dense_host *host, nn_kernel kernel,
                                const nn_conv_params *p, const nn_buffer_ref *args, int nargs);

/* STRIDED_COPY's parameters between the two layouts of [n, c, h, w]
 * (to_channels_last: dense -> channels-last, else the other way); a dense
 * side may be any tensor of n * c * h * w elements in that order. */
nn_strided_copy_params nn_channels_last_copy(int32_t n, int32_t c, int32_t h, int32_t w, bool to_channels_last,
                                           int32_t accumulate);

#endif
