/* The convolution kernels (kernels.h) for 3x3 and 5x5 filters at stride 1
 * by Winograd's F(4x4, 3x3) and F(4x4, 5x5) on Vulkan (shaders/winograd.glsl):
 * each 4x4 patch of the output costs 36 (3x3, a 6x6 transform) or 64
 * (5x5, 8x8) products per (channel, filter) pair where direct convolution
 * costs 144 or 400, so the multiplications drop 4x or 6.25x and the product
 * becomes 36 or 64 independent GEMMs, one per point of the transform:
 *
 *   forward    u = filter transform of w (winograd_filter.comp),
 *              v = the input's (r + 3) x (r + 3) patches transformed
 *              (winograd_tiles.comp),
 *              m[xi] = v[xi] u[xi] (a batched GEMM, one product a point),
 *              y = m's 4x4 patches transformed back (winograd_output.comp),
 *              with the bias and ReLU;
 *   data       the same forward convolution of dy with the filters turned
 *              by 180 degrees, channels and filters swapped, and padding
 *              r - 1 - pad (stride 1 makes the data gradient a convolution);
 *   weight     the forward's adjoint: v as above, g = the output gradient's
 *              4x4 patches taken into the domain, the products
 *              v[xi]^T g[xi] summed over the patches, then back to r x r.
 *
 * The transformed operands are 2.25x (3x3) or 4x (5x5) the activation they
 * come from, so the batch's tiles run in chunks that keep each under
 * CHUNK_FLOATS; the weight gradient's sum over patches is split so its
 * small products still fill the device, the splits' partials added in order by the filter
 * transform (no atomics: the same result on every run). vk_conv.c's
 * vk_conv_route decides which layers come here. */
#include <stdio.h>
#include <stdlib.h>

#include "base/error.h"
#include "vk_backend.h"

#define TILE 4 /* outputs per tile and axis, for both filters */
/* The pipelines' variant for 5x5 filters (winograd.glsl's TRANSFORM 1, the
 * 8x8 transform; vk_pipeline_get puts variant >> 2 at constant_id 9). */
#define VARIANT_5X5 (1 << 2)
/* Each transformed operand (v, m, g) at most this many floats (32 MiB): the
 * batch's tiles run in chunks, so the scratch (which a captured step keeps)
 * stays small next to the step's activations (64 MiB: no faster step,
 * bench/README.md's Winograd section). */
#define CHUNK_FLOATS ((int64_t)1 << 23)
/* The weight gradient's products are split until this many workgroups of
 * 64 x 64 run (four per multiprocessor of a 132-SM H100/H200), each split
 * summing at least MIN_SPLIT_ROWS tiles. */
#define WEIGHT_TARGET_GROUPS 528
#define MIN_SPLIT_ROWS 128

static int64_t ceil_div(int64_t x, int64_t y) { return (x + y - 1) / y; }

/* Tiles per chunk of `tiles`: at most as many as `widest` channels fit in
 * CHUNK_FLOATS, less `reserve`, and no more than
 * NN_ENGINE_VULKAN_WINOGRAD_CHUNK (read at each call; for tests, which run
 * the chunks on small layers); the chunks then made equal, so no short
 * last chunk runs a product too small to fill the device. */
static int64_t chunk_tiles(int64_t tiles, int64_t points, int64_t widest, int64_t reserve) {
    int64_t most = CHUNK_FLOATS / (points * widest) - reserve;
    const char *force = getenv("NN_ENGINE_VULKAN_WINOGRAD_CHUNK");
    const long long forced = force ? atoll(force) : 0;
    if (forced > 0 && most > forced) most = forced;
    if (most < 1) most = 1;
    if (tiles <= most) return tiles > 0 ? tiles : 1;
    return forced > 0 ? most : ceil_div(tiles, ceil_div(tiles, most));
}

bool vk_conv_winograd_fits(const nn_conv_params *cp) {
    const nn_conv_geometry *g = &cp->g;
    const int32_t r = g->kernel_h;
    return nn_conv_groups(cp) == 1 && (r == 3 || r == 5) && g->kernel_w == r && g->stride_h == 1 &&
           g->stride_w == 1 && nn_conv_dilation_h(g) == 1 && nn_conv_dilation_w(g) == 1 && g->pad_h >= 0 &&
           g->pad_h < r && g->pad_w >= 0 && g->pad_w < r;
}

/* One side of a product: an activation's channels, size and strides. */
typedef struct side {
    nn_buffer_ref ref;
    int64_t channels, height, width;
    vk_activation_strides s;
} side;

/* The 4x4 tiles of an r x r filter's convolution over an output of
 * out_h x out_w, for `batch` images, and its transform: `points` entries
 * (one GEMM each), the pipelines' `variant`. */
