/* The CPU backend's private types and its kernels, one file per family. */
#ifndef NN_CPU_BACKEND_H
#define NN_CPU_BACKEND_H

#include <stdbool.h>
#include "backends/backend.h"
#include "thread_pool.h"

struct nn_buffer {
    size_t bytes;
    void *data;             /* 64-byte aligned */
    bool borrowed;          /* data is the caller's (import_host): never freed or cached here */
    struct nn_buffer *next; /* in the free cache */
};

/* Element pointers from kernel arguments (NULL for an absent optional one). */
static inline float *nn_cpu_f32(nn_buffer_ref ref) {
    return ref.buffer ? (float *)((char *)ref.buffer->data + ref.offset) : NULL;
}
static inline int32_t *nn_cpu_i32(nn_buffer_ref ref) {
    return ref.buffer ? (int32_t *)((char *)ref.buffer->data + ref.offset) : NULL;
}

/* The backend's worker threads. */
nn_thread_pool *nn_cpu_pool(nn_backend *self);

/* cpu_kernels.c: run() through the registry's table of entry points, and
 * every kernel's entry point nn_cpu_run_<name>(self, params, args)
 * (kernel_list.h), which calls its family's function below. */
nn_status nn_cpu_run(nn_backend *self, nn_kernel kernel, const nn_buffer_ref *args, int nargs, const void *params);
#define NN_CPU_RUN_DECLARE(ID, name, params, ...) \
    nn_status nn_cpu_run_##name(nn_backend *self, const params *p, const nn_buffer_ref *a);
NN_KERNEL_LIST(NN_CPU_RUN_DECLARE)
#undef NN_CPU_RUN_DECLARE

/* Elements below which a pointwise kernel runs on one thread: waking the
 * workers costs more than the work. */
#define NN_CPU_MIN_CHUNK 16384

/* The strided kernels (cpu_strided.c). COMPARE's operands are int32 or
 * float32 as p->integer says; REDUCE_DIMS's x and out int32 likewise. */
nn_status nn_cpu_broadcast(nn_thread_pool *pool, const nn_broadcast_params *p, const float *a, const float *b,
                           const float *c, float *out);
nn_status nn_cpu_compare(nn_thread_pool *pool, const nn_compare_params *p, const void *a, const void *b,
                         int32_t *out);
nn_status nn_cpu_strided_copy(nn_thread_pool *pool, const nn_strided_copy_params *p, const float *src, float *dst);
nn_status nn_cpu_reduce_dims(nn_thread_pool *pool, const nn_reduce_dims_params *p, const float *x, float *out,
                             int32_t *winners);
nn_status nn_cpu_reduce_dims_scatter(nn_thread_pool *pool, const nn_reduce_dims_params *p, const float *dy,
                                     const int32_t *winners, float *dx);

/* CAST (cpu_cast.c): x and out float32 or int32 as p->op (nn_cast_op) says. */
nn_status nn_cpu_cast(nn_thread_pool *pool, const nn_pointwise_params *p, const void *x, void *out);

nn_status nn_cpu_im2col(nn_thread_pool *pool, const nn_conv_geometry *g, const float *image,
                        float *cols);
nn_status nn_cpu_col2im(nn_thread_pool *pool, const nn_conv_geometry *g, const float *cols,
                        float *image);
/* Where a column matrix's entry (image n, row r, position p) lives:
 * n * image_step + r * row_step + p (cpu_conv.c). Per image is the kernels'
 * contract ([batch, rows, positions]); side by side, [rows, batch *
 * positions], makes one product of a batch's convolutions. */
typedef struct nn_cpu_columns {
    int64_t image_step, row_step;
} nn_cpu_columns;
nn_cpu_columns nn_cpu_columns_per_image(const nn_conv_geometry *g);
nn_cpu_columns nn_cpu_columns_side_by_side(const nn_conv_geometry *g);
nn_status nn_cpu_im2col_as(nn_thread_pool *pool, const nn_conv_geometry *g, nn_cpu_columns layout,
                           const float *image, float *cols);
nn_status nn_cpu_col2im_as(nn_thread_pool *pool, const nn_conv_geometry *g, nn_cpu_columns layout,
                           const float *cols, float *image);
/* NN_KERNEL_CONV2D_* (cpu_conv_kernels.c): the column route; the columns are
 * kept from forward to backward only where the caller passes them. */
nn_status nn_cpu_conv2d(nn_backend *self, nn_thread_pool *pool, nn_kernel kernel, const nn_conv_params *p,
                        const nn_buffer_ref *args);
