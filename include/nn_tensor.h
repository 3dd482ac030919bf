/* Tensors: dense, contiguous, row-major (NCHW for images), up to 6 dimensions,
 * float32 or int32 (labels). A tensor lives on its context's device; the host
 * sees its values only through nn_tensor_write / nn_tensor_read.
 *
 * Ownership: tensors made with nn_tensor_new / nn_tensor_from_data belong to
 * the caller, who frees them with nn_tensor_free. Tensors returned by
 * operations belong to the current step and are freed by nn_ctx_step_end,
 * unless handed to nn_tensor_persist (then the caller frees them). Freeing a
 * tensor early is always allowed; the autograd tape keeps what it needs. */
#ifndef NN_TENSOR_H
#define NN_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nn_context.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NN_MAX_DIMS 6

typedef enum nn_dtype { NN_F32 = 0, NN_I32 = 1 } nn_dtype;

typedef struct nn_tensor nn_tensor;

/* A zero-filled tensor. Every dimension must be >= 1. */
nn_tensor *nn_tensor_new(nn_ctx *ctx, nn_dtype dtype, int ndim, const int64_t *shape);
/* A tensor holding a copy of `data` (numel * 4 bytes, host memory). */
nn_tensor *nn_tensor_from_data(nn_ctx *ctx, nn_dtype dtype, int ndim, const int64_t *shape,
                               const void *data);
/* Release the caller's reference. NULL is ignored. */
void nn_tensor_free(nn_tensor *t);
/* Take a step-owned tensor (an operation's result) out of the step, so that
 * nn_ctx_step_end leaves it alone; the caller must then nn_tensor_free it. */
nn_status nn_tensor_persist(nn_tensor *t);

/* Host <-> device copies of the whole tensor; `bytes` must equal numel * 4. */
nn_status nn_tensor_write(nn_tensor *t, const void *data, size_t bytes);
nn_status nn_tensor_read(const nn_tensor *t, void *data, size_t bytes);
/* dst <- src on the device (same dtype and element count; shapes may differ). */
nn_status nn_tensor_copy(nn_tensor *dst, const nn_tensor *src);
/* Set every element (of a float32 tensor) to `value`. */
nn_status nn_tensor_fill(nn_tensor *t, float value);

nn_ctx *nn_tensor_ctx(const nn_tensor *t);
nn_dtype nn_tensor_dtype(const nn_tensor *t);
int nn_tensor_ndim(const nn_tensor *t);
/* Size of dimension `dim` (negative counts from the end); 0 if out of range. */
int64_t nn_tensor_dim(const nn_tensor *t, int dim);
/* Copies ndim sizes into shape[NN_MAX_DIMS]; returns ndim (0 for NULL). */
int nn_tensor_shape(const nn_tensor *t, int64_t *shape);
int64_t nn_tensor_numel(const nn_tensor *t);
/* "[64, 1, 28, 28]" into buf; returns buf. */
const char *nn_tensor_shape_str(const nn_tensor *t, char *buf, size_t size);

/* Autograd. Only float32 tensors can require gradients. */
nn_status nn_tensor_set_requires_grad(nn_tensor *t, bool requires_grad);
bool nn_tensor_requires_grad(const nn_tensor *t);
/* The accumulated gradient (same shape), or NULL when none has been computed.
 * Borrowed: valid while t lives; do not free. As in PyTorch, only leaves
 * (tensors no recorded operation produced) keep their gradient after
 * nn_backward; an operation's result keeps it only if nn_tensor_retain_grad
 * was called on it before the backward pass. */
nn_tensor *nn_tensor_grad(const nn_tensor *t);
/* Keep the gradient of an operation's result after nn_backward (PyTorch's
 * retain_grad); a no-op on leaves, which keep theirs anyway. Without it,
 * each result's gradient is freed once the backward pass has used it. */
nn_status nn_tensor_retain_grad(nn_tensor *t);
/* Set the gradient to zero (a no-op when there is none yet). */
nn_status nn_tensor_zero_grad(nn_tensor *t);

/* Back-propagate from a one-element tensor: every tensor that requires grad
 * and contributed to `loss` receives d(loss)/d(tensor), added to what its
 * .grad already holds (leaves accumulate across calls until zeroed, as in
 * PyTorch). The operations walked are consumed: a second backward through
 * them is an error (as in PyTorch without retain_graph), while another loss
 * recorded in the same step, from other operations, can still be used. */
nn_status nn_backward(nn_tensor *loss);

#ifdef __cplusplus
}
#endif
#endif
