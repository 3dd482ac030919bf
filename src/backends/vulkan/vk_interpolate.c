/* The INTERPOLATE_* kernels on Vulkan: one dispatch each, an invocation
 * per output (forward) or per input element (backward, gathering); the
 * taps are shaders/interpolate_map.h's, as on the CPU. */
#include "base/error.h"
#include "interpolate_map.h"
#include "vk_backend.h"

static nn_status interpolate(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, const nn_interpolate_params *p,
                             const nn_buffer_ref *a, bool per_output) {
    if (p->planes < 0 || p->in_h < 1 || p->in_w < 1 || p->out_h < 1 || p->out_w < 1 ||
        (p->mode != NN_INTERP_NEAREST && p->mode != NN_INTERP_BILINEAR) || !(p->scale_h >= 0.0f) ||
        !(p->scale_w >= 0.0f))
        return nn_set_error(NN_ERR_ARGUMENT,
                            "vulkan %s: invalid resampling (%d planes %dx%d to %dx%d, mode %d, scale %gx%g)",
                            nn_kernel_name(kernel), p->planes, p->in_h, p->in_w, p->out_h, p->out_w, p->mode,
                            (double)p->scale_h, (double)p->scale_w);
    const int64_t in = (int64_t)p->planes * p->in_h * p->in_w, out = (int64_t)p->planes * p->out_h * p->out_w;
    NN_TRY(vk_fits32(kernel, "input entries", in));
    NN_TRY(vk_fits32(kernel, "output entries", out));
    const int64_t items = per_output ? out : in;
    if (items == 0) return NN_OK;
    VK_PUSH(INTERPOLATE) push = {.planes = p->planes, .in_h = p->in_h, .in_w = p->in_w, .out_h = p->out_h,
                                 .out_w = p->out_w, .mode = p->mode, .align_corners = p->align_corners,
                                 .scale_h = p->scale_h, .scale_w = p->scale_w, .accumulate = p->accumulate};
    return vk_record(vk, kernel, pipe, 0, a, 2, VK_PUSH_REF(push), vk_groups_for((uint64_t)items), 1, 1);
}

nn_status vk_run_interpolate_forward(vk_backend *vk, const nn_interpolate_params *p, const nn_buffer_ref *a) {
    return interpolate(vk, NN_KERNEL_INTERPOLATE_FORWARD, VK_PIPE_INTERPOLATE_FORWARD, p, a, true);
}

nn_status vk_run_interpolate_backward(vk_backend *vk, const nn_interpolate_params *p, const nn_buffer_ref *a) {
    return interpolate(vk, NN_KERNEL_INTERPOLATE_BACKWARD, VK_PIPE_INTERPOLATE_BACKWARD, p, a, false);
}
