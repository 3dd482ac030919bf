/* Backward pass of every operation against central finite differences of the
 * double-precision references in reference.c.
 *
 * Each case builds y = op(inputs) in the engine, then loss = sum(y * w) with a
 * fixed random w (so the upstream gradient is not all ones), runs
 * nn_backward(loss) and compares the gradient of every input that requires
 * grad with d/dx_i sum(w * ref(x)), differenced in double with eps = 1e-6.
 * In double that difference is exact to ~1e-8 (truncation ~eps^2, rounding
 * ~1e-16 / eps), so what is left is the engine's float32 rounding: we allow
 * GRAD_RTOL relative plus an absolute floor of GRAD_ATOL times the largest
 * gradient of that input (a float32 sum of many products can lose absolute,
 * not relative, precision when it cancels to near zero).
 *
 * Inputs are kept away from kinks: relu inputs satisfy |x| >= 0.05, max-pool
 * inputs are distinct values spaced 0.01 apart, so a 1e-6 step never changes
 * which branch or which maximum is taken. Inputs that do not require grad
 * must get no gradient.
 *
 * This file holds the harness (declared in ops_backward.h) and the cases of
 * the layer ops: matmul, add_bias, linear, conv2d, maxpool2d, a small
 * network of them, and the check of the analytic references against finite
 * differences. The views, pointwise ops, softmax, the loss and the
 * reductions are in test_ops_backward_pointwise.c. */
#include <stdlib.h>
#include <string.h>

#include "ops_backward.h"
#include "vulkan_harness.h"

#define FD_EPS 1e-6
#define GRAD_RTOL 1e-3
#define GRAD_ATOL 1e-4
#define FWD_RTOL 1e-4
#define FWD_ATOL 1e-4

/* d/dx_i sum(w * ref(x)) for every element i of argument a, by central
 * differences in double. */
static void finite_diff(const bwd_case *c, double *const *x, int a, const double *w,
                        int64_t out_n, double *grad) {
    double *y = ref_alloc_d(out_n);
    int64_t n = ref_numel(c->arg[a].ndim, c->arg[a].shape);
    for (int64_t i = 0; i < n; i++) {
        double saved = x[a][i];
        x[a][i] = saved + FD_EPS;
        c->ref(x, y, c->p);
        double plus = ref_dot(w, y, out_n);
        x[a][i] = saved - FD_EPS;
        c->ref(x, y, c->p);
        double minus = ref_dot(w, y, out_n);
        x[a][i] = saved;
        grad[i] = (plus - minus) / (2 * FD_EPS);
    }
    free(y);
}

/* Check the gradient the engine left on argument a against `want`. */
static void check_arg_grad(const bwd_case *c, nn_tensor *t, int a, const double *want) {
    const arg_spec *s = &c->arg[a];
    nn_tensor *g = nn_tensor_grad(t);
    char what[200];
    snprintf(what, sizeof what, "%s: grad of input %d", c->what, a);
    if (!s->grad) {
        CHECK_MSG(g == NULL, "%s: input without requires_grad got a gradient", what);
        return;
    }
    if (!ref_check_shape(g, s->ndim, s->shape, what)) return;
    int64_t n = ref_numel(s->ndim, s->shape);
    double *got = ref_alloc_d(n);
    if (ref_read_tensor(g, got, n, what)) {
        double floor = GRAD_ATOL * fmax(1.0, ref_max_abs(want, n));
        CHECK_ALL_CLOSE(what, got, want, n, GRAD_RTOL, floor);
    }
    free(got);
}

/* The expected gradient of every input that requires grad (NULL for others). */
static void expected_grads(const bwd_case *c, double *const *x, const double *w, int64_t out_n,
                           double **grads) {
    for (int a = 0; a < c->nargs; a++)
        grads[a] = c->arg[a].grad ? ref_alloc_d(ref_numel(c->arg[a].ndim, c->arg[a].shape))
                                  : NULL;
    if (c->ref_grad) {
        c->ref_grad(x, w, grads, c->p);
        return;
    }
    for (int a = 0; a < c->nargs; a++)
        if (grads[a]) finite_diff(c, x, a, w, out_n, grads[a]);
}

