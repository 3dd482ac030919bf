/* The convolution kernels (kernels.h, nn_conv_params) as implicit GEMMs
 * on Vulkan (conv_implicit.comp): the whole batch in one dispatch per
 * kernel, the column matrix read from the image (or dy) as the tiles are
 * staged, so no column buffer exists. The forward's bias and ReLU are its
 * store; the data gradient adds into dx when asked; the weight gradient's
 * long sum over (image, position) is split so enough workgroups run, and
 * its partials are added in split order by gemm_splitk.comp (the same
 * result on every run: no float atomics). Which layers come here is
 * vk_conv.c's choice (vk_conv_route). */
#include <stdio.h>

#include "core/error.h"
#include "vk_backend.h"

/* Workgroups that keep a large GPU busy (two per multiprocessor of a
 * 132-SM H100/H200): the large tile is taken only where it still gives
 * this many, and the weight gradient is split until it has them. */
#define IMPLICIT_TARGET_GROUPS 264
/* A split sums at least this many k slices (each a barrier and a memory
 * wait), and the partials stay under IMPLICIT_MAX_PARTIALS floats (64 MiB). */
#define IMPLICIT_MIN_SPLIT_SLICES 8
#define IMPLICIT_MAX_SPLITS 1024
#define IMPLICIT_MAX_PARTIALS ((int64_t)1 << 24)

static int64_t ceil_div(int64_t x, int64_t y) { return (x + y - 1) / y; }

/* The large tile (128 x 128, 8 x 8 per invocation) where its tiles still
 * fill the device, else the medium one (64 x 64). */
static vk_pipeline_id implicit_tile(int64_t m, int64_t n, int64_t groups) {
    uint32_t bm, bn, bk;
    vk_gemm_tiles(VK_PIPE_CONV_IMPLICIT_LARGE, &bm, &bn, &bk);
    if (m >= bm && ceil_div(m, bm) * ceil_div(n, bn) * groups >= IMPLICIT_TARGET_GROUPS)
        return VK_PIPE_CONV_IMPLICIT_LARGE;
    return VK_PIPE_CONV_IMPLICIT_MEDIUM;
}

