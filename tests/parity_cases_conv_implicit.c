/* The kernel parity test's cases for the convolution kernels' routes on
 * Vulkan (vk_conv.c's vk_conv_route): the implicit GEMM (conv_gemm.comp)
 * forced with NN_ENGINE_VULKAN_CONV=implicit over awkward shapes (batch 1
 * and 3, odd channels and channels in fours, 1x1, 3x3 and 7x7 kernels,
 * stride 2 and 3 (phases of the data gradient that no tap reaches),
 * padding, dilation 2 with and without stride, groups 2, sizes off every
 * tile, a split weight gradient), dense and channels-last activations and
 * one of each, accumulate on and off, bias and ReLU epilogues; each tile
 * forced with NN_ENGINE_VULKAN_CONV_TILES; Winograd's F(4x4, 3x3) forced
 * with NN_ENGINE_VULKAN_CONV=winograd; layers large enough that the
 * default route takes the implicit GEMM and Winograd; and the column route forced with
 * NN_ENGINE_VULKAN_CONV=columns, columns kept and not, channels-last
 * tensors through dense copies. Each shape also runs recorded in fp16
 * (on matrix cores the implicit GEMM on them, conv_gemm_coopmat.comp;
 * elsewhere the latency or column route, rounding as they stage), against
 * the CPU's products of the same rounded operands. The CPU ignores the
 * variables, so it stays the reference. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "parity_cases.h"
#include "parity_harness.h"

static const parity_conv_shape kImplicit[] = {
    /* batch, C, H, W, kh, kw, sh, sw, ph, pw, dh, dw, filters, groups */
    {1, 3, 9, 11, 3, 3, 1, 1, 1, 1, 1, 1, 5, 1},     /* batch 1, 3x3 with padding */
    {3, 5, 13, 10, 1, 1, 2, 2, 0, 0, 1, 1, 7, 1},    /* 1x1 stride 2 (a ResNet shortcut), batch 3 */
    {2, 3, 17, 15, 7, 7, 2, 2, 3, 3, 1, 1, 9, 1},    /* 7x7 stride 2 padding 3 (a ResNet stem) */
    {3, 6, 12, 13, 3, 3, 1, 1, 2, 2, 2, 2, 8, 2},    /* dilation 2, groups 2 */
    {2, 6, 11, 9, 3, 3, 2, 2, 1, 1, 1, 1, 10, 2},    /* groups 2, stride 2 */
    {2, 5, 9, 8, 2, 3, 3, 1, 0, 1, 1, 1, 4, 1},      /* a stride past the window, rectangular kernel */
    {2, 33, 20, 19, 3, 3, 1, 1, 1, 1, 1, 1, 130, 1}, /* several row tiles and k slices; a split dW */
    {1, 3, 93, 95, 3, 3, 1, 1, 1, 1, 1, 1, 130, 1},  /* enough tiles for the forward's large tile */
    {1, 130, 130, 131, 1, 1, 1, 1, 0, 0, 1, 1, 3, 1}, /* enough tiles for the data gradient's large tile */
    {2, 16, 15, 14, 3, 3, 2, 2, 1, 1, 1, 1, 24, 1},  /* channels and filters in fours, stride 2 */
    {3, 8, 13, 11, 3, 3, 2, 2, 2, 2, 2, 2, 12, 2},   /* groups of 4 channels and 6 filters, stride and dilation 2 */
    {2, 64, 9, 10, 3, 3, 1, 1, 1, 1, 1, 1, 64, 1},   /* 64 to 64 channels (a ResNet's first stage) */
};
#define IMPLICIT_SHAPES (sizeof kImplicit / sizeof kImplicit[0])

/* More multiply-adds than the latency kernels take: the default route's
 * implicit GEMM (a 7x7 window) and Winograd (3x3 at stride 1). */
static const parity_conv_shape kAutoImplicit = {2, 32, 20, 19, 7, 7, 1, 1, 3, 3, 1, 1, 64, 1};
static const parity_conv_shape kAutoWinograd = {2, 32, 34, 33, 3, 3, 1, 1, 1, 1, 1, 1, 130, 1};

/* Winograd's F(4x4, 3x3) and F(4x4, 5x5) (vk_conv_winograd.c) forced with
 * NN_ENGINE_VULKAN_CONV=winograd: outputs off the tiles, each padding they
 * take, few channels; the last of each has enough tiles for the weight
 * gradient's splits. Each also runs in chunks of 7 tiles
 * (NN_ENGINE_VULKAN_WINOGRAD_CHUNK): chunks that end inside an image, and
 * splits padded with zero rows. */
