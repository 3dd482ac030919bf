/* The convolution kernels (kernels.h, nn_conv_params) on Vulkan, by one
 * of four routes that vk_conv_route picks per layer:
 *
 * Small layers (few filters, small images) run conv_latency.comp:
 * gemm_latency.comp's tiles with the column matrix read straight from the
 * image (forward, weight gradient) and the data gradient gathered from dy,
 * so there is no im2col or col2im dispatch, no column buffer, and one
 * dispatch (and one barrier) where the column route needs two or three.
 *
 * Larger layers in fp32, and every layer in fp16 on a device with matrix
 * cores, run the implicit GEMM (conv_gemm.comp, conv_gemm_coopmat.comp;
 * vk_conv_gemm.c): the batch folded into the product's rows, the columns
 * gathered as the tiles are staged, no column buffer. It reads activations
 * of either layout, channels-last ones four channels at a time, so the
 * backend asks for channels-last outputs where it runs a layer
 * (vk_conv_layout). fp32 3x3 and 5x5 layers at stride 1 run Winograd's
 * F(4x4, 3x3) or F(4x4, 5x5) instead (vk_conv_winograd.c): its transforms
 * and batched GEMMs read and write the same layouts. Other products in reduced precision run the column
 * route (im2col, the tiled GEMM rounding its operands, col2im) on dense
 * tensors; where
 * it runs the forward, the op keeps the column matrix from forward to
 * backward (vk_conv_keeps_columns: the forward fills it, the weight
 * gradient reads it); without one the columns go to scratch, in groups of
 * images whose columns fit COLUMN_FLOATS, freed as soon as the layer is
 * done. A route that reads dense tensors gets channels-last ones through
 * copies (vk_conv_layouts). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/conv_columns.h"
#include "backends/conv_layout.h"
#include "base/error.h"
#include "vk_backend.h"

#define COLUMN_FLOATS ((int64_t)1 << 26) /* 256 MiB of columns at most */

static nn_status check(const nn_conv_params *cp, const nn_buffer_ref *a, nn_kernel kernel) {
    NN_TRY(nn_conv_params_check("vulkan", kernel, cp));
    if (kernel == NN_KERNEL_CONV2D_FORWARD && (cp->epilogue & NN_EPI_BIAS_ROWS) && !a[3].buffer)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: the bias epilogue needs the bias buffer",
                            nn_kernel_name(kernel));
    return NN_OK;
}

/* A view `images` images into a tensor of per-image `plane` floats. */
static nn_buffer_ref advance(nn_buffer_ref ref, int64_t images, int64_t plane) {
    if (!ref.buffer) return ref;
    ref.offset += (size_t)(images * plane) * sizeof(float);
    if (ref.bytes) ref.bytes -= (size_t)(images * plane) * sizeof(float);
    return ref;
}

