/* The kernel parity test's cases for the fused kernels (parity_cases.h):
 * Conv2d -> ReLU -> MaxPool2d forward and its two gradients, two such
 * layers chained, one followed by a Linear, and Linear -> ReLU -> Linear
 * (forward, data gradient, and with the cross-entropy). Inputs that decide
 * a pooling winner are steps (conv_pool_reference.h), exact on every
 * backend. Each runs its kernel through parity_check (parity_harness.h). */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "conv_pool_reference.h"
#include "parity_cases.h"
#include "parity_harness.h"

/* ---- Conv2d -> ReLU -> MaxPool2d fused ---- */

static const conv_pool_case kConvPools[] = {
    /* batch, channels, height, width, filters, kernel_h, kernel_w, stride, pad, pool */
    {3, 1, 27, 29, 6, 5, 5, 1, 0, 2},  /* LeNet-5's first layer on an odd image: a row and a column dropped */
    {2, 6, 11, 13, 16, 5, 5, 1, 0, 2}, /* its second */
    {1, 2, 13, 11, 5, 3, 3, 2, 1, 3},  /* stride 2, padding, 3x3 windows */
    /* enough outputs for two filters per invocation (an odd count of
     * filters), and a weight gradient over many images */
    {41, 2, 29, 31, 5, 3, 3, 1, 1, 2},
};
#define CONV_POOLS (sizeof kConvPools / sizeof kConvPools[0])

#define CP_FMT "%dx%dx%dx%d f%d k%dx%d s%d p%d pool %d"
#define CP_ARGS(c) \
    (c)->batch, (c)->channels, (c)->height, (c)->width, (c)->filters, (c)->kernel_h, (c)->kernel_w, (c)->stride, \
        (c)->pad, (c)->pool

/* The layer's winners (and pooled output, when y is given) as its forward
 * picks them: exact for inputs of parity_steps(). */
static int32_t *winners_of(const nn_conv_pool_params *p, const float *x, const float *w, const float *b, float *y) {
    const conv_pool_sizes s = conv_pool_sizes_of(p);
    conv_pool_reference r = conv_pool_reference_of(p, x, w, b, NULL);
    int32_t *winners = parity_array(s.y * 4);
    memcpy(winners, r.winners, s.y * 4);
    if (y)
        for (size_t j = 0; j < s.y; j++) y[j] = (float)r.y[j];
    conv_pool_reference_free(&r);
    return winners;
}

void parity_conv_pool_forward_case(nn_backend *o) {
    for (size_t i = 0; i < CONV_POOLS; i++)
        for (int bias = 0; bias < 2; bias++) {
            const nn_conv_pool_params p = conv_pool_params_of(&kConvPools[i], bias);
            const conv_pool_sizes s = conv_pool_sizes_of(&p);
            const size_t f = (size_t)p.conv.filters, cols = parity_conv_sizes_of(&p.conv).cols;
            parity_arg a[6] = {arg_in(parity_steps(s.x, 4), s.x, 12), arg_in(parity_steps(s.w, 8), s.w, 4),
                               given(bias, arg_in(parity_steps(f, 16), f, 8)),
                               arg_near(parity_randoms(s.y, -1, 1), s.y, 16, 0.0),
                               arg_exact(parity_randoms(s.y, -1, 1), s.y, 4),
                               given(parity_keeps_columns(o, &p.conv),
                                     arg_exact(parity_randoms(cols, -1, 1), cols, 0))};
            parity_check(o, NN_KERNEL_CONV2D_POOL_FORWARD, a, 6, &p, CP_FMT " bias %d", CP_ARGS(&kConvPools[i]),
                         bias);
        }
}

