#include "conv_columns.h"

#include "base/error.h"

nn_status nn_conv_params_check(const char *backend, nn_kernel kernel, const nn_conv_params *p) {
    const nn_conv_geometry *g = &p->g;
    if (g->batch < 0 || g->channels < 0 || g->height < 0 || g->width < 0 || g->kernel_h <= 0 || g->kernel_w <= 0 ||
        g->stride_h <= 0 || g->stride_w <= 0 || g->pad_h < 0 || g->pad_w < 0 || g->out_h < 0 || g->out_w < 0 ||
        p->filters < 0 || g->dilation_h < 0 || g->dilation_w < 0 || p->groups < 0)
        return nn_set_error(NN_ERR_ARGUMENT, "%s %s: invalid geometry", backend, nn_kernel_name(kernel));
    const int32_t groups = nn_conv_groups(p);
    if (g->channels % groups != 0 || p->filters % groups != 0)
        return nn_set_error(NN_ERR_ARGUMENT, "%s %s: %d groups do not divide %d channels and %d filters", backend,
                            nn_kernel_name(kernel), groups, g->channels, p->filters);
    if (kernel == NN_KERNEL_CONV2D_FORWARD && (p->epilogue & ~(NN_EPI_BIAS_ROWS | NN_EPI_RELU)))
        return nn_set_error(NN_ERR_BACKEND, "%s %s: invalid epilogue flags 0x%x", backend, nn_kernel_name(kernel),
                            (unsigned)p->epilogue);
    return NN_OK;
}

nn_conv_columns nn_conv_columns_plan(const nn_conv_params *p, bool kept, int64_t max_floats) {
    const nn_conv_geometry *g = &p->g;
    nn_conv_columns c;
    c.k = (int64_t)g->channels * g->kernel_h * g->kernel_w;
    c.groups = nn_conv_groups(p);
    c.group_k = c.k / c.groups;
    c.group_filters = p->filters / c.groups;
    c.positions = (int64_t)g->out_h * g->out_w;
    c.plane_x = (int64_t)g->channels * g->height * g->width;
    c.plane_y = p->filters * c.positions;
    c.per_image = c.k * c.positions > 0 ? c.k * c.positions : 1;
    c.group = kept ? g->batch : max_floats / c.per_image;
    if (c.group < 1) c.group = 1;
    if (c.group > g->batch) c.group = g->batch;
    return c;
}

nn_gemm_params nn_conv_columns_gemm(nn_kernel kernel, const nn_conv_params *p, const nn_conv_columns *c,
                                    int32_t count, int64_t first) {
    const int32_t k = (int32_t)c->group_k, positions = (int32_t)c->positions, filters = (int32_t)c->group_filters;
    nn_gemm_params gemm = {.batch = count, .alpha = 1.0f, .precision = p->precision};
    switch (kernel) {
    case NN_KERNEL_CONV2D_FORWARD: /* y_n [filters, P] = W [filters, K] cols_n [K, P] */
        gemm.m = filters, gemm.n = positions, gemm.k = k;
        gemm.lda = k, gemm.ldb = positions, gemm.ldc = positions;
        gemm.stride_b = c->k * c->positions, gemm.stride_c = c->plane_y;
        break;
    case NN_KERNEL_CONV2D_BACKWARD_DATA: /* dcols_n [K, P] = W^T [K, filters] dy_n [filters, P] */
        gemm.m = k, gemm.n = positions, gemm.k = filters, gemm.trans_a = 1;
        gemm.lda = k, gemm.ldb = positions, gemm.ldc = positions;
        gemm.stride_b = c->plane_y, gemm.stride_c = c->k * c->positions;
        break;
    default: /* dW [filters, K] (+)= sum_n dy_n [filters, P] cols_n^T [P, K] */
        gemm.m = filters, gemm.n = k, gemm.k = positions, gemm.trans_b = 1;
        gemm.lda = positions, gemm.ldb = positions, gemm.ldc = k;
        gemm.stride_a = c->plane_y, gemm.stride_b = c->k * c->positions, gemm.stride_c = 0;
        gemm.beta = (first > 0 || p->g.accumulate) ? 1.0f : 0.0f;
        break;
    }
    return gemm;
}

nn_conv_group_offsets nn_conv_columns_group(const nn_conv_columns *c, int64_t group) {
    return (nn_conv_group_offsets){.weight = group * c->group_filters * c->group_k,
                                   .cols = group * c->group_k * c->positions,
                                   .y = group * c->group_filters * c->positions,
                                   .bias = group * c->group_filters};
}