typedef struct tiling {
    int64_t points, tiles_h, tiles_w, tiles;
    int variant;
} tiling;

static tiling tiling_of(int64_t taps, int64_t batch, int64_t out_h, int64_t out_w) {
    const int64_t alpha = TILE + taps - 1;
    tiling t = {alpha * alpha, ceil_div(out_h, TILE), ceil_div(out_w, TILE), 0, taps == 5 ? VARIANT_5X5 : 0};
    t.tiles = batch * t.tiles_h * t.tiles_w;
    return t;
}

static nn_status filter_transform(vk_backend *vk, nn_kernel kernel, nn_buffer_ref from, nn_buffer_ref to, int mode,
                                  const tiling *t, int64_t channels, int64_t filters, int64_t splits, float beta) {
    VK_PUSH(WINOGRAD_FILTER) push = {.channels = (uint32_t)channels, .filters = (uint32_t)filters,
                                     .mode = (uint32_t)mode, .splits = (uint32_t)splits, .beta = beta};
    if (vk->labels)
        snprintf(vk->profile_label, sizeof vk->profile_label, "conv winograd filter %s c%lld f%lld",
                 mode == 0 ? "forward" : mode == 1 ? "data" : "weight", (long long)channels, (long long)filters);
    const nn_buffer_ref args[2] = {from, to};
    return vk_record_ex(vk, kernel, VK_PIPE_WINOGRAD_FILTER, t->variant, args, 2, NN_ARG(1), VK_PUSH_REF(push),
                        vk_groups_for((uint64_t)(channels * filters)), 1, 1);
}

/* Tiles first .. first + count of `in` into the domain (mode 0: the input
 * patches with padding; 1: 4x4 output-gradient patches), `rows` per point. */
static nn_status tiles_transform(vk_backend *vk, nn_kernel kernel, const side *in, const tiling *t, int64_t pad_h,
                                 int64_t pad_w, int mode, int64_t first, int64_t count, int64_t rows,
                                 nn_buffer_ref to) {
    VK_PUSH(WINOGRAD_TILES) push = {
        .channels = (uint32_t)in->channels, .height = (uint32_t)in->height, .width = (uint32_t)in->width,
        .sn = in->s.n, .sc = in->s.c, .sh = in->s.h, .sw = in->s.w, .tiles_h = (uint32_t)t->tiles_h,
        .tiles_w = (uint32_t)t->tiles_w, .pad_h = (uint32_t)pad_h, .pad_w = (uint32_t)pad_w,
        .first_tile = (uint32_t)first, .count = (uint32_t)count, .rows = (uint32_t)rows, .mode = (uint32_t)mode};
    if (vk->labels)
        snprintf(vk->profile_label, sizeof vk->profile_label, "conv winograd %s c%lld tiles %lld",
                 mode == 0 ? "input" : "output gradient", (long long)in->channels, (long long)count);
    const nn_buffer_ref args[2] = {in->ref, to};
    return vk_record_ex(vk, kernel, VK_PIPE_WINOGRAD_TILES, t->variant, args, 2, NN_ARG(1), VK_PUSH_REF(push),
                        vk_groups_for((uint64_t)(rows * in->channels)), 1, 1);
}

static nn_status output_transform(vk_backend *vk, nn_kernel kernel, nn_buffer_ref from, const side *out,
                                  nn_buffer_ref bias, const tiling *t, int64_t first, int64_t count, float beta,
                                  int32_t epilogue) {
    VK_PUSH(WINOGRAD_OUTPUT) push = {
        .filters = (uint32_t)out->channels, .height = (uint32_t)out->height, .width = (uint32_t)out->width,
        .sn = out->s.n, .sc = out->s.c, .sh = out->s.h, .sw = out->s.w, .tiles_h = (uint32_t)t->tiles_h,
        .tiles_w = (uint32_t)t->tiles_w, .first_tile = (uint32_t)first, .count = (uint32_t)count,
        .rows = (uint32_t)count, .beta = beta, .epilogue = (uint32_t)epilogue};
    if (vk->labels)
        snprintf(vk->profile_label, sizeof vk->profile_label, "conv winograd output f%lld tiles %lld",
                 (long long)out->channels, (long long)count);
    const nn_buffer_ref args[3] = {from, out->ref, bias};
    return vk_record_ex(vk, kernel, VK_PIPE_WINOGRAD_OUTPUT, t->variant, args, 3, NN_ARG(1), VK_PUSH_REF(push),
                        vk_groups_for((uint64_t)(count * out->channels)), 1, 1);
}

