/* The parity cases of softmax / log_softmax along any dimension and of the
 * class-target negative log-likelihood (kernels.h's nn_softmax_dim_params,
 * nn_nll_params): rows along the first, a middle and the last dimension at
 * awkward sizes, one-element rows, wide contiguous rows, a large logit; targets with ignore_index
 * hits, weights given and absent, label smoothing, every reduction. */
#include "parity_cases.h"
#include "parity_harness.h"

/* the last two: contiguous rows a workgroup each on Vulkan, wider than it and not a multiple */
static const int kRows[][3] = {{1, 1, 1}, {1, 7, 1}, {3, 5, 7}, {2, 13, 1}, {1, 3, 301}, {17, 1, 4}, {4, 300, 3},
                               {70, 37, 1}, {5, 1003, 1}};
#define ROW_SHAPES (sizeof kRows / sizeof kRows[0])

static float *logits_of(size_t n) {
    float *x = parity_randoms(n, -8, 8);
    x[0] += 1000.0f; /* must not overflow */
    return x;
}

void parity_softmax_dim_forward_case(nn_backend *o) {
    for (size_t s = 0; s < ROW_SHAPES; s++)
        for (int log = 0; log < 2; log++) {
            const nn_softmax_dim_params p = {.outer = kRows[s][0], .size = kRows[s][1], .inner = kRows[s][2],
                                             .log = log};
            const size_t n = (size_t)p.outer * p.size * p.inner;
            parity_arg a[2] = {arg_in(logits_of(n), n, 4), arg_near(parity_randoms(n, -1, 1), n, 0, sums_tol(p.size))};
            parity_check(o, NN_KERNEL_SOFTMAX_DIM_FORWARD, a, 2, &p, "[%d, %d, %d] log %d", p.outer, p.size, p.inner,
                         log);
        }
}

void parity_softmax_dim_backward_case(nn_backend *o) {
    for (size_t s = 0; s < ROW_SHAPES; s++)
        for (int variant = 0; variant < 4; variant++) { /* bits: log, accumulate */
            const int log = variant & 1, acc = variant >> 1;
            const nn_softmax_dim_params p = {.outer = kRows[s][0], .size = kRows[s][1], .inner = kRows[s][2],
                                             .log = log, .accumulate = acc};
            const size_t n = (size_t)p.outer * p.size * p.inner;
            float *y = parity_array(n * 4);
            parity_arg fwd[2] = {arg_in(parity_randoms(n, -6, 6), n, 0), with_cpu_after(arg_near(y, n, 0, 0.0), y)};
            parity_cpu_outputs(NN_KERNEL_SOFTMAX_DIM_FORWARD, fwd, 2, &p, "the output a backward case reads");
            parity_arg a[3] = {arg_in(y, n, 8), arg_in(parity_randoms(n, -1, 1), n, 0),
                               arg_near(parity_randoms(n, -1, 1), n, 4, sums_tol(p.size + 1.0))};
            parity_check(o, NN_KERNEL_SOFTMAX_DIM_BACKWARD, a, 3, &p, "[%d, %d, %d] log %d accumulate %d", p.outer,
                         p.size, p.inner, log, acc);
        }
}

/* [outer, classes, inner]: classification, one sample, spatial, many positions */
static const int kClasses[][3] = {{1, 1, 1}, {1, 7, 1}, {13, 7, 1}, {2, 5, 15}, {3, 11, 301}, {600, 3, 1}};
#define CLASS_SHAPES (sizeof kClasses / sizeof kClasses[0])

/* Targets in [0, classes), about one in five ignore_index (-100 or 2). */
static int32_t *targets_of(size_t positions, int classes, int ignore_index) {
    int32_t *t = parity_labels_of(positions, classes);
    for (size_t i = 3; i < positions; i += 5) t[i] = ignore_index;
    return t;
}

static nn_nll_params nll_params(size_t s, int variant, int reduction) {
    return (nn_nll_params){.outer = kClasses[s][0], .classes = kClasses[s][1], .inner = kClasses[s][2],
                           .ignore_index = (variant & 4) ? 2 : -100, .reduction = reduction,
                           .smoothing = (variant & 2) ? 0.1f : 0.0f};
}

void parity_nll_forward_case(nn_backend *o) {
    for (size_t s = 0; s < CLASS_SHAPES; s++)
        for (int variant = 0; variant < 8; variant++) /* bits: weight, smoothing, ignore_index 2 */
            for (int reduction = 0; reduction < 3; reduction++) {
                const nn_nll_params p = nll_params(s, variant, reduction);
                const size_t c = (size_t)p.classes, positions = (size_t)p.outer * p.inner, n = positions * c;
                const size_t outs = reduction == 0 ? positions : 1;
                parity_arg a[5] = {arg_in(parity_randoms(n, -6, 0), n, 4),
                                   arg_in(targets_of(positions, p.classes, p.ignore_index), positions, 8),
                                   given(variant & 1, arg_in(parity_randoms(c, 0.1f, 2), c, 0)),
                                   arg_near(parity_randoms(outs, -1, 1), outs, 12, sums_tol((double)positions * c)),
                                   given(reduction != 0, arg_near(parity_randoms(1, -1, 1), 1, 4,
                                                                  sums_tol((double)positions)))};
                parity_check(o, NN_KERNEL_NLL_FORWARD, a, 5, &p, "[%d, %d, %d] variant %d reduction %d", p.outer,
                             p.classes, p.inner, variant, reduction);
            }
}

void parity_nll_backward_case(nn_backend *o) {
    for (size_t s = 0; s < CLASS_SHAPES; s++)
        for (int variant = 0; variant < 16; variant++) /* bits: weight, smoothing, ignore_index 2, accumulate */
            for (int reduction = 0; reduction < 3; reduction++) {
                nn_nll_params p = nll_params(s, variant, reduction);
                p.accumulate = variant >> 3;
                const size_t c = (size_t)p.classes, positions = (size_t)p.outer * p.inner, n = positions * c;
                const size_t ins = reduction == 0 ? positions : 1;
                parity_arg a[5] = {arg_in(parity_randoms(ins, -2, 2), ins, 0),
                                   arg_in(targets_of(positions, p.classes, p.ignore_index), positions, 4),
                                   given(variant & 1, arg_in(parity_randoms(c, 0.1f, 2), c, 8)),
                                   given(reduction == 1, arg_in(parity_randoms(1, 1, 9), 1, 12)),
                                   arg_near(parity_randoms(n, -1, 1), n, 4, 1e-6)};
                parity_check(o, NN_KERNEL_NLL_BACKWARD, a, 5, &p, "[%d, %d, %d] variant %d reduction %d", p.outer,
                             p.classes, p.inner, variant, reduction);
            }
}