/* The op's result has the expected shape (any one-element shape will do for
 * a scalar: the API promises only "a one-element tensor"). */
static bool out_matches(const nn_tensor *y, const bwd_case *c) {
    if (ref_numel(c->out_ndim, c->out_shape) == 1) {
        CHECK_MSG(nn_tensor_numel(y) == 1, "%s: %lld elements, want 1", c->what,
                  (long long)nn_tensor_numel(y));
        return nn_tensor_numel(y) == 1;
    }
    return ref_check_shape(y, c->out_ndim, c->out_shape, c->what);
}

void bwd_run_case(const bwd_case *c) {
    if (c->vulkan && vkt_skipped()) return;
    nn_ctx *ctx = c->vulkan ? nn_ctx_new(&(nn_ctx_options){.device = "vulkan", .seed = 1}) : ref_ctx(c->threads);
    CHECK_MSG(ctx != NULL, "%s: no context: %s", c->what, nn_last_error());
    if (!ctx) return;
    ref_rng r = ref_rng_new(c->seed);
    nn_tensor *t[MAX_ARGS] = {0};
    double *x[MAX_ARGS] = {0};
    bool ok = true;
    for (int a = 0; a < c->nargs; a++) {
        const arg_spec *s = &c->arg[a];
        int64_t n = ref_numel(s->ndim, s->shape);
        x[a] = ref_alloc_d(n);
        if (s->fill == FILL_LABELS) {
            int32_t *labels = calloc((size_t)n, sizeof *labels);
            ref_fill_labels(&r, labels, n, s->classes);
            for (int64_t i = 0; i < n; i++) x[a][i] = labels[i];
            t[a] = ref_tensor_i32(ctx, s->ndim, s->shape, labels);
            free(labels);
        } else {
            float *f = ref_alloc_f(n);
            if (s->fill == FILL_UNIFORM) ref_fill_uniform(&r, f, n, -1, 1);
            if (s->fill == FILL_AWAY_ZERO) ref_fill_away_from_zero(&r, f, n, 0.05f, 1);
            if (s->fill == FILL_DISTINCT) ref_fill_distinct(&r, f, n, 0.01f);
            ref_f2d(f, x[a], n);
            t[a] = ref_tensor_f32(ctx, s->ndim, s->shape, f);
            free(f);
            if (t[a] && s->grad) CHECK(nn_tensor_set_requires_grad(t[a], true) == NN_OK);
        }
        ok = ok && t[a];
    }

    int64_t out_n = ref_numel(c->out_ndim, c->out_shape);
    ref_data w = ref_data_uniform(&r, out_n, -1, 1);
    double *want = ref_alloc_d(out_n), *got = ref_alloc_d(out_n);
    nn_tensor *y = ok ? c->run(t, c->p) : NULL, *wt = NULL;
    if (y && out_matches(y, c)) {
        int64_t shape[NN_MAX_DIMS];
        wt = ref_tensor_f32(ctx, nn_tensor_shape(y, shape), shape, w.f);
    }
    if (wt) {
        c->ref(x, want, c->p);
        if (ref_read_tensor(y, got, out_n, c->what))
            CHECK_ALL_CLOSE(c->what, got, want, out_n, FWD_RTOL, FWD_ATOL);
        nn_tensor *loss = nn_sum(nn_mul(y, wt));
        CHECK_MSG(loss && nn_tensor_requires_grad(loss), "%s: loss does not require grad: %s",
                  c->what, nn_last_error());
        nn_status st = loss ? nn_backward(loss) : NN_ERR_STATE;
        CHECK_MSG(st == NN_OK, "%s: nn_backward: %s", c->what, nn_last_error());
        if (st == NN_OK) {
            double *grads[MAX_ARGS] = {0};
            expected_grads(c, x, w.d, out_n, grads);
            for (int a = 0; a < c->nargs; a++) {
                check_arg_grad(c, t[a], a, grads[a]);
                free(grads[a]);
            }
        }
    } else {
        CHECK_MSG(y != NULL, "%s: op failed: %s", c->what, nn_last_error());
    }

    CHECK(nn_ctx_step_end(ctx) == NN_OK);
    for (int a = 0; a < c->nargs; a++) {
        nn_tensor_free(t[a]);
        free(x[a]);
    }
    nn_tensor_free(wt);
    nn_ctx_free(ctx);
    ref_data_free(&w);
    free(want);
    free(got);
}


