/* The convolution kernels (kernels.h, nn_conv_params) as implicit GEMMs on
 * Vulkan (conv_gemm.comp): the batch, height and width are the product's
 * rows, so the whole batch is one dispatch per kernel and no column matrix
 * exists; activations are read through their strides, four channels at a
 * time where they are channels-last. The weight is first packed
 * (conv_gemm_pack.comp) as the product reads it: a copy the size of the
 * weight. The forward's bias and ReLU are its store; the data gradient
 * runs the stride's phases as separate products (no work on the zeros a
 * strided convolution's gradient would gather) and adds into dx when
 * asked; the weight gradient's long sum over the output pixels is split so
 * enough workgroups run, its partials added in split order by
 * gemm_splitk.comp (the same result on every run: no float atomics).
 * Operations recorded in fp16 run the same products on the matrix cores
 * (conv_gemm_coopmat.comp: operands rounded to fp16 as they are staged,
 * fp32 sums). Which layers come here is vk_conv.c's choice (vk_conv_route). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "vk_backend.h"

/* Workgroups that keep a large GPU busy (two per multiprocessor of a
 * 132-SM H100/H200): large tiles are taken only where they still give
 * this many, and the weight gradient is split until it has them. */
#define TARGET_GROUPS 264
/* A split sums at least this many k slices (each a barrier and a memory
 * wait), and the partials stay under MAX_PARTIALS floats (64 MiB). */
#define MIN_SPLIT_SLICES 16
#define MAX_SPLITS 1024
#define MAX_PARTIALS ((int64_t)1 << 24)

static int64_t ceil_div(int64_t x, int64_t y) { return (x + y - 1) / y; }

/* NN_ENGINE_VULKAN_CONV_TILES=BMxBN forces a tile of the kernel family in
 * use (benchmarks, tests); a size that family lacks leaves the choice below. */
static bool forced_tile(const char *const *names, const vk_pipeline_id *pipes, int count, vk_pipeline_id *out) {
    const char *force = getenv("NN_ENGINE_VULKAN_CONV_TILES");
    for (int i = 0; force && i < count; i++)
        if (!strcmp(force, names[i])) {
            *out = pipes[i];
            return true;
        }
    return false;
}

/* The fp32 tile for a product of m rows and n columns per group, repeated
 * `outputs` times (groups, phases): 128 x 64 (8 x 4 per invocation) where
 * its tiles fill the device, smaller ones where they do not. A sum that
 * will be split (long_k, the weight gradient) fills the device with its
 * splits: its tile is the most efficient the sizes allow. (A 128 x 128
 * tile of 8 x 8 ran no faster than 128 x 64 and, in one variant, spilled
 * registers: bench/README.md.) */
static vk_pipeline_id conv_gemm_tile(int64_t m, int64_t n, int64_t outputs, bool long_k) {
    static const char *const names[] = {"128x64", "64x128", "64x64", "32x32"};
    static const vk_pipeline_id pipes[] = {VK_PIPE_CONV_GEMM_128X64, VK_PIPE_CONV_GEMM_64X128,
                                           VK_PIPE_CONV_GEMM_64X64, VK_PIPE_CONV_GEMM_32X32};
    vk_pipeline_id forced;
    if (forced_tile(names, pipes, 4, &forced)) return forced;
    if (long_k) { /* the filters are the rows: 64 x 128 up to 256 of them, 128 x 64 beyond (bench/README.md) */
        if (m >= 512) return VK_PIPE_CONV_GEMM_128X64;
        if (m >= 64) return n >= 128 ? VK_PIPE_CONV_GEMM_64X128 : VK_PIPE_CONV_GEMM_64X64;
        return VK_PIPE_CONV_GEMM_32X32;
    }
    if (m >= 128 && ceil_div(m, 128) * ceil_div(n, 64) * outputs >= TARGET_GROUPS) return VK_PIPE_CONV_GEMM_128X64;
    if (m >= 64 && n >= 32 && ceil_div(m, 64) * ceil_div(n, 64) * outputs >= TARGET_GROUPS / 2)
        return VK_PIPE_CONV_GEMM_64X64;
    return VK_PIPE_CONV_GEMM_32X32;
}

/* The fp16 matrix-core tile (conv_gemm_coopmat.comp) of `mode` (0
 * forward, 1 data, 2 weight), from the per-layer timings of ResNet-18's
 * layers on the H200 (bench/README.md): the weight gradient 128 x 128
 * from 128 filters up (its splits fill the device), 64 x 64 below; the
 * forward and data gradient 64 x 128 from 128 columns up, and at 64 or
 * fewer 128 x 64 (forward) or 64 x 64 (data); 64 x 64 wherever larger
 * tiles would leave the device short of workgroups. */
