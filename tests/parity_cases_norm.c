/* The parity cases of the normalisation kernels (kernels.h's
 * nn_norm_params): BatchNorm-, GroupNorm- and LayerNorm-shaped layouts at
 * awkward sizes, groups of one element, a group of 210,003 elements and
 * more groups (70,001) than one dispatch dimension holds, one channel,
 * rows of 1,024 and past 2,048 (the Vulkan kernels' split and one-pass
 * paths), rows of channels (channels-last BatchNorm, BatchNorm1d) in
 * fours and not, one and two tiles of channels, chunks of rows; weight and bias given and absent, accumulate on and off, tensors
 * misaligned and 16-byte aligned (vec4 passes). */
#include <math.h>
#include <stdio.h>

#include "parity_cases.h"
#include "parity_harness.h"

typedef struct norm_layout {
    const char *what;
    int64_t outer, inner, channel_inner;
    int32_t groups, channels;
} norm_layout;

static const norm_layout kLayouts[] = {
    {"batchnorm [2, 3, 35]", 2, 35, 35, 3, 3},
    {"batchnorm [1, 5] (one element per channel)", 1, 1, 1, 5, 5},
    {"batchnorm [3, 2, 70001]", 3, 70001, 70001, 2, 2},
    {"groupnorm [2, 6, 7] in 3 groups", 1, 14, 7, 6, 6},
    {"groupnorm [1, 5, 9] in 5 groups", 1, 9, 9, 5, 5},
    {"layernorm [13, 37]", 1, 37, 1, 13, 37},
    {"layernorm [5, 1] (one element per row)", 1, 1, 1, 5, 1},
    {"layernorm [70001, 3]", 1, 3, 1, 70001, 3},
    {"layernorm [4, 3, 5] over the last two", 1, 15, 1, 4, 15},
    /* the Vulkan backend's split reductions and vec4 passes (vk_norm.c) */
    {"batchnorm [2, 1, 50021] (one channel, a group of 100,042)", 2, 50021, 50021, 1, 1},
    {"batchnorm [4, 6, 1024] (groups past one piece, one chunk)", 4, 1024, 1024, 6, 6},
    {"groupnorm [3, 8, 4100] in 2 groups", 1, 16400, 4100, 6, 8},
    {"layernorm [300, 1024]", 1, 1024, 1, 300, 1024},
    /* rows of at most a piece several a workgroup: 32, 64, 128 and 256 invocations a row */
    {"layernorm [97, 192]", 1, 192, 1, 97, 192},
    {"layernorm [33, 768]", 1, 768, 1, 33, 768},
    {"layernorm [11, 257]", 1, 257, 1, 11, 257},
    {"layernorm [5, 2048] (rows of exactly a piece)", 1, 2048, 1, 5, 2048},
    {"layernorm [3, 2053] (rows past one piece)", 1, 2053, 1, 3, 2053},
    /* rows of channels (channels-last activations, [N, C]): norm_columns.comp */
    {"batchnorm channels-last [12000 pixels, 12] (channels in fours, chunks of rows)", 12000, 1, 1, 12, 12},
    {"batchnorm channels-last [7001 pixels, 5] (one channel an invocation, chunks of rows)", 7001, 1, 1, 5, 5},
    {"batchnorm channels-last [37 pixels, 1100] (two tiles of channels)", 37, 1, 1, 1100, 1100},
    {"batchnorm [129, 64] (BatchNorm1d)", 129, 1, 1, 64, 64},
};
#define LAYOUTS (sizeof kLayouts / sizeof kLayouts[0])

static nn_norm_params params_of(const norm_layout *l, int accumulate, int batch_stats) {
    return (nn_norm_params){.outer = l->outer, .inner = l->inner, .channel_inner = l->channel_inner,
                            .groups = l->groups, .channels = l->channels, .eps = 1e-5f,
                            .batch_stats = batch_stats, .accumulate = accumulate};
}

/* More groups than one dispatch dimension holds: lavapipe takes seconds a
 * run there (a workgroup a group), so these layouts run the first and the
 * last variant of the costly kernels, every flag off and every flag on. */
