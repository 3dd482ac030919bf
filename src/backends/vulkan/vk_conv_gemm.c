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

#include "base/error.h"
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

/* The fp32 tile for a product of m rows and n columns per group, repeated
 * `outputs` times (groups, phases): 128 x 64 (8 x 4 per invocation) where
 * its tiles fill the device, smaller ones where they do not. A sum that
 * will be split (long_k, the weight gradient) fills the device with its
 * splits: its tile is the most efficient the sizes allow. (A 128 x 128
 * tile of 8 x 8 ran no faster than 128 x 64 and, in one variant, spilled
 * registers: bench/README.md.) */
static vk_pipeline_id conv_gemm_tile(int64_t m, int64_t n, int64_t outputs, bool long_k) {
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
    if (mode == 2) return m >= 128 && n > 64 ? VK_PIPE_CONV_GEMM_COOPMAT_128X128 : VK_PIPE_CONV_GEMM_COOPMAT_64X64;
    if (n > 64 && ceil_div(m, 64) * ceil_div(n, 128) * outputs >= TARGET_GROUPS) return VK_PIPE_CONV_GEMM_COOPMAT_64X128;
    if (mode == 0 && ceil_div(m, 128) * ceil_div(n, 64) * outputs >= TARGET_GROUPS) return VK_PIPE_CONV_GEMM_COOPMAT_128X64;
    return VK_PIPE_CONV_GEMM_COOPMAT_64X64;
}

static uint32_t pair(int32_t h, int32_t w) { return (uint32_t)h << 16 | (uint32_t)w; }

/* Four elements at a time from a tensor: its offset, its strides other
 * than the one read along (unit), and the run read (per group) multiples of 4. */
static bool quads(nn_buffer_ref ref, vk_activation_strides s, int64_t run) {
    const uint64_t byte = ref.buffer ? ref.buffer->offset + ref.offset : 1;
    return byte % 16 == 0 && s.c == 1 && s.n % 4 == 0 && s.h % 4 == 0 && s.w % 4 == 0 && run % 4 == 0;
}

/* The weight packed for `mode` (0 forward, 1 data) into a scratch buffer. */
static nn_status pack_weight(vk_backend *vk, nn_kernel kernel, const nn_conv_params *cp, nn_buffer_ref w,
                             int mode, nn_buffer **packed) {
    const nn_conv_geometry *g = &cp->g;
    const int64_t groups = nn_conv_groups(cp), count = (int64_t)cp->filters * (g->channels / groups) *
                                                         g->kernel_h * g->kernel_w;
    *packed = vk_scratch_alloc(vk, (size_t)(count > 0 ? count : 1) * sizeof(float));
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

typedef VK_PUSH(CONV_GEMM) conv_gemm_push;

/* One kernel of one layer as the implicit GEMM computes it, whatever the tile. */
typedef struct conv_gemm_layer {
    nn_kernel kernel;
    const nn_conv_params *cp;
    conv_gemm_push push; /* without the split, which depends on the tile */
    int64_t m, n, reduced;   /* one group's product (the data gradient: its largest phase) */
    int64_t groups, phases;
    int mode;                /* 0 forward, 1 data, 2 weight */
    int variant;             /* the vec4 loads and the mode (vk_pipeline_list.h) */
    bool cores;              /* fp16 on the matrix cores */
    const char *what;
} conv_gemm_layer;

/* How a tile runs the layer: its workgroups and the weight gradient's splits. */
typedef struct conv_gemm_grid {
    uint32_t gx, gy, gz;
    int64_t splits, split_steps;
} conv_gemm_grid;

static nn_status grid_of(const conv_gemm_layer *L, vk_pipeline_id pipe, conv_gemm_grid *out) {
    uint32_t bm, bn, bk;
    vk_gemm_tiles(pipe, &bm, &bn, &bk);
    const int64_t row_tiles = ceil_div(L->m, bm), col_tiles = ceil_div(L->n, bn), slices = ceil_div(L->reduced, bk);
    if (col_tiles > VK_MAX_GROUPS)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: %lld columns need more than %u workgroups",
                            nn_kernel_name(L->kernel), (long long)L->n, VK_MAX_GROUPS);
    int64_t splits = 1;
    if (L->mode == 2) {
        /* Counted in 128 x 128 tiles whichever tile runs: the splits, and so
         * the order of the sums, are then the same for every tile (every
         * tile of a family has the same k slice), so a measured tile gives
         * the heuristic's results bit for bit. */
        const int64_t tiles = ceil_div(L->m, 128) * ceil_div(L->n, 128) * L->groups;
        if (tiles < TARGET_GROUPS) splits = ceil_div(TARGET_GROUPS, tiles);
        if (splits > slices / MIN_SPLIT_SLICES) splits = slices / MIN_SPLIT_SLICES;
        if (splits > MAX_SPLITS) splits = MAX_SPLITS;
        if (splits * L->cp->filters * L->n > MAX_PARTIALS) splits = MAX_PARTIALS / (L->cp->filters * L->n);
        if (splits < 1) splits = 1;
    }
    const int64_t split_steps = ceil_div(slices, splits);
    splits = slices > 0 ? ceil_div(slices, split_steps) : 1;
    if (L->groups * splits > VK_MAX_GROUPS)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: %lld groups in %lld splits need more than %u workgroups",
                            nn_kernel_name(L->kernel), (long long)L->groups, (long long)splits, VK_MAX_GROUPS);
    /* Row tiles past the workgroup limit are walked by the workgroups (the shader strides). */
    out->gx = (uint32_t)col_tiles;
    out->gy = (uint32_t)(row_tiles > VK_MAX_GROUPS ? VK_MAX_GROUPS : row_tiles);
    out->gz = (uint32_t)(L->groups * (L->mode == 1 ? L->phases : splits));
    out->splits = splits, out->split_steps = split_steps;
    return NN_OK;
}

