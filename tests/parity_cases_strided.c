/* The kernel parity test's cases for the strided kernels (parity_cases.h):
 * BROADCAST over every row of broadcast_ops.h, COMPARE (every op, float32
 * with ties, NaN and infinities, int32 with ties, negatives and extremes),
 * STRIDED_COPY (permutations, slices into and out of larger tensors,
 * expansions), REDUCE_DIMS (sums, maxima and minima over leading, inner,
 * trailing, scattered and all dimensions, with ties and a NaN; integer sums
 * that wrap) and REDUCE_DIMS_SCATTER. */
#include <math.h>
#include <string.h>

#include "parity_cases.h"
#include "parity_harness.h"

/* Row-major strides of a shape; `ndim` sizes. */
static void dense_strides(int ndim, const int32_t *shape, int32_t *stride) {
    int32_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) stride[d] = s, s *= shape[d];
}

static size_t count_of(int ndim, const int32_t *shape) {
    size_t n = 1;
    for (int d = 0; d < ndim; d++) n *= (size_t)shape[d];
    return n;
}

/* ---- BROADCAST ---- */

/* An output shape and, per operand, which of its dimensions it has (1) or
 * broadcasts over (0); `transposed` reads operand a through its last two
 * dimensions swapped. */
typedef struct broadcast_layout {
    int ndim;
    int32_t shape[NN_STRIDED_DIMS];
    int has[3][NN_STRIDED_DIMS];
    int transposed;
} broadcast_layout;

static const broadcast_layout kLayouts[] = {
    {1, {1}, {{1}, {1}, {1}}, 0},
    {1, {37}, {{1}, {0}, {1}}, 0},
    {2, {5, 7}, {{1, 1}, {0, 1}, {1, 0}}, 0},
    {3, {3, 1, 9}, {{1, 1, 0}, {1, 1, 1}, {0, 0, 1}}, 0},
    {4, {2, 3, 5, 7}, {{1, 0, 1, 1}, {0, 1, 0, 1}, {1, 1, 1, 1}}, 1},
    {6, {2, 3, 2, 1, 3, 5}, {{1, 1, 1, 1, 1, 1}, {0, 1, 0, 1, 1, 0}, {1, 0, 1, 1, 0, 1}}, 0},
    {2, {301, 67}, {{1, 1}, {1, 1}, {1, 1}}, 1},
};
#define LAYOUTS (sizeof kLayouts / sizeof kLayouts[0])

/* Operand k's strides in the output's index space and its element count. */
static size_t operand_strides(const broadcast_layout *l, int k, int32_t *stride) {
    int32_t own[NN_STRIDED_DIMS], dense[NN_STRIDED_DIMS];
    for (int d = 0; d < l->ndim; d++) own[d] = l->has[k][d] ? l->shape[d] : 1;
    if (k == 0 && l->transposed && l->ndim >= 2) {
        int32_t swapped[NN_STRIDED_DIMS];
        memcpy(swapped, own, sizeof swapped);
        swapped[l->ndim - 1] = own[l->ndim - 2], swapped[l->ndim - 2] = own[l->ndim - 1];
        dense_strides(l->ndim, swapped, dense);
        const int32_t t = dense[l->ndim - 1];
        dense[l->ndim - 1] = dense[l->ndim - 2], dense[l->ndim - 2] = t;
    } else {
        dense_strides(l->ndim, own, dense);
    }
    for (int d = 0; d < l->ndim; d++) stride[d] = l->has[k][d] ? dense[d] : 0;
    return count_of(l->ndim, own);
}

void parity_broadcast_case(nn_backend *o) {
    for (int op = 0; op < NN_BROADCAST_COUNT; op++)
        for (size_t i = 0; i < LAYOUTS; i++)
            for (int acc = 0; acc < 2; acc++) {
                const broadcast_layout *l = &kLayouts[i];
                nn_broadcast_params p = {.ndim = l->ndim, .op = op, .accumulate = acc, .alpha = acc ? -1.5f : 1.0f};
                memcpy(p.shape, l->shape, sizeof p.shape);
                size_t n[3];
                for (int k = 0; k < 3; k++) n[k] = operand_strides(l, k, p.stride[k]);
                const size_t out = count_of(l->ndim, l->shape);
                /* values in [-2, 2) with ties between a and b for the
                 * maximum and minimum rows, a divisor kept from zero */
                float *a = parity_steps(n[0], 2.0f), *b = parity_steps(n[1], 2.0f);
                float *c = parity_randoms(n[2], 0.5f, 2.0f);
                if (n[0] > 3) a[3] = NAN;
                for (size_t j = 0; j < n[1]; j++)
                    if (b[j] == 0.0f) b[j] = 0.75f;
                parity_arg args[4] = {arg_in(a, n[0], 4), arg_in(b, n[1], 0), arg_in(c, n[2], 8),
                                      arg_near(parity_randoms(out, -1, 1), out, 12, 4 * ROUNDING)};
                parity_check(o, NN_KERNEL_BROADCAST, args, 4, &p, "op %d layout %zu accumulate %d", op, i, acc);
            }
}

/* ---- COMPARE ---- */

