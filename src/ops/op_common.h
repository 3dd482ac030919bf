/* What every operation does the same way: argument checks with messages that
 * name the op and the shapes, kernel launches, gradients handed on. */
#ifndef NN_OP_COMMON_H
#define NN_OP_COMMON_H

#include "core/graph.h"
#include "nn_device_loop.h"

/* t is not NULL and has the given dtype; `what` names it ("x", "weight"). */
nn_status nn_check_tensor(const char *op, const char *what, const nn_tensor *t, nn_dtype dtype);
/* As nn_check_tensor, and t has exactly `ndim` dimensions. */
nn_status nn_check_tensor_ndim(const char *op, const char *what, const nn_tensor *t,
                               nn_dtype dtype, int ndim);
/* Both tensors belong to the same context; otherwise an error naming the
 * arguments (a: the leading one) and their devices. */
nn_status nn_check_same_ctx(const char *op, const char *a_name, const nn_tensor *a, const char *b_name,
                            const nn_tensor *b);
/* Whether a and b have the same dimensions and sizes. */
bool nn_same_shape(const nn_tensor *a, const nn_tensor *b);
/* Same shape, for elementwise ops. */
nn_status nn_check_same_shape(const char *op, const nn_tensor *a, const nn_tensor *b);

/* A temporary float32 or int32 tensor the caller releases (not step-owned). */
nn_tensor *nn_op_scratch(nn_ctx *ctx, nn_dtype dtype, int ndim, const int64_t *shape);
/* Record `op` with a float32 output of the given shape (nn_op_record). */
nn_tensor *nn_op_result(const nn_op *op, nn_tensor *const *inputs, int input_count, const void *params,
                        size_t params_size, int ndim, const int64_t *shape);

/* C (+)= op(A) op(B) on one matrix each (row-major, minimal leading dims). */
nn_status nn_run_gemm(nn_ctx *ctx, nn_buffer_ref a, nn_buffer_ref b, nn_buffer_ref c, int m, int n,
                      int k, bool trans_a, bool trans_b, int32_t accumulate);
/* out (+)= alpha * a, elementwise over n items (copies, gradient passing). */
/* A node's forward of one kernel over (its first input, its output). */
nn_status nn_run_forward(nn_node *node, nn_kernel kernel, const void *params);
nn_status nn_run_scale(nn_ctx *ctx, nn_buffer_ref a, nn_buffer_ref out, int64_t n, float alpha,
                       int32_t accumulate);

/* out (+)= s[0] * x over x's elements, s a one-element tensor on the
 * device (a loss's gradient: nothing is read back). */
nn_status nn_run_scalar_times(nn_ctx *ctx, nn_tensor *s, nn_tensor *x, nn_tensor *out, int32_t accumulate);
/* g, a gradient of t computed ahead (a fused loss's, when backward started
 * from that loss), handed on to t: t's gradient becomes g itself when
 * nothing else wrote it (no kernel), else g is added to it (a leaf's
 * gradient is a running sum the caller owns). */
nn_status nn_grad_hand_on(nn_tensor *t, nn_tensor *g);

/* x's gradient becomes dy itself, seen in x's shape (no copy, no kernel),
 * when x is computed (not a leaf, whose gradient is its own running sum)
 * and nothing has written its gradient yet; *shared says whether it did.
 * For rules whose gradient is dy unchanged (views, add) and that write dy
 * no more: later rules may add into it through x. */
nn_status nn_grad_share(nn_tensor *x, nn_tensor *dy, bool *shared);

/* The backward of an operation whose result is int32: it carries no
 * gradient, and the node is on the tape only so that an ONNX export can
 * trace the graph through it (autograd.c; argmax, compare, cast, int sums). */
nn_status nn_no_gradient(nn_node *node);

/* counter is NULL or an int32 tensor of one element (device_loop.c). */
nn_status nn_check_counter(const char *op, const nn_tensor *counter);

/* Tensor dimensions are int64; kernels take int32 sizes. */
nn_status nn_check_int32(const char *op, const char *what, int64_t value);
/* A window's axis: size + 2 * pad must fit the kernels' 32 bits (checked in
 * 64 bits; size and pad must each fit 32 bits already). */
nn_status nn_check_padded(const char *op, const char *axis, int64_t size, int64_t pad);

#endif