static bool many_groups(const norm_layout *l) { return l->groups > 65535; }

static size_t elements(const norm_layout *l) { return (size_t)(l->outer * l->groups * l->inner); }
static size_t group_size(const norm_layout *l) { return (size_t)(l->outer * l->inner); }

/* Statistics a kernel reads: means in [-0.5, 0.5), variances in [0.5, 2). */
static parity_arg means(const norm_layout *l, size_t offset) {
    return arg_in(parity_randoms((size_t)l->groups, -0.5f, 0.5f), (size_t)l->groups, offset);
}
static parity_arg variances(const norm_layout *l, size_t offset) {
    return arg_in(parity_randoms((size_t)l->groups, 0.5f, 2.0f), (size_t)l->groups, offset);
}

/* Channels-last BatchNorm statistics of values that climb down the rows:
 * chunks of rows and lanes of a workgroup have far apart means, so merging
 * them must weigh their difference (Chan's formula), which independent
 * draws would hide. */
static void climbing_stats(nn_backend *o, int64_t rows, int32_t channels) {
    const norm_layout l = {"climbing rows", rows, 1, 1, channels, channels};
    const nn_norm_params p = params_of(&l, 0, 0);
    const size_t n = elements(&l), g = (size_t)channels;
    float *x = parity_randoms(n, -1.0f, 1.0f);
    for (size_t e = 0; e < n; e++) x[e] += 8.0f * (float)(e / g) / (float)rows;
    parity_arg a[3] = {arg_in(x, n, 4), arg_near(parity_randoms(g, -1, 1), g, 8, sums_tol((double)rows)),
                       arg_near(parity_randoms(g, -1, 1), g, 0, sums_tol((double)rows))};
    parity_check(o, NN_KERNEL_NORM_STATS, a, 3, &p, "channels-last batchnorm [%lld pixels, %d], values climbing "
                 "down the rows", (long long)rows, channels);
}

void parity_norm_stats_case(nn_backend *o) {
    for (size_t i = 0; i < LAYOUTS; i++) {
        const norm_layout *l = &kLayouts[i];
        const nn_norm_params p = params_of(l, 0, 0);
        const size_t n = elements(l), g = (size_t)l->groups;
        /* Offset from zero, so a one-pass variance would lose digits. */
        parity_arg a[3] = {arg_in(parity_randoms(n, 2.0f, 4.0f), n, 4),
                           arg_near(parity_randoms(g, -1, 1), g, 8, sums_tol((double)group_size(l))),
                           arg_near(parity_randoms(g, -1, 1), g, 0, sums_tol((double)group_size(l)))};
        parity_check(o, NN_KERNEL_NORM_STATS, a, 3, &p, "%s", l->what);
    }
    climbing_stats(o, 12000, 12);
    climbing_stats(o, 7001, 5);
    climbing_stats(o, 20000, 64); /* more chunks than lanes: a lane merges several */
}

/* Each layout with each affine variant, the last two also with an
 * epilogue (a fused activation): relu6, ReLU as clamp(0, inf), sigmoid,
 * leaky_relu with its slope, in turn; the last three with a residual added
 * before the epilogue (aligned with x, then off it by one element). */
