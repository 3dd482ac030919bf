/* An optimizer's parameters in one flat device buffer (a multi-tensor
 * apply, shared by every optimizer): each parameter tensor becomes a piece
 * of flat_params, and the gradients join flat_grads the first time they
 * exist (nn_grad_target makes them lazily, and a parameter without a
 * gradient must stay put, as in PyTorch). Then zero_grad is one fill, the
 * global norm one reduction and an update one kernel over all elements.
 * The learning rate lives on the device beside the squared gradient norm
 * (scalars), so a recorded step replays with the rate last written there.
 *
 * A parameter that shares its storage with another tensor (a view, or one
 * already moved by another optimizer) is not moved; then, or while some
 * parameter has no gradient yet, updates run per parameter: the same
 * results, more launches. */
#ifndef NN_OPTIM_PARAM_SET_H
#define NN_OPTIM_PARAM_SET_H

#include "core/internal.h"

typedef struct nn_param_set {
    nn_ctx *ctx;
    int count;
    nn_tensor **params;   /* references held */
    int64_t *offsets;     /* element offset of each parameter in the flat buffers */
    int64_t total;        /* elements of all parameters */
    nn_tensor *flat_params, *flat_grads; /* [total] */
    nn_tensor *scalars;   /* [2]: the learning rate, the squared global gradient norm */
    nn_tensor *lr;        /* scalars[0] as a tensor of its own */
    nn_tensor *norm_sq;   /* scalars[1] */
} nn_param_set;

/* A per-parameter state of an optimizer (momentum, moments) laid out as
 * the parameters are: one zeroed flat buffer and a view per parameter. */
typedef struct nn_flat_state {
    nn_tensor *flat;
    nn_tensor **views;
} nn_flat_state;

/* Checks the parameters (`fn` names the caller in messages), makes the
 * buffers and moves the parameters in; the rate goes to the device. */
nn_status nn_param_set_init(nn_param_set *s, const char *fn, nn_tensor *const *params, int count, float lr);
void nn_param_set_free(nn_param_set *s);
nn_status nn_param_set_state_new(nn_param_set *s, nn_flat_state *out);
void nn_param_set_state_free(nn_param_set *s, nn_flat_state *state);

/* Gradients made since the last call join flat_grads. */
nn_status nn_param_set_adopt_grads(nn_param_set *s);
/* Whether every parameter and gradient lives in the flat buffers, so one
 * kernel serves all of them. */
bool nn_param_set_is_flat(const nn_param_set *s);
nn_status nn_param_set_zero_grad(nn_param_set *s);
/* ||all gradients||^2 into scalars[1], on the device. */
nn_status nn_param_set_grad_norm_sq(nn_param_set *s, bool flat);

#endif
