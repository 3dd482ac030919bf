/* The fused convolution + ReLU + max pooling kernels (kernels.h,
 * nn_conv_pool_params) on the CPU: the unfused kernels one after another,
 * with the convolution's output z, or its gradient, in a scratch buffer,
 * so the fused layers compute exactly the floats the three layers compute
 * unfused. The backend does not offer them (it has no
 * nn_backend.supports): they are the reference the GPU kernels are tested
 * against, not faster than the layers unfused. */
#include <string.h>

#include "backends/conv_pool.h"
#include "base/error.h"
#include "cpu_backend.h"

static nn_buffer *scratch_for(nn_backend *self, const nn_conv_pool_params *p) {
    const nn_conv_geometry *g = &p->conv.g;
    size_t floats = (size_t)g->batch * p->conv.filters * g->out_h * g->out_w;
    return self->alloc(self, (floats ? floats : 1) * sizeof(float));
}

static nn_status forward(nn_backend *self, nn_thread_pool *pool, const nn_conv_pool_params *p,
                         const nn_buffer_ref *a) {
    nn_buffer *z = scratch_for(self, p);
    if (!z) return nn_last_status();
    nn_conv_params conv = p->conv;
    conv.epilogue = (a[2].buffer ? NN_EPI_BIAS_ROWS : 0) | NN_EPI_RELU;
    nn_buffer_ref args[5] = {a[0], a[1], {z, 0, 0}, a[2], a[5]};
    nn_status st = nn_cpu_conv2d(self, pool, NN_KERNEL_CONV2D_FORWARD, &conv, args);
    const nn_pool_params pooling = nn_conv_pool_pooling(p);
    float *y = nn_cpu_f32(a[3]);
    int32_t *winners = nn_cpu_i32(a[4]);
    if (st == NN_OK) st = nn_cpu_maxpool_forward(pool, &pooling, z->data, y, winners);
    self->free(self, z);
    const int64_t outputs = (int64_t)pooling.batch * pooling.channels * pooling.out_h * pooling.out_w;
    for (int64_t i = 0; i < outputs && st == NN_OK; i++)
        if (!(y[i] > 0.0f)) winners[i] = -1; /* the ReLU passes no gradient here */
    return st;
}

/* dz: zero but where a window's winner takes its pooled gradient, as the
 * masked max-pool backward writes it. */
static nn_buffer *gradient_of_z(nn_backend *self, const nn_conv_pool_params *p, const float *dy,
                                const int32_t *winners) {
    nn_buffer *dz = scratch_for(self, p);
    if (!dz) return NULL;
    const nn_conv_geometry *g = &p->conv.g;
    const int64_t planes = (int64_t)g->batch * p->conv.filters;
    const int64_t z_plane = (int64_t)g->out_h * g->out_w, y_plane = (int64_t)p->pooled_h * p->pooled_w;
    float *out = dz->data;
    memset(out, 0, (size_t)(planes * z_plane) * sizeof(float));
    for (int64_t plane = 0; plane < planes; plane++)
        for (int64_t j = 0; j < y_plane; j++) {
            int32_t w = winners[plane * y_plane + j];
            if (w >= 0) out[plane * z_plane + w] += dy[plane * y_plane + j];
        }
    return dz;
}

