/* The kernel parity test's cases for convolution with groups and dilation
 * (the CONV2D_* kernels' column route, and im2col / col2im dilated), the
 * depthwise kernels (DEPTHWISE_CONV2D_*, with channel multipliers, dense
 * and channels-last tensors, channels in fours (taken four at a time on
 * Vulkan), a weight gradient in chunks) and
 * resampling (INTERPOLATE_*: nearest and bilinear, align_corners off and
 * on, up and down, by size and by scale factor): awkward sizes, batch 1
 * and more, accumulate on and off. */
#include <stdbool.h>
#include <stdint.h>

#include "interpolate_map.h"
#include "parity_cases.h"
#include "parity_harness.h"

static const parity_conv_shape kGrouped[] = {
    /* batch, C, H, W, kh, kw, sh, sw, ph, pw, dh, dw, filters, groups */
    {2, 4, 7, 6, 3, 2, 2, 1, 1, 0, 1, 1, 6, 2},   /* groups 2, rectangular kernel, stride (2, 1), pad (1, 0) */
    {1, 6, 9, 11, 3, 3, 1, 1, 1, 1, 1, 1, 9, 3},  /* groups 3, batch 1 */
    {3, 2, 11, 9, 3, 2, 1, 2, 2, 1, 2, 3, 5, 1},  /* dilation (2, 3), ungrouped */
    {2, 6, 13, 7, 2, 3, 2, 1, 1, 2, 2, 1, 6, 3},  /* groups and dilation */
    {1, 3, 8, 5, 3, 3, 1, 1, 1, 1, 1, 1, 6, 3},   /* depthwise shape, multiplier 2 (the column route too) */
    {2, 16, 31, 29, 3, 3, 1, 1, 2, 2, 2, 2, 32, 4}, /* large enough for the column route everywhere */
};
#define GROUPED (sizeof kGrouped / sizeof kGrouped[0])

static const parity_conv_shape kDepthwise[] = {
    {2, 3, 7, 6, 3, 2, 2, 1, 1, 0, 1, 1, 6, 3},    /* multiplier 2, rectangular, stride (2, 1), pad (1, 0) */
    {1, 5, 11, 13, 3, 3, 1, 1, 1, 1, 1, 1, 5, 5},  /* MobileNet's 3 x 3, batch 1 */
    {3, 4, 9, 10, 3, 3, 2, 2, 2, 2, 2, 2, 8, 4},   /* dilation 2, stride 2 */
    {2, 2, 5, 17, 1, 5, 1, 3, 0, 2, 1, 2, 6, 2},   /* multiplier 3, a 1 x 5 kernel */
    {4, 7, 23, 19, 5, 5, 1, 1, 2, 2, 1, 1, 7, 7},  /* many pairs per weight tap */
    {2, 64, 32, 32, 3, 3, 1, 1, 1, 1, 1, 1, 64, 64}, /* a weight gradient in chunks, channels-last */
    {2, 4, 130, 130, 3, 3, 1, 1, 1, 1, 1, 1, 4, 4},  /* a weight gradient in chunks, dense */
    {3, 8, 11, 9, 3, 3, 2, 2, 1, 1, 1, 1, 8, 8},     /* MobileNet's stride 2, channels in fours */
    {2, 12, 10, 13, 5, 3, 1, 2, 2, 1, 2, 1, 12, 12}, /* channels in fours, dilation, stride (1, 2), 5 x 3 */
};
#define DEPTHWISE (sizeof kDepthwise / sizeof kDepthwise[0])

void parity_im2col_dilated_case(nn_backend *o) {
    for (size_t i = 0; i < GROUPED; i++) {
        nn_conv_params p = parity_conv_params_of(&kGrouped[i]);
        const parity_conv_sizes s = parity_conv_sizes_of(&p);
        parity_arg a[2] = {arg_in(parity_randoms(s.x, -1, 1), s.x, 4),
                           arg_exact(parity_randoms(s.cols, -1, 1), s.cols, 8)};
        parity_check(o, NN_KERNEL_IM2COL, a, 2, &p.g, PARITY_CONV_FMT, PARITY_CONV_ARGS(&kGrouped[i]));
    }
}

