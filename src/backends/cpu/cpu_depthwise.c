/* Depthwise convolution (the DEPTHWISE_CONV2D_* kernels: groups ==
 * channels, filter f reading channel f / multiplier) straight from the
 * image, without columns: one output per item in the forward, one input
 * pixel per item in the data gradient (gathering the outputs that read it)
 * and one weight per item in the weight gradient, so no two items write
 * the same element and the sums do not depend on the thread count. The
 * shaders (depthwise_conv2d_*.comp) visit the taps in the same order. */
#include "backends/conv_columns.h"
#include "base/error.h"
#include "cpu_backend.h"

typedef struct depthwise_job {
    const nn_conv_params *p;
    const float *a, *b, *bias;
    float *out;
} depthwise_job;

static void forward_rows(void *arg, int64_t begin, int64_t end, int worker) {
    const depthwise_job *job = arg;
    const nn_conv_geometry g = job->p->g;
    const int mult = job->p->filters / g.channels;
    const int dh = nn_conv_dilation_h(&g), dw = nn_conv_dilation_w(&g);
    for (int64_t row = begin; row < end; row++) { /* row = (n * filters + f) * out_h + oh */
        const int oh = (int)(row % g.out_h);
        const int64_t nf = row / g.out_h;
        const int f = (int)(nf % job->p->filters);
        const int64_t n = nf / job->p->filters;
        const float *image = job->a + (n * g.channels + f / mult) * g.height * g.width;
        const float *w = job->b + (int64_t)f * g.kernel_h * g.kernel_w;
        float *y = job->out + row * g.out_w;
        for (int ow = 0; ow < g.out_w; ow++) {
            float sum = 0.0f;
            for (int ki = 0; ki < g.kernel_h; ki++) {
                const int ih = oh * g.stride_h - g.pad_h + ki * dh;
                if (ih < 0 || ih >= g.height) continue;
                for (int kj = 0; kj < g.kernel_w; kj++) {
                    const int iw = ow * g.stride_w - g.pad_w + kj * dw;
                    if (iw < 0 || iw >= g.width) continue;
                    sum += w[ki * g.kernel_w + kj] * image[(int64_t)ih * g.width + iw];
                }
            }
            if (job->p->epilogue & NN_EPI_BIAS_ROWS) sum += job->bias[f];
            if ((job->p->epilogue & NN_EPI_RELU) && sum <= 0.0f) sum = 0.0f; /* a NaN passes, as relu_forward */
            y[ow] = sum;
        }
    }
}

/* Output index along an axis whose tap `k` reads input `i`, or -1. */
static int reader(int i, int k, int pad, int dilation, int stride, int outputs) {
    const int t = i + pad - k * dilation;
    if (t < 0 || t % stride != 0 || t / stride >= outputs) return -1;
    return t / stride;
}

static void data_rows(void *arg, int64_t begin, int64_t end, int worker) {
    const depthwise_job *job = arg;
    const nn_conv_geometry g = job->p->g;
    const int mult = job->p->filters / g.channels;
    const int dh = nn_conv_dilation_h(&g), dw = nn_conv_dilation_w(&g);
    const int64_t taps = (int64_t)g.kernel_h * g.kernel_w, out_plane = (int64_t)g.out_h * g.out_w;
    for (int64_t row = begin; row < end; row++) { /* row = (n * channels + c) * height + ih */
        const int ih = (int)(row % g.height);
        const int64_t nc = row / g.height;
        const int c = (int)(nc % g.channels);
        const int64_t n = nc / g.channels;
        float *dx = job->out + row * g.width;
        for (int iw = 0; iw < g.width; iw++) {
            float sum = g.accumulate ? dx[iw] : 0.0f;
            for (int m = 0; m < mult; m++) {
                const int f = c * mult + m;
                const float *dy = job->a + (n * job->p->filters + f) * out_plane;
                const float *w = job->b + f * taps;
                for (int ki = 0; ki < g.kernel_h; ki++) {
                    const int oh = reader(ih, ki, g.pad_h, dh, g.stride_h, g.out_h);
                    if (oh < 0) continue;
                    for (int kj = 0; kj < g.kernel_w; kj++) {
                        const int ow = reader(iw, kj, g.pad_w, dw, g.stride_w, g.out_w);
                        if (ow < 0) continue;
                        sum += w[ki * g.kernel_w + kj] * dy[(int64_t)oh * g.out_w + ow];
                    }
                }
            }
            dx[iw] = sum;
        }
    }
}