void parity_norm_apply_case(nn_backend *o) {
    static const nn_pointwise_epilogue kEpilogues[] = {{1, NN_UNARY_RELU6, 0.0f, 0.0f},
                                                       {1, NN_UNARY_CLAMP, 0.0f, INFINITY},
                                                       {1, NN_UNARY_SIGMOID, 0.0f, 0.0f},
                                                       {1, NN_UNARY_LEAKY_RELU, 0.1f, 0.0f}};
    for (size_t i = 0; i < LAYOUTS; i++)
        for (int variant = 0; variant < 8; variant++) { /* affine: none, weight and bias, bias only, both aligned */
            const norm_layout *l = &kLayouts[i];
            const int affine = variant < 4 ? variant : variant < 6 ? variant - 2 : 3;
            nn_norm_params p = params_of(l, 0, 0);
            if (variant >= 4 && variant != 6) p.epilogue = kEpilogues[(i + (size_t)variant) % 4];
            const bool residual = variant >= 5;
            const size_t n = elements(l), c = (size_t)l->channels, y_at = affine == 3 ? 16 : 4;
            parity_arg a[7] = {arg_in(parity_randoms(n, -2, 2), n, 0), means(l, 4), variances(l, 12),
                               given(affine % 2 == 1, arg_in(parity_randoms(c, -2, 2), c, 8)),
                               given(affine >= 1, arg_in(parity_randoms(c, -1, 1), c, 4)),
                               arg_near(parity_randoms(n, -1, 1), n, y_at, 1e-5),
                               given(residual, arg_in(parity_randoms(n, -3, 3), n, variant == 7 ? 4 : 16))};
            parity_check(o, NN_KERNEL_NORM_APPLY, a, 7, &p, "%s affine variant %d epilogue %d (row %d) residual %d",
                         l->what, affine, p.epilogue.on, p.epilogue.op, residual);
        }
}

void parity_norm_backward_data_case(nn_backend *o) {
    for (size_t i = 0; i < LAYOUTS; i++)
        for (int variant = 0; variant < 16; variant++) { /* bits: accumulate, batch statistics, weight, aligned */
            const norm_layout *l = &kLayouts[i];
            const int acc = variant & 1, batch_stats = (variant >> 1) & 1, weighted = (variant >> 2) & 1;
            const int aligned = variant >> 3;
            if (many_groups(l) && variant != 0 && variant != 15) continue;
            const nn_norm_params p = params_of(l, acc, batch_stats);
            const size_t n = elements(l), c = (size_t)l->channels;
            parity_arg a[6] = {arg_in(parity_randoms(n, -2, 2), n, aligned ? 0 : 8), means(l, 0), variances(l, 4),
                               given(weighted, arg_in(parity_randoms(c, -2, 2), c, 12)),
                               arg_in(parity_randoms(n, -1, 1), n, aligned ? 16 : 4),
                               arg_near(parity_randoms(n, -1, 1), n, aligned ? 32 : 0,
                                        4 * sums_tol((double)group_size(l)))};
            parity_check(o, NN_KERNEL_NORM_BACKWARD_DATA, a, 6, &p,
                         "%s accumulate %d batch_stats %d weight %d aligned %d", l->what, acc, batch_stats, weighted,
                         aligned);
        }
}

void parity_norm_backward_affine_case(nn_backend *o) {
    for (size_t i = 0; i < LAYOUTS; i++)
        for (int variant = 0; variant < 6; variant++) { /* accumulate; dweight and dbias, dweight, dbias */
            const norm_layout *l = &kLayouts[i];
            const int acc = variant & 1, outputs = variant >> 1;
            const nn_norm_params p = params_of(l, acc, 1);
            const size_t n = elements(l), c = (size_t)l->channels;
            const double tol = 2 * sums_tol((double)n / (double)c);
            parity_arg a[6] = {arg_in(parity_randoms(n, -2, 2), n, 0), means(l, 8), variances(l, 4),
                               arg_in(parity_randoms(n, -1, 1), n, 12),
                               given(outputs != 2, arg_near(parity_randoms(c, -1, 1), c, 4, tol)),
                               given(outputs != 1, arg_near(parity_randoms(c, -1, 1), c, 8, tol))};
            parity_check(o, NN_KERNEL_NORM_BACKWARD_AFFINE, a, 6, &p, "%s accumulate %d outputs %d", l->what,
                         acc, outputs);
        }
}

/* Whether a layout has one channel per group (BatchNorm's), as the
 * unweighted sums and grad_mask need. */
static bool channel_groups(const norm_layout *l) { return l->groups == l->channels && l->inner == l->channel_inner; }

/* grad_mask's inputs: weight (magnitudes in [0.5, 2], either sign) and
 * bias in [-1, 7] (or absent), and x whose normalised values y = xhat w + b
 * lie in [-3, 9] but never within 0.01 of relu's or relu6's kinks at 0 and
 * 6, so no rounding puts an element on the other side on either backend. */
