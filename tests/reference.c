#include "reference.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- random numbers ---- */

ref_rng ref_rng_new(uint64_t seed) {
    ref_rng r = {seed};
    return r;
}

uint64_t ref_rng_next(ref_rng *r) {
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double ref_rng_uniform(ref_rng *r, double lo, double hi) {
    double u = (double)(ref_rng_next(r) >> 11) * 0x1.0p-53; /* [0, 1) */
    return lo + (hi - lo) * u;
}

int64_t ref_rng_below(ref_rng *r, int64_t n) {
    return (int64_t)(ref_rng_next(r) % (uint64_t)n);
}

void ref_fill_uniform(ref_rng *r, float *x, int64_t n, float lo, float hi) {
    for (int64_t i = 0; i < n; i++) x[i] = (float)ref_rng_uniform(r, lo, hi);
}

void ref_fill_away_from_zero(ref_rng *r, float *x, int64_t n, float min_abs, float hi) {
    for (int64_t i = 0; i < n; i++) {
        float v = (float)ref_rng_uniform(r, min_abs, hi);
        x[i] = (ref_rng_next(r) & 1) ? v : -v;
    }
}

void ref_fill_distinct(ref_rng *r, float *x, int64_t n, float spacing) {
    for (int64_t i = 0; i < n; i++) x[i] = ((float)i - (float)n / 2) * spacing;
    for (int64_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
        int64_t j = ref_rng_below(r, i + 1);
        float t = x[i];
        x[i] = x[j];
        x[j] = t;
    }
}

void ref_fill_labels(ref_rng *r, int32_t *x, int64_t n, int32_t classes) {
    for (int64_t i = 0; i < n; i++) x[i] = (int32_t)ref_rng_below(r, classes);
}

/* ---- allocation and conversion ---- */

static void *alloc_or_die(int64_t n, size_t size) {
    void *p = calloc(n > 0 ? (size_t)n : 1, size);
    if (!p) {
        fprintf(stderr, "reference.c: out of memory (%lld elements)\n", (long long)n);
        exit(2);
    }
    return p;
}

float *ref_alloc_f(int64_t n) { return alloc_or_die(n, sizeof(float)); }
double *ref_alloc_d(int64_t n) { return alloc_or_die(n, sizeof(double)); }

void ref_f2d(const float *x, double *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i];
}

double ref_max_abs(const double *x, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++)
        if (fabs(x[i]) > m) m = fabs(x[i]);
    return m;
}

int64_t ref_numel(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}

ref_data ref_data_new(int64_t n) {
    ref_data a = {n, ref_alloc_f(n), ref_alloc_d(n)};
    return a;
}

ref_data ref_data_uniform(ref_rng *r, int64_t n, float lo, float hi) {
    ref_data a = ref_data_new(n);
    ref_fill_uniform(r, a.f, n, lo, hi);
    ref_data_sync(&a);
    return a;
}

void ref_data_sync(ref_data *a) { ref_f2d(a->f, a->d, a->n); }

void ref_data_free(ref_data *a) {
    free(a->f);
    free(a->d);
    a->f = NULL;
    a->d = NULL;
    a->n = 0;
}

/* ---- engine tensors ---- */

nn_ctx *ref_ctx(int threads) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = threads, .seed = 1});
    CHECK_MSG(ctx != NULL, "nn_ctx_new(cpu, %d threads): %s", threads, nn_last_error());
    return ctx;
}

nn_tensor *ref_tensor_f32(nn_ctx *ctx, int ndim, const int64_t *shape, const float *data) {
    nn_tensor *t = nn_tensor_from_data(ctx, NN_F32, ndim, shape, data);
    CHECK_MSG(t != NULL, "nn_tensor_from_data(f32): %s", nn_last_error());
    return t;
}

nn_tensor *ref_tensor_i32(nn_ctx *ctx, int ndim, const int64_t *shape, const int32_t *data) {
    nn_tensor *t = nn_tensor_from_data(ctx, NN_I32, ndim, shape, data);
    CHECK_MSG(t != NULL, "nn_tensor_from_data(i32): %s", nn_last_error());
    return t;
}

bool ref_read_tensor(const nn_tensor *t, double *out, int64_t n, const char *what) {
    if (!t) {
        nn_test_fail(__FILE__, __LINE__, "%s: tensor is NULL (%s)", what, nn_last_error());
        return false;
    }
    if (nn_tensor_numel(t) != n) {
        nn_test_fail(__FILE__, __LINE__, "%s: %lld elements, want %lld", what,
                     (long long)nn_tensor_numel(t), (long long)n);
        return false;
    }
    float *buf = ref_alloc_f(n);
    nn_status st = nn_tensor_read(t, buf, (size_t)n * sizeof(float));
    if (st != NN_OK)
        nn_test_fail(__FILE__, __LINE__, "%s: nn_tensor_read: %s", what, nn_last_error());
    else
        ref_f2d(buf, out, n);
    free(buf);
    return st == NN_OK;
}