bool nn_cpu_conv_keeps_columns(nn_backend *self, const nn_conv_params *p);
/* A CONV2D_* or DEPTHWISE_CONV2D_* kernel with a channels-last side, through
 * the dense kernels and copies (conv_layout.h). */
nn_status nn_cpu_conv_layouts(nn_backend *self, nn_kernel kernel, const nn_conv_params *p, const nn_buffer_ref *a);
/* NN_KERNEL_CONV2D_POOL_* (cpu_conv_pool.c): the unfused kernels in turn. */
nn_status nn_cpu_conv_pool(nn_backend *self, nn_thread_pool *pool, nn_kernel kernel, const nn_conv_pool_params *p,
                           const nn_buffer_ref *args);
/* NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT: the second layer's data gradient into
 * scratch, then the first's weight gradient (the reference; never chosen,
 * as the CPU does not fuse the layers). */
nn_status nn_cpu_conv_pool_chain(nn_backend *self, nn_thread_pool *pool, const nn_conv_pool_chain_params *p,
                                 const nn_buffer_ref *a);
/* NN_KERNEL_CONV2D_POOL_LINEAR_FORWARD: the layer's forward, then the
 * Linear's GEMM with its epilogue (the reference; never chosen). */
nn_status nn_cpu_conv_pool_linear(nn_backend *self, nn_thread_pool *pool, const nn_conv_pool_linear_params *p,
                                  const nn_buffer_ref *a);
/* NN_KERNEL_LINEAR_HEAD_* (cpu_linear_head.c): the unfused layers' GEMMs in turn. */
nn_status nn_cpu_linear_head(nn_backend *self, nn_thread_pool *pool, nn_kernel kernel,
                             const nn_linear_head_params *p, const nn_buffer_ref *a);
/* Plane nc = (n, c) of a max pooling's [batch, channels, rows, columns]
 * tensor of `pixels` per plane: its first element and the step between its
 * pixels (1 dense, channels channels-last: nn_pool_params.layout). */
typedef struct nn_cpu_pool_plane {
    int64_t base, step;
} nn_cpu_pool_plane;
nn_cpu_pool_plane nn_cpu_pool_plane_of(const nn_pool_params *p, int64_t nc, int64_t pixels);
nn_status nn_cpu_maxpool_forward(nn_thread_pool *pool, const nn_pool_params *p, const float *x,
                                 float *y, int32_t *argmax);
nn_status nn_cpu_maxpool_backward(nn_thread_pool *pool, const nn_pool_params *p, const float *dy,
                                  const int32_t *argmax, float *dx);
nn_status nn_cpu_bias_add(nn_thread_pool *pool, const nn_bias_params *p, float *y,
                          const float *bias);
nn_status nn_cpu_bias_grad(nn_thread_pool *pool, const nn_bias_params *p, const float *dy,
                           float *dbias);
nn_status nn_cpu_relu_forward(nn_thread_pool *pool, const nn_pointwise_params *p, const float *x,
                              float *y);
nn_status nn_cpu_relu_backward(nn_thread_pool *pool, const nn_pointwise_params *p, const float *y,
                               const float *dy, float *dx);
/* cpu_unary.c: the rows of shaders/unary_ops.h */
nn_status nn_cpu_unary_forward(nn_thread_pool *pool, const nn_pointwise_params *p, const float *x, float *y);
/* values[i] = the epilogue's row of values[i], as nn_cpu_unary_forward would write it. */
void nn_cpu_unary_in_place(const nn_pointwise_epilogue *e, float *values, int64_t n);
nn_status nn_cpu_unary_backward(nn_thread_pool *pool, const nn_pointwise_params *p, const float *x, const float *y,
                                const float *dy, float *dx);
nn_status nn_cpu_elementwise(nn_thread_pool *pool, const nn_pointwise_params *p, const float *a,
                             const float *b, float *out);
nn_status nn_cpu_reduce_sum(nn_thread_pool *pool, const nn_pointwise_params *p, const float *x,
                            float *out);
nn_status nn_cpu_sum_squares(nn_thread_pool *pool, const nn_pointwise_params *p, const float *x,
                             float *out);
nn_status nn_cpu_broadcast_scalar(nn_thread_pool *pool, const nn_pointwise_params *p,
                                  const float *s, float *out);
nn_status nn_cpu_softmax_forward(nn_thread_pool *pool, const nn_softmax_params *p, const float *x,
                                 float *y);
