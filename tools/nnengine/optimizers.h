/* --optimizer: the optimizers `nnengine train` offers, their default
 * learning rates and weight decays, and making one over the trainable
 * parameters. */
#ifndef NNENGINE_OPTIMIZERS_H
#define NNENGINE_OPTIMIZERS_H

#include <stdbool.h>
#include "nn_engine.h"

typedef struct optimizer_settings {
    double lr, weight_decay;
    double momentum;      /* sgd, rmsprop; muon's own */
    bool nesterov;        /* sgd */
    double beta1, beta2;  /* adam, adamw, lion; muon's AdamW */
    double eps;           /* adam, adamw, rmsprop; muon's AdamW */
} optimizer_settings;

/* Whether `name` is one of sgd, adam, adamw, rmsprop, lion, muon. */
bool optimizer_known(const char *name);
/* The names, for messages. */
const char *optimizer_names(void);
/* torch.optim's defaults for what the user left unset (negative):
 * learning rate, weight decay, momentum, betas, eps. */
void optimizer_defaults(const char *name, optimizer_settings *s);
/* The optimizer over params (NULL with nn_last_error() on failure). */
nn_optimizer *optimizer_new(const char *name, nn_tensor *const *params, int count, const optimizer_settings *s);

#endif
