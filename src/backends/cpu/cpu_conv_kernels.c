/* The convolution kernels (kernels.h, nn_conv_params) on the CPU: the column
 * route, im2col + GEMM (+ col2im). The CPU keeps the column matrix from
 * forward to backward (nn_cpu_conv_keeps_columns): the forward fills the
 * op's, the weight gradient reads it. Without one (no backward to come, or
 * the data gradient's) the columns go to a scratch buffer of the
 * backend's (its free cache makes the reuse cheap), never more than about
 * COLUMN_FLOATS of it at once: the images are taken in groups that fit. */
#include "core/error.h"
#include "cpu_backend.h"
#include "cpu_gemm.h"

#define COLUMN_FLOATS ((int64_t)1 << 24) /* 64 MiB */

static nn_status check(const nn_conv_params *cp) {
    const nn_conv_geometry *g = &cp->g;
    if (g->batch < 0 || g->channels < 0 || g->height < 0 || g->width < 0 || g->kernel_h <= 0 || g->kernel_w <= 0 ||
        g->stride_h <= 0 || g->stride_w <= 0 || g->pad_h < 0 || g->pad_w < 0 || g->out_h < 0 || g->out_w < 0 ||
        cp->filters < 0)
        return nn_set_error(NN_ERR_ARGUMENT, "cpu conv2d: invalid geometry");
    if (cp->epilogue & ~(NN_EPI_BIAS_ROWS | NN_EPI_RELU))
        return nn_set_error(NN_ERR_BACKEND, "cpu conv2d: invalid epilogue flags 0x%x", (unsigned)cp->epilogue);
    return NN_OK;
}

nn_status nn_cpu_conv2d(nn_backend *self, nn_thread_pool *pool, nn_kernel kernel, const nn_conv_params *cp,
                        const nn_buffer_ref *a) {
    NN_TRY(check(cp));
    const nn_conv_geometry g = cp->g;
    const int64_t k = (int64_t)g.channels * g.kernel_h * g.kernel_w;
    const int64_t positions = (int64_t)g.out_h * g.out_w;
    const int64_t plane_x = (int64_t)g.channels * g.height * g.width, plane_y = cp->filters * positions;
    const int32_t oc = cp->filters;
    if (g.batch == 0) { /* the sum over no images */
        if (kernel == NN_KERNEL_CONV2D_BACKWARD_WEIGHT && !g.accumulate)
            for (int64_t i = 0; i < oc * k; i++) nn_cpu_f32(a[2])[i] = 0.0f;
        return NN_OK;
    }
    const int64_t per_image = k * positions > 0 ? k * positions : 1;
    /* The op's columns: filled by the forward, read by the weight gradient. */
    float *kept = kernel == NN_KERNEL_CONV2D_FORWARD ? nn_cpu_f32(a[4])
                  : kernel == NN_KERNEL_CONV2D_BACKWARD_WEIGHT ? nn_cpu_f32(a[3]) : NULL;
    int64_t group = kept ? g.batch : COLUMN_FLOATS / per_image;
    if (group < 1) group = 1;
    if (group > g.batch) group = g.batch;
    nn_buffer *scratch = kept ? NULL : self->alloc(self, (size_t)(group * per_image) * sizeof(float));
    if (!kept && !scratch) return nn_last_status();
    float *cols = kept ? kept : scratch->data;
    const float *x = kernel == NN_KERNEL_CONV2D_BACKWARD_WEIGHT ? nn_cpu_f32(a[1]) : nn_cpu_f32(a[0]);
    const float *w = nn_cpu_f32(a[1]), *dy = nn_cpu_f32(a[0]);
    float *out = nn_cpu_f32(a[2]);
    nn_status st = NN_OK;
    for (int64_t first = 0; first < g.batch && st == NN_OK; first += group) {
        const int32_t count = (int32_t)(g.batch - first < group ? g.batch - first : group);
        nn_conv_geometry part = g;
        part.batch = count;
        nn_gemm_params p = {.batch = count, .alpha = 1.0f};
        switch (kernel) {
        case NN_KERNEL_CONV2D_FORWARD: { /* y_n = epilogue(W cols_n) */
            st = nn_cpu_im2col(pool, &part, x + first * plane_x, cols);
            p.m = oc, p.n = (int32_t)positions, p.k = (int32_t)k;
            p.lda = (int32_t)k, p.ldb = (int32_t)positions, p.ldc = (int32_t)positions;
            p.stride_b = k * positions, p.stride_c = plane_y;
            nn_gemm_epilogue_params e = {.gemm = p, .epilogue = cp->epilogue};
            if (st == NN_OK)
                st = nn_cpu_gemm_epilogue(pool, &e, w, cols, out + first * plane_y, nn_cpu_f32(a[3]));
            break;
        }
        case NN_KERNEL_CONV2D_BACKWARD_DATA: { /* dcols_n = W^T dy_n, then col2im into dx */
            p.m = (int32_t)k, p.n = (int32_t)positions, p.k = oc, p.trans_a = 1;
            p.lda = (int32_t)k, p.ldb = (int32_t)positions, p.ldc = (int32_t)positions;
            p.stride_b = plane_y, p.stride_c = k * positions;
            st = nn_cpu_gemm(pool, &p, w, dy + first * plane_y, cols);
            if (st == NN_OK) st = nn_cpu_col2im(pool, &part, cols, out + first * plane_x);
            break;
        }
        case NN_KERNEL_CONV2D_BACKWARD_WEIGHT: { /* dW (+)= sum_n dy_n cols_n^T */
            if (!kept) st = nn_cpu_im2col(pool, &part, x + first * plane_x, cols);
            p.m = oc, p.n = (int32_t)k, p.k = (int32_t)positions, p.trans_b = 1;
            p.lda = (int32_t)positions, p.ldb = (int32_t)positions, p.ldc = (int32_t)k;
            p.stride_a = plane_y, p.stride_b = k * positions, p.stride_c = 0;
            p.beta = (first > 0 || g.accumulate) ? 1.0f : 0.0f;
            if (st == NN_OK) st = nn_cpu_gemm(pool, &p, dy + first * plane_y, cols, out);
            break;
        }
        default: st = nn_set_error(NN_ERR_BACKEND, "cpu conv2d: not a convolution kernel");
        }
    }
    if (scratch) self->free(self, scratch);
    if (st == NN_ERR_MEMORY) return nn_set_error(st, "cpu conv2d: out of scratch memory");
    return st;
}

bool nn_cpu_conv_keeps_columns(nn_backend *self, const nn_conv_params *p) {
    (void)self, (void)p;
    return true; /* every layer takes the column route here */
}