static const parity_conv_shape kWinograd[] = {
    {1, 3, 9, 11, 3, 3, 1, 1, 1, 1, 1, 1, 5, 1},    /* 3 channels, 9x11 outputs */
    {3, 17, 7, 6, 3, 3, 1, 1, 0, 0, 1, 1, 19, 1},   /* no padding: 5x4 outputs */
    {2, 16, 12, 13, 3, 3, 1, 1, 2, 2, 1, 1, 20, 1}, /* padding 2: 14x15 outputs */
    {2, 8, 10, 9, 3, 3, 1, 1, 1, 0, 1, 1, 12, 1},   /* padding 1 by 0 */
    {2, 20, 64, 62, 3, 3, 1, 1, 1, 1, 1, 1, 24, 1}, /* 512 tiles: the weight gradient in 4 splits */
    {2, 6, 11, 10, 5, 5, 1, 1, 2, 2, 1, 1, 7, 1},   /* 5x5, padding 2: 11x10 outputs */
    {1, 4, 9, 12, 5, 5, 1, 1, 0, 0, 1, 1, 5, 1},    /* 5x5 without padding: 5x8 outputs */
    {2, 5, 8, 9, 5, 5, 1, 1, 4, 3, 1, 1, 6, 1},     /* 5x5, padding 4 by 3 */
    {2, 8, 48, 46, 5, 5, 1, 1, 2, 2, 1, 1, 10, 1},  /* 5x5, 1,104 tiles: the weight gradient in splits */
};
#define WINOGRAD_SHAPES (sizeof kWinograd / sizeof kWinograd[0])

/* The column route, kept columns and scratch, ungrouped and grouped with dilation. */
static const parity_conv_shape kColumns[] = {
    {2, 16, 21, 19, 5, 5, 1, 1, 2, 2, 1, 1, 24, 1},
    {2, 16, 31, 29, 3, 3, 2, 1, 2, 2, 2, 2, 32, 4},
};
#define COLUMN_SHAPES (sizeof kColumns / sizeof kColumns[0])

/* The layouts of the image side and the output side (kernels.h's nn_layout). */
typedef struct layouts {
    int image, output;
} layouts;
static const layouts kDense = {NN_LAYOUT_DENSE, NN_LAYOUT_DENSE};
static const layouts kLast = {NN_LAYOUT_CHANNELS_LAST, NN_LAYOUT_CHANNELS_LAST};
static const layouts kMixed[2] = {{NN_LAYOUT_DENSE, NN_LAYOUT_CHANNELS_LAST}, {NN_LAYOUT_CHANNELS_LAST, NN_LAYOUT_DENSE}};

/* A case's route: NN_ENGINE_VULKAN_CONV's value (NULL: unset, the
 * default choice) and the precision the operation was recorded in. */
typedef struct route {
    const char *name;
    int precision;
} route;
static const route kImplicitRoute = {"implicit", NN_PRECISION_FP32}, kAutoRoute = {NULL, NN_PRECISION_FP32},
                   kColumnRoute = {"columns", NN_PRECISION_FP32};
static const route kAutoFp16 = {NULL, NN_PRECISION_FP16}, kColumnFp16 = {"columns", NN_PRECISION_FP16};
static const route kWinogradRoute = {"winograd", NN_PRECISION_FP32};

#define ROUTE_FMT "%s route, %s, layouts %d/%d: " PARITY_CONV_FMT
#define ROUTE_ARGS(r, l, c) (r).name ? (r).name : "default", nn_precision_name((nn_precision)(r).precision), \
    (l).image, (l).output, PARITY_CONV_ARGS(c)

/* NN_ENGINE_VULKAN_CONV set to `route` for one case (NULL: unset), then restored. */
static char *variable_begin(const char *name, const char *value) {
    const char *before = getenv(name);
    char *saved = before ? strdup(before) : NULL;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
    return saved;
}

static void variable_end(const char *name, char *saved) {
    if (saved) setenv(name, saved, 1);
    else unsetenv(name);
    free(saved);
}

static char *route_begin(const char *name) { return variable_begin("NN_ENGINE_VULKAN_CONV", name); }
static void route_end(char *saved) { variable_end("NN_ENGINE_VULKAN_CONV", saved); }

