/* The DEPTHWISE_CONV2D_* kernels on Vulkan: one dispatch
 * each, an invocation per output (forward) or per input element (data
 * gradient, gathering), and a workgroup per weight tap for the
 * weight gradient (a fixed-order tree, no atomics). Shaders:
 * depthwise_conv2d_*.comp. */
#include "backends/conv_columns.h"
#include "backends/conv_layout.h"
#include "core/error.h"
#include "vk_backend.h"

static nn_status depthwise(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, const nn_conv_params *cp,
                           const nn_buffer_ref *a) {
    NN_TRY(nn_conv_params_check("vulkan", kernel, cp));
    if (nn_conv_channels_last(cp)) return vk_conv_layouts(vk, kernel, cp, a);
    const nn_conv_geometry *g = &cp->g;
    if (!nn_conv_is_depthwise(cp))
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: %d groups over %d channels is not a depthwise convolution",
                            nn_kernel_name(kernel), nn_conv_groups(cp), g->channels);
    if (kernel == NN_KERNEL_DEPTHWISE_CONV2D_FORWARD && (cp->epilogue & NN_EPI_BIAS_ROWS) && !a[3].buffer)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: the bias epilogue needs the bias buffer",
                            nn_kernel_name(kernel));
    const int64_t in = (int64_t)g->batch * g->channels * g->height * g->width;
    const int64_t out = (int64_t)g->batch * cp->filters * g->out_h * g->out_w;
    const int64_t weights = (int64_t)cp->filters * g->kernel_h * g->kernel_w;
    NN_TRY(vk_fits32(kernel, "input entries", in));
    NN_TRY(vk_fits32(kernel, "output entries", out));
    VK_PUSH(DEPTHWISE) push = {
        .batch = g->batch, .channels = g->channels, .height = g->height, .width = g->width, .kernel_h = g->kernel_h,
        .kernel_w = g->kernel_w, .stride_h = g->stride_h, .stride_w = g->stride_w, .pad_h = g->pad_h,
        .pad_w = g->pad_w, .out_h = g->out_h, .out_w = g->out_w, .dilation_h = nn_conv_dilation_h(g),
        .dilation_w = nn_conv_dilation_w(g), .filters = cp->filters, .epilogue = cp->epilogue,
        .accumulate = g->accumulate};
    uint32_t groups;
    if (kernel == NN_KERNEL_DEPTHWISE_CONV2D_BACKWARD_WEIGHT) {
        if (weights == 0) return NN_OK;
        groups = weights < VK_MAX_GROUPS ? (uint32_t)weights : VK_MAX_GROUPS;
    } else {
        const int64_t items = kernel == NN_KERNEL_DEPTHWISE_CONV2D_FORWARD ? out : in;
        if (items == 0) return NN_OK;
        groups = vk_groups_for((uint64_t)items);
    }
    return vk_record(vk, kernel, pipe, 0, a, nn_kernel_arg_count(kernel), VK_PUSH_REF(push), groups, 1, 1);
}

nn_status vk_run_depthwise_conv2d_forward(vk_backend *vk, const nn_conv_params *p, const nn_buffer_ref *a) {
    return depthwise(vk, NN_KERNEL_DEPTHWISE_CONV2D_FORWARD, VK_PIPE_DEPTHWISE_FORWARD, p, a);
}

nn_status vk_run_depthwise_conv2d_backward_data(vk_backend *vk, const nn_conv_params *p, const nn_buffer_ref *a) {
    return depthwise(vk, NN_KERNEL_DEPTHWISE_CONV2D_BACKWARD_DATA, VK_PIPE_DEPTHWISE_DATA, p, a);
}

nn_status vk_run_depthwise_conv2d_backward_weight(vk_backend *vk, const nn_conv_params *p, const nn_buffer_ref *a) {
    return depthwise(vk, NN_KERNEL_DEPTHWISE_CONV2D_BACKWARD_WEIGHT, VK_PIPE_DEPTHWISE_WEIGHT, p, a);
}
