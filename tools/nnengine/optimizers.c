/* --optimizer (optimizers.h): each name, torch.optim's defaults for it, and
 * its constructor from nn_optim.h. */
#include <string.h>

#include "optimizers.h"

static const char *const kNames[] = {"sgd", "adam", "adamw", "rmsprop", "lion", "muon"};

bool optimizer_known(const char *name) {
    for (size_t i = 0; i < sizeof kNames / sizeof kNames[0]; i++)
        if (name && strcmp(name, kNames[i]) == 0) return true;
    return false;
}

const char *optimizer_names(void) { return "sgd, adam, adamw, rmsprop, lion, muon"; }

static void default_to(double *value, double fallback) {
    if (*value < 0) *value = fallback;
}

void optimizer_defaults(const char *name, optimizer_settings *s) {
    const bool adam = strcmp(name, "adam") == 0, adamw = strcmp(name, "adamw") == 0;
    const bool rmsprop = strcmp(name, "rmsprop") == 0, lion = strcmp(name, "lion") == 0;
    const bool muon = strcmp(name, "muon") == 0;
    default_to(&s->lr, adam || adamw ? 1e-3 : rmsprop ? 1e-2 : lion ? 1e-4 : muon ? 0.02 : 0.05);
    default_to(&s->weight_decay, adamw ? 1e-2 : strcmp(name, "sgd") == 0 ? 5e-4 : 0.0);
    default_to(&s->momentum, muon ? 0.95 : rmsprop ? 0.0 : 0.9);
    default_to(&s->beta1, 0.9);
    default_to(&s->beta2, lion ? 0.99 : muon ? 0.95 : 0.999);
    default_to(&s->eps, muon ? 1e-10 : 1e-8);
}

nn_optimizer *optimizer_new(const char *name, nn_tensor *const *params, int count, const optimizer_settings *s) {
    const float lr = (float)s->lr, wd = (float)s->weight_decay;
    if (strcmp(name, "adam") == 0 || strcmp(name, "adamw") == 0) {
        const nn_adam_options o = {.lr = lr, .beta1 = (float)s->beta1, .beta2 = (float)s->beta2,
                                   .eps = (float)s->eps, .weight_decay = wd};
        return strcmp(name, "adam") == 0 ? nn_adam_new(params, count, &o) : nn_adamw_new(params, count, &o);
    }
    if (strcmp(name, "rmsprop") == 0) {
        const nn_rmsprop_options o = {.lr = lr, .alpha = 0.99f, .eps = (float)s->eps, .weight_decay = wd,
                                      .momentum = (float)s->momentum};
        return nn_rmsprop_new(params, count, &o);
    }
    if (strcmp(name, "lion") == 0) {
        const nn_lion_options o = {.lr = lr, .beta1 = (float)s->beta1, .beta2 = (float)s->beta2, .weight_decay = wd};
        return nn_lion_new(params, count, &o);
    }
    if (strcmp(name, "muon") == 0) {
        /* Keller Jordan's auxiliary AdamW for the vectors: lr 3e-4 */
        const nn_muon_options o = {.lr = lr, .momentum = (float)s->momentum, .nesterov = true, .ns_steps = 5,
                                   .weight_decay = wd, .adamw_lr = 3e-4f, .adamw_beta1 = (float)s->beta1,
                                   .adamw_beta2 = (float)s->beta2, .adamw_eps = (float)s->eps,
                                   .adamw_weight_decay = wd};
        return nn_muon_new(params, count, &o);
    }
    const nn_sgd_options o = {.lr = lr, .momentum = (float)s->momentum, .weight_decay = wd,
                              .nesterov = s->nesterov && s->momentum > 0};
    return nn_sgd_new(params, count, &o);
}