/* The layer's kernel in tile `pipe`: args are the gathered tensor, the
 * packed weight (or x), the output and the bias. A split weight gradient
 * writes its partials to `partials` when given (the tuner's), else to
 * scratch of its own. */
static nn_status record_tile(vk_backend *vk, const conv_gemm_layer *L, vk_pipeline_id pipe, const nn_buffer_ref *args,
                             nn_buffer *partials) {
    conv_gemm_grid grid;
    NN_TRY(grid_of(L, pipe, &grid));
    conv_gemm_push push = L->push;
    push.split_steps = (uint32_t)grid.split_steps;
    const float beta = L->cp->g.accumulate ? 1.0f : 0.0f;
    nn_buffer_ref a[4] = {args[0], args[1], args[2], args[3]};
    if (L->mode != 2 || grid.splits == 1) {
        if (L->mode == 2) push.beta = beta;
        return vk_record_ex(vk, L->kernel, pipe, L->variant, a, 4, NN_ARG(2), VK_PUSH_REF(push), grid.gx, grid.gy,
                            grid.gz);
    }
    /* The weight gradient in splits: partials [split][filters][K] in dW's
     * order, then their sum in order into dW. */
    const int64_t partial = (int64_t)L->cp->filters * L->n;
    NN_TRY(vk_fits32(L->kernel, "implicit GEMM partial entries", grid.splits * partial));
    nn_buffer *scratch = partials ? NULL : vk_scratch_alloc(vk, (size_t)(grid.splits * partial) * sizeof(float));
    if (!partials && !scratch) return nn_last_status();
    a[2] = (nn_buffer_ref){partials ? partials : scratch, 0, (size_t)(grid.splits * partial) * sizeof(float)};
    nn_status st = vk_record_ex(vk, L->kernel, pipe, L->variant, a, 4, NN_ARG(2), VK_PUSH_REF(push), grid.gx, grid.gy,
                                grid.gz);
    if (st == NN_OK) {
        if (vk->labels)
            snprintf(vk->profile_label, sizeof vk->profile_label, "conv weight split sum f%d n%lld of %lld",
                     L->cp->filters, (long long)L->n, (long long)grid.splits);
        VK_PUSH(GEMM_SPLITK) sum = {.m = (uint32_t)L->cp->filters, .n = (uint32_t)L->n, .ldc = (uint32_t)L->n,
                                    .splits = (uint32_t)grid.splits, .alpha = 1.0f, .beta = beta, .epilogue = 0};
        nn_buffer_ref second[2] = {a[2], args[2]};
        st = vk_record_ex(vk, L->kernel, VK_PIPE_GEMM_SPLITK, 0, second, 2, NN_ARG(1), VK_PUSH_REF(sum),
                          vk_groups_for((uint64_t)partial), 1, 1);
    }
    if (scratch) vk_scratch_done(vk, scratch); /* freed at once (vk_stream.c orders reuse), or kept by a plan */
    return st;
}