void parity_conv_pool_weight_case(nn_backend *o) {
    for (size_t i = 0; i < CONV_POOLS; i++)
        for (int variant = 0; variant < 3; variant++) /* 0: both gradients; 1: the weight's; 2: the bias's */
            for (int acc = 0; acc < 2; acc++) {
                nn_conv_pool_params p = conv_pool_params_of(&kConvPools[i], true);
                const conv_pool_sizes s = conv_pool_sizes_of(&p);
                const size_t f = (size_t)p.conv.filters, cols = parity_conv_sizes_of(&p.conv).cols;
                const float *x = parity_steps(s.x, 4);
                const int32_t *winners = winners_of(&p, x, parity_steps(s.w, 8), parity_steps(f, 16), NULL);
                p.conv.g.accumulate = acc;
                p.bias_accumulate = 1 - acc; /* the two flags apart */
                const bool columns = parity_keeps_columns(o, &p.conv);
                /* each sum takes one term per pooled output of the batch */
                const double tol = sums_tol((double)p.conv.g.batch * p.pooled_h * p.pooled_w + 1.0);
                parity_arg a[6] = {arg_in(parity_randoms(s.y, -1, 1), s.y, 4), arg_in(winners, s.y, 8),
                                   arg_in(x, s.x, 0),
                                   given(variant != 2, arg_near(parity_randoms(s.w, -1, 1), s.w, 12, tol)),
                                   given(variant != 1, arg_near(parity_randoms(f, -1, 1), f, 4, tol)),
                                   given(columns, arg_in(columns ? parity_host_im2col(&p.conv.g, x) : NULL, cols, 8))};
                parity_check(o, NN_KERNEL_CONV2D_POOL_BACKWARD_WEIGHT, a, 6, &p, CP_FMT " variant %d accumulate %d",
                             CP_ARGS(&kConvPools[i]), variant, acc);
            }
}

void parity_conv_pool_data_case(nn_backend *o) {
    for (size_t i = 0; i < CONV_POOLS; i++)
        for (int acc = 0; acc < 2; acc++) {
            nn_conv_pool_params p = conv_pool_params_of(&kConvPools[i], true);
            const conv_pool_sizes s = conv_pool_sizes_of(&p);
            const float *w = parity_steps(s.w, 8);
            const int32_t *winners =
                winners_of(&p, parity_steps(s.x, 4), w, parity_steps((size_t)p.conv.filters, 16), NULL);
            p.conv.g.accumulate = acc;
            const double terms = (double)p.conv.filters * p.conv.g.kernel_h * p.conv.g.kernel_w + acc;
            parity_arg a[4] = {arg_in(parity_randoms(s.y, -1, 1), s.y, 0), arg_in(winners, s.y, 4), arg_in(w, s.w, 8),
                               arg_near(parity_randoms(s.x, -1, 1), s.x, 12, sums_tol(terms))};
            parity_check(o, NN_KERNEL_CONV2D_POOL_BACKWARD_DATA, a, 4, &p, CP_FMT " accumulate %d",
                         CP_ARGS(&kConvPools[i]), acc);
        }
}

/* Two such layers, the first's pooled output the second's input. */
typedef struct chain_case {
    conv_pool_case first;
    int filters, kernel, stride, pad, pool; /* the second layer */
} chain_case;

static const chain_case kChains[] = {
    {{3, 1, 27, 29, 6, 5, 5, 1, 0, 2}, 16, 5, 1, 0, 2}, /* LeNet-5's two layers on an odd image */
    {{1, 2, 13, 11, 5, 3, 3, 1, 1, 2}, 7, 3, 1, 1, 2},  /* one image, padding in both layers */
    {{67, 1, 27, 29, 6, 5, 5, 1, 0, 2}, 16, 5, 1, 0, 2}, /* final sums in two levels, the last block short */
};