void parity_col2im_dilated_case(nn_backend *o) {
    for (size_t i = 0; i < GROUPED; i++)
        for (int acc = 0; acc < 2; acc++) {
            nn_conv_params p = parity_conv_params_of(&kGrouped[i]);
            p.g.accumulate = acc;
            const parity_conv_sizes s = parity_conv_sizes_of(&p);
            parity_arg a[2] = {arg_in(parity_randoms(s.cols, -1, 1), s.cols, 12),
                               arg_near(parity_randoms(s.x, -1, 1), s.x, 4, sums_tol(s.k + 1.0))};
            parity_check(o, NN_KERNEL_COL2IM, a, 2, &p.g, PARITY_CONV_FMT " accumulate %d",
                         PARITY_CONV_ARGS(&kGrouped[i]), acc);
        }
}

/* The column matrix the op would keep for this layer, from the CPU's im2col. */
static float *kept_columns(const nn_conv_params *p, const float *x) {
    const parity_conv_sizes s = parity_conv_sizes_of(p);
    float *cols = parity_array(s.cols * sizeof(float));
    parity_arg a[2] = {arg_in(x, s.x, 0), with_cpu_after(arg_exact(parity_randoms(s.cols, -1, 1), s.cols, 0), cols)};
    parity_cpu_outputs(NN_KERNEL_IM2COL, a, 2, &p->g, "the kept columns");
    return cols;
}

void parity_conv_grouped_forward_case(nn_backend *o) {
    for (size_t i = 0; i < GROUPED; i++)
        for (int epi = 0; epi < 2; epi++) {
            nn_conv_params p = parity_conv_params_of(&kGrouped[i]);
            p.epilogue = epi ? NN_EPI_BIAS_ROWS | NN_EPI_RELU : 0;
            const parity_conv_sizes s = parity_conv_sizes_of(&p);
            const bool columns = parity_keeps_columns(o, &p);
            const size_t f = (size_t)p.filters;
            parity_arg a[5] = {arg_in(parity_randoms(s.x, -1, 1), s.x, 4), arg_in(parity_randoms(s.w, -1, 1), s.w, 8),
                               arg_near(parity_randoms(s.y, -1, 1), s.y, 0, sums_tol(s.k + 1.0)),
                               given(epi, arg_in(parity_randoms(f, -1, 1), f, 12)),
                               given(columns, arg_exact(parity_randoms(s.cols, -1, 1), s.cols, 4))};
            parity_check(o, NN_KERNEL_CONV2D_FORWARD, a, 5, &p, PARITY_CONV_FMT " epilogue %#x%s",
                         PARITY_CONV_ARGS(&kGrouped[i]), p.epilogue, columns ? ", columns kept" : "");
        }
}

void parity_conv_grouped_data_case(nn_backend *o) {
    for (size_t i = 0; i < GROUPED; i++)
        for (int acc = 0; acc < 2; acc++) {
            nn_conv_params p = parity_conv_params_of(&kGrouped[i]);
            p.g.accumulate = acc;
            const parity_conv_sizes s = parity_conv_sizes_of(&p);
            const double terms = (double)p.filters * p.g.kernel_h * p.g.kernel_w + acc;
            parity_arg a[3] = {arg_in(parity_randoms(s.y, -1, 1), s.y, 0), arg_in(parity_randoms(s.w, -1, 1), s.w, 4),
                               arg_near(parity_randoms(s.x, -1, 1), s.x, 8, sums_tol(terms))};
            parity_check(o, NN_KERNEL_CONV2D_BACKWARD_DATA, a, 3, &p, PARITY_CONV_FMT " accumulate %d",
                         PARITY_CONV_ARGS(&kGrouped[i]), acc);
        }
}

void parity_conv_grouped_weight_case(nn_backend *o) {
    for (size_t i = 0; i < GROUPED; i++)
        for (int acc = 0; acc < 2; acc++) {
            nn_conv_params p = parity_conv_params_of(&kGrouped[i]);
            p.g.accumulate = acc;
            const parity_conv_sizes s = parity_conv_sizes_of(&p);
            const float *x = parity_randoms(s.x, -1, 1);
            const bool columns = parity_keeps_columns(o, &p);
            const double terms = (double)p.g.batch * s.positions + acc;
            parity_arg a[4] = {arg_in(parity_randoms(s.y, -1, 1), s.y, 4), arg_in(x, s.x, 0),
                               arg_near(parity_randoms(s.w, -1, 1), s.w, 12, sums_tol(terms)),
                               given(columns, arg_in(columns ? kept_columns(&p, x) : NULL, s.cols, 8))};
            parity_check(o, NN_KERNEL_CONV2D_BACKWARD_WEIGHT, a, 4, &p, PARITY_CONV_FMT " accumulate %d%s",
                         PARITY_CONV_ARGS(&kGrouped[i]), acc, columns ? ", columns kept" : "");
        }
}

