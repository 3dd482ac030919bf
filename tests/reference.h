/* Double-precision reference implementations of the operations, written as
 * plain loops with no cleverness, plus the helpers the operation tests share:
 * a seeded random generator, tensor <-> array copies and array comparison.
 * The engine computes in float32; comparing it with these references (and
 * with finite differences of them) is how the op tests judge it. */
#ifndef NN_TESTS_REFERENCE_H
#define NN_TESTS_REFERENCE_H

#include <stdbool.h>
#include <stdint.h>

#include "nn_engine.h"
#include "test.h"

/* ---- random numbers (splitmix64: seeded, the same on every platform) ---- */

typedef struct ref_rng {
    uint64_t state;
} ref_rng;

ref_rng ref_rng_new(uint64_t seed);
uint64_t ref_rng_next(ref_rng *r);
/* Uniform in [lo, hi). */
double ref_rng_uniform(ref_rng *r, double lo, double hi);
/* Uniform in [0, n). */
int64_t ref_rng_below(ref_rng *r, int64_t n);

/* x[i] uniform in [lo, hi). */
void ref_fill_uniform(ref_rng *r, float *x, int64_t n, float lo, float hi);
/* Uniform in [-hi, -min_abs] u [min_abs, hi]: keeps values off a kink at 0. */
void ref_fill_away_from_zero(ref_rng *r, float *x, int64_t n, float min_abs, float hi);
/* A random permutation of n distinct values spaced `spacing` apart, centred
 * on 0: no two elements are closer than `spacing` (no near-ties for max). */
void ref_fill_distinct(ref_rng *r, float *x, int64_t n, float spacing);
/* Integers uniform in [0, classes). */
void ref_fill_labels(ref_rng *r, int32_t *x, int64_t n, int32_t classes);

/* ---- allocation and conversion ---- */

/* Zeroed arrays; the process exits if memory runs out (tests only). */
float *ref_alloc_f(int64_t n);
double *ref_alloc_d(int64_t n);
void ref_f2d(const float *x, double *y, int64_t n);
double ref_max_abs(const double *x, int64_t n);
int64_t ref_numel(int ndim, const int64_t *shape);

/* The same values as float32 (what the engine gets) and as double (what the
 * reference gets). */
typedef struct ref_data {
    int64_t n;
    float *f;
    double *d;
} ref_data;

/* n zeros. */
ref_data ref_data_new(int64_t n);
/* n values uniform in [lo, hi). */
ref_data ref_data_uniform(ref_rng *r, int64_t n, float lo, float hi);
/* Copy .f into .d after filling .f by other means. */
void ref_data_sync(ref_data *a);
void ref_data_free(ref_data *a);

/* ---- engine tensors ---- */

/* A CPU context with this many threads; NULL (and a test failure) if it
 * cannot be opened. */
nn_ctx *ref_ctx(int threads);

nn_tensor *ref_tensor_f32(nn_ctx *ctx, int ndim, const int64_t *shape, const float *data);
nn_tensor *ref_tensor_i32(nn_ctx *ctx, int ndim, const int64_t *shape, const int32_t *data);
/* Read a float32 tensor of exactly n elements into doubles; false (and a
 * test failure naming `what`) when the tensor is NULL, of another size, or
 * the read fails. */
bool ref_read_tensor(const nn_tensor *t, double *out, int64_t n, const char *what);
/* True when t has exactly this shape; otherwise records a test failure. */
bool ref_check_shape(const nn_tensor *t, int ndim, const int64_t *shape, const char *what);

/* ---- comparison ---- */

/* Element i passes when |got - want| <= atol + rtol * |want|. */
typedef struct ref_cmp {
    double worst;  /* max over i of |got - want| / (atol + rtol * |want|); > 1 fails */
    int64_t index; /* where the worst ratio is */
    double got, want;
    int64_t bad;   /* how many elements fail */
    bool nonfinite; /* got holds a NaN or an infinity */
} ref_cmp;

ref_cmp ref_compare(const double *got, const double *want, int64_t n, double rtol,
                    double atol);

