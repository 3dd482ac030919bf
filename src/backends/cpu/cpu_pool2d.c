/* 2-D max and average pooling (the POOL2D_* kernels), one (image, channel)
 * plane per item, walking shaders/pool2d_window.h's windows in the order
 * the shaders walk them, so both backends add the same terms in the same
 * order. Backward gathers into each input element (no scatter), as the
 * shaders do. */
#include <math.h>

#include "cpu_backend.h"
#include "pool2d_window.h"

/* One axis of the geometry: rows or columns. */
typedef struct pool_axis {
    int size, out, kernel, stride, pad, dilation, adaptive;
} pool_axis;

static pool_axis rows_of(const nn_pool2d_geometry *g) {
    return (pool_axis){g->height, g->out_h, g->kernel_h, g->stride_h, g->pad_h, g->dilation_h, g->adaptive};
}

static pool_axis columns_of(const nn_pool2d_geometry *g) {
    return (pool_axis){g->width, g->out_w, g->kernel_w, g->stride_w, g->pad_w, g->dilation_w, g->adaptive};
}

/* Output o's window along an axis: positions start + j * step for
 * first <= j < end, all inside the image. */
typedef struct window_taps {
    int start, first, end, step;
} window_taps;

static window_taps window_of(const pool_axis *a, int o) {
    const int start = pool2d_start(o, a->size, a->out, a->stride, a->pad, a->adaptive);
    const int taps = pool2d_taps(o, a->size, a->out, a->kernel, a->adaptive);
    return (window_taps){start, pool2d_first_tap(start, a->dilation),
                         pool2d_end_tap(start, taps, a->size, a->dilation), a->dilation};
}

static int avg_count(const pool_axis *a, int o, int include_pad) {
    return pool2d_avg_count(o, a->size, a->out, a->kernel, a->stride, a->pad, a->adaptive, include_pad);
}

static float avg_divisor(const nn_pool2d_geometry *g, const pool_axis *rows, const pool_axis *cols, int oh,
                         int ow) {
    if (g->divisor > 0) return (float)g->divisor;
    return (float)(avg_count(rows, oh, g->count_include_pad) * avg_count(cols, ow, g->count_include_pad));
}

static int reader_of(const pool_axis *a, int candidate, int pos) {
    return pool2d_reader(candidate, pos, a->size, a->out, a->stride, a->pad, a->dilation, a->adaptive);
}

typedef struct pool2d_job {
    const nn_pool2d_geometry *g;
    const float *in;
    const int32_t *argmax_in;
    float *out;
    int32_t *argmax_out;
} pool2d_job;

/* A NaN takes over (the first one stays); otherwise the first maximum. */
static inline int takes_over(float v, float best) { return v > best || (isnan(v) && !isnan(best)); }

static void max_forward_planes(void *arg, int64_t begin, int64_t end, int worker) {
    const pool2d_job *job = arg;
    const nn_pool2d_geometry *g = job->g;
    const pool_axis rows = rows_of(g), cols = columns_of(g);
    const int64_t in_plane = (int64_t)g->height * g->width, out_plane = (int64_t)g->out_h * g->out_w;
    for (int64_t nc = begin; nc < end; nc++) {
        const float *x = job->in + nc * in_plane;
        float *y = job->out + nc * out_plane;
        int32_t *argmax = job->argmax_out + nc * out_plane;
        for (int oh = 0; oh < g->out_h; oh++) {
            const window_taps r = window_of(&rows, oh);
            for (int ow = 0; ow < g->out_w; ow++) {
                const window_taps c = window_of(&cols, ow);
                /* A dilated window can lie wholly in the padding: -inf and no
                 * winner (argmax -1), as PyTorch. */
                const bool empty = r.first >= r.end || c.first >= c.end;
                int best_index = empty ? -1 : (r.start + r.first * r.step) * g->width + c.start + c.first * c.step;
                float best = empty ? -INFINITY : x[best_index];
                for (int i = r.first; i < r.end; i++)
                    for (int j = c.first; j < c.end; j++) {
                        const int index = (r.start + i * r.step) * g->width + c.start + j * c.step;
                        if (takes_over(x[index], best)) best = x[index], best_index = index;
                    }
                y[oh * g->out_w + ow] = best;
                argmax[oh * g->out_w + ow] = best_index;
            }
        }
    }
}