/* ---- matmul ---- */

typedef struct matmul_p {
    int m, n, k;
    bool ta, tb;
} matmul_p;

static nn_tensor *run_matmul(nn_tensor *const *x, const void *p) {
    const matmul_p *q = p;
    return nn_matmul(x[0], x[1], q->ta, q->tb);
}

static void ref_matmul_op(double *const *x, double *y, const void *p) {
    const matmul_p *q = p;
    ref_matmul(x[0], x[1], y, q->m, q->n, q->k, q->ta, q->tb);
}

static void bwd_matmul(int m, int n, int k, bool ta, bool tb, bool grad_a, int threads,
                       uint64_t seed) {
    matmul_p q = {m, n, k, ta, tb};
    bwd_case c = {.nargs = 2, .run = run_matmul, .ref = ref_matmul_op, .p = &q,
                  .threads = threads, .seed = seed};
    snprintf(c.what, sizeof c.what, "matmul m=%d n=%d k=%d ta=%d tb=%d", m, n, k, ta, tb);
    c.arg[0] = spec(FILL_UNIFORM, grad_a, 2, ta ? k : m, ta ? m : k, 0, 0);
    c.arg[1] = spec(FILL_UNIFORM, true, 2, tb ? n : k, tb ? k : n, 0, 0);
    set_out(&c, 2, m, n, 0, 0);
    bwd_run_case(&c);
}

TEST(bwd_matmul_all_transposes) {
    static const int sizes[][3] = {{1, 1, 1}, {3, 5, 7}, {7, 13, 17}, {17, 1, 33}, {1, 9, 4}};
    for (int i = 0; i < (int)(sizeof sizes / sizeof sizes[0]); i++)
        for (int flags = 0; flags < 4; flags++)
            bwd_matmul(sizes[i][0], sizes[i][1], sizes[i][2], flags & 1, flags & 2, true,
                       1 + (i + flags) % 2, 2000 + (uint64_t)(4 * i + flags));
}

static void grad_matmul(double *const *x, const double *w, double *const *grads,
                        const void *p) {
    const matmul_p *q = p;
    ref_matmul_backward(x[0], x[1], w, grads[0], grads[1], q->m, q->n, q->k, q->ta, q->tb);
}

TEST(bwd_matmul_crosses_gemm_blocks_all_transposes) {
    static const int sizes[][3] = {{130, 70, 300}, {65, 257, 33}, {7, 4700, 300}};
    for (int i = 0; i < (int)(sizeof sizes / sizeof sizes[0]); i++)
        for (int flags = 0; flags < 4; flags++) {
            matmul_p q = {sizes[i][0], sizes[i][1], sizes[i][2], flags & 1, flags & 2};
            bwd_case c = {.nargs = 2, .run = run_matmul, .ref = ref_matmul_op,
                          .ref_grad = grad_matmul, .p = &q, .threads = 1 + (i + flags) % 2,
                          .seed = 2050 + (uint64_t)(4 * i + flags)};
            snprintf(c.what, sizeof c.what, "matmul m=%d n=%d k=%d ta=%d tb=%d", q.m, q.n, q.k,
                     q.ta, q.tb);
            c.arg[0] = spec(FILL_UNIFORM, true, 2, q.ta ? q.k : q.m, q.ta ? q.m : q.k, 0, 0);
            c.arg[1] = spec(FILL_UNIFORM, true, 2, q.tb ? q.n : q.k, q.tb ? q.k : q.n, 0, 0);
            set_out(&c, 2, q.m, q.n, 0, 0);
            bwd_run_case(&c);
        }
}

