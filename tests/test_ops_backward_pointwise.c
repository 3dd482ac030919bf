/* Backward pass of the view, pointwise, softmax, loss and reduction ops
 * (flatten, reshape, relu, add, mul, scale, sum, mean, softmax,
 * softmax_cross_entropy) against finite differences of the references in
 * reference.c, and for large inputs against their analytic gradients, through
 * the harness of ops_backward.h (test_ops_backward.c describes the method and
 * the tolerances). */
#include <stdlib.h>
#include <string.h>

#include "ops_backward.h"

/* ---- views ---- */

typedef struct view_p {
    int ndim;
    int64_t shape[NN_MAX_DIMS];
    int64_t n;
    float factor; /* 0: view the leaf itself; else view scale(x, factor) */
} view_p;

static nn_tensor *run_flatten(nn_tensor *const *x, const void *p) {
    const view_p *q = p;
    return nn_flatten(q->factor ? nn_scale(x[0], q->factor) : x[0]);
}

static nn_tensor *run_reshape(nn_tensor *const *x, const void *p) {
    const view_p *q = p;
    return nn_reshape(q->factor ? nn_scale(x[0], q->factor) : x[0], q->ndim, q->shape);
}

static void ref_view_op(double *const *x, double *y, const void *p) {
    const view_p *q = p;
    ref_scale(x[0], q->factor ? q->factor : 1.0, y, q->n);
}

TEST(bwd_flatten_and_reshape) {
    static const struct {
        bool flatten;
        view_p q;
        int in_ndim, out_ndim;
        int64_t in[4], out[4];
    } cases[] = {
        {true, {0, {0}, 120, 0}, 4, 2, {2, 3, 4, 5}, {2, 60}},
        {true, {0, {0}, 18, 1.5f}, 4, 2, {1, 2, 3, 3}, {1, 18}},
        {false, {2, {-1, 4}, 24, 0}, 3, 2, {2, 3, 4}, {6, 4}},
        {false, {3, {3, -1, 2}, 24, -0.5f}, 2, 3, {4, 6}, {3, 4, 2}},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        const int64_t *s = cases[i].in, *o = cases[i].out;
        bwd_case c = {.nargs = 1, .run = cases[i].flatten ? run_flatten : run_reshape,
                      .ref = ref_view_op, .p = &cases[i].q, .threads = 1 + i % 2,
                      .seed = 2600 + (uint64_t)i};
        snprintf(c.what, sizeof c.what, "%s case %d", cases[i].flatten ? "flatten" : "reshape", i);
        c.arg[0] = spec(FILL_UNIFORM, true, cases[i].in_ndim, s[0], s[1], s[2], s[3]);
        set_out(&c, cases[i].out_ndim, o[0], o[1], o[2], o[3]);
        bwd_run_case(&c);
    }
}

/* ---- pointwise, softmax, loss, reductions ---- */

typedef struct pw_p {
    int64_t n, rows;
    int cols;
    float factor;
} pw_p;

static nn_tensor *run_relu(nn_tensor *const *x, const void *p) { (void)p; return nn_relu(x[0]); }
static nn_tensor *run_softmax(nn_tensor *const *x, const void *p) { (void)p; return nn_softmax(x[0]); }
static nn_tensor *run_add(nn_tensor *const *x, const void *p) { (void)p; return nn_add(x[0], x[1]); }
static nn_tensor *run_mul(nn_tensor *const *x, const void *p) { (void)p; return nn_mul(x[0], x[1]); }
static nn_tensor *run_square(nn_tensor *const *x, const void *p) { (void)p; return nn_mul(x[0], x[0]); }
static nn_tensor *run_sum(nn_tensor *const *x, const void *p) { (void)p; return nn_sum(x[0]); }
static nn_tensor *run_mean(nn_tensor *const *x, const void *p) { (void)p; return nn_mean(x[0]); }
static nn_tensor *run_ce(nn_tensor *const *x, const void *p) {
    (void)p;
    return nn_softmax_cross_entropy(x[0], x[1]);
}
static nn_tensor *run_scale(nn_tensor *const *x, const void *p) {
    return nn_scale(x[0], ((const pw_p *)p)->factor);
}