static nn_buffer_ref whole(nn_buffer *b, int64_t floats) { return (nn_buffer_ref){b, 0, (size_t)floats * sizeof(float)}; }

/* out = the r x r convolution of `in` at stride 1 with padding (pad_h,
 * pad_w) by the filters w in `mode` (0: w [out][in][r][r]; 1: w
 * [in][out][r][r] turned, the data gradient), then beta * out and the
 * epilogue. */
static nn_status convolve(vk_backend *vk, nn_kernel kernel, const side *in, const side *out, nn_buffer_ref w,
                          nn_buffer_ref bias, int mode, int64_t taps, int64_t batch, int64_t pad_h, int64_t pad_w,
                          float beta, int32_t epilogue) {
    const tiling t = tiling_of(taps, batch, out->height, out->width);
    const int64_t widest = in->channels > out->channels ? in->channels : out->channels;
    const int64_t points = t.points, chunk = chunk_tiles(t.tiles, points, widest, 0);
    const int64_t pairs = in->channels * out->channels;
    NN_TRY(vk_fits32(kernel, "Winograd filter entries", points * pairs));
    NN_TRY(vk_fits32(kernel, "Winograd tile entries", points * chunk * widest));
    NN_TRY(vk_fits32(kernel, "Winograd tiles", t.tiles));
    nn_buffer *u = vk_scratch_alloc(vk, (size_t)(points * pairs) * sizeof(float));
    nn_buffer *v = u ? vk_scratch_alloc(vk, (size_t)(points * chunk * in->channels) * sizeof(float)) : NULL;
    nn_buffer *m = v ? vk_scratch_alloc(vk, (size_t)(points * chunk * out->channels) * sizeof(float)) : NULL;
    nn_status st = m ? NN_OK : nn_last_status();
    /* The filter's channels and filters as it is stored: the data gradient's are swapped. */
    const int64_t w_channels = mode == 1 ? out->channels : in->channels;
    const int64_t w_filters = mode == 1 ? in->channels : out->channels;
    if (st == NN_OK)
        st = filter_transform(vk, kernel, w, whole(u, points * pairs), mode, &t, w_channels, w_filters, 1, 0.0f);
    for (int64_t first = 0; first < t.tiles && st == NN_OK; first += chunk) {
        const int64_t count = t.tiles - first < chunk ? t.tiles - first : chunk;
        st = tiles_transform(vk, kernel, in, &t, pad_h, pad_w, 0, first, count, count,
                             whole(v, points * count * in->channels));
        /* m[xi] [count x out] = v[xi] [count x in] u[xi] [in x out], for each of the points */
        const nn_gemm_params p = {.m = (int32_t)count, .n = (int32_t)out->channels, .k = (int32_t)in->channels,
                                  .lda = (int32_t)in->channels, .ldb = (int32_t)out->channels,
                                  .ldc = (int32_t)out->channels, .batch = (int32_t)points,
                                  .stride_a = count * in->channels, .stride_b = pairs,
                                  .stride_c = count * out->channels, .alpha = 1.0f, .beta = 0.0f};
        const nn_buffer_ref product[3] = {whole(v, points * count * in->channels), whole(u, points * pairs),
                                          whole(m, points * count * out->channels)};
        if (st == NN_OK) st = vk_gemm_record(vk, product, &p, 0);
        if (st == NN_OK)
            st = output_transform(vk, kernel, product[2], out, bias, &t, first, count, beta, epilogue);
    }
    if (m) vk_scratch_done(vk, m);
    if (v) vk_scratch_done(vk, v);
    if (u) vk_scratch_done(vk, u);
    return st;
}

