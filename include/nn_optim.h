/* Optimizers. Every optimizer has the same interface (nn_optimizer_*):
 * step, zero_grad, a learning rate that lives on the device, and named
 * state tensors per parameter (what a training state saves). The update
 * runs on the parameters' device; nothing is read back. An optimizer keeps
 * all its parameters (and their gradients and state) in one device buffer
 * each, so a step is one kernel: creating it moves the parameters there
 * (their values are unchanged; a view made of a parameter earlier, or a
 * parameter sharing its storage, stays where it was and is updated by a
 * kernel of its own). */
#ifndef NN_OPTIM_H
#define NN_OPTIM_H

#include <stdbool.h>
#include "nn_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nn_optimizer nn_optimizer;

/* ---- the interface of every optimizer ---- */

/* Update every parameter that has a gradient (one that never received one
 * is skipped, as in PyTorch). */
nn_status nn_optimizer_step(nn_optimizer *opt);
/* Zero every parameter's gradient. */
nn_status nn_optimizer_zero_grad(nn_optimizer *opt);
/* Sets the rate the next step uses (written to nn_optimizer_lr_tensor). */
nn_status nn_optimizer_set_lr(nn_optimizer *opt, float lr);
/* The rate last set by nn_optimizer_set_lr (or at creation). */
float nn_optimizer_lr(const nn_optimizer *opt);
/* The learning rate as a one-element float32 device tensor (borrowed: the
 * optimizer owns it). The update reads it on the device, so a captured
 * step replays with whatever is written there (nn_tensor_write, or a
 * kernel such as a schedule's lookup). Written directly, it is not
 * reflected in nn_optimizer_lr. */
nn_tensor *nn_optimizer_lr_tensor(nn_optimizer *opt);
/* "sgd". */
const char *nn_optimizer_name(const nn_optimizer *opt);
/* The parameters, in the order given at creation (borrowed). */
int nn_optimizer_param_count(const nn_optimizer *opt);
nn_tensor *nn_optimizer_param(const nn_optimizer *opt, int i);
/* Its state: per parameter, the same named tensors, under PyTorch's names
 * (SGD with momentum: "momentum_buffer"; without: none). nn_optimizer_state
 * is borrowed, the same shape as parameter `param`. */
int nn_optimizer_state_count(const nn_optimizer *opt);
const char *nn_optimizer_state_name(const nn_optimizer *opt, int state);
nn_tensor *nn_optimizer_state(const nn_optimizer *opt, int param, int state);
void nn_optimizer_free(nn_optimizer *opt);

/* ---- SGD ----
 * Stochastic gradient descent, with PyTorch's semantics (torch.optim.SGD,
 * dampening 0) plus the seed engine's per-element gradient clamp and a
 * global-norm clip. Per parameter p with gradient g, in this order:
 *   g = g * min(1, max_grad_norm / (||all grads||_2 + 1e-6))  if max_grad_norm > 0
 *   g = clamp(g, -clip_value, clip_value)                     if clip_value > 0
 *   g = g + weight_decay * p
 *   v = momentum * v + g;  g = nesterov ? g + momentum * v : v  if momentum > 0
 *   p = p - lr * g */
typedef struct nn_sgd_options {
    float lr;
    float momentum;      /* 0 = plain SGD */
    float weight_decay;  /* L2 penalty added to the gradient */
    bool nesterov;       /* needs momentum > 0 */
    float clip_value;    /* clamp each gradient element to [-c, c]; 0 = off */
    float max_grad_norm; /* rescale all gradients to this global L2 norm; 0 = off */
} nn_sgd_options;

/* The optimizer keeps references to the parameters (float32, requires
 * grad, one context) and owns their momentum buffers. */
nn_optimizer *nn_sgd_new(nn_tensor *const *params, int count, const nn_sgd_options *options);
/* SGD's own settings; refused for another optimizer. */
nn_status nn_sgd_set_clip_value(nn_optimizer *opt, float clip_value);
nn_status nn_sgd_set_max_grad_norm(nn_optimizer *opt, float max_grad_norm);
/* NULL for another optimizer. */
const nn_sgd_options *nn_sgd_get_options(const nn_optimizer *opt);

#ifdef __cplusplus
}
#endif
#endif