static void ref_relu_op(double *const *x, double *y, const void *p) {
    ref_relu(x[0], y, ((const pw_p *)p)->n);
}
static void ref_softmax_op(double *const *x, double *y, const void *p) {
    const pw_p *q = p;
    ref_softmax(x[0], y, q->rows, q->cols);
}
static void ref_add_op(double *const *x, double *y, const void *p) {
    ref_add(x[0], x[1], y, ((const pw_p *)p)->n);
}
static void ref_mul_op(double *const *x, double *y, const void *p) {
    ref_mul(x[0], x[1], y, ((const pw_p *)p)->n);
}
static void ref_square_op(double *const *x, double *y, const void *p) {
    ref_mul(x[0], x[0], y, ((const pw_p *)p)->n);
}
static void ref_scale_op(double *const *x, double *y, const void *p) {
    const pw_p *q = p;
    ref_scale(x[0], q->factor, y, q->n);
}
static void ref_sum_op(double *const *x, double *y, const void *p) {
    y[0] = ref_sum(x[0], ((const pw_p *)p)->n);
}
static void ref_mean_op(double *const *x, double *y, const void *p) {
    y[0] = ref_mean(x[0], ((const pw_p *)p)->n);
}
static void ref_ce_op(double *const *x, double *y, const void *p) {
    const pw_p *q = p;
    int32_t *labels = calloc((size_t)q->rows, sizeof *labels);
    for (int64_t r = 0; r < q->rows; r++) labels[r] = (int32_t)x[1][r];
    y[0] = ref_softmax_ce(x[0], labels, (int)q->rows, q->cols);
    free(labels);
}

static nn_tensor *run_square_of_result(nn_tensor *const *x, const void *p) {
    (void)p;
    nn_tensor *h = nn_scale(x[0], 1.5f); /* a non-leaf used twice by one op */
    return nn_mul(h, h);
}
static void ref_square_of_result_op(double *const *x, double *y, const void *p) {
    const pw_p *q = p;
    for (int64_t i = 0; i < q->n; i++) y[i] = 2.25 * x[0][i] * x[0][i];
}

/* Analytic gradients of sum(w * op(x)), for sizes too large to difference. */
static void grad_add(double *const *x, const double *w, double *const *g, const void *p) {
    (void)x;
    for (int64_t i = 0; i < ((const pw_p *)p)->n; i++) {
        g[0][i] = w[i];
        if (g[1]) g[1][i] = w[i];
    }
}
static void grad_mul(double *const *x, const double *w, double *const *g, const void *p) {
    for (int64_t i = 0; i < ((const pw_p *)p)->n; i++) {
        g[0][i] = w[i] * x[1][i];
        if (g[1]) g[1][i] = w[i] * x[0][i];
    }
}
static void grad_square(double *const *x, const double *w, double *const *g, const void *p) {
    for (int64_t i = 0; i < ((const pw_p *)p)->n; i++) g[0][i] = 2 * w[i] * x[0][i];
}
static void grad_square_of_result(double *const *x, const double *w, double *const *g,
                                  const void *p) {
    for (int64_t i = 0; i < ((const pw_p *)p)->n; i++) g[0][i] = 4.5 * w[i] * x[0][i];
}
static void grad_relu(double *const *x, const double *w, double *const *g, const void *p) {
    for (int64_t i = 0; i < ((const pw_p *)p)->n; i++) g[0][i] = x[0][i] > 0 ? w[i] : 0.0;
}
static void grad_scale(double *const *x, const double *w, double *const *g, const void *p) {
    (void)x;
    const pw_p *q = p;
    for (int64_t i = 0; i < q->n; i++) g[0][i] = q->factor * w[i];
}
static void grad_sum(double *const *x, const double *w, double *const *g, const void *p) {
    (void)x;
    for (int64_t i = 0; i < ((const pw_p *)p)->n; i++) g[0][i] = w[0];
}
static void grad_mean(double *const *x, const double *w, double *const *g, const void *p) {
    (void)x;
    const pw_p *q = p;
    for (int64_t i = 0; i < q->n; i++) g[0][i] = w[0] / (double)q->n;
}
static void grad_softmax(double *const *x, const double *w, double *const *g, const void *p) {
    const pw_p *q = p;
    double *y = ref_alloc_d(q->n);
    ref_softmax(x[0], y, q->rows, q->cols);
    for (int64_t r = 0; r < q->rows; r++) { /* dx = y * (w - sum(w * y)) per row */
        const double *yr = y + r * q->cols, *wr = w + r * q->cols;
        double dot = ref_dot(wr, yr, q->cols);
        for (int j = 0; j < q->cols; j++) g[0][r * q->cols + j] = yr[j] * (wr[j] - dot);
    }
    free(y);
}