/* Operands a and b of kLayouts (c unused), for every op of nn_compare_op. */
void parity_compare_case(nn_backend *o) {
    for (int op = 0; op <= 5; op++)
        for (size_t i = 0; i < LAYOUTS; i++)
            for (int integer = 0; integer < 2; integer++) {
                const broadcast_layout *l = &kLayouts[i];
                nn_compare_params p = {.ndim = l->ndim, .op = op, .integer = integer};
                memcpy(p.shape, l->shape, sizeof p.shape);
                size_t n[2];
                for (int k = 0; k < 2; k++) n[k] = operand_strides(l, k, p.stride[k]);
                const size_t out = count_of(l->ndim, l->shape);
                const void *operand[2];
                for (int k = 0; k < 2; k++) {
                    if (integer) {
                        operand[k] = parity_ints(n[k], -3, 3);
                        continue;
                    }
                    float *x = parity_steps(n[k], 2.0f); /* ties between a and b */
                    for (size_t j = 0; j < n[k]; j++) {
                        if (j % 7 == (size_t)k + 2) x[j] = NAN;
                        if (j % 13 == 4) x[j] = k ? INFINITY : -INFINITY;
                        if (x[j] == 0.0f && j % 2) x[j] = -0.0f;
                    }
                    operand[k] = x;
                }
                parity_arg args[3] = {arg_in(operand[0], n[0], 4), arg_in(operand[1], n[1], 8),
                                      arg_exact(parity_ints(out, -9, 9), out, 12)};
                parity_check(o, NN_KERNEL_COMPARE, args, 3, &p, "op %d layout %zu integer %d", op, i, integer);
            }
}

/* ---- STRIDED_COPY ---- */

/* A [4, 7, 3, 5] tensor: its permutation (0, 2, 3, 1) into a dense result;
 * its slice [1:4, 2:7:2, :, 1:4] out to a dense result and back into a
 * zeroed (or accumulated) tensor of the original shape; a [7, 1, 5] one
 * expanded to [3, 7, 4, 5]. */
void parity_strided_copy_case(nn_backend *o) {
    const int32_t shape[4] = {4, 7, 3, 5};
    int32_t dense[4];
    dense_strides(4, shape, dense);
    const size_t n = count_of(4, shape);
    for (int acc = 0; acc < 2; acc++) {
        {
            const int perm[4] = {0, 2, 3, 1};
            nn_strided_copy_params p = {.ndim = 4, .accumulate = acc};
            for (int d = 0; d < 4; d++) p.shape[d] = shape[perm[d]], p.src_stride[d] = dense[perm[d]];
            dense_strides(4, p.shape, p.dst_stride);
            parity_arg a[2] = {arg_in(parity_randoms(n, -1, 1), n, 4), arg_near(parity_randoms(n, -1, 1), n, 0, ROUNDING)};
            parity_check(o, NN_KERNEL_STRIDED_COPY, a, 2, &p, "permutation accumulate %d", acc);
        }
        {
            nn_strided_copy_params p = {.ndim = 4, .accumulate = acc, .shape = {3, 3, 3, 3}};
            const int step[4] = {1, 2, 1, 1};
            for (int d = 0; d < 4; d++) p.src_stride[d] = dense[d] * step[d];
            dense_strides(4, p.shape, p.dst_stride);
            const size_t first = (size_t)(1 * dense[0] + 2 * dense[1] + 0 * dense[2] + 1 * dense[3]);
            const size_t m = count_of(4, p.shape);
            /* the slice's first element is the view's start: the offset of its ref */
            parity_arg out[2] = {arg_in(parity_randoms(n - first, -1, 1), n - first, 4 * first),
                                 arg_near(parity_randoms(m, -1, 1), m, 8, ROUNDING)};
            parity_check(o, NN_KERNEL_STRIDED_COPY, out, 2, &p, "slice out accumulate %d", acc);
            nn_strided_copy_params back = p;
            memcpy(back.src_stride, p.dst_stride, sizeof back.src_stride);
            memcpy(back.dst_stride, p.src_stride, sizeof back.dst_stride);
            parity_arg in[2] = {arg_in(parity_randoms(m, -1, 1), m, 0),
                                arg_near(parity_randoms(n - first, -1, 1), n - first, 4 * first, ROUNDING)};
            parity_check(o, NN_KERNEL_STRIDED_COPY, in, 2, &back, "slice back accumulate %d", acc);
        }
        {
            nn_strided_copy_params p = {.ndim = 4, .accumulate = acc, .shape = {3, 7, 4, 5},
                                        .src_stride = {0, 5, 0, 1}};
            dense_strides(4, p.shape, p.dst_stride);
            const size_t m = count_of(4, p.shape);
            parity_arg a[2] = {arg_in(parity_randoms(35, -1, 1), 35, 12), arg_near(parity_randoms(m, -1, 1), m, 4, ROUNDING)};
            parity_check(o, NN_KERNEL_STRIDED_COPY, a, 2, &p, "expansion accumulate %d", acc);
        }
    }
}

/* ---- REDUCE_DIMS and REDUCE_DIMS_SCATTER ---- */

