/* Launching the strided kernels (kernels.h) on tensors: NumPy's
 * broadcasting rule, a broadcast function of up to three operands, a
 * comparison of two, a sum down to a broadcast operand's shape (its
 * gradient), a strided copy. Each run drops dimensions of size 1 and merges
 * neighbours that every operand walks contiguously, so most launches index
 * one or two dimensions. */
#ifndef NN_OPS_STRIDED_H
#define NN_OPS_STRIDED_H

#include "op_common.h"

/* The shape a and b broadcast to (NumPy's rule: sizes aligned at the last
 * dimension must be equal or 1); the message names `op` and both shapes. */
nn_status nn_broadcast_shapes(const char *op, int a_ndim, const int64_t *a_shape, int b_ndim,
                              const int64_t *b_shape, int *ndim, int64_t *shape);

/* out (+)= alpha * f(a, b, c) over out's shape (dense), f the row `op` of
 * broadcast_ops.h; each operand (NULL where the row reads fewer) has a
 * shape that broadcasts to out's. */
nn_status nn_run_broadcast(nn_ctx *ctx, nn_broadcast_op op, float alpha, int32_t accumulate, nn_tensor *out,
                           const nn_tensor *a, const nn_tensor *b, const nn_tensor *c);

/* out = (a op b) as 0 or 1 over out's shape (dense int32); a and b, both
 * float32 or both int32, have shapes that broadcast to out's. */
nn_status nn_run_compare(nn_ctx *ctx, nn_compare_op op, nn_tensor *out, const nn_tensor *a, const nn_tensor *b);

/* REDUCE_DIMS's parameters for reducing x over the dimensions whose bits
 * are set in `reduced` (the output dense in x's order of the others). */
nn_status nn_reduce_dims_plan(const nn_tensor *x, uint32_t reduced, nn_reduce_op op, float alpha,
                              nn_reduce_dims_params *p);

/* dst (+)= src summed over the dimensions along which dst's shape
 * broadcasts to src's (a copy where the shapes match). */
nn_status nn_run_sum_to(nn_ctx *ctx, const nn_tensor *src, nn_tensor *dst, int32_t accumulate);

/* The gradient of a broadcast operand: grad (+)= sum_to(alpha * f(a, b, c))
 * over the output's shape `like`, through a temporary when the operand's
 * shape is not the output's. */
nn_status nn_run_broadcast_grad(nn_ctx *ctx, nn_broadcast_op op, float alpha, const nn_tensor *like,
                                nn_tensor *grad, int32_t accumulate, const nn_tensor *a, const nn_tensor *b,
                                const nn_tensor *c);

/* A strided view of a tensor's storage: `ndim` sizes and element strides
 * from element `offset`. */
typedef struct nn_strided_view {
    int ndim;
    int64_t shape[NN_MAX_DIMS];
    int64_t stride[NN_MAX_DIMS];
    int64_t offset;
} nn_strided_view;

/* The dense row-major view of a whole tensor. */
nn_strided_view nn_dense_view(const nn_tensor *t);

/* dst's view (+)= src's view, element by element over src's shape (both
 * views have it); no two elements of dst's view may coincide. */
nn_status nn_run_strided_copy(nn_ctx *ctx, const nn_tensor *src, const nn_strided_view *from, nn_tensor *dst,
                              const nn_strided_view *to, int32_t accumulate);

#endif
