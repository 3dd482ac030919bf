/* The harness the backward op tests share (test_ops_backward.c,
 * test_ops_backward_pointwise.c): a case (bwd_case) names its inputs (shape,
 * how they are filled, whether each requires grad), the engine op, its
 * double-precision reference and, for inputs too large to difference, its
 * analytic gradient; bwd_run_case checks the op's result and the gradient of
 * every input against the reference. The method and tolerances are described
 * in test_ops_backward.c, which implements the harness. */
#ifndef NN_TESTS_OPS_BACKWARD_H
#define NN_TESTS_OPS_BACKWARD_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "reference.h"

#define MAX_ARGS 6

typedef enum {
    FILL_UNIFORM,   /* [-1, 1) */
    FILL_AWAY_ZERO, /* |x| in [0.05, 1) */
    FILL_DISTINCT,  /* a permutation of values 0.01 apart */
    FILL_LABELS     /* int32 in [0, classes) */
} fill_kind;

typedef struct arg_spec {
    int ndim;
    int64_t shape[NN_MAX_DIMS];
    fill_kind fill;
    bool grad;   /* requires grad: its gradient is checked */
    int classes; /* FILL_LABELS only */
} arg_spec;

/* Engine op on input tensors, and its reference on the same values in double
 * (labels arrive as doubles holding small integers). */
typedef nn_tensor *(*run_fn)(nn_tensor *const *x, const void *p);
typedef void (*ref_fn)(double *const *x, double *y, const void *p);
/* Optional analytic gradients of sum(w * ref(x)) for inputs too large to
 * difference: grads[a] is non-NULL for each input that requires grad. The
 * analytic references are themselves checked against finite differences
 * (bwd_reference_gradients_match_finite_differences). */
typedef void (*ref_grad_fn)(double *const *x, const double *w, double *const *grads,
                            const void *p);

typedef struct bwd_case {
    char what[160];
    int nargs;
    arg_spec arg[MAX_ARGS];
    int out_ndim;
    int64_t out_shape[NN_MAX_DIMS];
    run_fn run;
    ref_fn ref;
    ref_grad_fn ref_grad; /* NULL: finite differences */
    const void *p;
    int threads;
    uint64_t seed;
    bool vulkan; /* run on the Vulkan device (skipped with NN_ENGINE_TEST_VULKAN=0) */
} bwd_case;

static inline arg_spec spec(fill_kind fill, bool grad, int ndim, int64_t d0, int64_t d1, int64_t d2,
                            int64_t d3) {
    arg_spec a = {ndim, {d0, d1, d2, d3}, fill, grad, 0};
    return a;
}

static inline void set_out(bwd_case *c, int ndim, int64_t d0, int64_t d1, int64_t d2,
                           int64_t d3) {
    c->out_ndim = ndim;
    int64_t s[NN_MAX_DIMS] = {d0, d1, d2, d3};
    memcpy(c->out_shape, s, sizeof s);
}

/* Make the inputs, run forward (checked against the reference too), backward
 * from sum(y * w), and check every input's gradient. */
void bwd_run_case(const bwd_case *c);

/* Both gradient paths of a case, in double only (no engine involved): the
 * analytic one against finite differences. */
void bwd_check_reference_grads(const bwd_case *c, ref_grad_fn analytic);

/* bwd_check_reference_grads for the analytic gradient of every pointwise op
 * (test_ops_backward_pointwise.c); part of
 * bwd_reference_gradients_match_finite_differences. */
void bwd_check_pointwise_reference_grads(void);

#endif
