/* The DEPTHWISE_CONV2D_* kernels on Vulkan, over dense or channels-last
 * tensors: one dispatch each for the forward (an invocation per output)
 * and the data gradient (an invocation per input element, gathering),
 * invocations in the written tensor's memory order (four neighbouring
 * channels each where both sides are channels-last, one filter per
 * channel, and everything in fours); the weight gradient
 * takes blocks of filters at one tap per workgroup (neighbouring filters
 * on neighbouring invocations where the tensors are channels-last; in
 * fours, up to WEIGHT_TAP_GROUP taps of four filters per invocation) over
 * chunks of the (image, pixel) pairs, added by fixed-order trees and, with
 * several chunks, by gemm_splitk.comp in chunk order (no atomics).
 * Shaders: depthwise_conv2d_*.comp. */
#include <stdio.h>

#include "backends/conv_columns.h"
#include "backends/conv_layout.h"
#include "base/error.h"
#include "vk_backend.h"

/* The weight gradient's workgroups to aim for (several per multiprocessor
 * of a large GPU), and the fewest pairs a lane sums in a chunk. */
#define WEIGHT_TARGET_GROUPS 1024
#define WEIGHT_MIN_PAIRS_PER_LANE 64
#define WEIGHT_MAX_CHUNKS 1024
#define WEIGHT_MAX_PARTIALS ((int64_t)1 << 24)
#define WEIGHT_TAP_GROUP 9 /* depthwise_conv2d_weight.comp's TAP_GROUP */
/* Four filters' taps per pair: 8 pairs a lane kept MobileNetV2's small
 * layers' workgroups many (64 left 960 channels at 7x7 ninety; bench/README.md). */
#define WEIGHT_MIN_QUAD_PAIRS_PER_LANE 8

typedef VK_PUSH(DEPTHWISE) depthwise_block;

static int64_t ceil_div(int64_t x, int64_t y) { return (x + y - 1) / y; }

/* Whether invocations can take four neighbouring channels: both sides
 * channels-last, one filter per channel, channels in fours. */
static bool quad_layer(const nn_conv_params *cp) {
    return cp->image_layout == NN_LAYOUT_CHANNELS_LAST && cp->output_layout == NN_LAYOUT_CHANNELS_LAST &&
           cp->filters == cp->g.channels && cp->g.channels % 4 == 0;
}

/* The weight gradient: filter lanes (a power of two; 1 for dense tensors,
 * whose pairs are contiguous) and chunks, then one dispatch, or the
 * partials and their sum in order. */
static nn_status weight_gradient(vk_backend *vk, const nn_conv_params *cp, const nn_buffer_ref *a,
                                 depthwise_block *push) {
    const nn_kernel kernel = NN_KERNEL_DEPTHWISE_CONV2D_BACKWARD_WEIGHT;
    const nn_conv_geometry *g = &cp->g;
    const int64_t taps = (int64_t)g->kernel_h * g->kernel_w, weights = cp->filters * taps;
    const int64_t pairs = (int64_t)g->batch * g->out_h * g->out_w;
    /* Quads: lanes of four filters, up to WEIGHT_TAP_GROUP taps each. */
    const int64_t columns = push->quads ? cp->filters / 4 : cp->filters;
    const int64_t tap_items = push->quads ? ceil_div(taps, WEIGHT_TAP_GROUP) : taps;
    int32_t lanes_f = 1;
    if (cp->output_layout == NN_LAYOUT_CHANNELS_LAST)
        while (lanes_f < (push->quads ? 16 : 64) && lanes_f * 2 <= columns) lanes_f *= 2;
    const int64_t lanes_p = 256 / lanes_f, items = ceil_div(columns, lanes_f) * tap_items;
    int64_t chunks = ceil_div(WEIGHT_TARGET_GROUPS, items);
    const int64_t per_lane = push->quads ? WEIGHT_MIN_QUAD_PAIRS_PER_LANE : WEIGHT_MIN_PAIRS_PER_LANE;
    const int64_t most = pairs / (lanes_p * per_lane);
    if (chunks > most) chunks = most;
    if (chunks > WEIGHT_MAX_CHUNKS) chunks = WEIGHT_MAX_CHUNKS;
    if (chunks * weights > WEIGHT_MAX_PARTIALS) chunks = WEIGHT_MAX_PARTIALS / weights;
    if (chunks < 1) chunks = 1;
    const int64_t chunk = ceil_div(pairs > 0 ? pairs : 1, chunks);
    chunks = pairs > 0 ? ceil_div(pairs, chunk) : 1;
    push->filter_lanes = lanes_f;
    push->chunk = (uint32_t)chunk;
    const uint32_t gx = (uint32_t)(items < VK_MAX_GROUPS ? items : VK_MAX_GROUPS);
    if (chunks == 1)
        return vk_record(vk, kernel, VK_PIPE_DEPTHWISE_WEIGHT, 0, a, 3, VK_PUSH_REF(*push), gx, 1, 1);
    nn_buffer *scratch = vk_scratch_alloc(vk, (size_t)(chunks * weights) * sizeof(float));
    if (!scratch) return nn_last_status();
    const nn_buffer_ref parts[3] = {a[0], a[1], {scratch, 0, (size_t)(chunks * weights) * sizeof(float)}};
    nn_status st = vk_record_ex(vk, kernel, VK_PIPE_DEPTHWISE_WEIGHT, 0, parts, 3, NN_ARG(2), VK_PUSH_REF(*push), gx,
                                (uint32_t)chunks, 1);
    if (st == NN_OK) {
        if (vk->labels)
            snprintf(vk->profile_label, sizeof vk->profile_label, "depthwise weight sum f%d of %d", cp->filters,
                     (int)chunks);
        VK_PUSH(GEMM_SPLITK) sum = {.m = (uint32_t)cp->filters, .n = (uint32_t)taps, .ldc = (uint32_t)taps,
                                    .splits = (uint32_t)chunks, .alpha = 1.0f, .beta = g->accumulate ? 1.0f : 0.0f};
        const nn_buffer_ref second[2] = {parts[2], a[2]};
        st = vk_record_ex(vk, kernel, VK_PIPE_GEMM_SPLITK, 0, second, 2, NN_ARG(1), VK_PUSH_REF(sum),
                          vk_groups_for((uint64_t)weights), 1, 1);
    }
    vk_scratch_done(vk, scratch);
    return st;
}

