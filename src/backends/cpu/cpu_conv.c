/* im2col and col2im: the data movement around convolution's GEMM. Both run
 * one (image, channel) plane per task, so col2im's scatter-add has no races
 * and its result does not depend on the thread count. The column matrix's
 * layout is given by two steps (nn_cpu_columns): the kernels' contract,
 * [image][row][position], or the images side by side, [row][image][position]. */
#include <string.h>

#include "cpu_backend.h"

typedef struct conv_job {
    const nn_conv_geometry *g;
    const float *src;
    float *dst;
    nn_cpu_columns layout;
} conv_job;

/* Output columns ow in [*lo, *hi) read input column ow * stride - pad + kj
 * * dilation inside [0, width); the others see padding. */
static void valid_columns(const nn_conv_geometry *g, int kj, int *lo, int *hi) {
    /* In 64 bits: a stride or padding near 2^31 overflows the sums in int. */
    const int64_t tap = (int64_t)kj * nn_conv_dilation_w(g);
    const int64_t first = g->pad_w - tap; /* smallest ow * stride that lands on column 0 */
    int64_t from = first <= 0 ? 0 : (first + g->stride_w - 1) / g->stride_w;
    const int64_t last = (int64_t)g->width - 1 + g->pad_w - tap; /* largest ow * stride inside the image */
    int64_t to = last < 0 ? 0 : last / g->stride_w + 1;
    if (to > g->out_w) to = g->out_w;
    if (from > to) from = to;
    *lo = (int)from;
    *hi = (int)to;
}

/* Column row r = (c * kh + ki) * kw + kj, column p = oh * out_w + ow. */
static void im2col_planes(void *arg, int64_t begin, int64_t end, int worker) {
    const conv_job *job = arg;
    const nn_conv_geometry g = *job->g;
    const int64_t plane = (int64_t)g.height * g.width;
    const nn_cpu_columns layout = job->layout;
    const int dilation_h = nn_conv_dilation_h(&g), dilation_w = nn_conv_dilation_w(&g);
    for (int64_t nc = begin; nc < end; nc++) {
        const int64_t n = nc / g.channels, c = nc % g.channels;
        const float *restrict image = job->src + nc * plane;
        float *restrict cols = job->dst + n * layout.image_step;
        for (int ki = 0; ki < g.kernel_h; ki++) {
            for (int kj = 0; kj < g.kernel_w; kj++) {
                int lo, hi;
                valid_columns(&g, kj, &lo, &hi);
                const int64_t r = ((int64_t)c * g.kernel_h + ki) * g.kernel_w + kj;
                float *restrict out = cols + r * layout.row_step;
                for (int oh = 0; oh < g.out_h; oh++) {
                    const int ih = oh * g.stride_h - g.pad_h + ki * dilation_h;
                    float *restrict row = out + (int64_t)oh * g.out_w;
                    if (ih < 0 || ih >= g.height) {
                        memset(row, 0, (size_t)g.out_w * sizeof(float));
                        continue;
                    }
                    /* Input index of output column ow: base + ow * stride (kept as an
                     * index: a pointer before the image would be undefined). */
                    const int64_t base = (int64_t)ih * g.width - g.pad_w + kj * dilation_w;
                    for (int ow = 0; ow < lo; ow++) row[ow] = 0.0f;
                    if (g.stride_w == 1) {
                        if (hi > lo) memcpy(row + lo, image + base + lo, (size_t)(hi - lo) * sizeof(float));
                    } else {
                        for (int ow = lo; ow < hi; ow++) row[ow] = image[base + (int64_t)ow * g.stride_w];
                    }
                    for (int ow = hi; ow < g.out_w; ow++) row[ow] = 0.0f;
                }
            }
        }
    }
}

static void col2im_planes(void *arg, int64_t begin, int64_t end, int worker) {
    const conv_job *job = arg;
    const nn_conv_geometry g = *job->g;
    const int64_t plane = (int64_t)g.height * g.width;
    const nn_cpu_columns layout = job->layout;
    const int dilation_h = nn_conv_dilation_h(&g), dilation_w = nn_conv_dilation_w(&g);
    for (int64_t nc = begin; nc < end; nc++) {
        const int64_t n = nc / g.channels, c = nc % g.channels;
        float *restrict image = job->dst + nc * plane;
        const float *restrict cols = job->src + n * layout.image_step;
        if (!g.accumulate) memset(image, 0, (size_t)plane * sizeof(float));
        for (int ki = 0; ki < g.kernel_h; ki++) {
            for (int kj = 0; kj < g.kernel_w; kj++) {
                int lo, hi;
                valid_columns(&g, kj, &lo, &hi);
                const int64_t r = ((int64_t)c * g.kernel_h + ki) * g.kernel_w + kj;
                const float *restrict in = cols + r * layout.row_step;
                for (int oh = 0; oh < g.out_h; oh++) {
                    const int ih = oh * g.stride_h - g.pad_h + ki * dilation_h;
                    if (ih < 0 || ih >= g.height) continue;
                    const int64_t base = (int64_t)ih * g.width - g.pad_w + kj * dilation_w;
                    const float *restrict row = in + (int64_t)oh * g.out_w;
                    for (int ow = lo; ow < hi; ow++) image[base + (int64_t)ow * g.stride_w] += row[ow];
                }
            }
        }
    }
}

nn_cpu_columns nn_cpu_columns_per_image(const nn_conv_geometry *g) {
    const int64_t positions = (int64_t)g->out_h * g->out_w;
    return (nn_cpu_columns){.image_step = (int64_t)g->channels * g->kernel_h * g->kernel_w * positions,
                            .row_step = positions};
}

nn_cpu_columns nn_cpu_columns_side_by_side(const nn_conv_geometry *g) {
    const int64_t positions = (int64_t)g->out_h * g->out_w;
    return (nn_cpu_columns){.image_step = positions, .row_step = g->batch * positions};
}

nn_status nn_cpu_im2col_as(nn_thread_pool *pool, const nn_conv_geometry *g, nn_cpu_columns layout,
                           const float *image, float *cols) {
    conv_job job = {g, image, cols, layout};
    int64_t per_plane = (int64_t)g->kernel_h * g->kernel_w * g->out_h * g->out_w;
    nn_parallel_for(pool, (int64_t)g->batch * g->channels, NN_CPU_MIN_CHUNK / per_plane + 1,
                    im2col_planes, &job);
    return NN_OK;
}

nn_status nn_cpu_col2im_as(nn_thread_pool *pool, const nn_conv_geometry *g, nn_cpu_columns layout,
                           const float *cols, float *image) {
    conv_job job = {g, cols, image, layout};
    int64_t per_plane = (int64_t)g->kernel_h * g->kernel_w * g->out_h * g->out_w;
    nn_parallel_for(pool, (int64_t)g->batch * g->channels, NN_CPU_MIN_CHUNK / per_plane + 1,
                    col2im_planes, &job);
    return NN_OK;
}

nn_status nn_cpu_im2col(nn_thread_pool *pool, const nn_conv_geometry *g, const float *image, float *cols) {
    return nn_cpu_im2col_as(pool, g, nn_cpu_columns_per_image(g), image, cols);
}

nn_status nn_cpu_col2im(nn_thread_pool *pool, const nn_conv_geometry *g, const float *cols, float *image) {
    return nn_cpu_col2im_as(pool, g, nn_cpu_columns_per_image(g), cols, image);
}