nn_status nn_cpu_softmax_backward(nn_thread_pool *pool, const nn_softmax_params *p, const float *y,
                                  const float *dy, float *dx);
nn_status nn_cpu_softmax_ce_forward(nn_thread_pool *pool, const nn_softmax_params *p,
                                    const float *logits, const int32_t *labels, float *probs,
                                    float *loss);
/* As nn_cpu_softmax_ce_forward, with each row's loss in row_loss [rows]
 * instead of their mean. */
nn_status nn_cpu_softmax_ce_row_losses(nn_thread_pool *pool, const nn_softmax_params *p, const float *logits,
                                       const int32_t *labels, float *probs, float *row_loss);
nn_status nn_cpu_softmax_ce_backward(nn_thread_pool *pool, const nn_softmax_params *p,
                                     const float *probs, const int32_t *labels,
                                     const float *dloss, float *dlogits);
nn_status nn_cpu_sgd_update(nn_thread_pool *pool, const nn_sgd_params *p, float *param,
                            const float *grad, float *velocity, const float *grad_norm_sq);
nn_status nn_cpu_dropout_forward(nn_thread_pool *pool, const nn_dropout_params *p, const float *x,
                                 float *y, float *mask, const uint32_t *counter);

/* cpu_device_loop.c */
nn_status nn_cpu_gather_samples(const nn_gather_params *p, const uint8_t *samples, const int32_t *order,
                                const int32_t *counter, float *out, const int32_t *draws);
nn_status nn_cpu_gather_rows(const nn_gather_params *p, const int32_t *table, const int32_t *order,
                             const int32_t *counter, int32_t *out);
nn_status nn_cpu_counter_add(const nn_counter_params *p, int32_t *counter);
nn_status nn_cpu_metrics_accumulate(const nn_metrics_params *p, const float *logits, const int32_t *labels,
                                    const float *loss, float *sums);
/* cpu_fused.c */
nn_status nn_cpu_gemm_epilogue(nn_thread_pool *pool, const nn_gemm_epilogue_params *e, const float *a,
                               const float *b, float *c, const float *aux);
nn_status nn_cpu_maxpool_backward_masked(nn_thread_pool *pool, const nn_pool_params *p, const float *dy,
                                         const int32_t *argmax, const float *y, float *dx);
nn_status nn_cpu_softmax_ce_fused(nn_thread_pool *pool, const nn_softmax_params *p, const float *logits,
                                  const int32_t *labels, float *dlogits, float *loss);
/* Probabilities in dlogits become the gradient of the mean loss, (p -
 * onehot(label)) / rows (a bad label's row: p / rows). */
void nn_cpu_softmax_ce_gradient(const nn_softmax_params *p, const int32_t *labels, float *dlogits);
nn_status nn_cpu_sgd_update_device_lr(nn_thread_pool *pool, const nn_sgd_params *p, float *param,
                                      const float *grad, float *velocity, const float *scalars);
/* cpu_pool2d.c */
nn_status nn_cpu_pool2d_max_forward(nn_thread_pool *pool, const nn_pool2d_geometry *g, const float *x, float *y,
                                    int32_t *argmax);
nn_status nn_cpu_pool2d_max_backward(nn_thread_pool *pool, const nn_pool2d_geometry *g, const float *dy,
                                     const int32_t *argmax, float *dx);
nn_status nn_cpu_pool2d_avg_forward(nn_thread_pool *pool, const nn_pool2d_geometry *g, const float *x, float *y);
nn_status nn_cpu_pool2d_avg_backward(nn_thread_pool *pool, const nn_pool2d_geometry *g, const float *dy, float *dx);

/* cpu_norm.c: the normalisation kernels (kernels.h's nn_norm_params) */
nn_status nn_cpu_norm_stats(nn_thread_pool *pool, const nn_norm_params *p, const float *x, float *mean, float *var);
nn_status nn_cpu_norm_apply(nn_thread_pool *pool, const nn_norm_params *p, const float *x, const float *mean,
                            const float *var, const float *weight, const float *bias, float *y,
                            const float *residual);
nn_status nn_cpu_norm_backward_data(nn_thread_pool *pool, const nn_norm_params *p, const float *x, const float *mean,
                                    const float *var, const float *weight, const float *dy, float *dx);
nn_status nn_cpu_norm_backward_affine(nn_thread_pool *pool, const nn_norm_params *p, const float *x,
                                      const float *mean, const float *var, const float *dy, float *dweight,
                                      float *dbias);