static nn_status column_route(vk_backend *vk, nn_kernel kernel, const nn_buffer_ref *a, const nn_conv_params *cp) {
    const nn_conv_geometry g = cp->g;
    /* The op's columns: filled by the forward, read by the weight gradient. */
    nn_buffer_ref kept = kernel == NN_KERNEL_CONV2D_FORWARD ? a[4]
                         : kernel == NN_KERNEL_CONV2D_BACKWARD_WEIGHT ? a[3] : (nn_buffer_ref){NULL, 0, 0};
    const nn_conv_columns c = nn_conv_columns_plan(cp, kept.buffer != NULL, COLUMN_FLOATS);
    NN_TRY(vk_fits32(kernel, "column entries", c.group * c.per_image));
    nn_buffer *scratch = NULL;
    if (!kept.buffer) {
        scratch = vk_scratch_alloc(vk, (size_t)(c.group * c.per_image) * sizeof(float));
        if (!scratch) return nn_last_status();
    }
    nn_buffer_ref cols = kept.buffer ? kept : (nn_buffer_ref){scratch, 0, 0};
    nn_status st = NN_OK;
    for (int64_t first = 0; first < g.batch && st == NN_OK; first += c.group) {
        nn_conv_geometry part = g;
        part.batch = (int32_t)(g.batch - first < c.group ? g.batch - first : c.group);
        part.accumulate = kernel == NN_KERNEL_CONV2D_BACKWARD_DATA ? g.accumulate : 0; /* im2col overwrites */
        nn_gemm_params p = nn_conv_columns_gemm(kernel, cp, &c, part.batch, first);
        /* One GEMM per convolution group, over the group's filters and column rows. */
        if (kernel == NN_KERNEL_CONV2D_FORWARD) {
            nn_buffer_ref im[2] = {advance(a[0], first, c.plane_x), cols};
            st = vk_run(&vk->base, NN_KERNEL_IM2COL, im, 2, &part);
            for (int64_t grp = 0; grp < c.groups && st == NN_OK; grp++) {
                const nn_conv_group_offsets o = nn_conv_columns_group(&c, grp);
                nn_buffer_ref args[4] = {advance(a[1], o.weight, 1), advance(cols, o.cols, 1),
                                         advance(advance(a[2], first, c.plane_y), o.y, 1), advance(a[3], o.bias, 1)};
                st = vk_gemm_record(vk, args, &p, cp->epilogue);
            }
        } else if (kernel == NN_KERNEL_CONV2D_BACKWARD_DATA) {
            for (int64_t grp = 0; grp < c.groups && st == NN_OK; grp++) {
                const nn_conv_group_offsets o = nn_conv_columns_group(&c, grp);
                nn_buffer_ref args[3] = {advance(a[1], o.weight, 1), advance(advance(a[0], first, c.plane_y), o.y, 1),
                                         advance(cols, o.cols, 1)};
                st = vk_gemm_record(vk, args, &p, 0);
            }
            nn_buffer_ref back[2] = {cols, advance(a[2], first, c.plane_x)};
            if (st == NN_OK) st = vk_run(&vk->base, NN_KERNEL_COL2IM, back, 2, &part);
        } else {
            nn_buffer_ref im[2] = {advance(a[1], first, c.plane_x), cols};
            if (!kept.buffer) st = vk_run(&vk->base, NN_KERNEL_IM2COL, im, 2, &part);
            for (int64_t grp = 0; grp < c.groups && st == NN_OK; grp++) {
                const nn_conv_group_offsets o = nn_conv_columns_group(&c, grp);
                nn_buffer_ref args[3] = {advance(advance(a[0], first, c.plane_y), o.y, 1), advance(cols, o.cols, 1),
                                         advance(a[2], o.weight, 1)};
                st = vk_gemm_record(vk, args, &p, 0);
            }
        }
    }
    if (scratch) vk_scratch_done(vk, scratch);
    return st;
}

static nn_status latency_route(vk_backend *vk, nn_kernel kernel, const nn_buffer_ref *a, const nn_conv_params *cp) {
    const nn_conv_geometry *g = &cp->g;
    const int64_t k = (int64_t)g->channels * g->kernel_h * g->kernel_w, positions = (int64_t)g->out_h * g->out_w;
    VK_PUSH(CONV_LATENCY) push = {
        .batch = (uint32_t)g->batch, .channels = (uint32_t)g->channels, .height = (uint32_t)g->height,
        .width = (uint32_t)g->width, .kernel_h = (uint32_t)g->kernel_h, .kernel_w = (uint32_t)g->kernel_w,
        .stride_h = (uint32_t)g->stride_h, .stride_w = (uint32_t)g->stride_w, .pad_h = (uint32_t)g->pad_h,
        .pad_w = (uint32_t)g->pad_w, .out_h = (uint32_t)g->out_h, .out_w = (uint32_t)g->out_w,
        .filters = (uint32_t)cp->filters, .alpha = 1.0f};
    int variant;
    int64_t outputs = g->batch, products = 1;
    const char *what;
    if (kernel == NN_KERNEL_CONV2D_FORWARD) { /* y_n [filters, P] = W [filters, K] cols_n */
        variant = 0, what = "forward";
        push.m = (uint32_t)cp->filters, push.n = (uint32_t)positions, push.k = (uint32_t)k;
        push.epilogue = (uint32_t)cp->epilogue;
    } else if (kernel == NN_KERNEL_CONV2D_BACKWARD_DATA) { /* dx_n [channels, H*W], k over (filter, ki, kj) */
        variant = 1, what = "data";
        push.m = (uint32_t)g->channels, push.n = (uint32_t)(g->height * g->width);
        push.k = (uint32_t)(cp->filters * g->kernel_h * g->kernel_w);
        push.beta = g->accumulate ? 1.0f : 0.0f;
    } else { /* dW [filters, K] = sum_n dy_n cols_n^T */
        variant = 2, what = "weight";
        push.m = (uint32_t)cp->filters, push.n = (uint32_t)k, push.k = (uint32_t)positions;
        push.summed = 1;
        push.beta = g->accumulate ? 1.0f : 0.0f;
        outputs = 1, products = g->batch;
    }
    vk_latency_plan plan;
    NN_TRY(vk_latency_plan_for((int32_t)push.m, (int32_t)push.n, (int32_t)push.k, outputs, products, true, &plan));
    push.splits = (uint32_t)plan.splits;
    push.split_steps = (uint32_t)plan.split_steps;
    if (vk->labels)
        snprintf(vk->profile_label, sizeof vk->profile_label, "conv %s %dx%dx%dx%d f%d k%d%s", what, g->batch,
                 g->channels, g->height, g->width, cp->filters, g->kernel_h, plan.splits > 1 ? " split" : "");
    variant |= cp->precision << 2; /* ROUND (shaders/precision.glsl) */
    return vk_latency_record(vk, kernel, &plan, variant, a, kernel == NN_KERNEL_CONV2D_FORWARD ? 4 : 3,
                             VK_PUSH_REF(push), &push.counters, outputs, (int32_t)push.m, (int32_t)push.n);
}