bool ref_check_shape(const nn_tensor *t, int ndim, const int64_t *shape, const char *what) {
    if (!t) {
        nn_test_fail(__FILE__, __LINE__, "%s: tensor is NULL (%s)", what, nn_last_error());
        return false;
    }
    int64_t got[NN_MAX_DIMS] = {0};
    int gnd = nn_tensor_shape(t, got);
    bool same = gnd == ndim;
    for (int i = 0; same && i < ndim; i++) same = got[i] == shape[i];
    if (!same) {
        char buf[64];
        nn_test_fail(__FILE__, __LINE__, "%s: shape %s, want %d dims [%lld, %lld, %lld, %lld]",
                     what, nn_tensor_shape_str(t, buf, sizeof buf), ndim,
                     (long long)shape[0], (long long)(ndim > 1 ? shape[1] : 0),
                     (long long)(ndim > 2 ? shape[2] : 0), (long long)(ndim > 3 ? shape[3] : 0));
    }
    return same;
}

/* ---- comparison ---- */

ref_cmp ref_compare(const double *got, const double *want, int64_t n, double rtol,
                    double atol) {
    ref_cmp c = {0};
    for (int64_t i = 0; i < n; i++) {
        double diff = fabs(got[i] - want[i]);
        double ratio = diff == 0 ? 0.0 : diff / (atol + rtol * fabs(want[i]));
        if (!isfinite(got[i])) {
            c.nonfinite = true;
            ratio = INFINITY;
        }
        if (ratio > 1.0) c.bad++;
        if (i == 0 || ratio > c.worst) {
            c.worst = ratio;
            c.index = i;
            c.got = got[i];
            c.want = want[i];
        }
    }
    return c;
}

/* ---- reference operations ---- */

void ref_matmul(const double *a, const double *b, double *c, int m, int n, int k, bool ta,
                bool tb) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int p = 0; p < k; p++) {
                double av = ta ? a[(int64_t)p * m + i] : a[(int64_t)i * k + p];
                double bv = tb ? b[(int64_t)j * k + p] : b[(int64_t)p * n + j];
                s += av * bv;
            }
            c[(int64_t)i * n + j] = s;
        }
}

void ref_matmul_backward(const double *a, const double *b, const double *dc, double *da,
                         double *db, int m, int n, int k, bool ta, bool tb) {
    /* c[i, j] = sum_p A[i, p] B[p, j] with A = op(a), B = op(b). */
    for (int i = 0; da && i < m; i++)
        for (int p = 0; p < k; p++) {
            double s = 0;
            for (int j = 0; j < n; j++)
                s += dc[(int64_t)i * n + j] * (tb ? b[(int64_t)j * k + p] : b[(int64_t)p * n + j]);
            da[ta ? (int64_t)p * m + i : (int64_t)i * k + p] = s;
        }
    for (int p = 0; db && p < k; p++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int i = 0; i < m; i++)
                s += (ta ? a[(int64_t)p * m + i] : a[(int64_t)i * k + p]) * dc[(int64_t)i * n + j];
            db[tb ? (int64_t)j * k + p : (int64_t)p * n + j] = s;
        }
}

void ref_add_bias(const double *x, const double *bias, double *y, int64_t outer, int channels,
                  int64_t inner) {
    for (int64_t o = 0; o < outer; o++)
        for (int c = 0; c < channels; c++)
            for (int64_t i = 0; i < inner; i++) {
                int64_t at = (o * channels + c) * inner + i;
                y[at] = x[at] + bias[c];
            }
}

void ref_linear(const double *x, const double *w, const double *bias, double *y, int n,
                int in, int out) {
    ref_matmul(x, w, y, n, out, in, false, true);
    if (bias) ref_add_bias(y, bias, y, n, out, 1);
}

int ref_conv_oh(const ref_conv *g) { return (g->h + 2 * g->ph - g->kh) / g->sh + 1; }
int ref_conv_ow(const ref_conv *g) { return (g->w + 2 * g->pw - g->kw) / g->sw + 1; }

void ref_conv2d(const double *x, const double *w, const double *bias, double *y,
                const ref_conv *g) {
    int oh = ref_conv_oh(g), ow = ref_conv_ow(g);
    for (int b = 0; b < g->n; b++)
        for (int o = 0; o < g->oc; o++)
            for (int yi = 0; yi < oh; yi++)
                for (int xi = 0; xi < ow; xi++) {
                    double s = bias ? bias[o] : 0.0;
                    for (int c = 0; c < g->c; c++)
                        for (int ky = 0; ky < g->kh; ky++)
                            for (int kx = 0; kx < g->kw; kx++) {
                                int iy = yi * g->sh - g->ph + ky, ix = xi * g->sw - g->pw + kx;
                                if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w) continue;
                                s += x[(((int64_t)b * g->c + c) * g->h + iy) * g->w + ix] *
                                     w[(((int64_t)o * g->c + c) * g->kh + ky) * g->kw + kx];
                            }
                    y[(((int64_t)b * g->oc + o) * oh + yi) * ow + xi] = s;
                }
}