/* dw (+)= the weight gradient of the r x r convolution of x giving dy. */
static nn_status weight_gradient(vk_backend *vk, nn_kernel kernel, const side *x, const side *dy, nn_buffer_ref dw,
                                 int64_t taps, int64_t batch, int64_t pad_h, int64_t pad_w, float beta) {
    const tiling t = tiling_of(taps, batch, dy->height, dy->width);
    const int64_t c = x->channels, f = dy->channels, widest = c > f ? c : f;
    /* Splits of the sum over tiles, the same in every chunk (the partials add up over the chunks). */
    const int64_t points = t.points;
    int64_t splits = ceil_div(WEIGHT_TARGET_GROUPS, points * ceil_div(c, 64) * ceil_div(f, 64));
    if (splits > t.tiles / MIN_SPLIT_ROWS) splits = t.tiles / MIN_SPLIT_ROWS;
    if (splits < 1) splits = 1;
    int64_t chunk = chunk_tiles(t.tiles, points, widest, splits); /* room for each split's padding row */
    if (chunk < splits) chunk = splits < t.tiles ? splits : t.tiles;
    const int64_t rows_max = splits * ceil_div(chunk, splits);
    NN_TRY(vk_fits32(kernel, "Winograd partial entries", points * splits * c * f));
    NN_TRY(vk_fits32(kernel, "Winograd tile entries", points * rows_max * widest));
    NN_TRY(vk_fits32(kernel, "Winograd tiles", t.tiles));
    nn_buffer *v = vk_scratch_alloc(vk, (size_t)(points * rows_max * c) * sizeof(float));
    nn_buffer *g = v ? vk_scratch_alloc(vk, (size_t)(points * rows_max * f) * sizeof(float)) : NULL;
    nn_buffer *partials = g ? vk_scratch_alloc(vk, (size_t)(points * splits * c * f) * sizeof(float)) : NULL;
    nn_status st = partials ? NN_OK : nn_last_status();
    for (int64_t first = 0; first < t.tiles && st == NN_OK; first += chunk) {
        const int64_t count = t.tiles - first < chunk ? t.tiles - first : chunk;
        const int64_t per_split = ceil_div(count, splits), rows = splits * per_split;
        st = tiles_transform(vk, kernel, x, &t, pad_h, pad_w, 0, first, count, rows, whole(v, points * rows * c));
        if (st == NN_OK)
            st = tiles_transform(vk, kernel, dy, &t, 0, 0, 1, first, count, rows, whole(g, points * rows * f));
        /* partials[xi][split] [c x f] (+)= v[xi][split]^T [c x rows] g[xi][split] [rows x f] */
        const nn_gemm_params p = {.m = (int32_t)c, .n = (int32_t)f, .k = (int32_t)per_split, .trans_a = 1,
                                  .lda = (int32_t)c, .ldb = (int32_t)f, .ldc = (int32_t)f,
                                  .batch = (int32_t)(points * splits), .stride_a = per_split * c,
                                  .stride_b = per_split * f, .stride_c = c * f, .alpha = 1.0f,
                                  .beta = first > 0 ? 1.0f : 0.0f};
        const nn_buffer_ref product[3] = {whole(v, points * rows * c), whole(g, points * rows * f),
                                          whole(partials, points * splits * c * f)};
        if (st == NN_OK) st = vk_gemm_record(vk, product, &p, 0);
    }
    if (st == NN_OK)
        st = filter_transform(vk, kernel, whole(partials, points * splits * c * f), dw, 2, &t, c, f, splits, beta);
    if (partials) vk_scratch_done(vk, partials);
    if (g) vk_scratch_done(vk, g);
    if (v) vk_scratch_done(vk, v);
    return st;
}

nn_status vk_conv_winograd_record(vk_backend *vk, nn_kernel kernel, const nn_buffer_ref *a,
                                  const nn_conv_params *cp) {
    const nn_conv_geometry *g = &cp->g;
    if (!vk_conv_winograd_fits(cp))
        return nn_set_error(NN_ERR_ARGUMENT, "vulkan %s: Winograd takes ungrouped, undilated 3x3 and 5x5 "
                            "convolutions at stride 1 with padding below the window, not this layer",
                            nn_kernel_name(kernel));
    const float beta = g->accumulate ? 1.0f : 0.0f;
    const int64_t taps = g->kernel_h;
    const nn_buffer_ref none = {NULL, 0, 0};
    const side image = {.channels = g->channels, .height = g->height, .width = g->width,
                        .s = vk_activation_strides_of(cp->image_layout, g->channels, g->height, g->width)};
    const side output = {.channels = cp->filters, .height = g->out_h, .width = g->out_w,
                         .s = vk_activation_strides_of(cp->output_layout, cp->filters, g->out_h, g->out_w)};
    side in, out;
    if (kernel == NN_KERNEL_CONV2D_FORWARD) {
        in = image, out = output;
        in.ref = a[0], out.ref = a[2];
        return convolve(vk, kernel, &in, &out, a[1], cp->epilogue & NN_EPI_BIAS_ROWS ? a[3] : none, 0, taps,
                        g->batch, g->pad_h, g->pad_w, 0.0f, cp->epilogue);
    }
    if (kernel == NN_KERNEL_CONV2D_BACKWARD_DATA) {
        in = output, out = image;
        in.ref = a[0], out.ref = a[2];
        return convolve(vk, kernel, &in, &out, a[1], none, 1, taps, g->batch, taps - 1 - g->pad_h,
                        taps - 1 - g->pad_w, beta, 0);
    }
    in = image, out = output;
    in.ref = a[1], out.ref = a[0];
    return weight_gradient(vk, kernel, &in, &out, a[2], taps, g->batch, g->pad_h, g->pad_w, beta);
}
