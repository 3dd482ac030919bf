/* Max pooling over (image, channel) planes. The argmax is the index of the
 * winning input within its plane, so backward is a scatter inside one plane.
 * Channels-last tensors (p->layout) take the plain loops through their
 * strides; dense ones the vectorized interior below. */
#include <string.h>

#include "cpu_backend.h"

typedef struct pool_job {
    const nn_pool_params *p;
    const float *in;
    const int32_t *argmax_in;
    float *out;
    int32_t *argmax_out;
} pool_job;

/* Padding never wins; the first maximum in row-major window order wins
 * ties; a NaN propagates (as in PyTorch). */
static inline int takes_over(float v, float best) { return v > best || (v != v && best == best); }

/* One output, any window (clipped at the edges). */
static void pool_one(const nn_pool_params *p, const float *x, int oh, int ow, float *y,
                     int32_t *argmax) {
    int h0 = oh * p->stride - p->pad, w0 = ow * p->stride - p->pad;
    int h1 = h0 + p->kernel < p->height ? h0 + p->kernel : p->height;
    int w1 = w0 + p->kernel < p->width ? w0 + p->kernel : p->width;
    if (h0 < 0) h0 = 0;
    if (w0 < 0) w0 = 0;
    int32_t best_index = h0 * p->width + w0;
    float best = x[best_index];
    for (int h = h0; h < h1; h++) {
        for (int w = w0; w < w1; w++) {
            float v = x[h * p->width + w];
            if (takes_over(v, best)) best = v, best_index = h * p->width + w;
        }
    }
    *y = best;
    *argmax = best_index;
}

nn_cpu_pool_plane nn_cpu_pool_plane_of(const nn_pool_params *p, int64_t nc, int64_t pixels) {
    const int64_t n = nc / p->channels, c = nc % p->channels;
    if (p->layout == NN_LAYOUT_CHANNELS_LAST) return (nn_cpu_pool_plane){n * pixels * p->channels + c, p->channels};
    return (nn_cpu_pool_plane){nc * pixels, 1};
}

static void forward_strided(const pool_job *job, int64_t begin, int64_t end) {
    const nn_pool_params *p = job->p;
    const int64_t in_plane = (int64_t)p->height * p->width, out_plane = (int64_t)p->out_h * p->out_w;
    for (int64_t nc = begin; nc < end; nc++) {
        const nn_cpu_pool_plane in = nn_cpu_pool_plane_of(p, nc, in_plane), out = nn_cpu_pool_plane_of(p, nc, out_plane);
        for (int oh = 0; oh < p->out_h; oh++)
            for (int ow = 0; ow < p->out_w; ow++) {
                int h0 = oh * p->stride - p->pad, w0 = ow * p->stride - p->pad;
                const int h1 = h0 + p->kernel < p->height ? h0 + p->kernel : p->height;
                const int w1 = w0 + p->kernel < p->width ? w0 + p->kernel : p->width;
                if (h0 < 0) h0 = 0;
                if (w0 < 0) w0 = 0;
                int32_t best_index = h0 * p->width + w0;
                float best = job->in[in.base + best_index * in.step];
                for (int h = h0; h < h1; h++)
                    for (int w = w0; w < w1; w++) {
                        const float v = job->in[in.base + (int64_t)(h * p->width + w) * in.step];
                        if (takes_over(v, best)) best = v, best_index = h * p->width + w;
                    }
                const int64_t o = out.base + (int64_t)(oh * p->out_w + ow) * out.step;
                job->out[o] = best;
                job->argmax_out[o] = best_index;
            }
    }
}

static void forward_planes(void *arg, int64_t begin, int64_t end, int worker) {
    const pool_job *job = arg;
    if (job->p->layout == NN_LAYOUT_CHANNELS_LAST) {
        forward_strided(job, begin, end);
        return;
    }
    const nn_pool_params params = *job->p, *p = &params; /* a local copy: stores cannot alias it */
    const int64_t in_plane = (int64_t)p->height * p->width;
    const int64_t out_plane = (int64_t)p->out_h * p->out_w;
    /* Columns [lo, hi) have windows wholly inside the image horizontally. */
    int lo = (p->pad + p->stride - 1) / p->stride;
    int hi = p->width - p->kernel + p->pad < 0 ? 0 : (p->width - p->kernel + p->pad) / p->stride + 1;
    if (hi > p->out_w) hi = p->out_w;
    if (lo > hi) lo = hi;
    for (int64_t nc = begin; nc < end; nc++) {
        const float *restrict x = job->in + nc * in_plane;
        float *restrict y = job->out + nc * out_plane;
        int32_t *restrict argmax = job->argmax_out + nc * out_plane;
        for (int oh = 0; oh < p->out_h; oh++) {
            float *restrict y_row = y + (int64_t)oh * p->out_w;
            int32_t *restrict a_row = argmax + (int64_t)oh * p->out_w;
            int h0 = oh * p->stride - p->pad, h1 = h0 + p->kernel;
            if (h0 < 0) h0 = 0;
            if (h1 > p->height) h1 = p->height;
            for (int ow = 0; ow < lo; ow++) pool_one(p, x, oh, ow, &y_row[ow], &a_row[ow]);
            /* Interior: the same scan, one window position at a time across the
             * row, so the inner loop is a branch-free select that vectorizes. */
            const int first = h0 * p->width - p->pad;
            for (int ow = lo; ow < hi; ow++) {
                y_row[ow] = x[first + ow * p->stride];
                a_row[ow] = first + ow * p->stride;
            }
            for (int h = h0; h < h1; h++) {
                for (int dw = 0; dw < p->kernel; dw++) {
                    if (h == h0 && dw == 0) continue;
                    const int offset = h * p->width - p->pad + dw;
                    for (int ow = lo; ow < hi; ow++) {
                        float v = x[offset + ow * p->stride], best = y_row[ow];
                        int take = takes_over(v, best);
                        y_row[ow] = take ? v : best;
                        a_row[ow] = take ? offset + ow * p->stride : a_row[ow];
                    }
                }
            }
            for (int ow = hi; ow < p->out_w; ow++) pool_one(p, x, oh, ow, &y_row[ow], &a_row[ow]);
        }
    }
}

static void backward_planes(void *arg, int64_t begin, int64_t end, int worker) {
    const pool_job *job = arg;
    const nn_pool_params params = *job->p, *p = &params;
    const int64_t in_plane = (int64_t)p->height * p->width;
    const int64_t out_plane = (int64_t)p->out_h * p->out_w;
    for (int64_t nc = begin; nc < end; nc++) {
        const nn_cpu_pool_plane in = nn_cpu_pool_plane_of(p, nc, in_plane), out = nn_cpu_pool_plane_of(p, nc, out_plane);
        if (!p->accumulate)
            for (int64_t i = 0; i < in_plane; i++) job->out[in.base + i * in.step] = 0.0f;
        for (int64_t i = 0; i < out_plane; i++) {
            const int64_t o = out.base + i * out.step;
            job->out[in.base + job->argmax_in[o] * in.step] += job->in[o];
        }
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
