/* An exponential moving average of a module's weights (timm's ModelEmaV2):
 * a shadow copy of its state_dict -- parameters and buffers such as
 * BatchNorm's running statistics -- updated on the device after each
 * optimizer step by one kernel per tensor:
 *     shadow = shadow * decay + (1 - decay) * value   (float32 tensors)
 *     shadow = value                                  (int32 ones: counts)
 * To evaluate or save the averaged weights, nn_ema_swap exchanges the
 * shadow with the module's tensors; a second swap puts them back. */
#ifndef NN_EMA_H
#define NN_EMA_H

#include "nn_module.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nn_ema nn_ema;

/* A shadow of `module`'s state, equal to it now. decay in [0, 1]. The
 * average borrows the module: free it first. */
nn_ema *nn_ema_new(nn_module *module, float decay);
/* shadow <- shadow * decay + (1 - decay) * module's value, for every tensor. */
nn_status nn_ema_update(nn_ema *ema);
/* Exchanges the shadow and the module's values (any number of times). */
nn_status nn_ema_swap(nn_ema *ema);
float nn_ema_decay(const nn_ema *ema);
/* The shadow tensors, in the module's state_dict order and under its
 * names (borrowed): what a training state saves as "ema.<name>". */
int nn_ema_count(const nn_ema *ema);
nn_tensor *nn_ema_tensor(const nn_ema *ema, int i);
const char *nn_ema_name(const nn_ema *ema, int i);
void nn_ema_free(nn_ema *ema);

#ifdef __cplusplus
}
#endif
#endif