void parity_conv_pool_chain_case(nn_backend *o) {
    for (size_t i = 0; i < sizeof kChains / sizeof kChains[0]; i++)
        for (int variant = 0; variant < 3; variant++) /* 0: both gradients; 1: the weight's; 2: the bias's */
            for (int acc = 0; acc < 2; acc++) {
                const chain_case *c = &kChains[i];
                nn_conv_pool_chain_params p = {.first = conv_pool_params_of(&c->first, true)};
                const conv_pool_case second = {c->first.batch, c->first.filters, p.first.pooled_h, p.first.pooled_w,
                                               c->filters, c->kernel, c->kernel, c->stride, c->pad, c->pool};
                p.second = conv_pool_params_of(&second, true);
                const conv_pool_sizes s1 = conv_pool_sizes_of(&p.first), s2 = conv_pool_sizes_of(&p.second);
                const size_t f1 = (size_t)c->first.filters;
                const float *x = parity_steps(s1.x, 4), *w2 = parity_steps(s2.w, 8);
                float *y1 = parity_array(s1.y * 4);
                const int32_t *winners1 = winners_of(&p.first, x, parity_steps(s1.w, 8), parity_steps(f1, 16), y1);
                const int32_t *winners2 = winners_of(&p.second, y1, w2, parity_steps((size_t)c->filters, 16), NULL);
                p.first.conv.g.accumulate = acc;
                p.first.bias_accumulate = 1 - acc;
                /* the gradient between the layers sums the second's filters' windows, the first's its pooled outputs */
                const double tol = sums_tol((double)c->filters * c->kernel * c->kernel +
                                            (double)c->first.batch * p.first.pooled_h * p.first.pooled_w + 1.0);
                parity_arg a[7] = {arg_in(parity_randoms(s2.y, -1, 1), s2.y, 4), arg_in(winners2, s2.y, 12),
                                   arg_in(w2, s2.w, 8), arg_in(winners1, s1.y, 4), arg_in(x, s1.x, 12),
                                   given(variant != 2, arg_near(parity_randoms(s1.w, -1, 1), s1.w, 8, tol)),
                                   given(variant != 1, arg_near(parity_randoms(f1, -1, 1), f1, 4, tol))};
                parity_check(o, NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT, a, 7, &p,
                             CP_FMT " then f%d k%d s%d p%d pool %d; variant %d accumulate %d", CP_ARGS(&c->first),
                             c->filters, c->kernel, c->stride, c->pad, c->pool, variant, acc);
            }
}

/* ... and with a Linear on its flattened output. */
typedef struct linear_layer_case {
    conv_pool_case conv;
    int out_features;
} linear_layer_case;

static const linear_layer_case kConvPoolLinears[] = {
    {{5, 6, 13, 15, 16, 5, 5, 1, 0, 2}, 37}, /* LeNet-5's second layer on an odd image: several workgroups per image */
    {{2, 6, 11, 13, 16, 5, 5, 1, 0, 2}, 13}, /* 192 features */
    {{1, 1, 9, 11, 3, 3, 3, 2, 0, 2}, 1},    /* one image, 12 features, one output */
    {{63, 3, 8, 8, 40, 5, 5, 1, 2, 2}, 7},   /* two filters per invocation, several workgroups per image */
};

void parity_conv_pool_linear_case(nn_backend *o) {
    for (size_t i = 0; i < sizeof kConvPoolLinears / sizeof kConvPoolLinears[0]; i++)
        for (int variant = 0; variant < 3; variant++) { /* 0: biases and the ReLU; 1: neither bias; 2: no ReLU */
            const linear_layer_case *c = &kConvPoolLinears[i];
            const bool bias = variant != 1;
            const nn_conv_pool_linear_params p = {.conv_pool = conv_pool_params_of(&c->conv, bias),
                                                  .out_features = c->out_features,
                                                  .epilogue = (bias ? NN_EPI_BIAS_COLS : 0) |
                                                              (variant != 2 ? NN_EPI_RELU : 0)};
            const conv_pool_sizes s = conv_pool_sizes_of(&p.conv_pool);
            const size_t f = (size_t)c->conv.filters, outs = (size_t)c->out_features;
            const size_t in = f * (size_t)p.conv_pool.pooled_h * p.conv_pool.pooled_w, h = (size_t)c->conv.batch * outs;
            const float bound = 1.0f / sqrtf((float)in); /* as Linear initialises it */
            /* the Linear's weights on a 16-byte boundary in variant 0, off it in the others */
            parity_arg a[8] = {arg_in(parity_steps(s.x, 4), s.x, 12), arg_in(parity_steps(s.w, 8), s.w, 4),
                               given(bias, arg_in(parity_steps(f, 16), f, 8)),
                               arg_near(parity_randoms(s.y, -1, 1), s.y, 16, 0.0),
                               arg_exact(parity_randoms(s.y, -1, 1), s.y, 4),
                               arg_in(parity_randoms(in * outs, -bound, bound), in * outs, variant == 0 ? 16 : 4),
                               given(bias, arg_in(parity_randoms(outs, -bound, bound), outs, 12)),
                               arg_near(parity_randoms(h, -1, 1), h, 8, sums_tol(in + 1.0))};
            parity_check(o, NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD, a, 8, &p, CP_FMT " out %d variant %d",
                         CP_ARGS(&c->conv), c->out_features, variant);
        }
}