TEST(bwd_matmul_only_b_requires_grad) {
    bwd_matmul(5, 3, 4, false, false, false, 1, 2100);
    bwd_matmul(5, 3, 4, true, true, false, 2, 2101);
}

/* ---- add_bias, linear ---- */

typedef struct bias_p {
    int64_t outer, inner;
    int channels;
} bias_p;

static nn_tensor *run_add_bias(nn_tensor *const *x, const void *p) {
    (void)p;
    return nn_add_bias(x[0], x[1]);
}

static void ref_add_bias_op(double *const *x, double *y, const void *p) {
    const bias_p *q = p;
    ref_add_bias(x[0], x[1], y, q->outer, q->channels, q->inner);
}

TEST(bwd_add_bias_2d_and_4d) {
    static const int64_t shapes[][4] = {{3, 7, 0, 0}, {1, 5, 0, 0}, {2, 3, 4, 5}, {1, 2, 3, 3}};
    for (int i = 0; i < (int)(sizeof shapes / sizeof shapes[0]); i++) {
        const int64_t *s = shapes[i];
        int ndim = s[2] ? 4 : 2;
        bias_p q = {s[0], ndim == 4 ? s[2] * s[3] : 1, (int)s[1]};
        bwd_case c = {.nargs = 2, .run = run_add_bias, .ref = ref_add_bias_op, .p = &q,
                      .threads = 1 + i % 2, .seed = 2200 + (uint64_t)i};
        snprintf(c.what, sizeof c.what, "add_bias %dD case %d", ndim, i);
        c.arg[0] = spec(FILL_UNIFORM, true, ndim, s[0], s[1], s[2], s[3]);
        c.arg[1] = spec(FILL_UNIFORM, true, 1, s[1], 0, 0, 0);
        set_out(&c, ndim, s[0], s[1], s[2], s[3]);
        bwd_run_case(&c);
    }
}

typedef struct linear_p {
    int n, in, out;
    bool bias;
} linear_p;

static nn_tensor *run_linear(nn_tensor *const *x, const void *p) {
    const linear_p *q = p;
    return nn_linear(x[0], x[1], q->bias ? x[2] : NULL);
}

static void ref_linear_op(double *const *x, double *y, const void *p) {
    const linear_p *q = p;
    ref_linear(x[0], x[1], q->bias ? x[2] : NULL, y, q->n, q->in, q->out);
}

TEST(bwd_linear_with_and_without_bias) {
    static const linear_p cases[] = {
        {1, 5, 3, true}, {4, 7, 3, false}, {3, 13, 17, true}, {1, 1, 1, false}, {6, 10, 4, true},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        const linear_p *q = &cases[i];
        bwd_case c = {.nargs = q->bias ? 3 : 2, .run = run_linear, .ref = ref_linear_op, .p = q,
                      .threads = 2 - i % 2, .seed = 2300 + (uint64_t)i};
        snprintf(c.what, sizeof c.what, "linear n=%d in=%d out=%d bias=%d", q->n, q->in, q->out,
                 q->bias);
        c.arg[0] = spec(FILL_UNIFORM, i != 4, 2, q->n, q->in, 0, 0); /* case 4: x constant */
        c.arg[1] = spec(FILL_UNIFORM, true, 2, q->out, q->in, 0, 0);
        c.arg[2] = spec(FILL_UNIFORM, true, 1, q->out, 0, 0, 0);
        set_out(&c, 2, q->n, q->out, 0, 0);
        bwd_run_case(&c);
    }
}

/* ---- conv2d ---- */

typedef struct conv_p {
    ref_conv g;
    bool bias;
} conv_p;