/* The column matrix the op would keep for this layer, from the CPU's im2col. */
static float *kept_columns(const nn_conv_params *p, const float *x) {
    const parity_conv_sizes s = parity_conv_sizes_of(p);
    float *cols = parity_array(s.cols * sizeof(float));
    parity_arg a[2] = {arg_in(x, s.x, 0), with_cpu_after(arg_exact(parity_randoms(s.cols, -1, 1), s.cols, 0), cols)};
    parity_cpu_outputs(NN_KERNEL_IM2COL, a, 2, &p->g, "the kept columns");
    return cols;
}

static void forward_run(nn_backend *o, route r, layouts l, const parity_conv_shape *c, int epilogue) {
    char *saved = route_begin(r.name);
    nn_conv_params p = parity_conv_params_of(c);
    p.precision = r.precision;
    p.epilogue = epilogue;
    p.image_layout = l.image, p.output_layout = l.output;
    const parity_conv_sizes s = parity_conv_sizes_of(&p);
    const bool columns = parity_keeps_columns(o, &p);
    const size_t f = (size_t)p.filters;
    parity_arg a[5] = {arg_in(parity_randoms(s.x, -1, 1), s.x, 4), arg_in(parity_randoms(s.w, -1, 1), s.w, 8),
                       arg_near(parity_randoms(s.y, -1, 1), s.y, 0, sums_tol(s.k + 1.0)),
                       given(epilogue & NN_EPI_BIAS_ROWS, arg_in(parity_randoms(f, -1, 1), f, 12)),
                       given(columns, arg_exact(parity_randoms(s.cols, -1, 1), s.cols, 4))};
    parity_check(o, NN_KERNEL_CONV2D_FORWARD, a, 5, &p, ROUTE_FMT " epilogue %#x%s", ROUTE_ARGS(r, l, c), epilogue,
                 columns ? ", columns kept" : "");
    route_end(saved);
}

static void data_run(nn_backend *o, route r, layouts l, const parity_conv_shape *c, int acc) {
    char *saved = route_begin(r.name);
    nn_conv_params p = parity_conv_params_of(c);
    p.precision = r.precision;
    p.g.accumulate = acc;
    p.image_layout = l.image, p.output_layout = l.output;
    const parity_conv_sizes s = parity_conv_sizes_of(&p);
    const double terms = (double)p.filters * p.g.kernel_h * p.g.kernel_w + acc;
    parity_arg a[3] = {arg_in(parity_randoms(s.y, -1, 1), s.y, 0), arg_in(parity_randoms(s.w, -1, 1), s.w, 4),
                       arg_near(parity_randoms(s.x, -1, 1), s.x, 8, sums_tol(terms))};
    parity_check(o, NN_KERNEL_CONV2D_BACKWARD_DATA, a, 3, &p, ROUTE_FMT " accumulate %d", ROUTE_ARGS(r, l, c), acc);
    route_end(saved);
}

static void weight_run(nn_backend *o, route r, layouts l, const parity_conv_shape *c, int acc, bool keep) {
    char *saved = route_begin(r.name);
    nn_conv_params p = parity_conv_params_of(c);
    p.precision = r.precision;
    p.g.accumulate = acc;
    p.image_layout = l.image, p.output_layout = l.output;
    const parity_conv_sizes s = parity_conv_sizes_of(&p);
    const float *x = parity_randoms(s.x, -1, 1);
    const bool columns = keep && parity_keeps_columns(o, &p);
    const double terms = (double)p.g.batch * s.positions + acc;
    parity_arg a[4] = {arg_in(parity_randoms(s.y, -1, 1), s.y, 4), arg_in(x, s.x, 0),
                       arg_near(parity_randoms(s.w, -1, 1), s.w, 12, sums_tol(terms)),
                       given(columns, arg_in(columns ? kept_columns(&p, x) : NULL, s.cols, 8))};
    parity_check(o, NN_KERNEL_CONV2D_BACKWARD_WEIGHT, a, 4, &p, ROUTE_FMT " accumulate %d%s", ROUTE_ARGS(r, l, c),
                 acc, columns ? ", columns kept" : "");
    route_end(saved);
}

/* A shape with its tile forced to each of the implicit GEMM's, fp32 and
 * (on matrix cores; elsewhere the variable is ignored) fp16; in fp16 also
 * a wider one whose tiles are whole 128 x 128 squares of the forward (132
 * filters) and the data gradient (128 channels), with the bias and ReLU
 * and with accumulation. */
