/* Stochastic gradient descent, with PyTorch's semantics (torch.optim.SGD,
 * dampening 0) plus the seed engine's per-element gradient clamp and a
 * global-norm clip. Per parameter p with gradient g, in this order:
 *   g = g * min(1, max_grad_norm / (||all grads||_2 + 1e-6))  if max_grad_norm > 0
 *   g = clamp(g, -clip_value, clip_value)                     if clip_value > 0
 *   g = g + weight_decay * p
 *   v = momentum * v + g;  g = nesterov ? g + momentum * v : v  if momentum > 0
 *   p = p - lr * g
 * The update runs on the parameters' device; nothing is read back. The
 * optimizer keeps all parameters (and gradients, momentum buffers) in one
 * device buffer each, so a step is one kernel: nn_sgd_new moves the
 * parameters there (their values are unchanged; a view made of a parameter
 * earlier, or a parameter sharing its storage, stays where it was and is
 * updated by a kernel of its own). */
#ifndef NN_OPTIM_H
#define NN_OPTIM_H

#include <stdbool.h>
#include "nn_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nn_sgd_options {
    float lr;
    float momentum;      /* 0 = plain SGD */
    float weight_decay;  /* L2 penalty added to the gradient */
    bool nesterov;       /* needs momentum > 0 */
    float clip_value;    /* clamp each gradient element to [-c, c]; 0 = off */
    float max_grad_norm; /* rescale all gradients to this global L2 norm; 0 = off */
} nn_sgd_options;

typedef struct nn_sgd nn_sgd;

/* The optimizer keeps references to the parameters (float32, requires grad)
 * and owns their momentum buffers. */
nn_sgd *nn_sgd_new(nn_tensor *const *params, int count, const nn_sgd_options *options);
nn_status nn_sgd_step(nn_sgd *opt);
/* Zero every parameter's gradient. */
nn_status nn_sgd_zero_grad(nn_sgd *opt);
/* Sets the rate the next nn_sgd_step uses (written to the device buffer of
 * nn_sgd_lr_tensor). */
nn_status nn_sgd_set_lr(nn_sgd *opt, float lr);
/* The learning rate as a one-element float32 device tensor (borrowed: the
 * optimizer owns it). The update kernel reads it on the device, so a
 * captured step replays with whatever is written there (nn_tensor_write, or
 * a kernel such as a schedule). Written directly, it is not reflected in
 * nn_sgd_get_options()->lr, which keeps the last nn_sgd_set_lr value. */
nn_tensor *nn_sgd_lr_tensor(nn_sgd *opt);
nn_status nn_sgd_set_clip_value(nn_sgd *opt, float clip_value);
nn_status nn_sgd_set_max_grad_norm(nn_sgd *opt, float max_grad_norm);
const nn_sgd_options *nn_sgd_get_options(const nn_sgd *opt);
void nn_sgd_free(nn_sgd *opt);

#ifdef __cplusplus
}
#endif
#endif