static nn_tensor *run_conv(nn_tensor *const *x, const void *p) {
    const conv_p *q = p;
    nn_tensor *bias = q->bias ? x[2] : NULL;
    if (q->g.sh == q->g.sw && q->g.ph == q->g.pw)
        return nn_conv2d(x[0], x[1], bias, q->g.sh, q->g.ph);
    nn_conv2d_params cp = {.stride_h = q->g.sh, .stride_w = q->g.sw, .pad_h = q->g.ph, .pad_w = q->g.pw};
    return nn_conv2d_ex(x[0], x[1], bias, &cp);
}

static void ref_conv_op(double *const *x, double *y, const void *p) {
    const conv_p *q = p;
    ref_conv2d(x[0], x[1], q->bias ? x[2] : NULL, y, &q->g);
}

static void grad_conv(double *const *x, const double *w, double *const *grads, const void *p) {
    const conv_p *q = p;
    ref_conv2d_backward(x[0], x[1], w, grads[0], grads[1], q->bias ? grads[2] : NULL, &q->g);
}

static void conv_case_setup(bwd_case *c, const conv_p *q, int threads, uint64_t seed) {
    const ref_conv *g = &q->g;
    *c = (bwd_case){.nargs = q->bias ? 3 : 2, .run = run_conv, .ref = ref_conv_op, .p = q,
                    .threads = threads, .seed = seed};
    snprintf(c->what, sizeof c->what, "conv2d x[%d,%d,%d,%d] w[%d,%d,%d,%d] stride %d,%d pad %d,%d",
             g->n, g->c, g->h, g->w, g->oc, g->c, g->kh, g->kw, g->sh, g->sw, g->ph, g->pw);
    c->arg[0] = spec(FILL_UNIFORM, true, 4, g->n, g->c, g->h, g->w);
    c->arg[1] = spec(FILL_UNIFORM, true, 4, g->oc, g->c, g->kh, g->kw);
    c->arg[2] = spec(FILL_UNIFORM, true, 1, g->oc, 0, 0, 0);
    set_out(c, 4, g->n, g->oc, ref_conv_oh(g), ref_conv_ow(g));
}

TEST(bwd_conv2d_geometries) {
    static const conv_p cases[] = {
        /* n  c  h  w  oc kh kw sh sw ph pw   bias */
        {{1, 1, 5, 5, 1, 3, 3, 1, 1, 0, 0}, true},   /* batch 1 */
        {{2, 3, 7, 7, 4, 3, 3, 1, 1, 1, 1}, true},
        {{2, 2, 9, 9, 3, 3, 3, 2, 2, 1, 1}, true},   /* stride 2 + padding */
        {{1, 2, 8, 7, 3, 5, 5, 2, 2, 2, 2}, false},
        {{1, 2, 7, 9, 2, 3, 5, 2, 1, 1, 2}, true},   /* rectangular everything (conv2d_ex) */
        {{2, 1, 6, 6, 2, 1, 1, 1, 1, 0, 0}, true},   /* 1x1 kernel */
        {{1, 2, 8, 8, 2, 3, 3, 3, 3, 0, 0}, true},   /* stride 3: some pixels unused */
        {{1, 1, 3, 3, 2, 5, 5, 1, 1, 2, 2}, true},   /* kernel larger than the image */
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        bwd_case c;
        conv_case_setup(&c, &cases[i], 1 + i % 2, 2400 + (uint64_t)i);
        bwd_run_case(&c);
    }
}

TEST(bwd_conv2d_crosses_gemm_blocks) {
    static const conv_p cases[] = {
        {{2, 16, 33, 33, 32, 3, 3, 1, 1, 1, 1}, true}, /* K=144, 2178 columns */
        {{2, 8, 17, 15, 12, 5, 5, 2, 2, 2, 2}, true},  /* K=200, stride 2 + padding */
        {{1, 65, 9, 9, 70, 3, 3, 1, 1, 0, 0}, false},  /* K=585 */
        {{1, 3, 70, 70, 8, 3, 3, 1, 1, 1, 1}, true},   /* 4900 columns */
        {{10, 64, 56, 56, 2, 3, 3, 1, 1, 1, 1}, true}, /* the CPU's columns per image, in two groups (9 + 1) */
        {{912, 512, 2, 2, 16, 3, 3, 1, 1, 1, 1}, true}, /* side by side (4 positions, 16 x 4608 weights): 910 + 2 */
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        bwd_case c;
        conv_case_setup(&c, &cases[i], 2 - i % 2, 2460 + (uint64_t)i);
        c.ref_grad = grad_conv;
        bwd_run_case(&c);
    }
}