void ref_conv2d_backward(const double *x, const double *w, const double *dy, double *dx,
                         double *dw, double *dbias, const ref_conv *g) {
    int oh = ref_conv_oh(g), ow = ref_conv_ow(g);
    if (dx)
        for (int64_t i = 0; i < (int64_t)g->n * g->c * g->h * g->w; i++) dx[i] = 0;
    if (dw)
        for (int64_t i = 0; i < (int64_t)g->oc * g->c * g->kh * g->kw; i++) dw[i] = 0;
    if (dbias)
        for (int o = 0; o < g->oc; o++) dbias[o] = 0;
    for (int b = 0; b < g->n; b++)
        for (int o = 0; o < g->oc; o++)
            for (int yi = 0; yi < oh; yi++)
                for (int xi = 0; xi < ow; xi++) {
                    double d = dy[(((int64_t)b * g->oc + o) * oh + yi) * ow + xi];
                    if (dbias) dbias[o] += d;
                    for (int c = 0; c < g->c; c++)
                        for (int ky = 0; ky < g->kh; ky++)
                            for (int kx = 0; kx < g->kw; kx++) {
                                int iy = yi * g->sh - g->ph + ky, ix = xi * g->sw - g->pw + kx;
                                if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w) continue;
                                int64_t at = (((int64_t)b * g->c + c) * g->h + iy) * g->w + ix;
                                int64_t wat = (((int64_t)o * g->c + c) * g->kh + ky) * g->kw + kx;
                                if (dx) dx[at] += d * w[wat];
                                if (dw) dw[wat] += d * x[at];
                            }
                }
}

int ref_pool_oh(const ref_pool *g) { return (g->h + 2 * g->p - g->k) / g->s + 1; }
int ref_pool_ow(const ref_pool *g) { return (g->w + 2 * g->p - g->k) / g->s + 1; }

void ref_maxpool2d(const double *x, double *y, int64_t *argmax, const ref_pool *g) {
    int oh = ref_pool_oh(g), ow = ref_pool_ow(g);
    for (int64_t plane = 0; plane < (int64_t)g->n * g->c; plane++)
        for (int yi = 0; yi < oh; yi++)
            for (int xi = 0; xi < ow; xi++) {
                double best = -INFINITY;
                int64_t best_at = -1;
                for (int ky = 0; ky < g->k; ky++)
                    for (int kx = 0; kx < g->k; kx++) {
                        int iy = yi * g->s - g->p + ky, ix = xi * g->s - g->p + kx;
                        if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w) continue;
                        int64_t at = (plane * g->h + iy) * g->w + ix;
                        if (best_at < 0 || x[at] > best) {
                            best = x[at];
                            best_at = at;
                        }
                    }
                int64_t out = (plane * oh + yi) * ow + xi;
                y[out] = best;
                if (argmax) argmax[out] = best_at;
            }
}

void ref_relu(const double *x, double *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : 0.0;
}

void ref_softmax(const double *x, double *y, int64_t rows, int cols) {
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * cols;
        double *yr = y + r * cols;
        double mx = xr[0], total = 0;
        for (int j = 1; j < cols; j++)
            if (xr[j] > mx) mx = xr[j];
        for (int j = 0; j < cols; j++) total += (yr[j] = exp(xr[j] - mx));
        for (int j = 0; j < cols; j++) yr[j] /= total;
    }
}

double ref_softmax_ce(const double *logits, const int32_t *labels, int rows, int cols) {
    double loss = 0;
    for (int r = 0; r < rows; r++) {
        const double *xr = logits + (int64_t)r * cols;
        double mx = xr[0], total = 0;
        for (int j = 1; j < cols; j++)
            if (xr[j] > mx) mx = xr[j];
        for (int j = 0; j < cols; j++) total += exp(xr[j] - mx);
        loss += log(total) + mx - xr[labels[r]];
    }
    return loss / rows;
}

void ref_add(const double *a, const double *b, double *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = a[i] + b[i];
}

void ref_mul(const double *a, const double *b, double *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = a[i] * b[i];
}

void ref_scale(const double *x, double factor, double *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = factor * x[i];
}

double ref_sum(const double *x, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += x[i];
    return s;
}

double ref_mean(const double *x, int64_t n) { return ref_sum(x, n) / (double)n; }

double ref_dot(const double *w, const double *y, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += w[i] * y[i];
    return s;
}

nn_tensor *ref_lenet5_by_ops(nn_module *net, nn_tensor *x) {
    nn_tensor *p[10];
    for (int i = 0; i < 10; i++) p[i] = nn_module_param(net, i);
    nn_tensor *h = nn_maxpool2d(nn_relu(nn_conv2d(x, p[0], p[1], 1, 0)), 2, 2);
    h = nn_maxpool2d(nn_relu(nn_conv2d(h, p[2], p[3], 1, 0)), 2, 2);
    h = nn_relu(nn_linear(nn_flatten(h), p[4], p[5]));
    h = nn_relu(nn_linear(h, p[6], p[7]));
    return nn_linear(h, p[8], p[9]);
}