/* The tuner's view of a layer: the candidate tiles run on scratch outputs. */
typedef struct tune_context {
    const conv_gemm_layer *layer;
    const vk_pipeline_id *pipes;
    nn_buffer_ref args[4];
    nn_buffer *partials;
} tune_context;

static nn_status record_candidate(vk_backend *vk, void *ctx, int candidate) {
    const tune_context *t = ctx;
    return record_tile(vk, t->layer, t->pipes[candidate], t->args, t->partials);
}

/* The tile: forced by NN_ENGINE_VULKAN_CONV_TILES, else the tuner's
 * (cached or measured, vk_tune.c) or the heuristic's. */
static nn_status choose_tile(vk_backend *vk, const conv_gemm_layer *L, const nn_buffer_ref *args,
                             vk_pipeline_id *pipe, const char **how) {
    static const char *const fp32_names[] = {"128x64", "64x128", "64x64", "32x32"};
    static const vk_pipeline_id fp32_pipes[] = {VK_PIPE_CONV_GEMM_128X64, VK_PIPE_CONV_GEMM_64X128,
                                                VK_PIPE_CONV_GEMM_64X64, VK_PIPE_CONV_GEMM_32X32};
    static const char *const fp16_names[] = {"128x128", "128x64", "64x128", "64x64"};
    static const vk_pipeline_id fp16_pipes[] = {VK_PIPE_CONV_GEMM_COOPMAT_128X128, VK_PIPE_CONV_GEMM_COOPMAT_128X64,
                                                VK_PIPE_CONV_GEMM_COOPMAT_64X128, VK_PIPE_CONV_GEMM_COOPMAT_64X64};
    const char *const *names = L->cores ? fp16_names : fp32_names;
    const vk_pipeline_id *pipes = L->cores ? fp16_pipes : fp32_pipes;
    const char *force = getenv("NN_ENGINE_VULKAN_CONV_TILES");
    for (int i = 0; force && i < 4; i++)
        if (!strcmp(force, names[i])) {
            *pipe = pipes[i];
            *how = "forced";
            return NN_OK;
        }
    const int64_t outputs = L->groups * L->phases;
    const vk_pipeline_id guess = L->cores ? conv_gemm_coopmat_tile(L->m, L->n, outputs, L->mode)
                                          : conv_gemm_tile(L->m, L->n, outputs, L->mode == 2);
    vk_tune_request req = {.names = names, .count = 4, .record = record_candidate};
    for (int i = 0; i < 4; i++)
        if (pipes[i] == guess) req.heuristic = i;
    /* The key: the layer's shape as the kernel sees it (no offsets, no accumulate), its loads and precision. */
    conv_gemm_push shape = L->push;
    memset(shape.off, 0, sizeof shape.off);
    shape.beta = 0.0f;
    shape.split_steps = 0;
    uint32_t words[sizeof shape / 4];
    memcpy(words, &shape, sizeof words);
    req.key[0] = (uint32_t)L->variant | (L->cores ? 1u : 0u) << 8 | 1u << 16; /* 1 << 16: the implicit GEMM's tiles */
    for (size_t i = 4; i < sizeof words / 4 && i - 3 < VK_TUNE_KEY_WORDS; i++) req.key[i - 3] = words[i];
    /* Scratch outputs for the candidates, allocated only if the tuner measures. */
    const nn_conv_geometry *g = &L->cp->g;
    const int64_t out_floats = L->mode == 0 ? (int64_t)g->batch * L->cp->filters * g->out_h * g->out_w
                               : L->mode == 1 ? (int64_t)g->batch * g->channels * g->height * g->width
                                              : (int64_t)L->cp->filters * L->n;
    tune_context ctx = {.layer = L, .pipes = pipes, .args = {args[0], args[1], args[2], args[3]}};
    req.ctx = &ctx;
    const VkDeviceSize peak = vk->peak_in_use;
    nn_buffer *out = NULL;
    nn_status st = NN_OK;
    if (vk_tune_will_measure(vk, &req)) {
        int64_t partial_floats = 0;
        for (int i = 0; i < 4; i++) {
            conv_gemm_grid grid;
            if (grid_of(L, pipes[i], &grid) != NN_OK) { /* a tile the workgroup limits refuse: nothing measured */
                nn_clear_error();
                *pipe = guess;
                *how = vk_tune_source_name(VK_TUNE_FROM_HEURISTIC);
                return NN_OK;
            }
            if (grid.splits > 1 && grid.splits * L->cp->filters * L->n > partial_floats)
                partial_floats = grid.splits * L->cp->filters * L->n;
        }
        out = vk_buffer_alloc(&vk->base, (size_t)out_floats * sizeof(float));
        ctx.partials = partial_floats ? vk_buffer_alloc(&vk->base, (size_t)partial_floats * sizeof(float)) : NULL;
        if (!out || (partial_floats && !ctx.partials)) st = nn_last_status();
        ctx.args[2] = (nn_buffer_ref){out, 0, (size_t)out_floats * sizeof(float)};
    }
    int choice = req.heuristic;
    vk_tune_source source = VK_TUNE_FROM_HEURISTIC;
    if (st == NN_OK) st = vk_tune_choose(vk, &req, &choice, &source);
    /* The candidates ran to completion inside vk_tune_choose: free at once,
     * and leave the peak as the step's own (the tuner's buffers are not the step's). */
    if (out) vk_buffer_free(&vk->base, out);
    if (ctx.partials) vk_buffer_free(&vk->base, ctx.partials);
    vk->peak_in_use = peak > vk->bytes_in_use ? peak : vk->bytes_in_use;
    NN_TRY(st);
    *pipe = pipes[choice];
    *how = vk_tune_source_name(source);
    return NN_OK;
}