static const parity_conv_shape kTiled = {2, 20, 17, 15, 3, 3, 1, 1, 1, 1, 1, 1, 36, 1};
static const parity_conv_shape kTiledWide = {2, 128, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 132, 1};
static const struct {
    const char *tile;
    const route *r;
} kTiles[] = {{"128x64", &kImplicitRoute}, {"64x128", &kImplicitRoute}, {"64x64", &kImplicitRoute},
              {"32x32", &kImplicitRoute},  {"128x128", &kAutoFp16},     {"128x64", &kAutoFp16},
              {"64x128", &kAutoFp16},      {"64x64", &kAutoFp16}};

static void tiles_run(nn_backend *o, nn_kernel kernel) {
    for (size_t t = 0; t < sizeof kTiles / sizeof kTiles[0]; t++) {
        char *saved = variable_begin("NN_ENGINE_VULKAN_CONV_TILES", kTiles[t].tile);
        const route r = *kTiles[t].r;
        if (kernel == NN_KERNEL_CONV2D_FORWARD) forward_run(o, r, kLast, &kTiled, NN_EPI_BIAS_ROWS);
        else if (kernel == NN_KERNEL_CONV2D_BACKWARD_DATA) data_run(o, r, kLast, &kTiled, 1);
        else weight_run(o, r, kLast, &kTiled, 1, false);
        if (r.precision == NN_PRECISION_FP16 && kernel == NN_KERNEL_CONV2D_FORWARD) {
            forward_run(o, r, kLast, &kTiledWide, NN_EPI_BIAS_ROWS | NN_EPI_RELU);
            forward_run(o, r, kLast, &kTiledWide, 0);
        } else if (r.precision == NN_PRECISION_FP16 && kernel == NN_KERNEL_CONV2D_BACKWARD_DATA) {
            data_run(o, r, kLast, &kTiledWide, 0);
            data_run(o, r, kLast, &kTiledWide, 1);
        }
        variable_end("NN_ENGINE_VULKAN_CONV_TILES", saved);
    }
}

/* Winograd's shapes dense, channels-last and mixed, with every epilogue or
 * accumulate setting, whole and in chunks of 7 tiles. */
static void winograd_runs(nn_backend *o, nn_kernel kernel) {
    static const int kEpilogues[] = {0, NN_EPI_BIAS_ROWS, NN_EPI_RELU, NN_EPI_BIAS_ROWS | NN_EPI_RELU};
    for (size_t i = 0; i < WINOGRAD_SHAPES; i++)
        for (int chunked = 0; chunked < 2; chunked++) {
            char *saved = variable_begin("NN_ENGINE_VULKAN_WINOGRAD_CHUNK", chunked ? "7" : NULL);
            for (size_t v = 0; v < 4; v++) {
                const layouts l = v == 0 ? kDense : v == 1 ? kLast : kMixed[v - 2];
                if (kernel == NN_KERNEL_CONV2D_FORWARD)
                    forward_run(o, kWinogradRoute, l, &kWinograd[i], kEpilogues[(i + v) % 4]);
                else if (kernel == NN_KERNEL_CONV2D_BACKWARD_DATA)
                    data_run(o, kWinogradRoute, l, &kWinograd[i], (int)((i + v) % 2));
                else
                    weight_run(o, kWinogradRoute, l, &kWinograd[i], (int)((i + v) % 2), false);
            }
            variable_end("NN_ENGINE_VULKAN_WINOGRAD_CHUNK", saved);
        }
}

/* Every implicit shape dense and channels-last with every epilogue or
 * accumulate setting; mixed layouts once each; the column route (dense
 * tensors: channels-last ones through copies) kept and not. */