/* A unary or binary op on tensors of one shape. */
typedef struct pw_case {
    const char *name;
    run_fn run;
    ref_fn ref;
    ref_grad_fn grad;
    int nargs;
    fill_kind fill;
    bool grad_b;     /* the second argument requires grad */
    float factor;    /* for scale */
    bool scalar_out; /* a reduction */
} pw_case;

enum {
    PW_RELU, PW_ADD, PW_ADD_B_CONST, PW_MUL, PW_MUL_B_CONST, PW_SQUARE, PW_SQUARE_RESULT,
    PW_SCALE_NEG, PW_SCALE_SMALL, PW_SUM, PW_MEAN, PW_SOFTMAX, PW_COUNT
};

static const pw_case pw_ops[PW_COUNT] = {
    [PW_RELU] = {"relu", run_relu, ref_relu_op, grad_relu, 1, FILL_AWAY_ZERO, false, 0, false},
    [PW_ADD] = {"add", run_add, ref_add_op, grad_add, 2, FILL_UNIFORM, true, 0, false},
    [PW_ADD_B_CONST] = {"add (b constant)", run_add, ref_add_op, grad_add, 2, FILL_UNIFORM,
                        false, 0, false},
    [PW_MUL] = {"mul", run_mul, ref_mul_op, grad_mul, 2, FILL_UNIFORM, true, 0, false},
    [PW_MUL_B_CONST] = {"mul (b constant)", run_mul, ref_mul_op, grad_mul, 2, FILL_UNIFORM,
                        false, 0, false},
    [PW_SQUARE] = {"mul(x, x)", run_square, ref_square_op, grad_square, 1, FILL_UNIFORM, false,
                   0, false},
    [PW_SQUARE_RESULT] = {"mul(h, h) with h = 1.5x", run_square_of_result,
                          ref_square_of_result_op, grad_square_of_result, 1, FILL_UNIFORM,
                          false, 0, false},
    [PW_SCALE_NEG] = {"scale(-2.5)", run_scale, ref_scale_op, grad_scale, 1, FILL_UNIFORM, false,
                      -2.5f, false},
    [PW_SCALE_SMALL] = {"scale(0.3)", run_scale, ref_scale_op, grad_scale, 1, FILL_UNIFORM,
                        false, 0.3f, false},
    [PW_SUM] = {"sum", run_sum, ref_sum_op, grad_sum, 1, FILL_UNIFORM, false, 0, true},
    [PW_MEAN] = {"mean", run_mean, ref_mean_op, grad_mean, 1, FILL_UNIFORM, false, 0, true},
    [PW_SOFTMAX] = {"softmax", run_softmax, ref_softmax_op, grad_softmax, 1, FILL_UNIFORM, false,
                    0, false},
};

/* The case for op k on `shape`; q receives the sizes the functions read. */
static void pw_setup(bwd_case *c, pw_p *q, const pw_case *k, int ndim, const int64_t *shape,
                     int threads, uint64_t seed) {
    int64_t s[NN_MAX_DIMS] = {0};
    memcpy(s, shape, (size_t)ndim * sizeof *s);
    *q = (pw_p){ref_numel(ndim, s), ref_numel(ndim, s) / s[ndim - 1], (int)s[ndim - 1], k->factor};
    *c = (bwd_case){.nargs = k->nargs, .run = k->run, .ref = k->ref, .p = q, .threads = threads,
                    .seed = seed};
    snprintf(c->what, sizeof c->what, "%s of %lld elements", k->name, (long long)q->n);
    c->arg[0] = spec(k->fill, true, ndim, s[0], s[1], s[2], s[3]);
    c->arg[1] = spec(k->fill, k->grad_b, ndim, s[0], s[1], s[2], s[3]);
    if (k->scalar_out)
        set_out(c, 1, 1, 0, 0, 0);
    else
        set_out(c, ndim, s[0], s[1], s[2], s[3]);
}

