/* The normalisation kernels (kernels.h's nn_norm_params): per-group mean
 * and variance, the normalise + affine pass, and the backward reductions.
 * Every sum is a double, two passes where a variance is taken (the mean
 * first, then the squared deviations), so groups of millions of elements
 * keep float32's precision in their statistics. */
#include <math.h>

#include "backends/norm_layout.h"
#include "base/error.h"
#include "cpu_backend.h"

typedef struct norm_job {
    const nn_norm_params *p;
    const float *x, *mean, *var, *weight, *bias, *dy, *sums, *residual;
    float *out, *out2;
} norm_job;

static double rstd_of(const norm_job *job, int64_t g) { return 1.0 / sqrt((double)job->var[g] + job->p->eps); }

static int64_t channel_of(const nn_norm_params *p, int64_t element) {
    return (element / p->channel_inner) % p->channels;
}

/* The end of the run from element e (before stop) over which the channel
 * stays e's: the loops below find each run's channel (and weight and bias)
 * once, not each element's with an integer division; the arithmetic per
 * element is as it was, so the results are the same bits. */
static int64_t channel_run_end(const nn_norm_params *p, int64_t e, int64_t stop) {
    const int64_t next = (e / p->channel_inner + 1) * p->channel_inner;
    return next < stop ? next : stop;
}

/* The elements of group g, as runs of `inner` contiguous ones. */
#define FOR_GROUP_ELEMENTS(p, g, e)                                   \
    for (int64_t o_ = 0; o_ < (p)->outer; o_++)                       \
        for (int64_t e = (o_ * (p)->groups + (g)) * (p)->inner,       \
                     end_ = e + (p)->inner; e < end_; e++)

static void stats_groups(void *arg, int64_t begin, int64_t end, int worker) {
    const norm_job *job = arg;
    const nn_norm_params *p = job->p;
    const double n = (double)(p->outer * p->inner);
    for (int64_t g = begin; g < end; g++) {
        double sum = 0.0, squares = 0.0;
        FOR_GROUP_ELEMENTS(p, g, e) sum += job->x[e];
        const double mean = n > 0 ? sum / n : 0.0;
        FOR_GROUP_ELEMENTS(p, g, e) {
            const double d = job->x[e] - mean;
            squares += d * d;
        }
        job->out[g] = (float)mean;
        job->out2[g] = n > 0 ? (float)(squares / n) : 0.0f;
    }
}

static int64_t min_groups(const nn_norm_params *p) {
    const int64_t per_group = p->outer * p->inner;
    return NN_CPU_MIN_CHUNK / (per_group > 0 ? per_group : 1) + 1;
}

nn_status nn_cpu_norm_stats(nn_thread_pool *pool, const nn_norm_params *p, const float *x, float *mean, float *var) {
    NN_TRY(nn_norm_check("cpu", NN_KERNEL_NORM_STATS, p));
    norm_job job = {.p = p, .x = x, .out = mean, .out2 = var};
    nn_parallel_for(pool, p->groups, min_groups(p), stats_groups, &job);
    return NN_OK;
}

/* Over blocks (o, g) of `inner` contiguous elements, each of one group. */
static void apply_blocks(void *arg, int64_t begin, int64_t end, int worker) {
    const norm_job *job = arg;
    const nn_norm_params *p = job->p;
    for (int64_t block = begin; block < end; block++) {
        const int64_t g = block % p->groups, first = block * p->inner, last = first + p->inner;
        const double mean = job->mean[g], rstd = rstd_of(job, g);
        for (int64_t run = first, run_end; run < last; run = run_end) {
            run_end = channel_run_end(p, run, last);
            const int64_t c = channel_of(p, run);
            const double w = job->weight ? job->weight[c] : 1.0, b = job->bias ? job->bias[c] : 0.0;
            for (int64_t e = run; e < run_end; e++) {
                double y = (job->x[e] - mean) * rstd;
                if (job->weight) y *= w;
                if (job->bias) y += b;
                /* The residual joins the stored float y as the add would: a sum rounded
                 * once instead can flip a later ReLU6 (the MobileNetV2 gradients test). */
                if (job->residual) y = (double)((float)y + job->residual[e]);
                job->out[e] = (float)y;
            }
        }
        if (p->epilogue.on) nn_cpu_unary_in_place(&p->epilogue, job->out + first, p->inner);
    }
}

nn_status nn_cpu_norm_apply(nn_thread_pool *pool, const nn_norm_params *p, const float *x, const float *mean,
                            const float *var, const float *weight, const float *bias, float *y,
                            const float *residual) {
    NN_TRY(nn_norm_check("cpu", NN_KERNEL_NORM_APPLY, p));
    norm_job job = {.p = p, .x = x, .mean = mean, .var = var, .weight = weight, .bias = bias, .out = y,
                    .residual = residual};
    nn_parallel_for(pool, p->outer * p->groups, NN_CPU_MIN_CHUNK / (p->inner > 0 ? p->inner : 1) + 1, apply_blocks,
                    &job);
    return NN_OK;
}

