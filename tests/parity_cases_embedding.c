/* The kernel parity test's cases for the EMBEDDING_* kernels
 * (parity_cases.h): lookups of repeated indices at odd sizes, and the
 * deterministic gradient (exact: both backends add each row's terms in
 * index order) with and without accumulate, with and without a padding
 * row, one index and many. */
#include <stdint.h>

#include "parity_cases.h"
#include "parity_harness.h"

static const int kSizes[][4] = {
    /* indices, num, dim, padding_idx */
    {1, 1, 1, -1},
    {13, 7, 5, 3},   /* repeated indices, a padding row among them */
    {40, 11, 3, -1},
    {6, 97, 33, 0},  /* most rows never picked */
    {3000, 5, 261, 2}, /* long rows to sort (past a workgroup), wider than one */
    {900, 1000, 3, -1}, /* more rows than a workgroup's invocations to count through */
};
#define SIZES (sizeof kSizes / sizeof kSizes[0])

static nn_embedding_params params_of(size_t i, int accumulate) {
    const int *c = kSizes[i];
    return (nn_embedding_params){.count = c[0], .num = c[1], .dim = c[2], .padding_idx = c[3],
                                 .accumulate = accumulate};
}

void parity_embedding_forward_case(nn_backend *o) {
    for (size_t i = 0; i < SIZES; i++) {
        const nn_embedding_params p = params_of(i, 0);
        const size_t out = (size_t)p.count * p.dim, weight = (size_t)p.num * p.dim;
        parity_arg a[3] = {arg_in(parity_labels_of((size_t)p.count, p.num), (size_t)p.count, 4),
                           arg_in(parity_randoms(weight, -1, 1), weight, 8),
                           arg_exact(parity_randoms(out, -1, 1), out, 0)};
        parity_check(o, NN_KERNEL_EMBEDDING_FORWARD, a, 3, &p, "%lld indices into %d x %d", (long long)p.count,
                     p.num, p.dim);
    }
}

void parity_embedding_backward_case(nn_backend *o) {
    for (size_t i = 0; i < SIZES; i++)
        for (int accumulate = 0; accumulate < 2; accumulate++) {
            const nn_embedding_params p = params_of(i, accumulate);
            const size_t dy = (size_t)p.count * p.dim, weight = (size_t)p.num * p.dim;
            parity_arg a[3] = {arg_in(parity_labels_of((size_t)p.count, p.num), (size_t)p.count, 0),
                               arg_in(parity_randoms(dy, -1, 1), dy, 12),
                               arg_exact(parity_randoms(weight, -1, 1), weight, 4)};
            parity_check(o, NN_KERNEL_EMBEDDING_BACKWARD, a, 3, &p, "%lld indices into %d x %d padding %d accumulate %d",
                         (long long)p.count, p.num, p.dim, p.padding_idx, accumulate);
        }
}