nn_status vk_conv_gemm_record(vk_backend *vk, nn_kernel kernel, const nn_buffer_ref *a, const nn_conv_params *cp) {
    const nn_conv_geometry *g = &cp->g;
    const int64_t groups = nn_conv_groups(cp), cg = g->channels / groups, fg = cp->filters / groups;
    const int64_t taps = (int64_t)g->kernel_h * g->kernel_w;
    const vk_activation_strides image = vk_activation_strides_of(cp->image_layout, g->channels, g->height, g->width);
    const vk_activation_strides output = vk_activation_strides_of(cp->output_layout, cp->filters, g->out_h, g->out_w);
    const bool forward = kernel == NN_KERNEL_CONV2D_FORWARD, data = kernel == NN_KERNEL_CONV2D_BACKWARD_DATA;
    const vk_activation_strides gathered = data ? output : image, other = data ? image : output;
    conv_gemm_layer L = {.kernel = kernel, .cp = cp, .groups = groups};
    L.push = (conv_gemm_push){
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
    L.phases = data ? (int64_t)g->stride_h * g->stride_w : 1;
    if (forward) {
        L.mode = 0, L.what = "forward";
        L.m = (int64_t)g->batch * g->out_h * g->out_w, L.n = fg, L.reduced = cg * taps;
        L.push.epilogue = (uint32_t)cp->epilogue;
    } else if (data) {
        L.mode = 1, L.what = "data";
        L.m = (int64_t)g->batch * ceil_div(g->height, g->stride_h) * ceil_div(g->width, g->stride_w), L.n = cg;
        L.reduced = fg * taps;
        L.push.beta = g->accumulate ? 1.0f : 0.0f;
    } else {
        L.mode = 2, L.what = "weight";
        L.m = fg, L.n = cg * taps, L.reduced = (int64_t)g->batch * g->out_h * g->out_w;
    }
    NN_TRY(vk_fits32(kernel, "implicit GEMM rows", L.m));
    NN_TRY(vk_fits32(kernel, "implicit GEMM sum", L.reduced));
    if (groups * L.phases > VK_MAX_GROUPS || g->kernel_h > 0xffff || g->kernel_w > 0xffff || g->stride_h > 0xffff ||
        g->stride_w > 0xffff || g->pad_h > 0xffff || g->pad_w > 0xffff || nn_conv_dilation_h(g) > 0xffff ||
        nn_conv_dilation_w(g) > 0xffff)
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: %lld groups, a %dx%d window, stride %dx%d, padding %dx%d "
                            "or dilation %dx%d beyond the implicit GEMM's limits (65535 each)",
                            nn_kernel_name(kernel), (long long)groups, g->kernel_h, g->kernel_w, g->stride_h,
                            g->stride_w, g->pad_h, g->pad_w, nn_conv_dilation_h(g), nn_conv_dilation_w(g));
    L.push.m = (uint32_t)L.m, L.push.n = (uint32_t)L.n;
    /* fp16 operations on the matrix cores; vk_conv_route sends no other reduced precision here. */
    L.cores = cp->precision != NN_PRECISION_FP32;
    if (L.cores && !vk_on_matrix_cores(vk, cp->precision))
        return nn_set_error(NN_ERR_BACKEND, "vulkan %s: the implicit GEMM runs %s only on matrix cores, which %s "
                            "lacks (%s)", nn_kernel_name(kernel), nn_precision_name((nn_precision)cp->precision),
                            vk->phys->props.deviceName, vk->matrix_cores_note);
    /* Four at a time: the gathered tensor along its channels (the weight
     * gradient: dy along its filters), the other operand along its columns. */
    bool vec_a, vec_b;
    if (forward || data) {
        vec_a = quads(a[0], gathered, data ? fg : cg);
        vec_b = L.n % 4 == 0;
    } else {
        vec_a = quads(a[0], output, fg);
        vec_b = quads(a[1], image, cg);
    }
    L.variant = (vec_a ? 1 : 0) | (vec_b ? 2 : 0) | L.mode << 2;
    /* On matrix cores a data gradient added onto channels-last dx at stride 1 starts its squares from dx
     * (PRELOAD): a pipeline of its own, so the others keep their registers. */
    if (L.cores && data && g->accumulate && L.phases == 1 && other.c == 1 && other.w % 4 == 0)
        L.variant |= 1 << 4;
    nn_buffer *packed = NULL;
    if (forward || data) NN_TRY(pack_weight(vk, kernel, cp, a[1], L.mode, &packed));
    const nn_buffer_ref none = {NULL, 0, 0};
    /* Always four arguments (the shader declares the bias binding). */
    const nn_buffer_ref args[4] = {a[0], packed ? (nn_buffer_ref){packed, 0, 0} : a[1], a[2], forward ? a[3] : none};
    vk_pipeline_id pipe;
    const char *how;
    nn_status st = choose_tile(vk, &L, args, &pipe, &how);
    if (st == NN_OK && vk->labels) {
        uint32_t bm, bn, bk;
        vk_gemm_tiles(pipe, &bm, &bn, &bk);
        snprintf(vk->profile_label, sizeof vk->profile_label, "conv %s%s %dx%dx%dx%d f%d k%dx%d s%d %s %ux%u %s",
                 L.what, L.cores ? " fp16" : "", g->batch, g->channels, g->height, g->width, cp->filters,
                 g->kernel_h, g->kernel_w, g->stride_h, cp->image_layout == NN_LAYOUT_CHANNELS_LAST ? "nhwc" : "nchw",
                 bm, bn, how);
    }
    if (st == NN_OK) st = record_tile(vk, &L, pipe, args, NULL);
    if (packed) vk_scratch_done(vk, packed);
    return st;
}
