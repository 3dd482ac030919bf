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
/* Sets the rate the next step uses (written to nn_optimizer_lr_tensor).
 * With several parameter groups it is group 0's rate, and every other
 * group's becomes lr times its initial ratio to group 0's (as PyTorch's
 * multiplicative schedules scale each group), unchanged where group 0's
 * initial rate is 0. */
nn_status nn_optimizer_set_lr(nn_optimizer *opt, float lr);
/* The rate last set by nn_optimizer_set_lr (or at creation). */
float nn_optimizer_lr(const nn_optimizer *opt);
/* The learning rate as a one-element float32 device tensor (borrowed: the
 * optimizer owns it). The update reads it on the device, so a captured
 * step replays with whatever is written there (nn_tensor_write, or a
 * kernel such as a schedule's lookup). Written directly, it is not
 * reflected in nn_optimizer_lr. */
nn_tensor *nn_optimizer_lr_tensor(nn_optimizer *opt);
/* "sgd", "adam", "adamw", "rmsprop", "lion", "muon". */
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

/* Dynamic loss scaling for fp16 products (nn_ctx_set_precision), as
 * torch.amp.GradScaler, on the device (a captured step replays it with no
 * host round trip). nn_optimizer_scale_loss(opt, loss) multiplies the loss
 * by the scale; the next nn_optimizer_step first divides every gradient by
 * it, and when one is then infinite or NaN the step leaves the parameters
 * and the optimizer's state as they were (skipped and counted) and the
 * scale is multiplied by backoff_factor; after growth_interval steps in a
 * row without, by growth_factor. Zeros in the options take torch's
 * defaults: 65536, 2, 0.5, 2000. Costs one pass over the gradients per
 * step (one kernel when every parameter lives in the optimizer's flat
 * buffers, else one per gradient; a parameter without one, frozen, is
 * skipped); the update kernels skip a step whose gradients overflowed on
 * the device. */
typedef struct nn_loss_scale_options {
    float init_scale, growth_factor, backoff_factor;
    int growth_interval;
} nn_loss_scale_options;
nn_status nn_optimizer_enable_loss_scaling(nn_optimizer *opt, const nn_loss_scale_options *options);
/* loss times the current scale (a step tensor), for nn_backward. */
nn_tensor *nn_optimizer_scale_loss(nn_optimizer *opt, nn_tensor *loss);
/* The scale as a one-element float32 device tensor (borrowed; NULL, with
 * a message, when loss scaling is not enabled). */
nn_tensor *nn_optimizer_loss_scale_tensor(nn_optimizer *opt);
/* The scale now and the steps skipped so far (reads the device: a sync). */
nn_status nn_optimizer_loss_scale_stats(nn_optimizer *opt, float *scale, int64_t *skipped);
/* Divides the gradients by the scale now rather than in the next
 * nn_optimizer_step, which then does not again (torch's
 * GradScaler.unscale_: to clip or read the true gradients between backward
 * and step). The gradient hooks (data parallelism's average) run first, as
 * in a step. A second call before the step is refused. */
nn_status nn_optimizer_unscale_grads(nn_optimizer *opt);
/* The scaler's whole state: the scale, the good steps in a row since the
 * scale last moved (torch's growth tracker) and the steps skipped. Get
 * reads the device (a sync); set writes it (a resumed scaler, or torch's
 * update(new_scale)): a normal float scale, counts in [0, 2^24). */
typedef struct nn_loss_scale_state {
    float scale;
    int64_t good_steps, skipped_steps;
} nn_loss_scale_state;
nn_status nn_optimizer_loss_scale_state(nn_optimizer *opt, nn_loss_scale_state *state);
nn_status nn_optimizer_set_loss_scale_state(nn_optimizer *opt, const nn_loss_scale_state *state);

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

/* ---- parameter groups (every optimizer) ----
 * Each group has its own learning rate and weight decay (e.g. no decay on
 * biases and normalisation weights); its rate lives in a device tensor of
 * its own. The optimizer's parameters are the groups' in order. */
typedef struct nn_param_group {
    nn_tensor *const *params;
    int count;
    float lr;
    float weight_decay;
    /* nn_muon_new_groups only: update this group with Muon's AdamW (biases,
     * norms, embeddings, the head) instead of Muon; other optimizers refuse it. */
    bool adamw;
} nn_param_group;

/* SGD over parameter groups: each group's lr and weight_decay replace the
 * options'; momentum is the options' for every group (a group's own by
 * nn_optimizer_set_group_option; the momentum buffers are made, zero, when
 * a group first has momentum > 0). max_grad_norm takes one group. */
nn_optimizer *nn_sgd_new_groups(const nn_param_group *groups, int count, const nn_sgd_options *options);

int nn_optimizer_group_count(const nn_optimizer *opt);
nn_status nn_optimizer_set_group_lr(nn_optimizer *opt, int group, float lr);
float nn_optimizer_group_lr(const nn_optimizer *opt, int group);
/* Group `group`'s rate on the device (borrowed; group 0's is
 * nn_optimizer_lr_tensor). */
nn_tensor *nn_optimizer_group_lr_tensor(nn_optimizer *opt, int group);

/* A group's options by PyTorch's names, as torch's param_groups hold them:
 * "lr", "weight_decay" and the optimizer's own that may differ per group
 * (Adam, AdamW: "beta1", "beta2", "eps"; SGD: "momentum"; RMSprop:
 * "alpha", "eps", "momentum"; Lion: "beta1", "beta2"; Muon: none); each
 * group starts with the options given at creation. Set between steps, as a scheduler cycling
 * momentum does; SGD's and RMSprop's momentum buffers are made (zero) when a
 * group first gets momentum. The update kernels take every option but lr as a
 * constant, so a captured step recorded before such a change refuses to
 * replay (nn_replay names it): record the step again, or leave it eager. */