void parity_conv_routes_forward_case(nn_backend *o) {
    static const int kEpilogues[] = {0, NN_EPI_BIAS_ROWS, NN_EPI_RELU, NN_EPI_BIAS_ROWS | NN_EPI_RELU};
    for (size_t i = 0; i < IMPLICIT_SHAPES; i++) {
        for (int e = 0; e < 4; e++) {
            forward_run(o, kImplicitRoute, kDense, &kImplicit[i], kEpilogues[e]);
            forward_run(o, kImplicitRoute, kLast, &kImplicit[i], kEpilogues[e]);
        }
        forward_run(o, kImplicitRoute, kMixed[i % 2], &kImplicit[i], NN_EPI_BIAS_ROWS);
        forward_run(o, kAutoFp16, kDense, &kImplicit[i], kEpilogues[i % 4]);
        forward_run(o, kAutoFp16, kLast, &kImplicit[i], kEpilogues[(i + 1) % 4]);
    }
    tiles_run(o, NN_KERNEL_CONV2D_FORWARD);
    forward_run(o, kAutoRoute, kLast, &kAutoImplicit, NN_EPI_BIAS_ROWS | NN_EPI_RELU);
    winograd_runs(o, NN_KERNEL_CONV2D_FORWARD);
    forward_run(o, kAutoRoute, kLast, &kAutoWinograd, NN_EPI_BIAS_ROWS | NN_EPI_RELU);
    for (size_t i = 0; i < COLUMN_SHAPES; i++) {
        forward_run(o, kColumnRoute, kDense, &kColumns[i], NN_EPI_BIAS_ROWS);
        forward_run(o, kColumnRoute, kLast, &kColumns[i], NN_EPI_BIAS_ROWS);
        forward_run(o, kColumnFp16, kLast, &kColumns[i], NN_EPI_BIAS_ROWS);
    }
}

void parity_conv_routes_data_case(nn_backend *o) {
    for (size_t i = 0; i < IMPLICIT_SHAPES; i++) {
        for (int acc = 0; acc < 2; acc++) {
            data_run(o, kImplicitRoute, kDense, &kImplicit[i], acc);
            data_run(o, kImplicitRoute, kLast, &kImplicit[i], acc);
        }
        data_run(o, kImplicitRoute, kMixed[i % 2], &kImplicit[i], 1);
        data_run(o, kAutoFp16, kDense, &kImplicit[i], (int)(i % 2));
        data_run(o, kAutoFp16, kLast, &kImplicit[i], (int)((i + 1) % 2));
    }
    /* 64 channels-last channels added onto dx: on matrix cores the squares
     * start from the output there (conv_gemm_coopmat.comp's preloaded) */
    data_run(o, kAutoFp16, kLast, &kImplicit[IMPLICIT_SHAPES - 1], 1);
    tiles_run(o, NN_KERNEL_CONV2D_BACKWARD_DATA);
    data_run(o, kAutoRoute, kLast, &kAutoImplicit, 1);
    winograd_runs(o, NN_KERNEL_CONV2D_BACKWARD_DATA);
    data_run(o, kAutoRoute, kLast, &kAutoWinograd, 1);
    for (size_t i = 0; i < COLUMN_SHAPES; i++) {
        data_run(o, kColumnRoute, kDense, &kColumns[i], 1);
        data_run(o, kColumnRoute, kLast, &kColumns[i], 1);
        data_run(o, kColumnFp16, kLast, &kColumns[i], 1);
    }
}

void parity_conv_routes_weight_case(nn_backend *o) {
    for (size_t i = 0; i < IMPLICIT_SHAPES; i++) {
        for (int acc = 0; acc < 2; acc++) {
            weight_run(o, kImplicitRoute, kDense, &kImplicit[i], acc, false);
            weight_run(o, kImplicitRoute, kLast, &kImplicit[i], acc, false);
        }
        weight_run(o, kImplicitRoute, kMixed[i % 2], &kImplicit[i], 1, false);
        weight_run(o, kAutoFp16, kDense, &kImplicit[i], (int)(i % 2), false);
        weight_run(o, kAutoFp16, kLast, &kImplicit[i], (int)((i + 1) % 2), false);
    }
    tiles_run(o, NN_KERNEL_CONV2D_BACKWARD_WEIGHT);
    weight_run(o, kAutoRoute, kLast, &kAutoImplicit, 0, false);
    winograd_runs(o, NN_KERNEL_CONV2D_BACKWARD_WEIGHT);
    weight_run(o, kAutoRoute, kLast, &kAutoWinograd, 0, false);
    for (size_t i = 0; i < COLUMN_SHAPES; i++) {
        weight_run(o, kColumnRoute, kDense, &kColumns[i], 1, true);
        weight_run(o, kColumnRoute, kDense, &kColumns[i], 0, false);
        weight_run(o, kColumnRoute, kLast, &kColumns[i], 1, true);
        weight_run(o, kColumnFp16, kDense, &kColumns[i], 1, true);
    }
}