/* Element e's output gradient: dy, or with grad_mask dy through the
 * activation's mask at y, the normalised value as apply_blocks computes it
 * (c: e's channel). */
static float masked_dy(const norm_job *job, int64_t e, int64_t c, double mean, double rstd) {
    const nn_norm_params *p = job->p;
    if (!p->grad_mask) return job->dy[e];
    double v = (job->x[e] - mean) * rstd;
    if (job->weight) v *= job->weight[c];
    if (job->bias) v += job->bias[c];
    const float y = (float)v;
    const bool passes = p->grad_mask == NN_NORM_MASK_RELU ? y > 0.0f : !(y <= 0.0f || y >= 6.0f);
    return passes ? job->dy[e] : 0.0f;
}

/* Group g's sums of w dy and of w dy xhat (of dy and dy xhat with sums_unweighted). */
static void group_sums(const norm_job *job, int64_t g, double *sum_wdy, double *sum_wdy_xhat) {
    const nn_norm_params *p = job->p;
    const double mean = job->mean[g], rstd = rstd_of(job, g);
    const bool weighted = job->weight && !p->sums_unweighted;
    double a = 0.0, b = 0.0;
    for (int64_t o = 0; o < p->outer; o++)
        for (int64_t run = (o * p->groups + g) * p->inner, last = run + p->inner, run_end; run < last; run = run_end) {
            run_end = channel_run_end(p, run, last);
            const int64_t c = channel_of(p, run);
            const float w = weighted ? job->weight[c] : 1.0f;
            for (int64_t e = run; e < run_end; e++) {
                const double wdy = masked_dy(job, e, c, mean, rstd) * w;
                a += wdy;
                b += wdy * (job->x[e] - mean) * rstd;
            }
        }
    *sum_wdy = a;
    *sum_wdy_xhat = b;
}

/* Group g's dx (+)= rstd (w dy - mean_wdy - xhat mean_wdy_xhat). */
static void group_dx(const norm_job *job, int64_t g, double mean_wdy, double mean_wdy_xhat) {
    const nn_norm_params *p = job->p;
    const double mean = job->mean[g], rstd = rstd_of(job, g);
    for (int64_t o = 0; o < p->outer; o++)
        for (int64_t run = (o * p->groups + g) * p->inner, last = run + p->inner, run_end; run < last; run = run_end) {
            run_end = channel_run_end(p, run, last);
            const int64_t c = channel_of(p, run);
            const float w = job->weight ? job->weight[c] : 1.0f;
            for (int64_t e = run; e < run_end; e++) {
                const double wdy = masked_dy(job, e, c, mean, rstd) * w;
                const double xhat = (job->x[e] - mean) * rstd;
                const float dx = (float)(rstd * (wdy - mean_wdy - xhat * mean_wdy_xhat));
                job->out[e] = p->accumulate ? job->out[e] + dx : dx;
            }
        }
}

static void backward_data_groups(void *arg, int64_t begin, int64_t end, int worker) {
    const norm_job *job = arg;
    const nn_norm_params *p = job->p;
    const double n = (double)(p->outer * p->inner);
    for (int64_t g = begin; g < end; g++) {
        double mean_wdy = 0.0, mean_wdy_xhat = 0.0; /* over the group, when the statistics came from x */
        if (p->batch_stats && n > 0) {
            group_sums(job, g, &mean_wdy, &mean_wdy_xhat);
            mean_wdy /= n;
            mean_wdy_xhat /= n;
        }
        group_dx(job, g, mean_wdy, mean_wdy_xhat);
    }
}

nn_status nn_cpu_norm_backward_data(nn_thread_pool *pool, const nn_norm_params *p, const float *x, const float *mean,
                                    const float *var, const float *weight, const float *dy, float *dx) {
    NN_TRY(nn_norm_check("cpu", NN_KERNEL_NORM_BACKWARD_DATA, p));
    norm_job job = {.p = p, .x = x, .mean = mean, .var = var, .weight = weight, .dy = dy, .out = dx};
    nn_parallel_for(pool, p->groups, min_groups(p), backward_data_groups, &job);
    return NN_OK;
}

static void backward_sums_groups(void *arg, int64_t begin, int64_t end, int worker) {
    const norm_job *job = arg;
    for (int64_t g = begin; g < end; g++) {
        double a, b;
        group_sums(job, g, &a, &b);
        job->out2[2 * g] = (float)a;
        job->out2[2 * g + 1] = (float)b;
    }
}

nn_status nn_cpu_norm_backward_sums(nn_thread_pool *pool, const nn_norm_params *p, const float *x, const float *mean,
                                    const float *var, const float *weight, const float *dy, float *sums,
                                    const float *bias) {
    NN_TRY(nn_norm_check("cpu", NN_KERNEL_NORM_BACKWARD_SUMS, p));
    norm_job job = {.p = p, .x = x, .mean = mean, .var = var, .weight = weight, .bias = bias, .dy = dy, .out2 = sums};
    nn_parallel_for(pool, p->groups, min_groups(p), backward_sums_groups, &job);
    return NN_OK;
}