TEST(bwd_conv2d_weight_only) {
    /* The input does not require grad (a first layer): only dW and db. */
    static const conv_p q = {{2, 1, 6, 5, 3, 3, 3, 1, 1, 1, 1}, true};
    bwd_case c = {.nargs = 3, .run = run_conv, .ref = ref_conv_op, .p = &q, .threads = 2,
                  .seed = 2450};
    snprintf(c.what, sizeof c.what, "conv2d with a constant input");
    c.arg[0] = spec(FILL_UNIFORM, false, 4, 2, 1, 6, 5);
    c.arg[1] = spec(FILL_UNIFORM, true, 4, 3, 1, 3, 3);
    c.arg[2] = spec(FILL_UNIFORM, true, 1, 3, 0, 0, 0);
    set_out(&c, 4, 2, 3, 6, 5);
    bwd_run_case(&c);
}

/* ---- maxpool2d ---- */

static nn_tensor *run_pool(nn_tensor *const *x, const void *p) {
    const ref_pool *g = p;
    return g->p ? nn_maxpool2d_ex(x[0], g->k, g->s, g->p) : nn_maxpool2d(x[0], g->k, g->s);
}

static void ref_pool_op(double *const *x, double *y, const void *p) {
    ref_maxpool2d(x[0], y, NULL, p);
}

TEST(bwd_maxpool2d_geometries) {
    static const ref_pool cases[] = {
        {2, 2, 6, 6, 2, 2, 0}, {1, 2, 7, 7, 3, 2, 0}, /* overlapping windows */
        {1, 2, 9, 9, 3, 2, 1},                        /* overlapping + padding */
        {2, 1, 7, 5, 2, 1, 0},                        /* stride 1 */
        {1, 3, 8, 9, 3, 3, 1}, {1, 1, 5, 5, 2, 2, 1}, {1, 1, 7, 7, 2, 2, 0}, /* odd: unused row */
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        const ref_pool *g = &cases[i];
        bwd_case c = {.nargs = 1, .run = run_pool, .ref = ref_pool_op, .p = g,
                      .threads = 2 - i % 2, .seed = 2500 + (uint64_t)i};
        snprintf(c.what, sizeof c.what, "maxpool2d x[%d,%d,%d,%d] k%d s%d p%d", g->n, g->c, g->h,
                 g->w, g->k, g->s, g->p);
        c.arg[0] = spec(FILL_DISTINCT, true, 4, g->n, g->c, g->h, g->w);
        set_out(&c, 4, g->n, g->c, ref_pool_oh(g), ref_pool_ow(g));
        bwd_run_case(&c);
    }
}

/* With ties, the first maximum in row-major window order takes the gradient
 * (finite differences cannot judge this: a tie has no derivative). */