/* ---- Linear -> ReLU -> Linear fused ---- */

typedef struct head_shape {
    int rows, in, hidden, out;
} head_shape;

static const head_shape kHeads[] = {
    {1, 1, 1, 1},      /* single features */
    {7, 13, 9, 5},     /* odd counts */
    {37, 120, 84, 10}, /* LeNet-5's last two layers at an odd batch */
};
#define HEADS (sizeof kHeads / sizeof kHeads[0])

static nn_linear_head_params head_params(const head_shape *c) {
    return (nn_linear_head_params){.rows = c->rows, .in = c->in, .hidden = c->hidden, .out = c->out};
}

void parity_linear_head_forward_case(nn_backend *o) {
    for (size_t i = 0; i < HEADS; i++)
        for (int variant = 0; variant < 3; variant++) { /* 0: both biases; 1: neither; 2: the first's only */
            const head_shape *c = &kHeads[i];
            const nn_linear_head_params p = head_params(c);
            const size_t nx = (size_t)c->rows * c->in, nh = (size_t)c->rows * c->hidden, ny = (size_t)c->rows * c->out;
            const size_t wa = (size_t)c->hidden * c->in, wb = (size_t)c->out * c->hidden;
            parity_arg a[7] = {arg_in(parity_randoms(nx, -1, 1), nx, 12), arg_in(parity_randoms(wa, -1, 1), wa, 4),
                               given(variant != 1,
                                     arg_in(parity_randoms((size_t)c->hidden, -1, 1), (size_t)c->hidden, 8)),
                               arg_in(parity_randoms(wb, -1, 1), wb, 16),
                               given(variant == 0, arg_in(parity_randoms((size_t)c->out, -1, 1), (size_t)c->out, 4)),
                               arg_near(parity_randoms(nh, -1, 1), nh, 8, sums_tol(c->in + 1.0)),
                               arg_near(parity_randoms(ny, -1, 1), ny, 4, sums_tol((double)c->in + c->hidden + 1.0))};
            parity_check(o, NN_KERNEL_LINEAR_HEAD_FORWARD, a, 7, &p, "rows %d in %d hidden %d out %d variant %d",
                         c->rows, c->in, c->hidden, c->out, variant);
        }
}