static nn_status depthwise(vk_backend *vk, nn_kernel kernel, vk_pipeline_id pipe, const nn_conv_params *cp,
                           const nn_buffer_ref *a) {
    NN_TRY(nn_conv_params_check("vulkan", kernel, cp));
    NN_TRY(nn_conv_layout_check("vulkan", kernel, cp));
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
    depthwise_block push = {
        .batch = g->batch, .channels = g->channels, .height = g->height, .width = g->width, .kernel_h = g->kernel_h,
        .kernel_w = g->kernel_w, .stride_h = g->stride_h, .stride_w = g->stride_w, .pad_h = g->pad_h,
        .pad_w = g->pad_w, .out_h = g->out_h, .out_w = g->out_w, .dilation_h = nn_conv_dilation_h(g),
        .dilation_w = nn_conv_dilation_w(g), .filters = cp->filters, .epilogue = cp->epilogue,
        .accumulate = g->accumulate, .image_last = cp->image_layout == NN_LAYOUT_CHANNELS_LAST,
        .output_last = cp->output_layout == NN_LAYOUT_CHANNELS_LAST};
    if (kernel == NN_KERNEL_DEPTHWISE_CONV2D_BACKWARD_WEIGHT) {
        if (weights == 0) return NN_OK;
        push.quads = quad_layer(cp) && vk_ref_aligned16(a[0]) && vk_ref_aligned16(a[1]);
        return weight_gradient(vk, cp, a, &push);
    }
    const int64_t items = kernel == NN_KERNEL_DEPTHWISE_CONV2D_FORWARD ? out : in;
    if (items == 0) return NN_OK;
    if (!nn_conv_channels_last(cp))
        return vk_record(vk, kernel, pipe, 0, a, nn_kernel_arg_count(kernel), VK_PUSH_REF(push),
                         vk_groups_for((uint64_t)items), 1, 1);
    /* Channels-last: the weight [filter][tap] packed [tap][filter] first. */
    const int64_t taps = (int64_t)g->kernel_h * g->kernel_w;
    nn_buffer *packed = vk_scratch_alloc(vk, (size_t)weights * sizeof(float));
    if (!packed) return nn_last_status();
    const nn_strided_copy_params t = {.ndim = 2, .shape = {cp->filters, (int32_t)taps}, .src_stride = {(int32_t)taps, 1},
                                      .dst_stride = {1, cp->filters}};
    const nn_buffer_ref copy[2] = {a[1], {packed, 0, (size_t)weights * sizeof(float)}};
    nn_status st = vk_run(&vk->base, NN_KERNEL_STRIDED_COPY, copy, 2, &t);
    const nn_buffer_ref none = {NULL, 0, 0};
    const bool biased = kernel == NN_KERNEL_DEPTHWISE_CONV2D_FORWARD && (cp->epilogue & NN_EPI_BIAS_ROWS);
    nn_buffer_ref args[4] = {a[0], copy[1], a[2], biased ? a[3] : none};
    /* args[3] is absent without the bias */
    push.quads = quad_layer(cp) && vk_ref_aligned16(args[0]) && vk_ref_aligned16(args[1]) &&
                 vk_ref_aligned16(args[2]) && vk_ref_aligned16(args[3]);
    if (st == NN_OK)
        st = vk_record(vk, kernel, pipe, 0, args, nn_kernel_arg_count(kernel), VK_PUSH_REF(push),
                       vk_groups_for((uint64_t)(push.quads ? items / 4 : items)), 1, 1);
    vk_scratch_done(vk, packed);
    return st;
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