int nn_optimizer_option_count(const nn_optimizer *opt);
/* Option i's name, i in [0, nn_optimizer_option_count); NULL outside. */
const char *nn_optimizer_option_name(const nn_optimizer *opt, int i);
nn_status nn_optimizer_group_option(const nn_optimizer *opt, int group, const char *name, float *value);
nn_status nn_optimizer_set_group_option(nn_optimizer *opt, int group, const char *name, float value);

/* ---- Adam and AdamW ----
 * torch.optim.Adam / AdamW (defaults lr 1e-3, betas 0.9, 0.999, eps 1e-8;
 * weight_decay 0 for Adam, 1e-2 for AdamW). Per element, step t >= 1:
 *   g = maximize ? -grad : grad
 *   AdamW: p = p * (1 - lr * weight_decay)    Adam: g = g + weight_decay * p
 *   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
 *   amsgrad: v_max = max(v_max, v), used for v below
 *   p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
 * State: exp_avg, exp_avg_sq, max_exp_avg_sq (amsgrad), step. The step
 * count is one int32 device counter per group, advanced by a kernel before
 * each update (a captured step replays it); a parameter that had no
 * gradient in some step still shares its group's count, where PyTorch's
 * per-parameter count would not advance. */
typedef struct nn_adam_options {
    float lr;
    float beta1, beta2;
    float eps;
    float weight_decay;
    bool amsgrad;
    bool maximize;
} nn_adam_options;

nn_optimizer *nn_adam_new(nn_tensor *const *params, int count, const nn_adam_options *options);
nn_optimizer *nn_adamw_new(nn_tensor *const *params, int count, const nn_adam_options *options);
/* Over groups: each group's lr and weight_decay replace the options'. */
nn_optimizer *nn_adam_new_groups(const nn_param_group *groups, int count, const nn_adam_options *options);
nn_optimizer *nn_adamw_new_groups(const nn_param_group *groups, int count, const nn_adam_options *options);

/* ---- RMSprop ----
 * torch.optim.RMSprop (defaults lr 1e-2, alpha 0.99, eps 1e-8):
 *   g = (maximize ? -grad : grad) + weight_decay * p
 *   s = alpha s + (1 - alpha) g^2
 *   centered: a = alpha a + (1 - alpha) g;  avg = sqrt(s - a^2) + eps   else avg = sqrt(s) + eps
 *   momentum > 0: b = momentum b + g / avg; p = p - lr b     else p = p - lr g / avg
 * State: square_avg, momentum_buffer (momentum > 0), grad_avg (centered). */
typedef struct nn_rmsprop_options {
    float lr;
    float alpha;
    float eps;
    float weight_decay;
    float momentum;
    bool centered;
    bool maximize;
} nn_rmsprop_options;

nn_optimizer *nn_rmsprop_new(nn_tensor *const *params, int count, const nn_rmsprop_options *options);
nn_optimizer *nn_rmsprop_new_groups(const nn_param_group *groups, int count, const nn_rmsprop_options *options);

/* ---- Lion ----
 * Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms";
 * lucidrains/lion-pytorch; defaults lr 1e-4, betas 0.9, 0.99):
 *   p = p * (1 - lr * weight_decay)
 *   p = p - lr * sign(beta1 m + (1 - beta1) g)
 *   m = beta2 m + (1 - beta2) g
 * State: exp_avg. */
typedef struct nn_lion_options {
    float lr;
    float beta1, beta2;
    float weight_decay;
    bool maximize;
} nn_lion_options;

nn_optimizer *nn_lion_new(nn_tensor *const *params, int count, const nn_lion_options *options);
nn_optimizer *nn_lion_new_groups(const nn_param_group *groups, int count, const nn_lion_options *options);

/* ---- Muon ----
 * Keller Jordan's Muon with its auxiliary AdamW (MuonWithAuxAdam;
 * defaults lr 0.02, momentum 0.95, nesterov, 5 Newton-Schulz steps;
 * AdamW lr 3e-4, betas 0.9, 0.95, eps 1e-10). A matrix parameter W
 * (rows x cols; a convolution weight as outC x inC*kH*kW) with gradient G:
 *   m = lerp(m, G, 1 - momentum);  U = nesterov ? lerp(G, m, momentum) : m
 *   X = U / (||U||_F + 1e-7), transposed while rows > cols; 5 times:
 *     A = X X^T;  B = b A + c A A;  X = a X + B X   (a, b, c = 3.4445, -4.7750, 2.0315)
 *   W = W * (1 - lr * weight_decay) - lr * max(1, rows / cols)^0.5 * X
 * The products are the engine's GEMM kernels, a launch sequence per matrix
 * (Newton-Schulz is not elementwise); every other parameter (rank < 2) is
 * updated by AdamW with the adamw_* options. Its state: momentum_buffer,
 * exp_avg, exp_avg_sq and step, kept for every parameter. */
typedef struct nn_muon_options {
    float lr;
    float momentum;
    bool nesterov;
    int ns_steps;
    float weight_decay;
    float adamw_lr;
    float adamw_beta1, adamw_beta2;
    float adamw_eps;
    float adamw_weight_decay;
} nn_muon_options;

/* Parameters of rank >= 2 go to Muon (group 0), the rest to AdamW (group 1). */
nn_optimizer *nn_muon_new(nn_tensor *const *params, int count, const nn_muon_options *options);
/* Groups marked adamw use AdamW (the options' betas and eps, the group's lr
 * and decay); the others Muon, and must hold parameters of rank >= 2 only. */
nn_optimizer *nn_muon_new_groups(const nn_param_group *groups, int count, const nn_muon_options *options);

#ifdef __cplusplus
}
#endif
#endif
