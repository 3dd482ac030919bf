/* Attention without the score matrix on the CPU (kernels.h's
 * nn_attention_params): a task is a block of ROWS queries (forward, dq) or
 * of COLS keys (dk, dv) of one batch entry, walking the other side a tile
 * at a time, so a task's scores are a ROWS x COLS tile in its worker's
 * scratch whatever the sequence length. The tiles' products are the CPU
 * GEMM's (OpenBLAS or the built-in one) on one thread: the tasks share the
 * pool. At fp16 (nn_attention_params.precision) every one of those
 * products takes fp16 operands, as the GPU's matrix cores do
 * (attention_*_coopmat.comp), rounded by the CPU GEMM (cpu_precision.c):
 * q and k for the scores; the unnormalised weights exp(s - running max)
 * and v for the output; dout and v for dP; P = exp(s - lse) and dout for
 * dv; dS = P (dP - delta) scale and k (q) for dq (dk). The softmax's
 * maxima and sums, P and dS themselves, delta and the products' sums stay
 * fp32. Other precisions multiply in fp32. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "base/error.h"
#include "cpu_backend.h"
#include "cpu_gemm.h"

enum { ROWS = 64, COLS = 64 }; /* queries per tile, keys per tile */

typedef struct attention_job {
    const nn_attention_params *p;
    const float *q, *k, *v, *mask, *out, *dout, *lse, *delta;
    float *out_w, *lse_w, *delta_w, *dq, *dk, *dv;
    float *scratch;
    int64_t scratch_floats; /* per worker */
    int64_t blocks;         /* tasks per batch entry */
    atomic_int failed;      /* a tile's product found no scratch memory */
    int32_t precision;      /* the products' operands: NN_PRECISION_FP16 or FP32 */
} attention_job;

static int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

/* Where batch entry b's matrix of operand `which` (0 q, 1 k, 2 v, 3 mask) starts. */
static int64_t entry(const nn_attention_params *p, int which, int64_t b) {
    return (b / p->heads) * p->group_stride[which] + (b % p->heads) * p->head_stride[which];
}

/* Rows of q and k (and dq, dk), of v (and dv), of out (and dout): qkv_row
 * and out_row apart where set, else as wide as a row. */
static int qk_row(const nn_attention_params *p) { return p->qkv_row ? p->qkv_row : p->head_dim; }
static int v_row(const nn_attention_params *p) { return p->qkv_row ? p->qkv_row : p->value_dim; }
static int out_row(const nn_attention_params *p) { return p->out_row ? p->out_row : p->value_dim; }

/* Where batch entry b's rows of out and dout start: [groups, L, heads, Ev]
 * with out_row, else dense [batch, L, Ev]. */
static int64_t out_entry(const nn_attention_params *p, int64_t b) {
    return p->out_row ? (b / p->heads) * p->queries * p->out_row + (b % p->heads) * p->value_dim
                      : b * p->queries * p->value_dim;
}

/* Where batch entry b's rows of dq (0), dk (1) or dv (2), `rows` of
 * `cols`, start: q's, k's or v's layout with qkv_row, else dense. */
static int64_t grad_entry(const nn_attention_params *p, int which, int64_t b, int64_t rows, int64_t cols) {
    return p->qkv_row ? entry(p, which, b) : b * rows * cols;
}

/* C (m x n, row stride ldc) = A B + beta C, A m x k (or its transpose
 * stored k x m), B k x n (or n x k), row-major. */
static void product(attention_job *job, int m, int n, int k, const float *a, int lda, bool trans_a, const float *b,
                    int ldb, bool trans_b, float *c, int ldc, float beta) {
    const nn_gemm_params g = {.m = m, .n = n, .k = k, .trans_a = trans_a, .trans_b = trans_b, .lda = lda,
                              .ldb = ldb, .ldc = ldc, .batch = 1, .alpha = 1.0f, .beta = beta,
                              .precision = job->precision};
    if (nn_cpu_gemm(NULL, &g, a, b, c) != NN_OK) atomic_store(&job->failed, 1);
}

/* s[r * COLS + c] = scale q_{i0+r} . k_{j0+c} + mask, -inf where causality
 * hides the key. */