static void weight_items(void *arg, int64_t begin, int64_t end, int worker) {
    const depthwise_job *job = arg;
    const nn_conv_geometry g = job->p->g;
    const int mult = job->p->filters / g.channels;
    const int dh = nn_conv_dilation_h(&g), dw = nn_conv_dilation_w(&g);
    const int64_t taps = (int64_t)g.kernel_h * g.kernel_w, out_plane = (int64_t)g.out_h * g.out_w;
    for (int64_t item = begin; item < end; item++) { /* item = f * taps + ki * kernel_w + kj */
        const int f = (int)(item / taps), ki = (int)(item % taps) / g.kernel_w, kj = (int)(item % taps) % g.kernel_w;
        float sum = 0.0f;
        for (int64_t n = 0; n < g.batch; n++) {
            const float *dy = job->a + (n * job->p->filters + f) * out_plane;
            const float *image = job->b + (n * g.channels + f / mult) * g.height * g.width;
            for (int oh = 0; oh < g.out_h; oh++) {
                const int ih = oh * g.stride_h - g.pad_h + ki * dh;
                if (ih < 0 || ih >= g.height) continue;
                for (int ow = 0; ow < g.out_w; ow++) {
                    const int iw = ow * g.stride_w - g.pad_w + kj * dw;
                    if (iw < 0 || iw >= g.width) continue;
                    sum += dy[(int64_t)oh * g.out_w + ow] * image[(int64_t)ih * g.width + iw];
                }
            }
        }
        job->out[item] = g.accumulate ? job->out[item] + sum : sum;
    }
}

static nn_status check(nn_kernel kernel, const nn_conv_params *p) {
    NN_TRY(nn_conv_params_check("cpu", kernel, p));
    if (!nn_conv_is_depthwise(p))
        return nn_set_error(NN_ERR_ARGUMENT, "cpu %s: %d groups over %d channels is not a depthwise convolution",
                            nn_kernel_name(kernel), nn_conv_groups(p), p->g.channels);
    return NN_OK;
}

nn_status nn_cpu_depthwise_conv2d_forward(nn_thread_pool *pool, const nn_conv_params *p, const float *x,
                                          const float *w, float *y, const float *bias) {
    NN_TRY(check(NN_KERNEL_DEPTHWISE_CONV2D_FORWARD, p));
    if ((p->epilogue & NN_EPI_BIAS_ROWS) && !bias)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu depthwise_conv2d_forward: the bias epilogue needs the bias buffer");
    depthwise_job job = {p, x, w, bias, y};
    const int64_t rows = (int64_t)p->g.batch * p->filters * p->g.out_h;
    const int64_t per_row = (int64_t)p->g.out_w * p->g.kernel_h * p->g.kernel_w + 1;
    nn_parallel_for(pool, rows, NN_CPU_MIN_CHUNK / per_row + 1, forward_rows, &job);
    return NN_OK;
}

nn_status nn_cpu_depthwise_conv2d_backward_data(nn_thread_pool *pool, const nn_conv_params *p, const float *dy,
                                                const float *w, float *dx) {
    NN_TRY(check(NN_KERNEL_DEPTHWISE_CONV2D_BACKWARD_DATA, p));
    depthwise_job job = {p, dy, w, NULL, dx};
    const int64_t rows = (int64_t)p->g.batch * p->g.channels * p->g.height;
    const int64_t per_row = (int64_t)p->g.width * p->filters / (p->g.channels ? p->g.channels : 1) *
                                p->g.kernel_h * p->g.kernel_w + 1;
    nn_parallel_for(pool, rows, NN_CPU_MIN_CHUNK / per_row + 1, data_rows, &job);
    return NN_OK;
}

nn_status nn_cpu_depthwise_conv2d_backward_weight(nn_thread_pool *pool, const nn_conv_params *p, const float *dy,
                                                  const float *x, float *dw) {
    NN_TRY(check(NN_KERNEL_DEPTHWISE_CONV2D_BACKWARD_WEIGHT, p));
    depthwise_job job = {p, dy, x, NULL, dw};
    const int64_t items = (int64_t)p->filters * p->g.kernel_h * p->g.kernel_w;
    const int64_t per_item = (int64_t)p->g.batch * p->g.out_h * p->g.out_w + 1;
    nn_parallel_for(pool, items, NN_CPU_MIN_CHUNK / per_item + 1, weight_items, &job);
    return NN_OK;
}