TEST(bwd_maxpool2d_ties_go_to_first_max) {
    static const ref_pool cases[] = {{1, 2, 4, 4, 2, 2, 0}, {1, 1, 7, 7, 3, 2, 1},
                                     {2, 1, 5, 6, 2, 1, 0}};
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        const ref_pool *g = &cases[i];
        nn_ctx *ctx = ref_ctx(1 + i % 2);
        if (!ctx) return;
        ref_rng r = ref_rng_new(2550 + (uint64_t)i);
        int64_t sx[4] = {g->n, g->c, g->h, g->w}, sy[4] = {g->n, g->c, ref_pool_oh(g), ref_pool_ow(g)};
        int64_t nx = ref_numel(4, sx), ny = ref_numel(4, sy);
        /* Two levels only, mostly the top one (negative: padding must not win). */
        ref_data x = ref_data_new(nx), w = ref_data_uniform(&r, ny, -1, 1);
        for (int64_t j = 0; j < nx; j++) x.f[j] = ref_rng_below(&r, 4) ? -0.5f : -0.75f;
        ref_data_sync(&x);
        double *y = ref_alloc_d(ny), *want = ref_alloc_d(nx), *got = ref_alloc_d(nx);
        int64_t *argmax = calloc((size_t)ny, sizeof *argmax);
        ref_maxpool2d(x.d, y, argmax, g);
        for (int64_t o = 0; o < ny; o++) want[argmax[o]] += w.d[o];

        nn_tensor *xt = ref_tensor_f32(ctx, 4, sx, x.f), *wt = ref_tensor_f32(ctx, 4, sy, w.f);
        if (xt && wt && nn_tensor_set_requires_grad(xt, true) == NN_OK) {
            nn_tensor *pooled = run_pool(&xt, g);
            nn_tensor *loss = pooled ? nn_sum(nn_mul(pooled, wt)) : NULL;
            CHECK_MSG(loss && nn_backward(loss) == NN_OK, "maxpool ties case %d: %s", i,
                      nn_last_error());
            if (loss && ref_read_tensor(nn_tensor_grad(xt), got, nx, "maxpool ties grad"))
                CHECK_ALL_CLOSE("maxpool ties grad", got, want, nx, 1e-6, 1e-7);
        }
        CHECK(nn_ctx_step_end(ctx) == NN_OK);
        nn_tensor_free(xt);
        nn_tensor_free(wt);
        nn_ctx_free(ctx);
        ref_data_free(&x);
        ref_data_free(&w);
        free(y);
        free(want);
        free(got);
        free(argmax);
    }
}

/* ---- a small network: conv -> relu -> maxpool -> flatten -> linear -> CE ---- */

typedef struct chain_p {
    ref_conv conv;
    ref_pool pool;
    int classes;
} chain_p;

static int64_t chain_features(const chain_p *q) {
    return (int64_t)q->conv.oc * ref_pool_oh(&q->pool) * ref_pool_ow(&q->pool);
}

static nn_tensor *run_chain(nn_tensor *const *x, const void *p) {
    const chain_p *q = p;
    nn_tensor *h = nn_conv2d(x[0], x[1], x[2], q->conv.sh, q->conv.ph);
    h = nn_maxpool2d(nn_relu(h), q->pool.k, q->pool.s);
    return nn_softmax_cross_entropy(nn_linear(nn_flatten(h), x[3], x[4]), x[5]);
}

static void ref_chain(double *const *x, double *y, const void *p) {
    const chain_p *q = p;
    int64_t conv_n = (int64_t)q->conv.n * q->conv.oc * ref_conv_oh(&q->conv) * ref_conv_ow(&q->conv);
    int64_t feat = chain_features(q);
    double *h = ref_alloc_d(conv_n), *pooled = ref_alloc_d(q->conv.n * feat);
    double *logits = ref_alloc_d((int64_t)q->conv.n * q->classes);
    int32_t *labels = calloc((size_t)q->conv.n, sizeof *labels);
    ref_conv2d(x[0], x[1], x[2], h, &q->conv);
    ref_relu(h, h, conv_n);
    ref_maxpool2d(h, pooled, NULL, &q->pool);
    ref_linear(pooled, x[3], x[4], logits, q->conv.n, (int)feat, q->classes);
    for (int i = 0; i < q->conv.n; i++) labels[i] = (int32_t)x[5][i];
    y[0] = ref_softmax_ce(logits, labels, q->conv.n, q->classes);
    free(h);
    free(pooled);
    free(logits);
    free(labels);
}

