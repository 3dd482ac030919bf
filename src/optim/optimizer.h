/* The optimizer interface's private side (include/nn_optim.h): what every
 * optimizer holds (its class, its parameters in flat buffers, its named
 * per-parameter state) and what an optimizer class provides. An optimizer
 * is a struct that starts with nn_optimizer, made by its constructor with
 * nn_optimizer_init and nn_optimizer_add_state. */
#ifndef NN_OPTIM_OPTIMIZER_H
#define NN_OPTIM_OPTIMIZER_H

#include "nn_optim.h"
#include "param_set.h"

#define NN_OPTIMIZER_MAX_STATES 4

/* One of an optimizer's options as text (a training state's metadata). */
typedef struct nn_optimizer_option {
    const char *name;
    char value[32];
} nn_optimizer_option;

typedef struct nn_optimizer_class {
    const char *name; /* "sgd", as nn_optimizer_name and training states name it */
    /* Update every parameter with a gradient; flat: every parameter and
     * gradient lives in the flat buffers (one kernel serves all). */
    nn_status (*step)(nn_optimizer *opt, bool flat);
    /* Its options, at most `capacity`; returns how many. */
    int (*describe)(const nn_optimizer *opt, nn_optimizer_option *out, int capacity);
    /* After nn_optimizer_set_lr changed the rate (NULL: nothing to do). */
    void (*lr_changed)(nn_optimizer *opt);
    /* Frees what the class adds to nn_optimizer (NULL: nothing). */
    void (*release)(nn_optimizer *opt);
} nn_optimizer_class;

struct nn_optimizer {
    const nn_optimizer_class *cls;
    nn_param_set set;
    float lr;
    int state_count;
    const char *state_names[NN_OPTIMIZER_MAX_STATES];
    nn_flat_state states[NN_OPTIMIZER_MAX_STATES];
};

/* The learning rate every optimizer accepts: finite and >= 0. */
nn_status nn_optimizer_check_lr(const char *fn, float lr);
/* For a constructor: opt's common part over the parameters (moved into
 * the flat buffers), the rate on the device. On failure the caller frees
 * opt with nn_optimizer_free. */
nn_status nn_optimizer_init(nn_optimizer *opt, const nn_optimizer_class *cls, const char *fn,
                            nn_tensor *const *params, int count, float lr);
/* A named per-parameter state buffer (zeros), under PyTorch's name. */
nn_status nn_optimizer_add_state(nn_optimizer *opt, const char *name);
/* The class's options (for the training state's metadata). */
int nn_optimizer_describe(const nn_optimizer *opt, nn_optimizer_option *out, int capacity);

#endif
