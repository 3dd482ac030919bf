/* The POOL2D_* kernels on Vulkan: one dispatch each, an invocation per
 * output (forward) or per input element (backward, gathering), except
 * average pooling over large windows (global pooling), which gives each
 * output a workgroup (pool2d_avg_window.comp) so one invocation does not
 * walk a whole image alone. The shaders are pool2d_*.comp; the windows are
 * shaders/pool2d_window.h's, as on the CPU. */
#include "base/error.h"
#include "vk_backend.h"

/* Windows of at least this many taps get a workgroup each: below it, the
 * workgroup's tree costs more than an invocation's walk saves. */
#define WINDOW_PER_WORKGROUP 256

/* The most taps of one window along an axis (adaptive windows hold at most
 * ceil(size / outputs) + 1 positions). */
static int64_t axis_taps(int size, int outputs, int kernel, int adaptive) {
    return adaptive ? (size + outputs - 1) / outputs + 1 : kernel;
}

static nn_status pool2d(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, const nn_pool2d_geometry *g,
                        const nn_buffer_ref *a, bool per_output) {
    const int64_t in = (int64_t)g->batch * g->channels * g->height * g->width;
    const int64_t out = (int64_t)g->batch * g->channels * g->out_h * g->out_w;
    NN_TRY(vk_fits32(kernel, "input size", in));
    NN_TRY(vk_fits32(kernel, "output size", out));
    if (g->out_h < 1 || g->out_w < 1 || g->height < 1 || g->width < 1 ||
        (!g->adaptive && (g->kernel_h < 1 || g->kernel_w < 1 || g->stride_h < 1 || g->stride_w < 1)) ||
        g->dilation_h < 1 || g->dilation_w < 1)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: invalid window (%dx%d to %dx%d, kernel %dx%d stride %dx%d "
                            "dilation %dx%d)", nn_kernel_name(kernel), g->height, g->width, g->out_h, g->out_w,
                            g->kernel_h, g->kernel_w, g->stride_h, g->stride_w, g->dilation_h, g->dilation_w);
    const int64_t items = per_output ? out : in;
    if (items == 0) return NN_OK;
    VK_PUSH(POOL2D) push = {
        .batch = g->batch, .channels = g->channels, .height = g->height, .width = g->width, .out_h = g->out_h,
        .out_w = g->out_w, .kernel_h = g->kernel_h, .kernel_w = g->kernel_w, .stride_h = g->stride_h,
        .stride_w = g->stride_w, .pad_h = g->pad_h, .pad_w = g->pad_w, .dilation_h = g->dilation_h,
        .dilation_w = g->dilation_w, .adaptive = g->adaptive, .count_include_pad = g->count_include_pad,
        .divisor = g->divisor, .accumulate = g->accumulate};
    if (kernel == NN_KERNEL_POOL2D_AVG_FORWARD &&
        axis_taps(g->height, g->out_h, g->kernel_h, g->adaptive) * axis_taps(g->width, g->out_w, g->kernel_w,
                                                                              g->adaptive) >= WINDOW_PER_WORKGROUP)
        return vk_record(vk, kernel, VK_PIPE_POOL2D_AVG_WINDOW, 0, a, 2, VK_PUSH_REF(push),
                         items > (int64_t)VK_MAX_GROUPS ? VK_MAX_GROUPS : (uint32_t)items, 1, 1);
    return vk_record(vk, kernel, pipe, 0, a, nn_kernel_arg_count(kernel), VK_PUSH_REF(push),
                     vk_groups_for((uint64_t)items), 1, 1);
}

nn_status vk_run_pool2d_max_forward(vk_backend *vk, const nn_pool2d_geometry *g, const nn_buffer_ref *a) {
    return pool2d(vk, NN_KERNEL_POOL2D_MAX_FORWARD, VK_PIPE_POOL2D_MAX_FORWARD, g, a, true);
}

nn_status vk_run_pool2d_max_backward(vk_backend *vk, const nn_pool2d_geometry *g, const nn_buffer_ref *a) {
    return pool2d(vk, NN_KERNEL_POOL2D_MAX_BACKWARD, VK_PIPE_POOL2D_MAX_BACKWARD, g, a, false);
}

nn_status vk_run_pool2d_avg_forward(vk_backend *vk, const nn_pool2d_geometry *g, const nn_buffer_ref *a) {
    return pool2d(vk, NN_KERNEL_POOL2D_AVG_FORWARD, VK_PIPE_POOL2D_AVG_FORWARD, g, a, true);
}

nn_status vk_run_pool2d_avg_backward(vk_backend *vk, const nn_pool2d_geometry *g, const nn_buffer_ref *a) {
    return pool2d(vk, NN_KERNEL_POOL2D_AVG_BACKWARD, VK_PIPE_POOL2D_AVG_BACKWARD, g, a, false);
}