static int64_t multiply_adds(const nn_conv_params *cp) {
    const nn_conv_geometry *g = &cp->g;
    return (int64_t)cp->filters * g->channels * g->kernel_h * g->kernel_w * g->out_h * g->out_w * g->batch;
}

typedef enum vk_conv_route_id { VK_CONV_LATENCY, VK_CONV_IMPLICIT, VK_CONV_WINOGRAD, VK_CONV_COLUMNS } vk_conv_route_id;

/* Winograd's transforms cost passes over the activations; with fewer
 * channels or filters than this the products are too thin to repay them
 * (a judgement, not a measurement: the thinnest layers measured have 64;
 * resnet18-cifar's one-channel stem stays on the implicit GEMM). */
#define WINOGRAD_MIN_CHANNELS 16

/* The route of this layer's three kernels, the one place to tune it.
 * NN_ENGINE_VULKAN_CONV (read at each call; for comparisons and tests):
 *   unset     the choice below;
 *   columns   the latency kernels for small layers, im2col + GEMM (+
 *             col2im) for the others, on dense tensors (fp16 on matrix
 *             cores: the column route for every layer);
 *   implicit  conv_gemm.comp for every fp32 layer and kernel;
 *   winograd  vk_conv_winograd.c for every fp32 layer it takes (3x3 and
 *             5x5, stride 1), the implicit GEMM for the others.
 * The choice:
 * - fp16 products on a device with matrix cores take the implicit GEMM on
 *   them (conv_gemm_coopmat.comp), whatever their size: small layers are
 *   still faster there than in fp32 latency kernels;
 * - other products in reduced precision (bf16; fp16 without matrix cores)
 *   take the column route, whose GEMMs round the operands, or the latency
 *   kernels for small layers;
 * - small layers (vk_latency_wanted: few enough multiply-adds that
 *   latency, not arithmetic, bounds them), ungrouped and undilated, keep
 *   conv_latency.comp: one dispatch of small tiles;
 * - fp32 3x3 layers at stride 1 with a channels-last side and at least
 *   WINOGRAD_MIN_CHANNELS channels and filters take Winograd's F(4x4, 3x3)
 *   (vk_conv_winograd.c): a quarter of the multiplications, as cuDNN's
 *   fp32 kernels for these layers; 5x5 ones its F(4x4, 5x5) (a sixth);
 * - every other fp32 layer with a channels-last side (vk_conv_layout asks
 *   for them) is an implicit GEMM: it reads the image once per tile row
 *   instead of writing and reading a column matrix kernel_h * kernel_w
 *   times the image, and runs the batch in one dispatch; dense ones take
 *   the column route.
 * The LeNet layers that the fused conv + pool kernels take never get here. */
