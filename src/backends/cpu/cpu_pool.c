/* Max pooling over (image, channel) planes. The argmax is the index of the
 * winning input within its plane, so backward is a scatter inside one plane. */
#include <math.h>
#include <string.h>

#include "cpu_backend.h"

typedef struct pool_job {
    const nn_pool_params *p;
    const float *in;
    const int32_t *argmax_in;
    float *out;
    int32_t *argmax_out;
} pool_job;

static void forward_planes(void *arg, int64_t begin, int64_t end, int worker) {
    const pool_job *job = arg;
    const nn_pool_params params = *job->p, *p = &params; /* a local copy: stores cannot alias it */
    const int64_t in_plane = (int64_t)p->height * p->width;
    const int64_t out_plane = (int64_t)p->out_h * p->out_w;
    for (int64_t nc = begin; nc < end; nc++) {
        const float *restrict x = job->in + nc * in_plane;
        float *restrict y = job->out + nc * out_plane;
        int32_t *restrict argmax = job->argmax_out + nc * out_plane;
        for (int oh = 0; oh < p->out_h; oh++) {
            int h0 = oh * p->stride - p->pad;
            int h1 = h0 + p->kernel < p->height ? h0 + p->kernel : p->height;
            if (h0 < 0) h0 = 0;
            for (int ow = 0; ow < p->out_w; ow++) {
                int w0 = ow * p->stride - p->pad;
                int w1 = w0 + p->kernel < p->width ? w0 + p->kernel : p->width;
                if (w0 < 0) w0 = 0;
                /* Padding never wins; the first maximum wins ties; a NaN
                 * propagates (as in PyTorch). */
                int32_t best_index = h0 * p->width + w0;
                float best = x[best_index];
                for (int h = h0; h < h1; h++) {
                    for (int w = w0; w < w1; w++) {
                        float v = x[h * p->width + w];
                        if (v > best || (isnan(v) && !isnan(best))) {
                            best = v;
                            best_index = h * p->width + w;
                        }
                    }
                }
                y[oh * p->out_w + ow] = best;
                argmax[oh * p->out_w + ow] = best_index;
            }
        }
    }
}

static void backward_planes(void *arg, int64_t begin, int64_t end, int worker) {
    const pool_job *job = arg;
    const nn_pool_params params = *job->p, *p = &params;
    const int64_t in_plane = (int64_t)p->height * p->width;
    const int64_t out_plane = (int64_t)p->out_h * p->out_w;
    for (int64_t nc = begin; nc < end; nc++) {
        const float *restrict dy = job->in + nc * out_plane;
        const int32_t *restrict argmax = job->argmax_in + nc * out_plane;
        float *restrict dx = job->out + nc * in_plane;
        if (!p->accumulate) memset(dx, 0, (size_t)in_plane * sizeof(float));
        for (int64_t i = 0; i < out_plane; i++) dx[argmax[i]] += dy[i];
    }
}

nn_status nn_cpu_maxpool_forward(nn_thread_pool *pool, const nn_pool_params *p, const float *x,
                                 float *y, int32_t *argmax) {
    pool_job job = {.p = p, .in = x, .out = y, .argmax_out = argmax};
    nn_parallel_for(pool, (int64_t)p->batch * p->channels, 4, forward_planes, &job);
    return NN_OK;
}

nn_status nn_cpu_maxpool_backward(nn_thread_pool *pool, const nn_pool_params *p, const float *dy,
                                  const int32_t *argmax, float *dx) {
    pool_job job = {.p = p, .in = dy, .argmax_in = argmax, .out = dx};
    nn_parallel_for(pool, (int64_t)p->batch * p->channels, 4, backward_planes, &job);
    return NN_OK;
}