/* Which dimensions of the input each reduction combines (1), over inputs of
 * awkward sizes; the kept ones come first in the parameters, in order. */
typedef struct reduction {
    int ndim;
    int32_t shape[NN_STRIDED_DIMS];
    int reduce[NN_STRIDED_DIMS];
} reduction;

static const reduction kReductions[] = {
    {1, {1}, {1}},
    {2, {5, 301}, {0, 1}},
    {2, {301, 5}, {1, 0}},
    {4, {3, 7, 5, 4}, {1, 0, 1, 1}},
    {4, {3, 7, 5, 4}, {0, 1, 0, 0}},
    {3, {2, 1000, 3}, {0, 1, 0}},
    {3, {9, 13, 11}, {1, 1, 1}},
    {6, {2, 3, 1, 4, 2, 3}, {0, 1, 1, 0, 1, 0}},
    {2, {5000, 3}, {0, 1}},
    {2, {2, 70001}, {0, 1}}, /* few outputs of many neighbours: lanes and chunks */
};
#define REDUCTIONS (sizeof kReductions / sizeof kReductions[0])

static nn_reduce_dims_params reduce_params(const reduction *r, int op, int acc, size_t *in, size_t *out,
                                           size_t *count) {
    int32_t dense[NN_STRIDED_DIMS];
    dense_strides(r->ndim, r->shape, dense);
    nn_reduce_dims_params p = {.op = op, .accumulate = acc, .alpha = op == NN_REDUCE_SUM ? 0.25f : 1.0f};
    for (int pass = 0; pass < 2; pass++)
        for (int d = 0; d < r->ndim; d++)
            if (r->reduce[d] == pass) {
                const int at = pass ? p.kept + p.reduced++ : p.kept++;
                p.shape[at] = r->shape[d], p.stride[at] = dense[d];
            }
    *in = count_of(r->ndim, r->shape);
    *out = count_of(p.kept, p.shape);
    *count = count_of(p.reduced, p.shape + p.kept);
    return p;
}

/* Steps in [-1.5, 1.5] (many ties), with one NaN where there is room. */
static float *reduce_input(size_t n) {
    float *x = parity_steps(n, 2.0f);
    if (n > 40) x[40] = NAN;
    return x;
}

void parity_reduce_dims_case(nn_backend *o) {
    for (int op = 0; op < NN_REDUCE_OP_COUNT; op++)
        for (size_t i = 0; i < REDUCTIONS; i++)
            for (int acc = 0; acc < 2; acc++) {
                size_t in, out, count;
                const nn_reduce_dims_params p = reduce_params(&kReductions[i], op, acc, &in, &out, &count);
                const bool sum = op == NN_REDUCE_SUM;
                float *x = sum ? parity_randoms(in, -1, 1) : reduce_input(in);
                parity_arg a[3] = {arg_in(x, in, 8), arg_near(parity_randoms(out, -1, 1), out, 4, sums_tol((double)count)),
                                   given(!sum, arg_exact(parity_randoms(out, -1, 1), out, 0))};
                parity_check(o, NN_KERNEL_REDUCE_DIMS, a, 3, &p, "op %d reduction %zu accumulate %d", op, i, acc);
            }
    /* integer sums of any int32 (they wrap), exact; alpha is not applied */
    for (size_t i = 0; i < REDUCTIONS; i++)
        for (int acc = 0; acc < 2; acc++) {
            size_t in, out, count;
            nn_reduce_dims_params p = reduce_params(&kReductions[i], NN_REDUCE_SUM, acc, &in, &out, &count);
            p.integer = 1;
            parity_arg a[3] = {arg_in(parity_ints(in, INT32_MIN, INT32_MAX), in, 8),
                               arg_exact(parity_ints(out, INT32_MIN, INT32_MAX), out, 4), arg_none()};
            parity_check(o, NN_KERNEL_REDUCE_DIMS, a, 3, &p, "integer reduction %zu accumulate %d", i, acc);
        }
}

/* The winners are the CPU's maxima of random values. */
void parity_reduce_dims_scatter_case(nn_backend *o) {
    for (size_t i = 0; i < REDUCTIONS; i++) {
        size_t in, out, count;
        const nn_reduce_dims_params p = reduce_params(&kReductions[i], NN_REDUCE_MAX, 0, &in, &out, &count);
        int32_t *winners = parity_array(out * sizeof *winners);
        parity_arg f[3] = {arg_in(parity_randoms(in, -1, 1), in, 0), arg_near(parity_randoms(out, -1, 1), out, 0, 0),
                           with_cpu_after(arg_exact(parity_array(out * 4), out, 0), winners)};
        parity_cpu_outputs(NN_KERNEL_REDUCE_DIMS, f, 3, &p, "the winners a scatter case reads");
        parity_arg a[3] = {arg_in(parity_randoms(out, -1, 1), out, 4), arg_in(winners, out, 8),
                           arg_near(parity_randoms(in, -1, 1), in, 0, ROUNDING)};
        parity_check(o, NN_KERNEL_REDUCE_DIMS_SCATTER, a, 3, &p, "reduction %zu", i);
    }
}