/* ---- depthwise ---- */

/* Each shape with dense and channels-last tensors, and one of each (image, output). */
static const int kDepthwiseLayouts[][2] = {{NN_LAYOUT_DENSE, NN_LAYOUT_DENSE},
                                           {NN_LAYOUT_CHANNELS_LAST, NN_LAYOUT_CHANNELS_LAST},
                                           {NN_LAYOUT_DENSE, NN_LAYOUT_CHANNELS_LAST},
                                           {NN_LAYOUT_CHANNELS_LAST, NN_LAYOUT_DENSE}};

static nn_conv_params depthwise_params(size_t shape, int variant) {
    nn_conv_params p = parity_conv_params_of(&kDepthwise[shape]);
    const int layouts = variant < 2 ? variant : 2 + (int)(shape % 2); /* dense, channels-last, one mixed pair */
    p.image_layout = kDepthwiseLayouts[layouts][0];
    p.output_layout = kDepthwiseLayouts[layouts][1];
    return p;
}
#define DEPTHWISE_FMT PARITY_CONV_FMT " layouts %d/%d"
#define DEPTHWISE_ARGS(i, p) PARITY_CONV_ARGS(&kDepthwise[i]), (p).image_layout, (p).output_layout

void parity_depthwise_forward_case(nn_backend *o) {
    for (size_t i = 0; i < DEPTHWISE; i++)
        for (int variant = 0; variant < 3; variant++)
            for (int epi = 0; epi < 3; epi++) {
                nn_conv_params p = depthwise_params(i, variant);
                p.epilogue = epi == 0 ? 0 : epi == 1 ? NN_EPI_BIAS_ROWS : NN_EPI_BIAS_ROWS | NN_EPI_RELU;
                const parity_conv_sizes s = parity_conv_sizes_of(&p);
                const size_t f = (size_t)p.filters;
                parity_arg a[4] = {
                    arg_in(parity_randoms(s.x, -1, 1), s.x, 4), arg_in(parity_randoms(s.w, -1, 1), s.w, 0),
                    arg_near(parity_randoms(s.y, -1, 1), s.y, 8, sums_tol(p.g.kernel_h * p.g.kernel_w + 1.0)),
                    given(epi, arg_in(parity_randoms(f, -1, 1), f, 12))};
                parity_check(o, NN_KERNEL_DEPTHWISE_CONV2D_FORWARD, a, 4, &p, DEPTHWISE_FMT " epilogue %#x",
                             DEPTHWISE_ARGS(i, p), p.epilogue);
            }
}

void parity_depthwise_data_case(nn_backend *o) {
    for (size_t i = 0; i < DEPTHWISE; i++)
        for (int variant = 0; variant < 3; variant++)
            for (int acc = 0; acc < 2; acc++) {
                nn_conv_params p = depthwise_params(i, variant);
                p.g.accumulate = acc;
                const parity_conv_sizes s = parity_conv_sizes_of(&p);
                const double terms = (double)p.filters / p.g.channels * p.g.kernel_h * p.g.kernel_w + acc;
                parity_arg a[3] = {arg_in(parity_randoms(s.y, -1, 1), s.y, 0),
                                   arg_in(parity_randoms(s.w, -1, 1), s.w, 4),
                                   arg_near(parity_randoms(s.x, -1, 1), s.x, 8, sums_tol(terms))};
                parity_check(o, NN_KERNEL_DEPTHWISE_CONV2D_BACKWARD_DATA, a, 3, &p, DEPTHWISE_FMT " accumulate %d",
                             DEPTHWISE_ARGS(i, p), acc);
            }
}

void parity_depthwise_weight_case(nn_backend *o) {
    for (size_t i = 0; i < DEPTHWISE; i++)
        for (int variant = 0; variant < 3; variant++)
            for (int acc = 0; acc < 2; acc++) {
                nn_conv_params p = depthwise_params(i, variant);
                p.g.accumulate = acc;
                const parity_conv_sizes s = parity_conv_sizes_of(&p);
                const double terms = (double)p.g.batch * s.positions + acc;
                parity_arg a[3] = {arg_in(parity_randoms(s.y, -1, 1), s.y, 4),
                                   arg_in(parity_randoms(s.x, -1, 1), s.x, 0),
                                   arg_near(parity_randoms(s.w, -1, 1), s.w, 12, sums_tol(terms))};
                parity_check(o, NN_KERNEL_DEPTHWISE_CONV2D_BACKWARD_WEIGHT, a, 3, &p, DEPTHWISE_FMT " accumulate %d",
                             DEPTHWISE_ARGS(i, p), acc);
            }
}

