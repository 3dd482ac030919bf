/* Fused Conv2d -> ReLU -> MaxPool2d in double precision
 * (conv_pool_reference.h). */
#include "conv_pool_reference.h"

#include <math.h>
#include <stdlib.h>

#include "vulkan_harness.h"

nn_conv_pool_params conv_pool_params_of(const conv_pool_case *c, bool bias) {
    nn_conv_geometry g = {c->batch, c->channels, c->height, c->width, c->kernel_h, c->kernel_w,
                          c->stride, c->stride, c->pad, c->pad, 0, 0, 0, 1, 1};
    g.out_h = (g.height + 2 * g.pad_h - g.kernel_h) / g.stride_h + 1;
    g.out_w = (g.width + 2 * g.pad_w - g.kernel_w) / g.stride_w + 1;
    nn_conv_pool_params p = {.conv = {.g = g, .filters = c->filters,
                                      .epilogue = (bias ? NN_EPI_BIAS_ROWS : 0) | NN_EPI_RELU},
                             .pool = c->pool, .pooled_h = g.out_h / c->pool, .pooled_w = g.out_w / c->pool};
    return p;
}

float *conv_pool_steps(size_t n, float denominator, unsigned seed) {
    float *x = malloc((n ? n : 1) * sizeof *x);
    vkt_fill(x, n, -3.5f, 3.5f, seed);
    for (size_t i = 0; i < n; i++) x[i] = roundf(x[i]) / denominator;
    return x;
}

float *conv_pool_randoms(size_t n, unsigned seed) { return vkt_randoms(n, -1.0f, 1.0f, seed); }

conv_pool_sizes conv_pool_sizes_of(const nn_conv_pool_params *p) {
    const nn_conv_geometry *g = &p->conv.g;
    return (conv_pool_sizes){(size_t)g->batch * g->channels * g->height * g->width,
                             (size_t)p->conv.filters * g->channels * g->kernel_h * g->kernel_w,
                             (size_t)g->batch * p->conv.filters * g->out_h * g->out_w,
                             (size_t)g->batch * p->conv.filters * p->pooled_h * p->pooled_w};
}

static double x_at(const nn_conv_geometry *g, const float *x, int n, int c, int h, int w) {
    if (h < 0 || w < 0 || h >= g->height || w >= g->width) return 0.0;
    return x[(((size_t)n * g->channels + c) * g->height + h) * g->width + w];
}

conv_pool_reference conv_pool_reference_of(const nn_conv_pool_params *p, const float *x, const float *w,
                                           const float *b, const float *dy) {
    const nn_conv_geometry *g = &p->conv.g;
    const conv_pool_sizes s = conv_pool_sizes_of(p);
    const int F = p->conv.filters, KK = g->kernel_h * g->kernel_w;
    double *z = calloc(s.z + 1, sizeof *z), *dz = calloc(s.z + 1, sizeof *dz);
    conv_pool_reference r = {calloc(s.y + 1, sizeof(double)), calloc(s.w + 1, sizeof(double)),
                             calloc((size_t)F + 1, sizeof(double)), calloc(s.x + 1, sizeof(double)),
                             calloc(s.y + 1, sizeof(int32_t))};
    for (int n = 0; n < g->batch; n++)
        for (int f = 0; f < F; f++)
            for (int oh = 0; oh < g->out_h; oh++)
                for (int ow = 0; ow < g->out_w; ow++) {
                    double sum = b ? b[f] : 0.0;
                    for (int c = 0; c < g->channels; c++)
                        for (int ki = 0; ki < g->kernel_h; ki++)
                            for (int kj = 0; kj < g->kernel_w; kj++)
                                sum += (double)w[((size_t)f * g->channels + c) * KK + ki * g->kernel_w + kj] *
                                       x_at(g, x, n, c, oh * g->stride_h - g->pad_h + ki, ow * g->stride_w - g->pad_w + kj);
                    z[(((size_t)n * F + f) * g->out_h + oh) * g->out_w + ow] = sum > 0.0 ? sum : 0.0;
                }
    const size_t z_plane = (size_t)g->out_h * g->out_w, y_plane = (size_t)p->pooled_h * p->pooled_w;
    for (size_t plane = 0; plane < (size_t)g->batch * F; plane++)
        for (int py = 0; py < p->pooled_h; py++)
            for (int px = 0; px < p->pooled_w; px++) {
                int best = -1;
                for (int a = 0; a < p->pool; a++)
                    for (int c = 0; c < p->pool; c++) {
                        int i = (py * p->pool + a) * g->out_w + px * p->pool + c;
                        if (best < 0 || z[plane * z_plane + i] > z[plane * z_plane + best]) best = i;
                    }
                size_t j = plane * y_plane + (size_t)py * p->pooled_w + px;
                r.y[j] = z[plane * z_plane + best];
                r.winners[j] = r.y[j] > 0.0 ? best : -1;
                if (dy && r.winners[j] >= 0) dz[plane * z_plane + best] = dy[j];
            }
    for (int n = 0; n < g->batch; n++)
        for (int f = 0; f < F; f++)
            for (int oh = 0; oh < g->out_h; oh++)
                for (int ow = 0; ow < g->out_w; ow++) {
                    double d = dz[(((size_t)n * F + f) * g->out_h + oh) * g->out_w + ow];
                    if (d == 0.0) continue;
                    r.db[f] += d;
                    for (int c = 0; c < g->channels; c++)
                        for (int ki = 0; ki < g->kernel_h; ki++)
                            for (int kj = 0; kj < g->kernel_w; kj++) {
                                int h = oh * g->stride_h - g->pad_h + ki, wc = ow * g->stride_w - g->pad_w + kj;
                                size_t wi = ((size_t)f * g->channels + c) * KK + ki * g->kernel_w + kj;
                                r.dw[wi] += d * x_at(g, x, n, c, h, wc);
                                if (h >= 0 && wc >= 0 && h < g->height && wc < g->width)
                                    r.dx[(((size_t)n * g->channels + c) * g->height + h) * g->width + wc] += d * w[wi];
                            }
                }
    free(z);
    free(dz);
    return r;
}

void conv_pool_reference_free(conv_pool_reference *r) { free(r->y), free(r->dw), free(r->db), free(r->dx), free(r->winners); }