nn_status nn_cpu_norm_backward_sums(nn_thread_pool *pool, const nn_norm_params *p, const float *x, const float *mean,
                                    const float *var, const float *weight, const float *dy, float *sums,
                                    const float *bias);
nn_status nn_cpu_norm_backward_from_sums(nn_thread_pool *pool, const nn_norm_params *p, const float *x,
                                         const float *mean, const float *var, const float *weight, const float *dy,
                                         float *dx, const float *sums, float *dweight, float *dbias,
                                         const float *bias);
nn_status nn_cpu_norm_running_update(const nn_norm_running_params *p, const float *mean, const float *var,
                                     float *running_mean, float *running_var, const int32_t *count_tracked);
/* cpu_embedding.c */
nn_status nn_cpu_embedding_forward(nn_thread_pool *pool, const nn_embedding_params *p, const int32_t *indices,
                                   const float *weight, float *out);
nn_status nn_cpu_embedding_backward(nn_thread_pool *pool, const nn_embedding_params *p, const int32_t *indices,
                                    const float *dy, float *dweight);

/* cpu_softmax_dim.c: softmax and log_softmax along a dimension (nn_softmax_dim_params) */
nn_status nn_cpu_softmax_dim_forward(nn_thread_pool *pool, const nn_softmax_dim_params *p, const float *x, float *y);
nn_status nn_cpu_softmax_dim_backward(nn_thread_pool *pool, const nn_softmax_dim_params *p, const float *y,
                                      const float *dy, float *dx);
/* cpu_nll.c: the class-target negative log-likelihood (nn_nll_params) */
nn_status nn_cpu_nll_forward(const nn_nll_params *p, const float *input, const int32_t *target, const float *weight,
                             float *loss, float *total_weight);
nn_status nn_cpu_nll_backward(nn_thread_pool *pool, const nn_nll_params *p, const float *dloss, const int32_t *target,
                              const float *weight, const float *total_weight, float *dinput);

/* cpu_depthwise.c */
nn_status nn_cpu_depthwise_conv2d_forward(nn_thread_pool *pool, const nn_conv_params *p, const float *x,
                                          const float *w, float *y, const float *bias);
nn_status nn_cpu_depthwise_conv2d_backward_data(nn_thread_pool *pool, const nn_conv_params *p, const float *dy,
                                                const float *w, float *dx);
nn_status nn_cpu_depthwise_conv2d_backward_weight(nn_thread_pool *pool, const nn_conv_params *p, const float *dy,
                                                  const float *x, float *dw);
/* cpu_interpolate.c */
nn_status nn_cpu_interpolate_forward(nn_thread_pool *pool, const nn_interpolate_params *p, const float *x, float *y);
nn_status nn_cpu_interpolate_backward(nn_thread_pool *pool, const nn_interpolate_params *p, const float *dy,
                                      float *dx);

/* cpu_optimizers.c: the optimizers' updates (kernels.h) */
nn_status nn_cpu_adam_update(nn_thread_pool *pool, const nn_adam_params *p, float *param, const float *grad,
                             float *exp_avg, float *exp_avg_sq, float *max_exp_avg_sq, const float *lr,
                             const int32_t *step);
nn_status nn_cpu_rmsprop_update(nn_thread_pool *pool, const nn_rmsprop_params *p, float *param, const float *grad,
                                float *square_avg, float *momentum_buffer, float *grad_avg, const float *lr);
nn_status nn_cpu_lion_update(nn_thread_pool *pool, const nn_lion_params *p, float *param, const float *grad,
                             float *exp_avg, const float *lr);
nn_status nn_cpu_muon_momentum(const nn_muon_params *p, const float *grad, float *momentum_buffer, float *update);
nn_status nn_cpu_muon_normalize(const nn_muon_params *p, float *x, const float *norm_sq);
nn_status nn_cpu_muon_apply(const nn_muon_params *p, float *param, const float *update, const float *lr);
/* cpu_schedule.c */
nn_status nn_cpu_lr_schedule(const nn_lr_schedule_params *p, int32_t *counter, float *lr);
nn_status nn_cpu_ema_update(nn_thread_pool *pool, const nn_ema_params *p, uint32_t *shadow, uint32_t *value);
/* LOSS_SCALE (kernels.h), all three modes; a: x, saved, state. */
nn_status nn_cpu_loss_scale(const nn_loss_scale_params *p, const nn_buffer_ref *a);

#endif