static vk_conv_route_id vk_conv_route(const vk_backend *vk, const nn_conv_params *cp) {
    const char *force = getenv("NN_ENGINE_VULKAN_CONV");
    const bool plain = nn_conv_groups(cp) == 1 && nn_conv_dilation_h(&cp->g) == 1 && nn_conv_dilation_w(&cp->g) == 1;
    if (cp->precision != NN_PRECISION_FP32) {
        /* Rounded operands: fp16 on the matrix cores by the implicit GEMM;
         * otherwise the latency kernels or the column route's GEMM round them
         * as they stage them (conv_gemm.comp does not round). */
        if (vk_on_matrix_cores(vk, cp->precision)) return force && !strcmp(force, "columns") ? VK_CONV_COLUMNS
                                                                                               : VK_CONV_IMPLICIT;
        return plain && vk_latency_wanted(multiply_adds(cp)) ? VK_CONV_LATENCY : VK_CONV_COLUMNS;
    }
    if (force && strcmp(force, "implicit") == 0) return VK_CONV_IMPLICIT;
    if (force && strcmp(force, "winograd") == 0)
        return vk_conv_winograd_fits(cp) ? VK_CONV_WINOGRAD : VK_CONV_IMPLICIT;
    if (plain && vk_latency_wanted(multiply_adds(cp))) return VK_CONV_LATENCY;
    if (force && strcmp(force, "columns") == 0) return VK_CONV_COLUMNS;
    if (!nn_conv_channels_last(cp)) return VK_CONV_COLUMNS;
    const bool wide = cp->g.channels >= WINOGRAD_MIN_CHANNELS && cp->filters >= WINOGRAD_MIN_CHANNELS;
    return wide && vk_conv_winograd_fits(cp) ? VK_CONV_WINOGRAD : VK_CONV_IMPLICIT;
}

/* The op keeps columns only for layers whose forward takes the column route. */
bool vk_conv_keeps_columns(nn_backend *self, const nn_conv_params *cp) {
    return vk_conv_route((const vk_backend *)self, cp) == VK_CONV_COLUMNS;
}

/* Channels-last for the layers whose forward takes the implicit GEMM or
 * Winograd, the routes that read and write that layout as it is. Depthwise layers (whose
 * kernels take either) keep their input's: the model's other layers decide. */
nn_layout vk_conv_layout(nn_backend *self, const nn_conv_params *p) {
    if (nn_conv_is_depthwise(p)) return (nn_layout)p->image_layout;
    nn_conv_params last = *p;
    last.output_layout = NN_LAYOUT_CHANNELS_LAST;
    const vk_conv_route_id route = vk_conv_route((const vk_backend *)self, &last);
    return route == VK_CONV_IMPLICIT || route == VK_CONV_WINOGRAD ? NN_LAYOUT_CHANNELS_LAST : NN_LAYOUT_DENSE;
}

static nn_buffer *scratch(nn_backend *self, size_t bytes) { return vk_scratch_alloc((vk_backend *)self, bytes); }
static void scratch_done(nn_backend *self, nn_buffer *buffer) { vk_scratch_done((vk_backend *)self, buffer); }

nn_status vk_conv_layouts(vk_backend *vk, nn_kernel kernel, const nn_conv_params *p, const nn_buffer_ref *a) {
    static const nn_conv_dense_host host = {scratch, scratch_done};
    NN_TRY(nn_conv_layout_check("vulkan", kernel, p));
    return nn_conv_through_dense(&vk->base, &host, kernel, p, a, nn_kernel_arg_count(kernel));
}