static void scores(attention_job *job, int64_t b, int64_t i0, int nr, int64_t j0, int nc, float *s) {
    const nn_attention_params *p = job->p;
    const int E = p->head_dim, ld = qk_row(p);
    product(job, nr, nc, E, job->q + entry(p, 0, b) + i0 * ld, ld, false, job->k + entry(p, 1, b) + j0 * ld, ld, true,
            s, COLS, 0.0f);
    for (int r = 0; r < nr; r++) {
        float *row = s + r * COLS;
        const float *m = job->mask ? job->mask + entry(p, 3, b) + (i0 + r) * p->mask_row + j0 * p->mask_col : NULL;
        for (int c = 0; c < nc; c++) {
            float x = row[c] * p->scale;
            if (m) x += m[c * p->mask_col];
            row[c] = p->causal && j0 + c > i0 + r ? -INFINITY : x;
        }
    }
}

/* The keys query i0 + r sees: all, or those up to it under causality. */
static int64_t key_end(const nn_attention_params *p, int64_t i0, int nr) {
    return p->causal ? imin(p->keys, i0 + nr) : p->keys;
}

/* p = exp(s - lse) for each row, 0 where the score is hidden. */
static void probabilities(float *s, const float *lse, int nr, int nc) {
    for (int r = 0; r < nr; r++)
        for (int c = 0; c < nc; c++) {
            float *x = s + r * COLS + c;
            *x = *x == -INFINITY || lse[r] == INFINITY ? 0.0f : expf(*x - lse[r]);
        }
}

/* dp (tile of p's shape) = dout rows . v rows; then, in dp, the scores'
 * gradients scale p (dp - delta). */
static void score_gradients(attention_job *job, const float *dout, const float *v, const float *s,
                            const float *delta, int nr, int nc, float *dp) {
    const int Ev = job->p->value_dim;
    product(job, nr, nc, Ev, dout, out_row(job->p), false, v, v_row(job->p), true, dp, COLS, 0.0f);
    for (int r = 0; r < nr; r++)
        for (int c = 0; c < nc; c++) {
            float *x = dp + r * COLS + c;
            *x = s[r * COLS + c] * (*x - delta[r]) * job->p->scale;
        }
}

/* rows x cols of src (dense) into dst's rows, `stride` apart. */
static void store(float *dst, int64_t stride, const float *src, int rows, int cols, bool accumulate) {
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            float *x = dst + r * stride + c;
            *x = accumulate ? *x + src[(int64_t)r * cols + c] : src[(int64_t)r * cols + c];
        }
}

static void forward_tasks(void *arg, int64_t begin, int64_t end, int worker) {
    attention_job *job = arg;
    const nn_attention_params *p = job->p;
    const int64_t L = p->queries;
    const int Ev = p->value_dim;
    float *s = job->scratch + worker * job->scratch_floats, *acc = s + ROWS * COLS, *m = acc + ROWS * Ev;
    float *l = m + ROWS;
    for (int64_t t = begin; t < end; t++) {
        const int64_t b = t / job->blocks, i0 = (t % job->blocks) * ROWS;
        const int nr = (int)imin(ROWS, L - i0);
        for (int r = 0; r < nr; r++) m[r] = -INFINITY, l[r] = 0.0f;
        for (int64_t i = 0; i < nr * Ev; i++) acc[i] = 0.0f;
        const float *v = job->v + entry(p, 2, b);
        const int64_t keys = key_end(p, i0, nr);
        for (int64_t j0 = 0; j0 < keys; j0 += COLS) {
            const int nc = (int)imin(COLS, keys - j0);
            scores(job, b, i0, nr, j0, nc, s);
            for (int r = 0; r < nr; r++) {
                float *row = s + r * COLS, *o = acc + r * Ev, top = m[r];
                for (int c = 0; c < nc; c++) top = row[c] > top ? row[c] : top;
                if (top == -INFINITY) { /* every key so far hidden */
                    for (int c = 0; c < nc; c++) row[c] = 0.0f;
                    continue;
                }
                const float alpha = m[r] == -INFINITY ? 0.0f : expf(m[r] - top);
                float sum = 0.0f;
                for (int c = 0; c < nc; c++) sum += row[c] = row[c] == -INFINITY ? 0.0f : expf(row[c] - top);
                for (int e = 0; e < Ev; e++) o[e] *= alpha;
                l[r] = l[r] * alpha + sum;
                m[r] = top;
            }
            product(job, nr, Ev, nc, s, COLS, false, v + j0 * v_row(p), v_row(p), false, acc, Ev, 1.0f);
        }
        for (int r = 0; r < nr; r++) {
            const int64_t i = b * L + i0 + r;
            const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
            float *out = job->out_w + out_entry(p, b) + (i0 + r) * out_row(p);
            for (int e = 0; e < Ev; e++) out[e] = acc[r * Ev + e] * inv;
            job->lse_w[i] = l[r] > 0.0f ? m[r] + logf(l[r]) : INFINITY;
        }
    }
}