nn_status vk_conv_implicit_record(vk_backend *vk, nn_kernel kernel, const nn_buffer_ref *a,
                                  const nn_conv_params *cp) {
    const nn_conv_geometry *g = &cp->g;
    const int64_t groups = nn_conv_groups(cp), cg = g->channels / groups, fg = cp->filters / groups;
    const int64_t taps = (int64_t)g->kernel_h * g->kernel_w, positions = (int64_t)g->out_h * g->out_w;
    VK_PUSH(CONV_IMPLICIT) push = {
        .channels = (uint32_t)g->channels, .height = (uint32_t)g->height, .width = (uint32_t)g->width,
        .kernel_h = (uint32_t)g->kernel_h, .kernel_w = (uint32_t)g->kernel_w, .stride_h = (uint32_t)g->stride_h,
        .stride_w = (uint32_t)g->stride_w, .pad_h = (uint32_t)g->pad_h, .pad_w = (uint32_t)g->pad_w,
        .dilation_h = (uint32_t)nn_conv_dilation_h(g), .dilation_w = (uint32_t)nn_conv_dilation_w(g),
        .out_h = (uint32_t)g->out_h, .out_w = (uint32_t)g->out_w, .filters = (uint32_t)cp->filters,
        .groups = (uint32_t)groups, .cg = (uint32_t)cg, .fg = (uint32_t)fg};
    int64_t m, n, k;
    int variant;
    const char *what;
    if (kernel == NN_KERNEL_CONV2D_FORWARD) {
        variant = 0, what = "forward";
        m = fg, n = (int64_t)g->batch * positions, k = cg * taps;
        push.epilogue = (uint32_t)cp->epilogue;
    } else if (kernel == NN_KERNEL_CONV2D_BACKWARD_DATA) {
        variant = 1, what = "data";
        m = cg, n = (int64_t)g->batch * g->height * g->width, k = fg * taps;
        push.beta = g->accumulate ? 1.0f : 0.0f;
    } else {
        variant = 2, what = "weight";
        m = fg, n = cg * taps, k = (int64_t)g->batch * positions;
    }
    NN_TRY(vk_fits32(kernel, "implicit GEMM columns", n));
    NN_TRY(vk_fits32(kernel, "implicit GEMM k", k));
    push.m = (uint32_t)m, push.n = (uint32_t)n, push.k = (uint32_t)k;
    const vk_pipeline_id pipe = implicit_tile(m, n, groups);
    uint32_t bm, bn, bk;
    vk_gemm_tiles(pipe, &bm, &bn, &bk);
    const int64_t row_tiles = ceil_div(m, bm), col_tiles = ceil_div(n, bn), slices = ceil_div(k, bk);
    if (row_tiles > VK_MAX_GROUPS)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: %lld rows need more than %u workgroups",
                            nn_kernel_name(kernel), (long long)m, VK_MAX_GROUPS);
    /* Column tiles past the limit are walked by the workgroups (the shader strides). */
    const uint32_t gx = (uint32_t)(col_tiles > VK_MAX_GROUPS ? VK_MAX_GROUPS : col_tiles);
    int64_t splits = 1;
    if (kernel == NN_KERNEL_CONV2D_BACKWARD_WEIGHT) {
        const int64_t tiles = row_tiles * col_tiles * groups;
        if (tiles < IMPLICIT_TARGET_GROUPS) splits = ceil_div(IMPLICIT_TARGET_GROUPS, tiles);
        if (splits > slices / IMPLICIT_MIN_SPLIT_SLICES) splits = slices / IMPLICIT_MIN_SPLIT_SLICES;
        if (splits > IMPLICIT_MAX_SPLITS) splits = IMPLICIT_MAX_SPLITS;
        if (splits * cp->filters * n > IMPLICIT_MAX_PARTIALS) splits = IMPLICIT_MAX_PARTIALS / (cp->filters * n);
        if (splits < 1) splits = 1;
    }
    const int64_t split_steps = ceil_div(slices, splits);
    splits = slices > 0 ? ceil_div(slices, split_steps) : 1;
    push.split_steps = (uint32_t)split_steps;
    if (groups * splits > VK_MAX_GROUPS)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: %lld groups need more than %u workgroups",
                            nn_kernel_name(kernel), (long long)groups, VK_MAX_GROUPS);
    if (vk->labels)
        snprintf(vk->profile_label, sizeof vk->profile_label, "conv %s %dx%dx%dx%d f%d k%dx%d implicit%s", what,
                 g->batch, g->channels, g->height, g->width, cp->filters, g->kernel_h, g->kernel_w,
                 splits > 1 ? " split" : "");
    const uint32_t gy = (uint32_t)row_tiles, gz = (uint32_t)(groups * splits);
    /* Always four arguments (the shader declares the bias binding): in0, in1, the output, the bias. */
    const nn_buffer_ref none = {NULL, 0, 0};
    nn_buffer_ref args[4] = {a[0], a[1], a[2], kernel == NN_KERNEL_CONV2D_FORWARD ? a[3] : none};
    if (kernel != NN_KERNEL_CONV2D_BACKWARD_WEIGHT || splits == 1) {
        if (kernel == NN_KERNEL_CONV2D_BACKWARD_WEIGHT) push.beta = g->accumulate ? 1.0f : 0.0f;
        return vk_record_ex(vk, kernel, pipe, variant, args, 4, NN_ARG(2), VK_PUSH_REF(push), gx, gy, gz);
    }
    /* The weight gradient in splits: partials [split][filters][K], then their sum in order into dW. */
    const int64_t partial = (int64_t)cp->filters * n;
    NN_TRY(vk_fits32(kernel, "implicit GEMM partial entries", splits * partial));
    nn_buffer *scratch = vk_buffer_alloc(&vk->base, (size_t)(splits * partial) * sizeof(float));
    if (!scratch) return nn_last_status();
    args[2] = (nn_buffer_ref){scratch, 0, 0};
    nn_status st = vk_record_ex(vk, kernel, pipe, variant, args, 4, NN_ARG(2), VK_PUSH_REF(push), gx, gy, gz);
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
    vk_scratch_done(vk, scratch); /* freed at once (vk_stream.c orders reuse), or kept by a plan */
    return st;
}