typedef struct masked_inputs {
    float *x, *mean, *var, *weight, *bias;
} masked_inputs;

static masked_inputs masked_inputs_of(const norm_layout *l, bool affine) {
    const size_t n = elements(l), c = (size_t)l->channels;
    masked_inputs m = {parity_randoms(n, -3, 9), parity_randoms(c, -0.5f, 0.5f), parity_randoms(c, 0.5f, 2.0f),
                       affine ? parity_randoms(c, 0.5f, 2.0f) : NULL, affine ? parity_randoms(c, -1, 7) : NULL};
    const float *sign = parity_randoms(c, -1, 1);
    for (size_t k = 0; affine && k < c; k++) m.weight[k] *= sign[k] < 0 ? -1.0f : 1.0f;
    for (size_t e = 0; e < n; e++) {
        float y = m.x[e]; /* the wanted normalised value, moved off the kinks */
        if (fabsf(y) < 0.01f) y = y < 0 ? -0.01f : 0.01f;
        if (fabsf(y - 6.0f) < 0.01f) y = y < 6.0f ? 5.99f : 6.01f;
        const size_t k = (size_t)((int64_t)e / l->channel_inner % l->channels);
        const double rstd = 1.0 / sqrt((double)m.var[k] + 1e-5), w = affine ? m.weight[k] : 1.0;
        m.x[e] = (float)(m.mean[k] + (y - (affine ? m.bias[k] : 0.0)) / (rstd * w));
    }
    return m;
}

static const char *const kMaskNames[] = {"none", "relu", "relu6"};

/* NORM_BACKWARD_DATA in two (SyncBatchNorm): the sums, then dx from sums
 * that need not be this batch's (random ones, as reduced over processes);
 * where a group is one channel also unweighted sums through an
 * activation's mask (grad_mask), with the affine given and absent. */
void parity_norm_backward_sums_case(nn_backend *o) {
    for (size_t i = 0; i < LAYOUTS; i++)
        for (int variant = 0; variant < 6; variant++) { /* 0, 1: weight; 2-5: mask relu / relu6, affine or not */
            const norm_layout *l = &kLayouts[i];
            const int weighted = variant == 1, mask = variant < 2 ? NN_NORM_MASK_NONE : 1 + (variant - 2) / 2;
            const bool affine = variant >= 2 && variant % 2 == 0;
            if (mask && !channel_groups(l)) continue;
            if (many_groups(l) && !weighted) continue;
            nn_norm_params p = params_of(l, 0, 1);
            p.grad_mask = mask;
            p.sums_unweighted = mask != NN_NORM_MASK_NONE;
            const size_t n = elements(l), c = (size_t)l->channels, g2 = 2 * (size_t)l->groups;
            const parity_arg sums = arg_near(parity_randoms(g2, -1, 1), g2, 4, 4 * sums_tol((double)group_size(l)));
            parity_arg a[7];
            if (mask) {
                const masked_inputs m = masked_inputs_of(l, affine);
                a[0] = arg_in(m.x, n, 8), a[1] = arg_in(m.mean, c, 0), a[2] = arg_in(m.var, c, 4);
                a[3] = given(affine, arg_in(m.weight, c, 12)), a[6] = given(affine, arg_in(m.bias, c, 16));
            } else {
                a[0] = arg_in(parity_randoms(n, -2, 2), n, 8), a[1] = means(l, 0), a[2] = variances(l, 4);
                a[3] = given(weighted, arg_in(parity_randoms(c, -2, 2), c, 12)), a[6] = arg_none();
            }
            a[4] = arg_in(parity_randoms(n, -1, 1), n, 4), a[5] = sums;
            parity_check(o, NN_KERNEL_NORM_BACKWARD_SUMS, a, 7, &p, "%s weight %d mask %s affine %d", l->what,
                         weighted, kMaskNames[mask], affine);
        }
}

/* Also sums without the weight (sums_unweighted: BatchNorm's op shares
 * them with the affine gradients, written here too) where a group is one
 * channel. */