TEST(bwd_small_network_end_to_end) {
    chain_p q = {{2, 2, 9, 9, 3, 3, 3, 1, 1, 1, 1}, {2, 3, 9, 9, 2, 2, 0}, 5};
    int64_t feat = chain_features(&q);
    bwd_case c = {.nargs = 6, .run = run_chain, .ref = ref_chain, .p = &q, .threads = 2,
                  .seed = 2900};
    snprintf(c.what, sizeof c.what, "conv-relu-pool-flatten-linear-ce");
    c.arg[0] = spec(FILL_UNIFORM, true, 4, 2, 2, 9, 9);
    c.arg[1] = spec(FILL_UNIFORM, true, 4, 3, 2, 3, 3);
    c.arg[2] = spec(FILL_UNIFORM, true, 1, 3, 0, 0, 0);
    c.arg[3] = spec(FILL_UNIFORM, true, 2, q.classes, feat, 0, 0);
    c.arg[4] = spec(FILL_UNIFORM, true, 1, q.classes, 0, 0, 0);
    c.arg[5] = spec(FILL_LABELS, false, 1, 2, 0, 0, 0);
    c.arg[5].classes = q.classes;
    set_out(&c, 1, 1, 0, 0, 0);
    bwd_run_case(&c);
}

/* ---- the analytic references used above, against finite differences ---- */

void bwd_check_reference_grads(const bwd_case *c, ref_grad_fn analytic) {
    ref_rng r = ref_rng_new(c->seed);
    double *x[MAX_ARGS] = {0}, *fd[MAX_ARGS] = {0}, *an[MAX_ARGS] = {0};
    for (int a = 0; a < c->nargs; a++) {
        int64_t n = ref_numel(c->arg[a].ndim, c->arg[a].shape);
        x[a] = ref_alloc_d(n);
        for (int64_t i = 0; i < n; i++) x[a][i] = ref_rng_uniform(&r, -1, 1);
    }
    int64_t out_n = ref_numel(c->out_ndim, c->out_shape);
    double *w = ref_alloc_d(out_n);
    for (int64_t i = 0; i < out_n; i++) w[i] = ref_rng_uniform(&r, -1, 1);
    expected_grads(c, x, w, out_n, fd);
    bwd_case with_analytic = *c;
    with_analytic.ref_grad = analytic;
    expected_grads(&with_analytic, x, w, out_n, an);
    for (int a = 0; a < c->nargs; a++) {
        if (fd[a])
            CHECK_ALL_CLOSE(c->what, an[a], fd[a], ref_numel(c->arg[a].ndim, c->arg[a].shape),
                            1e-6, 1e-7);
        free(x[a]);
        free(fd[a]);
        free(an[a]);
    }
    free(w);
}

TEST(bwd_reference_gradients_match_finite_differences) {
    for (int flags = 0; flags < 4; flags++) {
        matmul_p q = {5, 3, 7, flags & 1, flags & 2};
        bwd_case c = {.nargs = 2, .ref = ref_matmul_op, .p = &q, .seed = 2950 + (uint64_t)flags};
        snprintf(c.what, sizeof c.what, "ref_matmul_backward ta=%d tb=%d", q.ta, q.tb);
        c.arg[0] = spec(FILL_UNIFORM, true, 2, q.ta ? q.k : q.m, q.ta ? q.m : q.k, 0, 0);
        c.arg[1] = spec(FILL_UNIFORM, true, 2, q.tb ? q.n : q.k, q.tb ? q.k : q.n, 0, 0);
        set_out(&c, 2, q.m, q.n, 0, 0);
        bwd_check_reference_grads(&c, grad_matmul);
    }
    bwd_check_pointwise_reference_grads();
    static const conv_p convs[] = {{{2, 2, 7, 6, 3, 3, 5, 2, 1, 1, 2}, true},
                                   {{1, 3, 8, 8, 2, 5, 5, 2, 2, 2, 2}, false}};
    for (int i = 0; i < 2; i++) {
        bwd_case c;
        conv_case_setup(&c, &convs[i], 1, 2960 + (uint64_t)i);
        bwd_check_reference_grads(&c, grad_conv);
    }
}