static void backward_from_sums_groups(void *arg, int64_t begin, int64_t end, int worker) {
    const norm_job *job = arg;
    const double n = (double)(job->p->outer * job->p->inner);
    for (int64_t g = begin; g < end; g++) {
        /* Sums without the weight take group g's (its one channel's) here. */
        const double w = job->p->sums_unweighted && job->weight ? job->weight[g] : 1.0;
        group_dx(job, g, w * job->sums[2 * g] / n, w * job->sums[2 * g + 1] / n);
    }
}

nn_status nn_cpu_norm_backward_from_sums(nn_thread_pool *pool, const nn_norm_params *p, const float *x,
                                         const float *mean, const float *var, const float *weight, const float *dy,
                                         float *dx, const float *sums, float *dweight, float *dbias,
                                         const float *bias) {
    NN_TRY(nn_norm_check("cpu", NN_KERNEL_NORM_BACKWARD_FROM_SUMS, p));
    NN_TRY(nn_norm_affine_from_sums_check("cpu", p, dweight || dbias));
    for (int32_t c = 0; c < p->channels; c++) { /* the sums are the affine gradients (kernels.h) */
        if (dweight) dweight[c] = ((p->affine_accumulate & 1) ? dweight[c] : 0.0f) + sums[2 * c + 1];
        if (dbias) dbias[c] = ((p->affine_accumulate & 2) ? dbias[c] : 0.0f) + sums[2 * c];
    }
    if (p->outer * p->inner == 0) return NN_OK; /* no elements */
    norm_job job = {.p = p, .x = x, .mean = mean, .var = var, .weight = weight, .bias = bias, .dy = dy, .out = dx,
                    .sums = sums};
    nn_parallel_for(pool, p->groups, min_groups(p), backward_from_sums_groups, &job);
    return NN_OK;
}

static void backward_affine_channels(void *arg, int64_t begin, int64_t end, int worker) {
    const norm_job *job = arg;
    const nn_norm_params *p = job->p;
    const int64_t runs = nn_norm_elements(p) / ((int64_t)p->channels * p->channel_inner);
    for (int64_t c = begin; c < end; c++) {
        double dweight = 0.0, dbias = 0.0;
        for (int64_t o = 0; o < runs; o++) {
            const int64_t first = (o * p->channels + c) * p->channel_inner, last = first + p->channel_inner;
            /* In pieces of one group each: its mean and rstd found once a piece. */
            for (int64_t piece = first, piece_end; piece < last; piece = piece_end) {
                const int64_t next = (piece / p->inner + 1) * p->inner;
                piece_end = next < last ? next : last;
                const int64_t g = (piece / p->inner) % p->groups;
                const float mean = job->mean[g];
                const double rstd = rstd_of(job, g);
                for (int64_t e = piece; e < piece_end; e++) {
                    dweight += job->dy[e] * (job->x[e] - mean) * rstd;
                    dbias += job->dy[e];
                }
            }
        }
        if (job->out) job->out[c] = (p->accumulate ? job->out[c] : 0.0f) + (float)dweight;
        if (job->out2) job->out2[c] = (p->accumulate ? job->out2[c] : 0.0f) + (float)dbias;
    }
}

nn_status nn_cpu_norm_backward_affine(nn_thread_pool *pool, const nn_norm_params *p, const float *x,
                                      const float *mean, const float *var, const float *dy, float *dweight,
                                      float *dbias) {
    NN_TRY(nn_norm_check("cpu", NN_KERNEL_NORM_BACKWARD_AFFINE, p));
    if (!dweight && !dbias)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu norm_backward_affine: dweight and dbias are both absent");
    norm_job job = {.p = p, .x = x, .mean = mean, .var = var, .dy = dy, .out = dweight, .out2 = dbias};
    if (p->inner == 0 || p->outer == 0) { /* no elements: the sums are 0 */
        for (int32_t c = 0; c < p->channels; c++) {
            if (dweight && !p->accumulate) dweight[c] = 0.0f;
            if (dbias && !p->accumulate) dbias[c] = 0.0f;
        }
        return NN_OK;
    }
    const int64_t per_channel = nn_norm_elements(p) / p->channels;
    nn_parallel_for(pool, p->channels, NN_CPU_MIN_CHUNK / (per_channel > 0 ? per_channel : 1) + 1,
                    backward_affine_channels, &job);
    return NN_OK;
}

nn_status nn_cpu_norm_running_update(const nn_norm_running_params *p, const float *mean, const float *var,
                                     float *running_mean, float *running_var, const int32_t *count_tracked) {
    NN_TRY(nn_norm_running_check("cpu", p, count_tracked != NULL));
    double f = p->momentum;
    if (p->momentum < 0.0f) f = count_tracked[0] > 0 ? 1.0 / count_tracked[0] : 1.0;
    const double unbias = (double)p->count / (double)(p->count - 1);
    for (int32_t c = 0; c < p->channels; c++) {
        running_mean[c] = (float)((1.0 - f) * running_mean[c] + f * mean[c]);
        running_var[c] = (float)((1.0 - f) * running_var[c] + f * var[c] * unbias);
    }
    return NN_OK;
}
