/* The CPU side of the fused kernels (kernels.h, "fusion"). On the CPU a
 * kernel launch costs little, so these are written for clarity: the GEMM
 * epilogue is a second pass over C, the fused softmax + cross-entropy turns
 * the probabilities into the gradient in place. They are the reference the
 * Vulkan shaders are tested against. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "cpu_backend.h"
#include "cpu_gemm.h"

/* ---- GEMM + epilogue ---- */

typedef struct epilogue_job {
    const nn_gemm_epilogue_params *e;
    float *c;
    float *t;            /* the product when it is not already in c (beta != 0); ours to modify */
    int64_t t_stride;    /* between outputs in t; rows of t are n long */
    const float *aux;
} epilogue_job;

/* The epilogue on one row v[0..n), in place: one simple loop per step so
 * each vectorizes (a branch per element inside one loop would not). */
static void epilogue_row(int epi, float *restrict v, int64_t n, const float *restrict bias_cols, float bias_row,
                         const float *restrict mask) {
    if (epi & NN_EPI_BIAS_COLS)
        for (int64_t i = 0; i < n; i++) v[i] += bias_cols[i];
    if (epi & NN_EPI_BIAS_ROWS)
        for (int64_t i = 0; i < n; i++) v[i] += bias_row;
    if (epi & NN_EPI_RELU) /* a NaN passes, as relu_forward */
        for (int64_t i = 0; i < n; i++) v[i] = (v[i] > 0.0f || v[i] != v[i]) ? v[i] : 0.0f;
    if (epi & NN_EPI_MASK)
        for (int64_t i = 0; i < n; i++) v[i] = mask[i] > 0.0f ? v[i] : 0.0f;
}

/* One task per row of every output matrix. */
static void epilogue_rows(void *arg, int64_t begin, int64_t end, int worker) {
    const epilogue_job *job = arg;
    const nn_gemm_params *g = &job->e->gemm;
    const int epi = job->e->epilogue;
    const bool summed = g->stride_c == 0 && g->batch > 1;
    for (int64_t task = begin; task < end; task++) {
        int64_t out = task / g->m, row = task % g->m;
        int64_t c_at = (summed ? 0 : out * g->stride_c) + row * g->ldc;
        float *restrict c = job->c + c_at;
        const float *mask = (epi & NN_EPI_MASK) ? job->aux + c_at : NULL;
        float bias_row = (epi & NN_EPI_BIAS_ROWS) ? job->aux[row] : 0.0f;
        if (!job->t) {
            epilogue_row(epi, c, g->n, job->aux, bias_row, mask);
            continue;
        }
        float *restrict t = job->t + out * job->t_stride + row * g->n;
        epilogue_row(epi, t, g->n, job->aux, bias_row, mask);
        const float beta = g->beta;
        for (int64_t col = 0; col < g->n; col++) c[col] = t[col] + beta * c[col];
    }
}

nn_status nn_cpu_gemm_epilogue(nn_thread_pool *pool, const nn_gemm_epilogue_params *e, const float *a,
                               const float *b, float *c, const float *aux) {
    const nn_gemm_params *g = &e->gemm;
    const int epi = e->epilogue;
    const int bias = epi & (NN_EPI_BIAS_COLS | NN_EPI_BIAS_ROWS);
    if ((epi & ~(NN_EPI_BIAS_COLS | NN_EPI_BIAS_ROWS | NN_EPI_RELU | NN_EPI_MASK)) ||
        bias == (NN_EPI_BIAS_COLS | NN_EPI_BIAS_ROWS) || (bias && (epi & NN_EPI_MASK)))
        return nn_set_error(NN_ERR_BACKEND, "cpu gemm_epilogue: invalid epilogue flags 0x%x", epi);
    if ((bias || (epi & NN_EPI_MASK)) && !aux)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu gemm_epilogue: epilogue 0x%x needs the aux buffer", epi);
    const bool summed = g->stride_c == 0 && g->batch > 1;
    const int64_t outputs = summed ? 1 : g->batch;
    float *product = NULL;
    nn_gemm_params plain = *g;
    if (g->beta != 0.0f && epi) {
        /* C = epilogue(product) + beta C: the product needs its own matrix. */
        product = malloc((size_t)(outputs * g->m * g->n + 1) * sizeof *product);
        if (!product) return nn_set_error(NN_ERR_MEMORY, "cpu gemm_epilogue: out of host memory");
        plain.ldc = g->n;
        plain.stride_c = summed ? 0 : (int64_t)g->m * g->n;
        plain.beta = 0.0f;
    }
    nn_status s = nn_cpu_gemm(pool, &plain, a, b, product ? product : c);
    if (s != NN_OK) {
        free(product);
        return nn_set_error(s, "cpu gemm_epilogue m=%d n=%d k=%d batch=%d lda=%d ldb=%d ldc=%d: %s", g->m, g->n,
                            g->k, g->batch, g->lda, g->ldb, g->ldc,
                            s == NN_ERR_MEMORY ? "out of scratch memory" : "invalid sizes or strides");
    }
    if (epi && g->m > 0 && g->n > 0) {
        epilogue_job job = {e, c, product, (int64_t)g->m * g->n, aux};
        nn_parallel_for(pool, outputs * g->m, NN_CPU_MIN_CHUNK / (g->n > 0 ? g->n : 1) + 1, epilogue_rows, &job);
    }
    free(product);
    return NN_OK;
}