static vk_pipeline_id conv_gemm_coopmat_tile(int64_t m, int64_t n, int64_t outputs, int mode) {
    static const char *const names[] = {"128x128", "128x64", "64x128", "64x64"};
    static const vk_pipeline_id pipes[] = {VK_PIPE_CONV_GEMM_COOPMAT_128X128, VK_PIPE_CONV_GEMM_COOPMAT_128X64,
                                           VK_PIPE_CONV_GEMM_COOPMAT_64X128, VK_PIPE_CONV_GEMM_COOPMAT_64X64};
    vk_pipeline_id forced;
    if (forced_tile(names, pipes, 4, &forced)) return forced;
    if (mode == 2) return m >= 128 && n > 64 ? VK_PIPE_CONV_GEMM_COOPMAT_128X128 : VK_PIPE_CONV_GEMM_COOPMAT_64X64;
    if (n > 64 && ceil_div(m, 64) * ceil_div(n, 128) * outputs >= TARGET_GROUPS) return VK_PIPE_CONV_GEMM_COOPMAT_64X128;
    if (mode == 0 && ceil_div(m, 128) * ceil_div(n, 64) * outputs >= TARGET_GROUPS) return VK_PIPE_CONV_GEMM_COOPMAT_128X64;
    return VK_PIPE_CONV_GEMM_COOPMAT_64X64;
}

/* Element strides (n, channel, row, column) of a [n, c, h, w] activation in `layout`. */
typedef struct strides {
    uint32_t n, c, h, w;
} strides;

static strides strides_of(int32_t layout, int64_t c, int64_t h, int64_t w) {
    if (layout == NN_LAYOUT_CHANNELS_LAST) return (strides){(uint32_t)(h * w * c), 1, (uint32_t)(w * c), (uint32_t)c};
    return (strides){(uint32_t)(c * h * w), (uint32_t)(h * w), (uint32_t)w, 1};
}

static uint32_t pair(int32_t h, int32_t w) { return (uint32_t)h << 16 | (uint32_t)w; }

/* Four elements at a time from a tensor: its offset, its strides other
 * than the one read along (unit), and the run read (per group) multiples of 4. */
static bool quads(nn_buffer_ref ref, strides s, int64_t run) {
    const uint64_t byte = ref.buffer ? ref.buffer->offset + ref.offset : 1;
    return byte % 16 == 0 && s.c == 1 && s.n % 4 == 0 && s.h % 4 == 0 && s.w % 4 == 0 && run % 4 == 0;
}

/* The weight packed for `mode` (0 forward, 1 data) into a scratch buffer. */
static nn_status pack_weight(vk_backend *vk, nn_kernel kernel, const nn_conv_params *cp, nn_buffer_ref w,
                             int mode, nn_buffer **packed) {
    const nn_conv_geometry *g = &cp->g;
    const int64_t groups = nn_conv_groups(cp), count = (int64_t)cp->filters * (g->channels / groups) *
                                                         g->kernel_h * g->kernel_w;
    *packed = vk_buffer_alloc(&vk->base, (size_t)(count > 0 ? count : 1) * sizeof(float));
    if (!*packed) return nn_last_status();
    VK_PUSH(CONV_GEMM_PACK) push = {
        .count = (uint32_t)count, .mode = (uint32_t)mode, .groups = (uint32_t)groups,
        .cg = (uint32_t)(g->channels / groups), .fg = (uint32_t)(cp->filters / groups),
        .kernel_hw = pair(g->kernel_h, g->kernel_w), .stride_hw = pair(g->stride_h, g->stride_w),
        .pad_hw = pair(g->pad_h, g->pad_w), .dilation_hw = pair(nn_conv_dilation_h(g), nn_conv_dilation_w(g))};
    if (vk->labels)
        snprintf(vk->profile_label, sizeof vk->profile_label, "conv pack %s f%d c%d k%dx%d",
                 mode ? "data" : "forward", cp->filters, g->channels, g->kernel_h, g->kernel_w);
    const nn_buffer_ref args[2] = {w, {*packed, 0, (size_t)count * sizeof(float)}};
    return vk_record_ex(vk, kernel, VK_PIPE_CONV_GEMM_PACK, 0, args, 2, NN_ARG(1), VK_PUSH_REF(push),
                        vk_groups_for((uint64_t)count), 1, 1);
}

