/* im2col and col2im: the data movement around convolution's GEMM. Both run
 * one (image, channel) plane per task, so col2im's scatter-add has no races
 * and its result does not depend on the thread count. */
#include <string.h>

#include "cpu_backend.h"

typedef struct conv_job {
    const nn_conv_geometry *g;
    const float *src;
    float *dst;
} conv_job;

/* Column row r = (c * kh + ki) * kw + kj, column p = oh * out_w + ow. */
static void im2col_planes(void *arg, int64_t begin, int64_t end, int worker) {
    const conv_job *job = arg;
    const nn_conv_geometry *g = job->g;
    const int64_t plane = (int64_t)g->height * g->width;
    const int64_t positions = (int64_t)g->out_h * g->out_w;
    const int64_t rows = (int64_t)g->channels * g->kernel_h * g->kernel_w;
    for (int64_t nc = begin; nc < end; nc++) {
        int64_t n = nc / g->channels, c = nc % g->channels;
        const float *image = job->src + nc * plane;
        float *cols = job->dst + n * rows * positions;
        for (int ki = 0; ki < g->kernel_h; ki++) {
            for (int kj = 0; kj < g->kernel_w; kj++) {
                int64_t r = ((int64_t)c * g->kernel_h + ki) * g->kernel_w + kj;
                float *out = cols + r * positions;
                for (int oh = 0; oh < g->out_h; oh++) {
                    int ih = oh * g->stride_h - g->pad_h + ki;
                    float *out_row = out + (int64_t)oh * g->out_w;
                    if (ih < 0 || ih >= g->height) {
                        memset(out_row, 0, (size_t)g->out_w * sizeof(float));
                        continue;
                    }
                    const float *in_row = image + (int64_t)ih * g->width;
                    for (int ow = 0; ow < g->out_w; ow++) {
                        int iw = ow * g->stride_w - g->pad_w + kj;
                        out_row[ow] = (iw >= 0 && iw < g->width) ? in_row[iw] : 0.0f;
                    }
                }
            }
        }
    }
}

static void col2im_planes(void *arg, int64_t begin, int64_t end, int worker) {
    const conv_job *job = arg;
    const nn_conv_geometry *g = job->g;
    const int64_t plane = (int64_t)g->height * g->width;
    const int64_t positions = (int64_t)g->out_h * g->out_w;
    const int64_t rows = (int64_t)g->channels * g->kernel_h * g->kernel_w;
    for (int64_t nc = begin; nc < end; nc++) {
        int64_t n = nc / g->channels, c = nc % g->channels;
        float *image = job->dst + nc * plane;
        const float *cols = job->src + n * rows * positions;
        if (!g->accumulate) memset(image, 0, (size_t)plane * sizeof(float));
        for (int ki = 0; ki < g->kernel_h; ki++) {
            for (int kj = 0; kj < g->kernel_w; kj++) {
                int64_t r = ((int64_t)c * g->kernel_h + ki) * g->kernel_w + kj;
                const float *in = cols + r * positions;
                for (int oh = 0; oh < g->out_h; oh++) {
                    int ih = oh * g->stride_h - g->pad_h + ki;
                    if (ih < 0 || ih >= g->height) continue;
                    float *image_row = image + (int64_t)ih * g->width;
                    const float *in_row = in + (int64_t)oh * g->out_w;
                    for (int ow = 0; ow < g->out_w; ow++) {
                        int iw = ow * g->stride_w - g->pad_w + kj;
                        if (iw >= 0 && iw < g->width) image_row[iw] += in_row[ow];
                    }
                }
            }
        }
    }
}

nn_status nn_cpu_im2col(nn_thread_pool *pool, const nn_conv_geometry *g, const float *image,
                        float *cols) {
    conv_job job = {g, image, cols};
    nn_parallel_for(pool, (int64_t)g->batch * g->channels, 1, im2col_planes, &job);
    return NN_OK;
}

nn_status nn_cpu_col2im(nn_thread_pool *pool, const nn_conv_geometry *g, const float *cols,
                        float *image) {
    conv_job job = {g, cols, image};
    nn_parallel_for(pool, (int64_t)g->batch * g->channels, 1, col2im_planes, &job);
    return NN_OK;
}
