/* Resampling (the INTERPOLATE_* kernels): nearest and bilinear, one row of
 * a plane per item, with shaders/interpolate_map.h's taps and weights, as
 * the shaders (interpolate_*.comp) take them. The backward gathers into
 * each input element the outputs that read it, in a fixed order: no
 * scatter, so no two items write one element and the sums do not depend on
 * the thread count. */
#include "base/error.h"
#include "cpu_backend.h"
#include "interpolate_map.h"

typedef struct interpolate_job {
    const nn_interpolate_params *p;
    const float *src;
    float *dst;
} interpolate_job;

static void forward_rows(void *arg, int64_t begin, int64_t end, int worker) {
    const interpolate_job *job = arg;
    const nn_interpolate_params p = *job->p;
    for (int64_t row = begin; row < end; row++) { /* row = plane * out_h + oh */
        const int oh = (int)(row % p.out_h);
        const float *x = job->src + row / p.out_h * p.in_h * p.in_w;
        const float sh = interp_source(oh, p.scale_h, p.mode, p.align_corners);
        const int h0 = interp_first(sh, p.in_h), h1 = h0 + interp_step(h0, p.in_h, p.mode);
        const float lh = interp_lambda(sh, h0, p.mode);
        float *y = job->dst + row * p.out_w;
        for (int ow = 0; ow < p.out_w; ow++) {
            const float sw = interp_source(ow, p.scale_w, p.mode, p.align_corners);
            const int w0 = interp_first(sw, p.in_w), w1 = w0 + interp_step(w0, p.in_w, p.mode);
            const float lw = interp_lambda(sw, w0, p.mode);
            const float *r0 = x + (int64_t)h0 * p.in_w, *r1 = x + (int64_t)h1 * p.in_w;
            y[ow] = p.mode == NN_INTERP_NEAREST
                        ? r0[w0]
                        : (1.0f - lh) * ((1.0f - lw) * r0[w0] + lw * r0[w1]) + lh * ((1.0f - lw) * r1[w0] + lw * r1[w1]);
        }
    }
}

static void backward_rows(void *arg, int64_t begin, int64_t end, int worker) {
    const interpolate_job *job = arg;
    const nn_interpolate_params p = *job->p;
    for (int64_t row = begin; row < end; row++) { /* row = plane * in_h + ih */
        const int ih = (int)(row % p.in_h);
        const float *dy = job->src + row / p.in_h * p.out_h * p.out_w;
        float *dx = job->dst + row * p.in_w;
        const int oh_end = interp_end_reader(ih, p.scale_h, p.out_h);
        for (int iw = 0; iw < p.in_w; iw++) {
            const int ow_first = interp_first_reader(iw, p.scale_w), ow_end = interp_end_reader(iw, p.scale_w, p.out_w);
            float sum = p.accumulate ? dx[iw] : 0.0f;
            for (int oh = interp_first_reader(ih, p.scale_h); oh < oh_end; oh++) {
                const float wh = interp_weight(oh, ih, p.scale_h, p.in_h, p.mode, p.align_corners);
                if (wh == 0.0f) continue;
                for (int ow = ow_first; ow < ow_end; ow++) {
                    const float ww = interp_weight(ow, iw, p.scale_w, p.in_w, p.mode, p.align_corners);
                    if (ww != 0.0f) sum += wh * ww * dy[(int64_t)oh * p.out_w + ow];
                }
            }
            dx[iw] = sum;
        }
    }
}

static nn_status check(nn_kernel kernel, const nn_interpolate_params *p) {
    if (p->planes < 0 || p->in_h < 1 || p->in_w < 1 || p->out_h < 1 || p->out_w < 1 ||
        (p->mode != NN_INTERP_NEAREST && p->mode != NN_INTERP_BILINEAR) || !(p->scale_h >= 0.0f) ||
        !(p->scale_w >= 0.0f))
        return nn_set_error(NN_ERR_ARGUMENT, "cpu %s: invalid resampling (%d planes %dx%d to %dx%d, mode %d, scale %gx%g)",
                            nn_kernel_name(kernel), p->planes, p->in_h, p->in_w, p->out_h, p->out_w, p->mode,
                            (double)p->scale_h, (double)p->scale_w);
    return NN_OK;
}

nn_status nn_cpu_interpolate_forward(nn_thread_pool *pool, const nn_interpolate_params *p, const float *x, float *y) {
    NN_TRY(check(NN_KERNEL_INTERPOLATE_FORWARD, p));
    interpolate_job job = {p, x, y};
    nn_parallel_for(pool, (int64_t)p->planes * p->out_h, NN_CPU_MIN_CHUNK / (4 * (int64_t)p->out_w) + 1,
                    forward_rows, &job);
    return NN_OK;
}

nn_status nn_cpu_interpolate_backward(nn_thread_pool *pool, const nn_interpolate_params *p, const float *dy,
                                      float *dx) {
    NN_TRY(check(NN_KERNEL_INTERPOLATE_BACKWARD, p));
    interpolate_job job = {p, dy, dx};
    nn_parallel_for(pool, (int64_t)p->planes * p->in_h, NN_CPU_MIN_CHUNK / (16 * (int64_t)p->in_w) + 1,
                    backward_rows, &job);
    return NN_OK;
}
