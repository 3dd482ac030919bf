/* Private access to an SGD optimizer's state, for saving and restoring it
 * (src/io/train_state.c). Indices follow the parameter order given to
 * nn_sgd_new. */
#ifndef NN_OPTIM_SGD_STATE_H
#define NN_OPTIM_SGD_STATE_H

#include "core/internal.h"

int nn_sgd_state_count(const nn_sgd *opt);
nn_tensor *nn_sgd_state_param(const nn_sgd *opt, int i);
/* The momentum buffer of parameter i; NULL when the optimizer has no momentum. */
nn_tensor *nn_sgd_state_velocity(const nn_sgd *opt, int i);

#endif