#define CHECK_ALL_CLOSE(what, got_arr, want_arr, n, rtol, atol)                            \
    do {                                                                                     \
        ref_cmp c_ = ref_compare((got_arr), (want_arr), (n), (rtol), (atol));                \
        CHECK_MSG(c_.worst <= 1.0 && !c_.nonfinite,                                          \
                  "%s: %lld of %lld elements off; worst [%lld] got %.9g want %.9g "         \
                  "(rtol %g, atol %g)",                                                     \
                  (what), (long long)c_.bad, (long long)(n), (long long)c_.index, c_.got,   \
                  c_.want, (double)(rtol), (double)(atol));                                 \
    } while (0)

/* ---- reference operations (double in, double out) ---- */

/* c[M, N] = op(a) op(b); a is [M, K] ([K, M] when ta), b is [K, N] ([N, K] when tb). */
void ref_matmul(const double *a, const double *b, double *c, int m, int n, int k, bool ta,
                bool tb);
/* Gradients of ref_matmul given dc = d loss / dc: da and db (same layouts
 * as a and b; either may be NULL). */
void ref_matmul_backward(const double *a, const double *b, const double *dc, double *da,
                         double *db, int m, int n, int k, bool ta, bool tb);
/* y[o, c, i] = x[o, c, i] + bias[c] for x [outer, channels, inner]. */
void ref_add_bias(const double *x, const double *bias, double *y, int64_t outer, int channels,
                  int64_t inner);
/* y[N, out] = x[N, in] w[out, in]^T + bias (bias may be NULL). */
void ref_linear(const double *x, const double *w, const double *bias, double *y, int n,
                int in, int out);

typedef struct ref_conv {
    int n, c, h, w;      /* input [n, c, h, w] */
    int oc, kh, kw;      /* weight [oc, c, kh, kw] */
    int sh, sw, ph, pw;  /* stride and zero padding */
} ref_conv;
int ref_conv_oh(const ref_conv *g);
int ref_conv_ow(const ref_conv *g);
/* Cross-correlation as PyTorch; bias may be NULL. y is [n, oc, oh, ow]. */
void ref_conv2d(const double *x, const double *w, const double *bias, double *y,
                const ref_conv *g);

/* Gradients of ref_conv2d given dy: dx, dw, dbias (any may be NULL). */
void ref_conv2d_backward(const double *x, const double *w, const double *dy, double *dx,
                         double *dw, double *dbias, const ref_conv *g);

typedef struct ref_pool {
    int n, c, h, w;
    int k, s, p;
} ref_pool;
int ref_pool_oh(const ref_pool *g);
int ref_pool_ow(const ref_pool *g);
/* Max over each window; padding never wins; ties: the first maximum in
 * row-major window order wins. argmax (may be NULL) gets the flat input index
 * of each output's winner. */
void ref_maxpool2d(const double *x, double *y, int64_t *argmax, const ref_pool *g);

void ref_relu(const double *x, double *y, int64_t n);
/* Softmax over the last dimension of x [rows, cols]. */
void ref_softmax(const double *x, double *y, int64_t rows, int cols);
/* Mean over rows of -log softmax(logits[r])[labels[r]]. */
double ref_softmax_ce(const double *logits, const int32_t *labels, int rows, int cols);
void ref_add(const double *a, const double *b, double *y, int64_t n);
void ref_mul(const double *a, const double *b, double *y, int64_t n);
void ref_scale(const double *x, double factor, double *y, int64_t n);
double ref_sum(const double *x, int64_t n);
double ref_mean(const double *x, int64_t n);
/* sum_i w[i] * y[i]: the scalar the backward tests differentiate. */
double ref_dot(const double *w, const double *y, int64_t n);

/* nn_lenet5's forward written with the operations themselves, on the
 * module's parameters (c1, c2, l1, l2, l3: weight then bias each): what
 * the fusion tests compare the module with. */
nn_tensor *ref_lenet5_by_ops(nn_module *net, nn_tensor *x);

#endif