nn_status vk_conv_gemm_record(vk_backend *vk, nn_kernel kernel, const nn_buffer_ref *a, const nn_conv_params *cp) {
    const nn_conv_geometry *g = &cp->g;
    const int64_t groups = nn_conv_groups(cp), cg = g->channels / groups, fg = cp->filters / groups;
    const int64_t taps = (int64_t)g->kernel_h * g->kernel_w;
    const strides image = strides_of(cp->image_layout, g->channels, g->height, g->width);
    const strides output = strides_of(cp->output_layout, cp->filters, g->out_h, g->out_w);
    const bool forward = kernel == NN_KERNEL_CONV2D_FORWARD, data = kernel == NN_KERNEL_CONV2D_BACKWARD_DATA;
    const strides gathered = data ? output : image, other = data ? image : output;
    VK_PUSH(CONV_GEMM) push = {
        .batch = (uint32_t)g->batch, .in_h = (uint32_t)(data ? g->out_h : g->height),
        .in_w = (uint32_t)(data ? g->out_w : g->width), .in_sn = gathered.n, .in_sc = gathered.c,
        .in_sh = gathered.h, .in_sw = gathered.w, .out_sn = other.n, .out_sc = other.c, .out_sh = other.h,
        .out_sw = other.w, .rows_h = (uint32_t)(data ? g->height : g->out_h),
        .rows_w = (uint32_t)(data ? g->width : g->out_w), .kernel_hw = pair(g->kernel_h, g->kernel_w),
        .stride_hw = pair(g->stride_h, g->stride_w), .pad_hw = pair(g->pad_h, g->pad_w),
        .dilation_hw = pair(nn_conv_dilation_h(g), nn_conv_dilation_w(g)), .groups = (uint32_t)groups,
        .cg = (uint32_t)cg, .fg = (uint32_t)fg};
    /* Rows and columns of one group's product (the data gradient: of its
     * largest phase), how many products (groups x phases), and the sum's length. */
    const int64_t phases = data ? (int64_t)g->stride_h * g->stride_w : 1;
    int64_t m, n, reduced;
    int mode;
    const char *what;
    if (forward) {
        mode = 0, what = "forward";
        m = (int64_t)g->batch * g->out_h * g->out_w, n = fg, reduced = cg * taps;
        push.epilogue = (uint32_t)cp->epilogue;
    } else if (data) {
        mode = 1, what = "data";
        m = (int64_t)g->batch * ceil_div(g->height, g->stride_h) * ceil_div(g->width, g->stride_w), n = cg;
        reduced = fg * taps;
        push.beta = g->accumulate ? 1.0f : 0.0f;
    } else {
        mode = 2, what = "weight";
        m = fg, n = cg * taps, reduced = (int64_t)g->batch * g->out_h * g->out_w;
    }
    NN_TRY(vk_fits32(kernel, "implicit GEMM rows", m));
    NN_TRY(vk_fits32(kernel, "implicit GEMM sum", reduced));
    if (groups * phases > VK_MAX_GROUPS || g->kernel_h > 0xffff || g->kernel_w > 0xffff || g->stride_h > 0xffff ||
        g->stride_w > 0xffff || g->pad_h > 0xffff || g->pad_w > 0xffff || nn_conv_dilation_h(g) > 0xffff ||
        nn_conv_dilation_w(g) > 0xffff)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: %lld groups, a %dx%d window, stride %dx%d, padding %dx%d "
                            "or dilation %dx%d beyond the implicit GEMM's limits (65535 each)",
                            nn_kernel_name(kernel), (long long)groups, g->kernel_h, g->kernel_w, g->stride_h,
                            g->stride_w, g->pad_h, g->pad_w, nn_conv_dilation_h(g), nn_conv_dilation_w(g));
    push.m = (uint32_t)m, push.n = (uint32_t)n;
    /* fp16 operations on the matrix cores; vk_conv_route sends no other reduced precision here. */
    const bool cores = cp->precision != NN_PRECISION_FP32;
    if (cores && !vk_on_matrix_cores(vk, cp->precision))
        return nn_set_error(NN_ERR_BACKEND, "vulkan %s: the implicit GEMM runs %s only on matrix cores, which %s "
                            "lacks (%s)", nn_kernel_name(kernel), nn_precision_name((nn_precision)cp->precision),
                            vk->phys->props.deviceName, vk->matrix_cores_note);
    const vk_pipeline_id pipe = cores ? conv_gemm_coopmat_tile(m, n, groups * phases, mode)
                                      : conv_gemm_tile(m, n, groups * phases, !forward && !data);
    uint32_t bm, bn, bk;
    vk_gemm_tiles(pipe, &bm, &bn, &bk);
    const int64_t row_tiles = ceil_div(m, bm), col_tiles = ceil_div(n, bn), slices = ceil_div(reduced, bk);
    if (col_tiles > VK_MAX_GROUPS)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: %lld columns need more than %u workgroups",
                            nn_kernel_name(kernel), (long long)n, VK_MAX_GROUPS);
    int64_t splits = 1;
    if (!forward && !data) {
        const int64_t tiles = row_tiles * col_tiles * groups;
        if (tiles < TARGET_GROUPS) splits = ceil_div(TARGET_GROUPS, tiles);
        if (splits > slices / MIN_SPLIT_SLICES) splits = slices / MIN_SPLIT_SLICES;
        if (splits > MAX_SPLITS) splits = MAX_SPLITS;
        if (splits * cp->filters * n > MAX_PARTIALS) splits = MAX_PARTIALS / (cp->filters * n);
        if (splits < 1) splits = 1;
    }
    const int64_t split_steps = ceil_div(slices, splits);
    splits = slices > 0 ? ceil_div(slices, split_steps) : 1;
    push.split_steps = (uint32_t)split_steps;
    if (groups * splits > VK_MAX_GROUPS)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: %lld groups in %lld splits need more than %u workgroups",
                            nn_kernel_name(kernel), (long long)groups, (long long)splits, VK_MAX_GROUPS);
    /* Row tiles past the workgroup limit are walked by the workgroups (the shader strides). */
    const uint32_t gx = (uint32_t)col_tiles, gy = (uint32_t)(row_tiles > VK_MAX_GROUPS ? VK_MAX_GROUPS : row_tiles);
    const uint32_t gz = (uint32_t)(groups * (data ? phases : splits));

    /* Four at a time: the gathered tensor along its channels (the weight
     * gradient: dy along its filters), the other operand along its columns. */
    bool vec_a, vec_b;
    if (forward || data) {
        vec_a = quads(a[0], gathered, data ? fg : cg);
        vec_b = n % 4 == 0;
    } else {
        vec_a = quads(a[0], output, fg);
        vec_b = quads(a[1], image, cg);
    }
    const int variant = (vec_a ? 1 : 0) | (vec_b ? 2 : 0) | mode << 2;
    nn_buffer *packed = NULL;
    if (forward || data) NN_TRY(pack_weight(vk, kernel, cp, a[1], mode, &packed));
    if (vk->labels)
        snprintf(vk->profile_label, sizeof vk->profile_label, "conv %s%s %dx%dx%dx%d f%d k%dx%d s%d %s%s", what,
                 cores ? " fp16" : "", g->batch, g->channels, g->height, g->width, cp->filters, g->kernel_h,
                 g->kernel_w, g->stride_h, cp->image_layout == NN_LAYOUT_CHANNELS_LAST ? "nhwc" : "nchw", splits > 1 ? " split" : "");
    const nn_buffer_ref none = {NULL, 0, 0};
    /* Always four arguments (the shader declares the bias binding). */
    nn_buffer_ref args[4] = {a[0], packed ? (nn_buffer_ref){packed, 0, 0} : a[1], a[2], forward ? a[3] : none};
    nn_status st;
    if (forward || data || splits == 1) {
        if (!forward && !data) push.beta = g->accumulate ? 1.0f : 0.0f;
        st = vk_record_ex(vk, kernel, pipe, variant, args, 4, NN_ARG(2), VK_PUSH_REF(push), gx, gy, gz);
    } else {
        /* The weight gradient in splits: partials [split][filters][K] in
         * dW's order, then their sum in order into dW. */
        const int64_t partial = (int64_t)cp->filters * n;
        st = vk_fits32(kernel, "implicit GEMM partial entries", splits * partial);
        nn_buffer *scratch = st == NN_OK ? vk_buffer_alloc(&vk->base, (size_t)(splits * partial) * sizeof(float)) : NULL;
        if (st == NN_OK && !scratch) st = nn_last_status();
        if (st == NN_OK) {
            args[2] = (nn_buffer_ref){scratch, 0, 0};
            st = vk_record_ex(vk, kernel, pipe, variant, args, 4, NN_ARG(2), VK_PUSH_REF(push), gx, gy, gz);
        }
        if (st == NN_OK) {
            if (vk->labels)
                snprintf(vk->profile_label, sizeof vk->profile_label, "conv weight split sum f%d n%lld of %lld",
                         cp->filters, (long long)n, (long long)splits);
            VK_PUSH(GEMM_SPLITK) sum = {.m = (uint32_t)cp->filters, .n = (uint32_t)n, .ldc = (uint32_t)n,
                                        .splits = (uint32_t)splits, .alpha = 1.0f,
                                        .beta = g->accumulate ? 1.0f : 0.0f, .epilogue = 0};
            nn_buffer_ref second[2] = {{scratch, 0, 0}, a[2]};
            st = vk_record_ex(vk, kernel, VK_PIPE_GEMM_SPLITK, 0, second, 2, NN_ARG(1), VK_PUSH_REF(sum),
                              vk_groups_for((uint64_t)partial), 1, 1);
        }
        if (scratch) vk_scratch_done(vk, scratch); /* freed at once (vk_stream.c orders reuse), or kept by a plan */
    }
    if (packed) vk_scratch_done(vk, packed);
    return st;
}