static void query_tasks(void *arg, int64_t begin, int64_t end, int worker) {
    attention_job *job = arg;
    const nn_attention_params *p = job->p;
    const int64_t L = p->queries;
    const int E = p->head_dim, Ev = p->value_dim;
    float *s = job->scratch + worker * job->scratch_floats, *dp = s + ROWS * COLS, *acc = dp + ROWS * COLS;
    float *delta = acc + ROWS * E;
    for (int64_t t = begin; t < end; t++) {
        const int64_t b = t / job->blocks, i0 = (t % job->blocks) * ROWS;
        const int nr = (int)imin(ROWS, L - i0);
        const int os = out_row(p);
        const float *dout = job->dout + out_entry(p, b) + i0 * os, *out = job->out + out_entry(p, b) + i0 * os;
        const float *lse = job->lse + b * L + i0, *k = job->k + entry(p, 1, b), *v = job->v + entry(p, 2, b);
        for (int r = 0; r < nr; r++) {
            double sum = 0.0;
            for (int e = 0; e < Ev; e++) sum += (double)dout[r * os + e] * out[r * os + e];
            delta[r] = (float)sum;
            job->delta_w[b * L + i0 + r] = delta[r];
        }
        for (int64_t i = 0; i < nr * E; i++) acc[i] = 0.0f;
        const int64_t keys = key_end(p, i0, nr);
        for (int64_t j0 = 0; j0 < keys; j0 += COLS) {
            const int nc = (int)imin(COLS, keys - j0);
            scores(job, b, i0, nr, j0, nc, s);
            probabilities(s, lse, nr, nc);
            score_gradients(job, dout, v + j0 * v_row(p), s, delta, nr, nc, dp);
            product(job, nr, E, nc, dp, COLS, false, k + j0 * qk_row(p), qk_row(p), false, acc, E, 1.0f);
        }
        store(job->dq + grad_entry(p, 0, b, L, E) + i0 * qk_row(p), qk_row(p), acc, nr, E, p->accumulate);
    }
}

static void key_tasks(void *arg, int64_t begin, int64_t end, int worker) {
    attention_job *job = arg;
    const nn_attention_params *p = job->p;
    const int64_t L = p->queries, S = p->keys;
    const int E = p->head_dim, Ev = p->value_dim;
    float *s = job->scratch + worker * job->scratch_floats, *dp = s + ROWS * COLS, *dk = dp + ROWS * COLS;
    float *dv = dk + COLS * E;
    for (int64_t t = begin; t < end; t++) {
        const int64_t b = t / job->blocks, j0 = (t % job->blocks) * COLS;
        const int nc = (int)imin(COLS, S - j0);
        for (int64_t i = 0; i < nc * E; i++) dk[i] = 0.0f;
        for (int64_t i = 0; i < nc * Ev; i++) dv[i] = 0.0f;
        const float *q = job->q + entry(p, 0, b), *v = job->v + entry(p, 2, b) + j0 * v_row(p);
        for (int64_t i0 = p->causal ? j0 / ROWS * ROWS : 0; i0 < L; i0 += ROWS) {
            const int nr = (int)imin(ROWS, L - i0);
            const float *dout = job->dout + out_entry(p, b) + i0 * out_row(p), *delta = job->delta + b * L + i0;
            scores(job, b, i0, nr, j0, nc, s);
            probabilities(s, job->lse + b * L + i0, nr, nc);
            score_gradients(job, dout, v, s, delta, nr, nc, dp);
            product(job, nc, Ev, nr, s, COLS, true, dout, out_row(p), false, dv, Ev, 1.0f);
            product(job, nc, E, nr, dp, COLS, true, q + i0 * qk_row(p), qk_row(p), false, dk, E, 1.0f);
        }
        store(job->dk + grad_entry(p, 1, b, S, E) + j0 * qk_row(p), qk_row(p), dk, nc, E, p->accumulate);
        store(job->dv + grad_entry(p, 2, b, S, Ev) + j0 * v_row(p), v_row(p), dv, nc, Ev, p->accumulate_v);
    }
}