nn_status nn_cpu_conv_pool(nn_backend *self, nn_thread_pool *pool, nn_kernel kernel, const nn_conv_pool_params *p,
                           const nn_buffer_ref *a) {
    NN_TRY(nn_conv_pool_params_check("cpu", kernel, p));
    if (kernel == NN_KERNEL_CONV2D_POOL_FORWARD) return forward(self, pool, p, a);
    if (kernel == NN_KERNEL_CONV2D_POOL_BACKWARD_WEIGHT && !a[3].buffer && !a[4].buffer)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu %s: neither dweight nor dbias is given", nn_kernel_name(kernel));
    nn_buffer *dz = gradient_of_z(self, p, nn_cpu_f32(a[0]), nn_cpu_i32(a[1]));
    if (!dz) return nn_last_status();
    const nn_buffer_ref dz_ref = {dz, 0, 0};
    nn_status st = NN_OK;
    if (kernel == NN_KERNEL_CONV2D_POOL_BACKWARD_DATA) {
        nn_buffer_ref args[3] = {dz_ref, a[2], a[3]};
        st = nn_cpu_conv2d(self, pool, NN_KERNEL_CONV2D_BACKWARD_DATA, &p->conv, args);
    } else {
        if (a[3].buffer) {
            nn_buffer_ref args[4] = {dz_ref, a[2], a[3], a[5]};
            st = nn_cpu_conv2d(self, pool, NN_KERNEL_CONV2D_BACKWARD_WEIGHT, &p->conv, args);
        }
        if (a[4].buffer && st == NN_OK) {
            const nn_conv_geometry *g = &p->conv.g;
            nn_bias_params b = {.outer = g->batch, .channels = p->conv.filters,
                                .inner = (int64_t)g->out_h * g->out_w, .accumulate = p->bias_accumulate};
            st = nn_cpu_bias_grad(pool, &b, dz->data, nn_cpu_f32(a[4]));
        }
    }
    self->free(self, dz);
    return st;
}

nn_status nn_cpu_conv_pool_chain(nn_backend *self, nn_thread_pool *pool, const nn_conv_pool_chain_params *p,
                                 const nn_buffer_ref *a) {
    NN_TRY(nn_conv_pool_chain_check("cpu", p));
    if (!a[5].buffer && !a[6].buffer)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu %s: neither dweight nor dbias is given",
                            nn_kernel_name(NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT));
    /* The gradient between the layers: the first's pooled output's. */
    const nn_conv_geometry *g = &p->second.conv.g;
    const size_t floats = (size_t)g->batch * g->channels * g->height * g->width;
    nn_buffer *between = self->alloc(self, (floats ? floats : 1) * sizeof(float));
    if (!between) return nn_last_status();
    nn_conv_pool_params second = p->second;
    second.conv.g.accumulate = 0;
    const nn_buffer_ref between_ref = {between, 0, 0}, none = {NULL, 0, 0};
    nn_buffer_ref data_args[4] = {a[0], a[1], a[2], between_ref};
    nn_status st = nn_cpu_conv_pool(self, pool, NN_KERNEL_CONV2D_POOL_BACKWARD_DATA, &second, data_args);
    if (st == NN_OK) {
        nn_buffer_ref weight_args[6] = {between_ref, a[3], a[4], a[5], a[6], none};
        st = nn_cpu_conv_pool(self, pool, NN_KERNEL_CONV2D_POOL_BACKWARD_WEIGHT, &p->first, weight_args);
    }
    self->free(self, between);
    return st;
}

nn_status nn_cpu_conv_pool_linear(nn_backend *self, nn_thread_pool *pool, const nn_conv_pool_linear_params *p,
                                  const nn_buffer_ref *a) {
    NN_TRY(nn_conv_pool_linear_check("cpu", p));
    if ((p->epilogue & NN_EPI_BIAS_COLS) && !a[6].buffer)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu %s: the Linear's bias epilogue needs its bias buffer",
                            nn_kernel_name(NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD));
    const nn_buffer_ref none = {NULL, 0, 0};
    nn_buffer_ref conv_args[6] = {a[0], a[1], a[2], a[3], a[4], none};
    NN_TRY(forward(self, pool, &p->conv_pool, conv_args));
    const nn_conv_pool_params *c = &p->conv_pool;
    const int32_t in = c->conv.filters * c->pooled_h * c->pooled_w;
    const nn_gemm_epilogue_params e = {
        .gemm = {.m = c->conv.g.batch, .n = p->out_features, .k = in, .trans_b = 1, .lda = in, .ldb = in,
                 .ldc = p->out_features, .batch = 1, .alpha = 1.0f},
        .epilogue = p->epilogue};
    return nn_cpu_gemm_epilogue(pool, &e, nn_cpu_f32(a[3]), nn_cpu_f32(a[5]), nn_cpu_f32(a[7]),
                                a[6].buffer ? nn_cpu_f32(a[6]) : NULL);
}