/* ---- resampling ---- */

typedef struct resample_case {
    int planes, in_h, in_w, out_h, out_w, mode, align_corners;
    float scale_factor; /* 0: by size */
} resample_case;

static const resample_case kResample[] = {
    {3, 5, 7, 10, 14, NN_INTERP_NEAREST, 0, 2.0f},   /* nearest x2 by scale factor */
    {2, 7, 5, 11, 3, NN_INTERP_NEAREST, 0, 0.0f},    /* nearest by size, up and down */
    {1, 5, 5, 7, 7, NN_INTERP_NEAREST, 0, 1.5f},     /* a fractional scale factor */
    {4, 6, 9, 13, 17, NN_INTERP_BILINEAR, 0, 0.0f},  /* bilinear by size */
    {2, 6, 9, 13, 17, NN_INTERP_BILINEAR, 1, 0.0f},  /* align_corners */
    {3, 11, 13, 5, 4, NN_INTERP_BILINEAR, 0, 0.0f},  /* downsampling */
    {1, 3, 4, 9, 12, NN_INTERP_BILINEAR, 0, 3.0f},   /* x3 by scale factor, batch 1 */
    {2, 1, 4, 5, 1, NN_INTERP_BILINEAR, 1, 0.0f},    /* one row in, one column out */
    {1, 2, 2, 17, 19, NN_INTERP_BILINEAR, 0, 0.0f},  /* many readers per input */
};
#define RESAMPLE (sizeof kResample / sizeof kResample[0])

static float scale_of(int in, int out, int align_corners, float scale_factor) {
    if (align_corners) return out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.0f;
    return scale_factor > 0.0f ? (float)(1.0 / scale_factor) : (float)in / (float)out;
}

static nn_interpolate_params resample_params(const resample_case *c) {
    return (nn_interpolate_params){.planes = c->planes, .in_h = c->in_h, .in_w = c->in_w, .out_h = c->out_h,
                                   .out_w = c->out_w, .mode = c->mode, .align_corners = c->align_corners,
                                   .scale_h = scale_of(c->in_h, c->out_h, c->align_corners, c->scale_factor),
                                   .scale_w = scale_of(c->in_w, c->out_w, c->align_corners, c->scale_factor)};
}

#define RESAMPLE_FMT "%d planes %dx%d to %dx%d mode %d align_corners %d scale factor %g"
#define RESAMPLE_ARGS(c) \
    (c)->planes, (c)->in_h, (c)->in_w, (c)->out_h, (c)->out_w, (c)->mode, (c)->align_corners, (double)(c)->scale_factor

void parity_interpolate_forward_case(nn_backend *o) {
    for (size_t i = 0; i < RESAMPLE; i++) {
        const nn_interpolate_params p = resample_params(&kResample[i]);
        const size_t in = (size_t)p.planes * p.in_h * p.in_w, out = (size_t)p.planes * p.out_h * p.out_w;
        parity_arg a[2] = {arg_in(parity_randoms(in, -1, 1), in, 4),
                           arg_near(parity_randoms(out, -1, 1), out, 8, sums_tol(4.0))};
        parity_check(o, NN_KERNEL_INTERPOLATE_FORWARD, a, 2, &p, RESAMPLE_FMT, RESAMPLE_ARGS(&kResample[i]));
    }
}

void parity_interpolate_backward_case(nn_backend *o) {
    for (size_t i = 0; i < RESAMPLE; i++)
        for (int acc = 0; acc < 2; acc++) {
            nn_interpolate_params p = resample_params(&kResample[i]);
            p.accumulate = acc;
            const size_t in = (size_t)p.planes * p.in_h * p.in_w, out = (size_t)p.planes * p.out_h * p.out_w;
            const double readers = (double)(p.out_h / p.in_h + 2) * (p.out_w / p.in_w + 2) * 4 + acc;
            parity_arg a[2] = {arg_in(parity_randoms(out, -1, 1), out, 0),
                               arg_near(parity_randoms(in, -1, 1), in, 4, sums_tol(readers))};
            parity_check(o, NN_KERNEL_INTERPOLATE_BACKWARD, a, 2, &p, RESAMPLE_FMT " accumulate %d",
                         RESAMPLE_ARGS(&kResample[i]), acc);
        }
}