static nn_status run(nn_backend *self, const char *name, const nn_attention_params *p, attention_job *job,
                     int64_t per_entry, int64_t extra, nn_parallel_fn fn) {
    if (p->groups < 0 || p->heads <= 0 || p->queries <= 0 || p->keys <= 0 || p->head_dim <= 0 || p->value_dim <= 0)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu %s: groups=%d heads=%d L=%d S=%d E=%d Ev=%d", name, p->groups,
                            p->heads, p->queries, p->keys, p->head_dim, p->value_dim);
    nn_thread_pool *pool = nn_cpu_pool(self);
    const int workers = pool ? nn_thread_pool_size(pool) : 1;
    job->p = p;
    job->blocks = per_entry;
    job->scratch_floats = 2 * ROWS * COLS + extra;
    job->scratch = malloc(sizeof(float) * (size_t)(job->scratch_floats * workers));
    if (!job->scratch) return nn_set_error(NN_ERR_MEMORY, "cpu %s: out of memory for %d workers' tiles", name, workers);
    atomic_init(&job->failed, 0);
    nn_parallel_for(pool, (int64_t)p->groups * p->heads * per_entry, 1, fn, job);
    free(job->scratch);
    if (atomic_load(&job->failed))
        return nn_set_error(NN_ERR_MEMORY, "cpu %s: out of memory for a tile's product", name);
    return NN_OK;
}

#define F32(i) nn_cpu_f32(a[i])

static int32_t operands(const nn_attention_params *p) {
    return p->precision == NN_PRECISION_FP16 ? NN_PRECISION_FP16 : NN_PRECISION_FP32;
}

nn_status nn_cpu_run_attention_forward(nn_backend *self, const nn_attention_params *p, const nn_buffer_ref *a) {
    attention_job job = {.q = F32(0), .k = F32(1), .v = F32(2), .mask = F32(3), .out_w = F32(4), .lse_w = F32(5),
                         .precision = operands(p)};
    return run(self, "attention_forward", p, &job, (p->queries + ROWS - 1) / ROWS,
               (int64_t)ROWS * p->value_dim + 2 * ROWS, forward_tasks);
}

nn_status nn_cpu_run_attention_backward_query(nn_backend *self, const nn_attention_params *p,
                                              const nn_buffer_ref *a) {
    attention_job job = {.q = F32(0), .k = F32(1), .v = F32(2), .mask = F32(3), .out = F32(4), .dout = F32(5),
                         .lse = F32(6), .delta_w = F32(7), .dq = F32(8), .precision = operands(p)};
    return run(self, "attention_backward_query", p, &job, (p->queries + ROWS - 1) / ROWS,
               (int64_t)ROWS * p->head_dim + ROWS, query_tasks);
}

nn_status nn_cpu_run_attention_backward_keys(nn_backend *self, const nn_attention_params *p,
                                             const nn_buffer_ref *a) {
    attention_job job = {.q = F32(0), .k = F32(1), .v = F32(2), .mask = F32(3), .dout = F32(4), .lse = F32(5),
                         .delta = F32(6), .dk = F32(7), .dv = F32(8), .precision = operands(p)};
    return run(self, "attention_backward_keys", p, &job, (p->keys + COLS - 1) / COLS,
               (int64_t)COLS * (p->head_dim + p->value_dim), key_tasks);
}