void parity_norm_backward_from_sums_case(nn_backend *o) {
    for (size_t i = 0; i < LAYOUTS; i++)
        for (int variant = 0; variant < 48; variant++) { /* bits: accumulate, weight, aligned, unweighted; mask */
            const norm_layout *l = &kLayouts[i];
            const int acc = variant & 1, weighted = (variant >> 1) & 1, aligned = (variant >> 2) & 1;
            const int unweighted = (variant >> 3) & 1, mask = variant >> 4;
            if ((unweighted || mask) && !channel_groups(l)) continue;
            if (mask && !unweighted) continue; /* BatchNorm's op masks the unweighted sums' pass only */
            nn_norm_params p = params_of(l, acc, 1);
            p.sums_unweighted = unweighted;
            p.grad_mask = mask;
            /* Unweighted sums: the affine gradients too, dweight, dbias or both, each adding or not. */
            const int affine = unweighted ? 1 + variant % 3 : 0;
            p.affine_accumulate = (variant >> 1) & 3;
            const size_t n = elements(l), c = (size_t)l->channels, g2 = 2 * (size_t)l->groups;
            const double span = (double)group_size(l); /* sums of that many terms in [-2, 2] */
            parity_arg a[10] = {arg_in(parity_randoms(n, -2, 2), n, aligned ? 0 : 8), means(l, 0), variances(l, 4),
                                given(weighted, arg_in(parity_randoms(c, -2, 2), c, 12)),
                                arg_in(parity_randoms(n, -1, 1), n, aligned ? 16 : 4),
                                arg_near(parity_randoms(n, -1, 1), n, aligned ? 32 : 0, 1e-5),
                                arg_in(parity_randoms(g2, (float)-span, (float)span), g2, 4),
                                given(affine & 1, arg_near(parity_randoms(c, -1, 1), c, 4, 1e-6)),
                                given(affine & 2, arg_near(parity_randoms(c, -1, 1), c, 8, 1e-6)), arg_none()};
            if (mask) { /* the bias given with the weight, both absent without */
                const masked_inputs m = masked_inputs_of(l, weighted);
                a[0] = arg_in(m.x, n, aligned ? 0 : 8), a[1] = arg_in(m.mean, c, 0), a[2] = arg_in(m.var, c, 4);
                a[3] = given(weighted, arg_in(m.weight, c, 12)), a[9] = given(weighted, arg_in(m.bias, c, 20));
            }
            parity_check(o, NN_KERNEL_NORM_BACKWARD_FROM_SUMS, a, 10, &p,
                         "%s accumulate %d weight %d aligned %d unweighted sums %d affine outputs %d (adding %d) "
                         "mask %s",
                         l->what, acc, weighted, aligned, unweighted, affine, p.affine_accumulate, kMaskNames[mask]);
        }
}

void parity_norm_running_update_case(nn_backend *o) {
    static const int32_t counts[] = {1, 4};
    static const float momenta[] = {0.1f, 0.0f, 1.0f, -1.0f, -1.0f};
    for (int m = 0; m < 5; m++)
        for (int s = 0; s < 2; s++) {
            const int32_t channels = s ? 37 : 1;
            const nn_norm_running_params p = {.count = s ? 35 : 2, .channels = channels, .momentum = momenta[m]};
            const size_t c = (size_t)channels;
            const int32_t *count = &counts[m == 4];
            parity_arg a[5] = {arg_in(parity_randoms(c, -1, 1), c, 0), arg_in(parity_randoms(c, 0, 2), c, 4),
                               arg_near(parity_randoms(c, -1, 1), c, 8, 4 * ROUNDING),
                               arg_near(parity_randoms(c, 0, 2), c, 12, 4 * ROUNDING),
                               given(momenta[m] < 0 || s, arg_in(count, 1, 4))};
            parity_check(o, NN_KERNEL_NORM_RUNNING_UPDATE, a, 5, &p, "momentum %g channels %d count %d",
                         (double)momenta[m], channels, *count);
        }
}
