/* The class-target negative log-likelihood (kernels.h's nn_nll_params):
 * nll_loss, and cross_entropy's with label smoothing, over log-probabilities
 * [outer, classes, inner] and targets [outer, inner]. Sums are in double,
 * in position order. */
#include <math.h>

#include "base/error.h"
#include "cpu_backend.h"

static double weight_of(const float *weight, int32_t c) { return weight ? weight[c] : 1.0; }

static nn_status check(const nn_nll_params *p) {
    if (p->outer < 0 || p->classes <= 0 || p->inner <= 0 || p->reduction < 0 || p->reduction > 2)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu nll: outer=%d classes=%d inner=%d reduction=%d", p->outer,
                            p->classes, p->inner, p->reduction);
    return NN_OK;
}

nn_status nn_cpu_nll_forward(const nn_nll_params *p, const float *input, const int32_t *target, const float *weight,
                             float *loss, float *total_weight) {
    NN_TRY(check(p));
    if (p->reduction == 0 && total_weight)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu nll_forward: total_weight is written only for reduction mean or sum");
    const int64_t positions = (int64_t)p->outer * p->inner;
    int64_t bad = -1;
    double sum = 0.0, weights = 0.0;
    for (int64_t pos = 0; pos < positions; pos++) {
        const int32_t t = target[pos];
        const float *x = input + (pos / p->inner) * p->classes * p->inner + pos % p->inner;
        double l = 0.0;
        if (t == p->ignore_index) {
            l = 0.0;
        } else if (t < 0 || t >= p->classes) {
            if (bad < 0) bad = pos;
            l = NAN;
        } else {
            l = -(1.0 - p->smoothing) * weight_of(weight, t) * x[(int64_t)t * p->inner];
            if (p->smoothing != 0.0f) {
                double all = 0.0;
                for (int32_t c = 0; c < p->classes; c++) all += weight_of(weight, c) * x[(int64_t)c * p->inner];
                l -= p->smoothing / p->classes * all;
            }
            weights += weight_of(weight, t);
        }
        if (p->reduction == 0) loss[pos] = (float)l;
        sum += l;
    }
    if (p->reduction != 0) loss[0] = (float)(p->reduction == 1 ? sum / weights : sum);
    if (total_weight) total_weight[0] = (float)weights;
    if (bad >= 0)
        return nn_set_error(NN_ERR_ARGUMENT, "cross_entropy / nll_loss: target %d at position %lld is outside "
                            "[0, %d) and is not ignore_index %d", (int)target[bad], (long long)bad, p->classes,
                            p->ignore_index);
    return NN_OK;
}

typedef struct nll_job {
    const nn_nll_params *p;
    const float *dloss, *weight;
    const int32_t *target;
    float scale; /* SUM, MEAN: the one gradient of every position */
    float *dinput;
} nll_job;

static void backward_elements(void *arg, int64_t begin, int64_t end, int worker) {
    const nll_job *job = arg;
    const nn_nll_params *p = job->p;
    const int64_t plane = (int64_t)p->classes * p->inner;
    for (int64_t e = begin; e < end; e++) {
        const int64_t o = e / plane, c = (e / p->inner) % p->classes, pos = o * p->inner + e % p->inner;
        const int32_t t = job->target[pos];
        double g = 0.0;
        if (t != p->ignore_index && t >= 0 && t < p->classes) {
            const double d = p->reduction == 0 ? job->dloss[pos] : job->scale;
            g = -d * ((c == t ? (1.0 - p->smoothing) * weight_of(job->weight, t) : 0.0) +
                      p->smoothing / p->classes * weight_of(job->weight, (int32_t)c));
        }
        job->dinput[e] = (float)(p->accumulate ? job->dinput[e] + g : g);
    }
}

nn_status nn_cpu_nll_backward(nn_thread_pool *pool, const nn_nll_params *p, const float *dloss, const int32_t *target,
                              const float *weight, const float *total_weight, float *dinput) {
    NN_TRY(check(p));
    if (p->reduction == 1 && !total_weight)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu nll_backward: reduction mean needs total_weight (argument 3)");
    nll_job job = {.p = p, .dloss = dloss, .weight = weight, .target = target, .dinput = dinput};
    if (p->reduction != 0) job.scale = p->reduction == 1 ? dloss[0] / total_weight[0] : dloss[0];
    nn_parallel_for(pool, (int64_t)p->outer * p->classes * p->inner, NN_CPU_MIN_CHUNK, backward_elements, &job);
    return NN_OK;
}
