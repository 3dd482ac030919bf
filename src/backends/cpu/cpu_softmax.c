/* Row-wise softmax, and softmax fused with cross-entropy. Each row is
 * shifted by its maximum before exp, so large logits cannot overflow. */
#include <math.h>
#include <stdlib.h>

#include "base/error.h"
#include "cpu_backend.h"
#include "platform/float_math.h"

typedef struct softmax_job {
    const nn_softmax_params *p;
    const float *x;       /* logits or probabilities */
    const float *dy;
    const int32_t *labels;
    const float *dloss;
    float *y;
    double *row_loss;     /* per-row -log p[label], summed in order afterwards */
    int64_t *bad_row;     /* first row with an out-of-range label, or -1 */
} softmax_job;

/* y = softmax(x) for one row; returns log(sum exp(x - max)) + max. */
static double softmax_row(const float *x, float *y, int cols) {
    float max = x[0];
    for (int j = 1; j < cols; j++) max = x[j] > max ? x[j] : max;
    double sum = 0.0;
    for (int j = 0; j < cols; j++) {
        float e = nn_expf(x[j] - max);
        y[j] = e;
        sum += e;
    }
    float inv = (float)(1.0 / sum);
    for (int j = 0; j < cols; j++) y[j] *= inv;
    return log(sum) + max;
}

static void softmax_rows(void *arg, int64_t begin, int64_t end, int worker) {
    const softmax_job *job = arg;
    const int cols = job->p->cols;
    for (int64_t r = begin; r < end; r++) softmax_row(job->x + r * cols, job->y + r * cols, cols);
}

nn_status nn_cpu_softmax_forward(nn_thread_pool *pool, const nn_softmax_params *p, const float *x,
                                 float *y) {
    softmax_job job = {.p = p, .x = x, .y = y};
    nn_parallel_for(pool, p->rows, NN_CPU_MIN_CHUNK / p->cols + 1, softmax_rows, &job);
    return NN_OK;
}

/* dx = y * (dy - sum_j dy_j y_j), the softmax Jacobian applied to dy. */
static void softmax_backward_rows(void *arg, int64_t begin, int64_t end, int worker) {
    const softmax_job *job = arg;
    const int cols = job->p->cols;
    for (int64_t r = begin; r < end; r++) {
        const float *y = job->x + r * cols, *dy = job->dy + r * cols;
        float *dx = job->y + r * cols;
        double dot = 0.0;
        for (int j = 0; j < cols; j++) dot += (double)dy[j] * y[j];
        for (int j = 0; j < cols; j++)
            dx[j] = (job->p->accumulate ? dx[j] : 0.0f) + y[j] * (dy[j] - (float)dot);
    }
}

nn_status nn_cpu_softmax_backward(nn_thread_pool *pool, const nn_softmax_params *p, const float *y,
                                  const float *dy, float *dx) {
    softmax_job job = {.p = p, .x = y, .dy = dy, .y = dx};
    nn_parallel_for(pool, p->rows, NN_CPU_MIN_CHUNK / p->cols + 1, softmax_backward_rows, &job);
    return NN_OK;
}

static void softmax_ce_rows(void *arg, int64_t begin, int64_t end, int worker) {
    const softmax_job *job = arg;
    const int cols = job->p->cols;
    for (int64_t r = begin; r < end; r++) {
        const float *x = job->x + r * cols;
        double log_sum = softmax_row(x, job->y + r * cols, cols);
        int32_t label = job->labels[r];
        if (label < 0 || label >= cols) {
            job->row_loss[r] = NAN;
            if (job->bad_row[worker] < 0) job->bad_row[worker] = r;
            continue;
        }
        job->row_loss[r] = log_sum - x[label];
    }
}

/* softmax_ce_rows over every row on the pool: the probabilities, each row's
 * loss in double (NaN for a bad label) and the first bad row's error. */
static nn_status ce_rows(nn_thread_pool *pool, const nn_softmax_params *p, const float *logits,
                         const int32_t *labels, float *probs, double *row_loss) {
    int workers = nn_thread_pool_size(pool);
    int64_t *bad_row = malloc((size_t)workers * sizeof *bad_row);
    if (!bad_row) return nn_set_error(NN_ERR_MEMORY, "cpu softmax_ce_forward: out of host memory");
    for (int w = 0; w < workers; w++) bad_row[w] = -1;
    softmax_job job = {.p = p, .x = logits, .labels = labels, .y = probs, .row_loss = row_loss,
                       .bad_row = bad_row};
    nn_parallel_for(pool, p->rows, NN_CPU_MIN_CHUNK / p->cols + 1, softmax_ce_rows, &job);
    int64_t bad = -1;
    for (int w = 0; w < workers; w++)
        if (bad_row[w] >= 0 && (bad < 0 || bad_row[w] < bad)) bad = bad_row[w];
    free(bad_row);
    if (bad >= 0)
        return nn_set_error(NN_ERR_ARGUMENT,
                            "softmax_cross_entropy: label %d at row %lld is outside [0, %d)",
                            (int)labels[bad], (long long)bad, p->cols);
    return NN_OK;
}

nn_status nn_cpu_softmax_ce_forward(nn_thread_pool *pool, const nn_softmax_params *p,
                                    const float *logits, const int32_t *labels, float *probs,
                                    float *loss) {
    double *row_loss = malloc((size_t)p->rows * sizeof *row_loss);
    if (!row_loss) return nn_set_error(NN_ERR_MEMORY, "cpu softmax_ce_forward: out of host memory");
    nn_status status = ce_rows(pool, p, logits, labels, probs, row_loss);
    double total = 0.0;
    for (int64_t r = 0; r < p->rows; r++) total += row_loss[r];
    loss[0] = (float)(total / p->rows);
    free(row_loss);
    return status;
}

nn_status nn_cpu_softmax_ce_row_losses(nn_thread_pool *pool, const nn_softmax_params *p, const float *logits,
                                       const int32_t *labels, float *probs, float *row_loss) {
    double *rows = malloc((size_t)p->rows * sizeof *rows);
    if (!rows) return nn_set_error(NN_ERR_MEMORY, "cpu softmax cross-entropy row losses: out of host memory");
    nn_status status = ce_rows(pool, p, logits, labels, probs, rows);
    for (int64_t r = 0; r < p->rows; r++) row_loss[r] = (float)rows[r];
    free(rows);
    return status;
}

/* dlogits = (probs - onehot(label)) * dloss / rows. */
static void softmax_ce_backward_rows(void *arg, int64_t begin, int64_t end, int worker) {
    const softmax_job *job = arg;
    const int cols = job->p->cols;
    const float scale = job->dloss[0] / (float)job->p->rows;
    for (int64_t r = begin; r < end; r++) {
        const float *prob = job->x + r * cols;
        float *dx = job->y + r * cols;
        int32_t label = job->labels[r];
        for (int j = 0; j < cols; j++) {
            float g = (prob[j] - (j == label ? 1.0f : 0.0f)) * scale;
            dx[j] = (job->p->accumulate ? dx[j] : 0.0f) + g;
        }
    }
}

nn_status nn_cpu_softmax_ce_backward(nn_thread_pool *pool, const nn_softmax_params *p,
                                     const float *probs, const int32_t *labels,
                                     const float *dloss, float *dlogits) {
    softmax_job job = {.p = p, .x = probs, .labels = labels, .dloss = dloss, .y = dlogits};
    nn_parallel_for(pool, p->rows, NN_CPU_MIN_CHUNK / p->cols + 1, softmax_ce_backward_rows, &job);
    return NN_OK;
}