/* ---- max-pool backward fused with the ReLU before the pool ---- */

typedef struct pool_mask_job {
    const nn_pool_params *p;
    const float *dy, *y;
    const int32_t *argmax;
    float *dx;
} pool_mask_job;

static void masked_planes(void *arg, int64_t begin, int64_t end, int worker) {
    const pool_mask_job *job = arg;
    const int64_t in_plane = (int64_t)job->p->height * job->p->width;
    const int64_t out_plane = (int64_t)job->p->out_h * job->p->out_w;
    for (int64_t nc = begin; nc < end; nc++) {
        const nn_cpu_pool_plane in = nn_cpu_pool_plane_of(job->p, nc, in_plane);
        const nn_cpu_pool_plane out = nn_cpu_pool_plane_of(job->p, nc, out_plane);
        if (!job->p->accumulate)
            for (int64_t i = 0; i < in_plane; i++) job->dx[in.base + i * in.step] = 0.0f;
        for (int64_t i = 0; i < out_plane; i++) {
            const int64_t o = out.base + i * out.step;
            job->dx[in.base + job->argmax[o] * in.step] += job->y[o] > 0.0f ? job->dy[o] : 0.0f;
        }
    }
}

nn_status nn_cpu_maxpool_backward_masked(nn_thread_pool *pool, const nn_pool_params *p, const float *dy,
                                         const int32_t *argmax, const float *y, float *dx) {
    pool_mask_job job = {p, dy, y, argmax, dx};
    nn_parallel_for(pool, (int64_t)p->batch * p->channels, 4, masked_planes, &job);
    return NN_OK;
}

/* ---- softmax + cross-entropy, forward and gradient ---- */

nn_status nn_cpu_softmax_ce_fused(nn_thread_pool *pool, const nn_softmax_params *p, const float *logits,
                                  const int32_t *labels, float *dlogits, float *loss) {
    nn_softmax_params forward = *p;
    forward.accumulate = 0;
    nn_status status = nn_cpu_softmax_ce_forward(pool, &forward, logits, labels, dlogits, loss);
    nn_cpu_softmax_ce_gradient(p, labels, dlogits); /* also after a bad label, which the status reports */
    return status;
}

void nn_cpu_softmax_ce_gradient(const nn_softmax_params *p, const int32_t *labels, float *dlogits) {
    const float inv_rows = 1.0f / (float)p->rows;
    for (int64_t r = 0; r < p->rows; r++) {
        float *row = dlogits + r * p->cols;
        int32_t label = labels[r];
        if (label >= 0 && label < p->cols) row[label] -= 1.0f;
        for (int j = 0; j < p->cols; j++) row[j] *= inv_rows;
    }
}

/* ---- SGD with the learning rate on the device ---- */

nn_status nn_cpu_sgd_update_device_lr(nn_thread_pool *pool, const nn_sgd_params *p, float *param,
                                      const float *grad, float *velocity, const float *scalars) {
    nn_sgd_params with_lr = *p;
    with_lr.lr = scalars[0];
    return nn_cpu_sgd_update(pool, &with_lr, param, grad, velocity, scalars + 1);
}