static const struct {
    int ndim;
    int64_t shape[NN_MAX_DIMS];
} bwd_shapes[] = {{1, {1}}, {2, {3, 7}}, {4, {2, 3, 4, 5}}, {2, {1, 13}}, {2, {4, 33}}};
#define BWD_SHAPES ((int)(sizeof bwd_shapes / sizeof bwd_shapes[0]))

/* Ops `first`..`last` of pw_ops on every shape of bwd_shapes, by finite differences. */
static void bwd_pointwise(int first, int last, uint64_t seed) {
    for (int op = first; op <= last; op++)
        for (int i = 0; i < BWD_SHAPES; i++) {
            bwd_case c;
            pw_p q;
            pw_setup(&c, &q, &pw_ops[op], bwd_shapes[i].ndim, bwd_shapes[i].shape,
                     1 + (op + i) % 2, seed + (uint64_t)(10 * op + i));
            bwd_run_case(&c);
        }
}

TEST(bwd_relu) { bwd_pointwise(PW_RELU, PW_RELU, 2700); }
TEST(bwd_add) { bwd_pointwise(PW_ADD, PW_ADD_B_CONST, 2700); }
TEST(bwd_mul) { bwd_pointwise(PW_MUL, PW_MUL_B_CONST, 2700); }
TEST(bwd_mul_same_tensor_twice_accumulates) { bwd_pointwise(PW_SQUARE, PW_SQUARE_RESULT, 2700); }
TEST(bwd_scale) { bwd_pointwise(PW_SCALE_NEG, PW_SCALE_SMALL, 2700); }
TEST(bwd_sum_and_mean) { bwd_pointwise(PW_SUM, PW_MEAN, 2700); }
TEST(bwd_softmax) { bwd_pointwise(PW_SOFTMAX, PW_SOFTMAX, 2700); }

TEST(bwd_pointwise_large_analytic) {
    /* More elements than a thread's chunk, with odd row lengths. */
    static const int64_t shape[2] = {65, 1025};
    for (int op = 0; op < PW_COUNT; op++) {
        bwd_case c;
        pw_p q;
        pw_setup(&c, &q, &pw_ops[op], 2, shape, 2 - op % 2, 2780 + (uint64_t)op);
        c.ref_grad = pw_ops[op].grad;
        bwd_run_case(&c);
    }
}

TEST(bwd_softmax_cross_entropy) {
    static const int sizes[][2] = {{1, 1}, {1, 10}, {3, 7}, {17, 10}, {4, 33}};
    for (int i = 0; i < (int)(sizeof sizes / sizeof sizes[0]); i++) {
        int rows = sizes[i][0], cols = sizes[i][1];
        pw_p q = {(int64_t)rows * cols, rows, cols, 0};
        bwd_case c = {.nargs = 2, .run = run_ce, .ref = ref_ce_op, .p = &q, .threads = 1 + i % 2,
                      .seed = 2800 + (uint64_t)i};
        snprintf(c.what, sizeof c.what, "softmax_cross_entropy %d x %d", rows, cols);
        c.arg[0] = spec(FILL_UNIFORM, true, 2, rows, cols, 0, 0);
        c.arg[1] = spec(FILL_LABELS, false, 1, rows, 0, 0, 0);
        c.arg[1].classes = cols;
        set_out(&c, 1, 1, 0, 0, 0);
        bwd_run_case(&c);
    }
}

/* ---- the analytic gradients above, against finite differences ---- */

/* The pointwise part of bwd_reference_gradients_match_finite_differences
 * (test_ops_backward.c). */
void bwd_check_pointwise_reference_grads(void) {
    static const int64_t shape[2] = {3, 7};
    for (int op = 0; op < PW_COUNT; op++) {
        bwd_case c;
        pw_p q;
        pw_setup(&c, &q, &pw_ops[op], 2, shape, 1, 2970 + (uint64_t)op);
        bwd_check_reference_grads(&c, pw_ops[op].grad);
    }
}