static void avg_forward_planes(void *arg, int64_t begin, int64_t end, int worker) {
    const pool2d_job *job = arg;
    const nn_pool2d_geometry *g = job->g;
    const pool_axis rows = rows_of(g), cols = columns_of(g);
    const int64_t in_plane = (int64_t)g->height * g->width, out_plane = (int64_t)g->out_h * g->out_w;
    for (int64_t nc = begin; nc < end; nc++) {
        const float *x = job->in + nc * in_plane;
        float *y = job->out + nc * out_plane;
        for (int oh = 0; oh < g->out_h; oh++) {
            const window_taps r = window_of(&rows, oh);
            for (int ow = 0; ow < g->out_w; ow++) {
                const window_taps c = window_of(&cols, ow);
                float sum = 0.0f;
                for (int i = r.first; i < r.end; i++)
                    for (int j = c.first; j < c.end; j++) sum += x[(r.start + i * r.step) * g->width + c.start + j * c.step];
                y[oh * g->out_w + ow] = sum / avg_divisor(g, &rows, &cols, oh, ow);
            }
        }
    }
}

/* dx[pixel] (+)= the sum over the outputs whose windows read the pixel (and
 * chose it, with an argmax) of dy, divided by the window's divisor for an
 * average. */
static void backward_planes(void *arg, int64_t begin, int64_t end, int worker) {
    const pool2d_job *job = arg;
    const nn_pool2d_geometry *g = job->g;
    const pool_axis rows = rows_of(g), cols = columns_of(g);
    const int candidates_h = pool2d_candidates(g->height, g->out_h, g->kernel_h, g->adaptive);
    const int candidates_w = pool2d_candidates(g->width, g->out_w, g->kernel_w, g->adaptive);
    const int64_t in_plane = (int64_t)g->height * g->width, out_plane = (int64_t)g->out_h * g->out_w;
    for (int64_t nc = begin; nc < end; nc++) {
        const float *dy = job->in + nc * out_plane;
        const int32_t *argmax = job->argmax_in ? job->argmax_in + nc * out_plane : NULL;
        float *dx = job->out + nc * in_plane;
        for (int h = 0; h < g->height; h++)
            for (int w = 0; w < g->width; w++) {
                const int pixel = h * g->width + w;
                float sum = g->accumulate ? dx[pixel] : 0.0f;
                for (int ch = 0; ch < candidates_h; ch++) {
                    const int oh = reader_of(&rows, ch, h);
                    if (oh < 0) continue;
                    for (int cw = 0; cw < candidates_w; cw++) {
                        const int ow = reader_of(&cols, cw, w);
                        if (ow < 0) continue;
                        const int q = oh * g->out_w + ow;
                        if (!argmax) sum += dy[q] / avg_divisor(g, &rows, &cols, oh, ow);
                        else if (argmax[q] == pixel) sum += dy[q];
                    }
                }
                dx[pixel] = sum;
            }
    }
}

static int64_t planes(const nn_pool2d_geometry *g) { return (int64_t)g->batch * g->channels; }

nn_status nn_cpu_pool2d_max_forward(nn_thread_pool *pool, const nn_pool2d_geometry *g, const float *x, float *y,
                                    int32_t *argmax) {
    pool2d_job job = {.g = g, .in = x, .out = y, .argmax_out = argmax};
    nn_parallel_for(pool, planes(g), 4, max_forward_planes, &job);
    return NN_OK;
}

nn_status nn_cpu_pool2d_max_backward(nn_thread_pool *pool, const nn_pool2d_geometry *g, const float *dy,
                                     const int32_t *argmax, float *dx) {
    pool2d_job job = {.g = g, .in = dy, .argmax_in = argmax, .out = dx};
    nn_parallel_for(pool, planes(g), 4, backward_planes, &job);
    return NN_OK;
}

nn_status nn_cpu_pool2d_avg_forward(nn_thread_pool *pool, const nn_pool2d_geometry *g, const float *x, float *y) {
    pool2d_job job = {.g = g, .in = x, .out = y};
    nn_parallel_for(pool, planes(g), 4, avg_forward_planes, &job);
    return NN_OK;
}

nn_status nn_cpu_pool2d_avg_backward(nn_thread_pool *pool, const nn_pool2d_geometry *g, const float *dy, float *dx) {
    pool2d_job job = {.g = g, .in = dy, .out = dx};
    nn_parallel_for(pool, planes(g), 4, backward_planes, &job);
    return NN_OK;
}