static nn_status conv(vk_backend *vk, nn_kernel kernel, const nn_buffer_ref *a, const nn_conv_params *cp) {
    NN_TRY(check(cp, a, kernel));
    NN_TRY(nn_conv_layout_check("vulkan", kernel, cp));
    const vk_conv_route_id route = vk_conv_route(vk, cp);
    if (nn_conv_channels_last(cp) && route != VK_CONV_IMPLICIT && route != VK_CONV_WINOGRAD)
        return vk_conv_layouts(vk, kernel, cp, a);
    const nn_conv_geometry *g = &cp->g;
    int64_t k = (int64_t)g->channels / nn_conv_groups(cp) * g->kernel_h * g->kernel_w;
    if (g->batch == 0) {
        if (kernel != NN_KERNEL_CONV2D_BACKWARD_WEIGHT || g->accumulate) return NN_OK;
        /* The sum over no images. */
        return k * cp->filters > 0 ? vk->base.fill(&vk->base, a[2], 0.0f, (size_t)(k * cp->filters)) : NN_OK;
    }
    NN_TRY(vk_fits32(kernel, "input entries", (int64_t)g->batch * g->channels * g->height * g->width));
    NN_TRY(vk_fits32(kernel, "output entries", (int64_t)g->batch * cp->filters * g->out_h * g->out_w));
    NN_TRY(vk_fits32(kernel, "weight entries", (int64_t)cp->filters * k));
    /* Columns the op kept are filled (forward) or read (weight gradient) by the column route. */
    const nn_buffer_ref kept = kernel == NN_KERNEL_CONV2D_FORWARD ? a[4]
                               : kernel == NN_KERNEL_CONV2D_BACKWARD_WEIGHT ? a[3] : (nn_buffer_ref){NULL, 0, 0};
    if (kept.buffer) return column_route(vk, kernel, a, cp);
    switch (route) {
    case VK_CONV_LATENCY: return latency_route(vk, kernel, a, cp);
    case VK_CONV_IMPLICIT: return vk_conv_gemm_record(vk, kernel, a, cp);
    case VK_CONV_WINOGRAD: return vk_conv_winograd_record(vk, kernel, a, cp);
    default: return column_route(vk, kernel, a, cp);
    }
}

nn_status vk_run_conv2d_forward(vk_backend *vk, const nn_conv_params *p, const nn_buffer_ref *a) {
    return conv(vk, NN_KERNEL_CONV2D_FORWARD, a, p);
}

nn_status vk_run_conv2d_backward_data(vk_backend *vk, const nn_conv_params *p, const nn_buffer_ref *a) {
    return conv(vk, NN_KERNEL_CONV2D_BACKWARD_DATA, a, p);
}

nn_status vk_run_conv2d_backward_weight(vk_backend *vk, const nn_conv_params *p, const nn_buffer_ref *a) {
    return conv(vk, NN_KERNEL_CONV2D_BACKWARD_WEIGHT, a, p);
}

/* im2col.comp and col2im.comp: one invocation per column entry (im2col) or
 * per pixel (col2im, which sums the entries of its pixel: no atomics). */
static nn_status columns(vk_backend *vk, nn_kernel kernel, const nn_conv_geometry *g, const nn_buffer_ref *a) {
    const int64_t entries = (int64_t)g->batch * g->channels * g->kernel_h * g->kernel_w * g->out_h * g->out_w;
    const int64_t pixels = (int64_t)g->batch * g->channels * g->height * g->width;
    NN_TRY(vk_fits32(kernel, "column entries", entries));
    NN_TRY(vk_fits32(kernel, "image pixels", pixels));
    if (g->batch < 0 || g->channels < 0 || g->kernel_h <= 0 || g->kernel_w <= 0 || g->stride_h <= 0 ||
        g->stride_w <= 0 || g->out_h < 0 || g->out_w < 0 || g->height < 0 || g->width < 0 || g->dilation_h < 0 ||
        g->dilation_w < 0)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: invalid geometry", nn_kernel_name(kernel));
    const bool im2col = kernel == NN_KERNEL_IM2COL;
    const int64_t items = im2col ? entries : pixels;
    if (items == 0) return NN_OK;
    VK_PUSH(CONV_GEOMETRY) push = {.batch = g->batch, .channels = g->channels, .height = g->height, .width = g->width,
                                   .kernel_h = g->kernel_h, .kernel_w = g->kernel_w, .stride_h = g->stride_h,
                                   .stride_w = g->stride_w, .pad_h = g->pad_h, .pad_w = g->pad_w, .out_h = g->out_h,
                                   .out_w = g->out_w, .accumulate = g->accumulate,
                                   .dilation_h = nn_conv_dilation_h(g), .dilation_w = nn_conv_dilation_w(g)};
    return vk_record(vk, kernel, im2col ? VK_PIPE_IM2COL : VK_PIPE_COL2IM, 0, a, 2, VK_PUSH_REF(push),
                     vk_groups_for((uint64_t)items), 1, 1);
}

nn_status vk_run_im2col(vk_backend *vk, const nn_conv_geometry *g, const nn_buffer_ref *a) {
    return columns(vk, NN_KERNEL_IM2COL, g, a);
}

nn_status vk_run_col2im(vk_backend *vk, const nn_conv_geometry *g, const nn_buffer_ref *a) {
    return columns(vk, NN_KERNEL_COL2IM, g, a);
}