void parity_linear_head_data_case(nn_backend *o) {
    static const struct {
        int mask_input, accumulate, x, dx;
    } variants[] = {
        {0, 0, 0, 1}, /* no x: dx unmasked */
        {1, 1, 1, 1}, /* dx masked by x > 0, added */
        {0, 1, 1, 1}, /* x given but not read */
        {0, 0, 0, 0}, /* no dx: dh only */
    };
    for (size_t i = 0; i < HEADS; i++)
        for (int v = 0; v < 4; v++) {
            const head_shape *c = &kHeads[i];
            nn_linear_head_params p = head_params(c);
            p.mask_input = variants[v].mask_input;
            p.accumulate = variants[v].accumulate;
            const size_t nx = (size_t)c->rows * c->in, nh = (size_t)c->rows * c->hidden, ny = (size_t)c->rows * c->out;
            const size_t wa = (size_t)c->hidden * c->in, wb = (size_t)c->out * c->hidden;
            float *h = parity_randoms(nh, -1, 1), *x = parity_randoms(nx, -1, 1);
            for (size_t j = 0; j < nh; j++) h[j] = relu_of(h[j]); /* a ReLU's output: zeros where it passes nothing */
            for (size_t j = 0; j < nx; j++) x[j] = relu_of(x[j]);
            parity_arg a[7] = {arg_in(parity_randoms(ny, -1, 1), ny, 4), arg_in(parity_randoms(wb, -1, 1), wb, 8),
                               arg_in(h, nh, 0), arg_in(parity_randoms(wa, -1, 1), wa, 12),
                               given(variants[v].x, arg_in(x, nx, 4)),
                               arg_near(parity_randoms(nh, -1, 1), nh, 8, sums_tol(c->out + 1.0)),
                               given(variants[v].dx, arg_near(parity_randoms(nx, -1, 1), nx, 16,
                                                              sums_tol((double)c->out + c->hidden + 1.0)))};
            parity_check(o, NN_KERNEL_LINEAR_HEAD_BACKWARD_DATA, a, 7, &p,
                         "rows %d in %d hidden %d out %d mask_input %d accumulate %d x %s dx %s", c->rows, c->in,
                         c->hidden, c->out, p.mask_input, p.accumulate, variants[v].x ? "given" : "absent",
                         variants[v].dx ? "given" : "absent");
        }
}

void parity_linear_head_cross_entropy_case(nn_backend *o) {
    for (size_t i = 0; i < HEADS; i++)
        for (int variant = 0; variant < 4; variant++) { /* 1: no biases, x masked; 2: no dx; 3: neither dh nor dx */
            const head_shape *c = &kHeads[i];
            nn_linear_head_params p = head_params(c);
            p.mask_input = variant == 1;
            const size_t nx = (size_t)c->rows * c->in, nh = (size_t)c->rows * c->hidden, ny = (size_t)c->rows * c->out;
            const size_t wa = (size_t)c->hidden * c->in, wb = (size_t)c->out * c->hidden, rows = (size_t)c->rows;
            const double forward = sums_tol((double)c->in + c->hidden + 1.0);
            const double backward = sums_tol((double)c->in + 2.0 * c->hidden + c->out + 1.0);
            parity_arg a[12] = {
                arg_in(parity_randoms(nx, -1, 1), nx, 12),
                arg_in(parity_randoms(wa, -1, 1), wa, 4),
                given(variant != 1, arg_in(parity_randoms((size_t)c->hidden, -1, 1), (size_t)c->hidden, 8)),
                arg_in(parity_randoms(wb, -1, 1), wb, 16),
                given(variant != 1, arg_in(parity_randoms((size_t)c->out, -1, 1), (size_t)c->out, 4)),
                arg_in(parity_labels_of(rows, c->out), rows, 8),
                arg_near(parity_randoms(nh, -1, 1), nh, 8, sums_tol(c->in + 1.0)), /* h */
                arg_near(parity_randoms(ny, -1, 1), ny, 4, forward),               /* logits */
                arg_near(parity_randoms(rows, -1, 1), rows, 12, forward),          /* row loss */
                arg_near(parity_randoms(ny, -1, 1), ny, 0, forward),               /* dlogits */
                given(variant < 3, arg_near(parity_randoms(nh, -1, 1), nh, 4, backward)),
                given(variant < 2, arg_near(parity_randoms(nx, -1, 1), nx, 8, backward))};
            parity_check(o, NN_KERNEL_LINEAR_HEAD_CROSS_ENTROPY, a, 12, &p, "rows %d in %d hidden %d out %d variant %d",
                         c->rows, c->in, c->hidden, c->out, variant);
        }
}
