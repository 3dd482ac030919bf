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
#define NN_OPTIMIZER_MAX_OPTIONS 4

/* A parameter group (nn_param_group): its rate and decay; its parameters
 * are those whose group_of is its index. */
typedef struct nn_optimizer_group {
    float lr, weight_decay;
    float initial_lr;     /* nn_optimizer_set_lr keeps the groups' initial ratios */
    nn_tensor *lr_tensor; /* the rate on the device; group 0's is the param set's (owned otherwise) */
    float option[NN_OPTIMIZER_MAX_OPTIONS]; /* the class's per-group options, in its option_specs' order */
} nn_optimizer_group;

/* An option of a class that each group holds (nn_optimizer_set_group_option):
 * its name and the values it accepts, [low, high] or [low, high). */
typedef struct nn_optimizer_option_spec {
    const char *name;
    float low, high;
    bool high_open;
} nn_optimizer_option_spec;

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
    /* The options each group holds beyond lr and weight_decay (none: NULL, 0). */
    const nn_optimizer_option_spec *option_specs;
    int option_count;
    /* A new value of option i (option_specs' order) within its spec's range,
     * checked against the rest of the optimizer, and what it needs made
     * (SGD's and RMSprop's momentum buffers, the first time a group gets
     * momentum). NULL: every such value is accepted. */
    nn_status (*check_option)(nn_optimizer *opt, int group, int option, float value);
} nn_optimizer_class;

/* Work on the gradients before every update, from outside the optimizer:
 * data parallelism (src/dist/) averages them over the ranks there, so
 * every optimizer, clipping included, sees the average. */
typedef struct nn_grad_hook {
    nn_status (*before_update)(nn_optimizer *opt, void *user);
    void (*release)(void *user); /* with the optimizer; NULL: nothing */
    void *user;
} nn_grad_hook;

typedef struct nn_loss_scaler nn_loss_scaler;

struct nn_optimizer {
    const nn_optimizer_class *cls;
    nn_grad_hook grad_hook; /* zeroed: none */
    nn_loss_scaler *loss_scaler; /* nn_optimizer_enable_loss_scaling, or NULL (loss_scale.c) */
    nn_param_set set;
    float lr;
    int state_count;
    const char *state_names[NN_OPTIMIZER_MAX_STATES];
    nn_flat_state states[NN_OPTIMIZER_MAX_STATES];
    int group_count;
    nn_optimizer_group *groups;
    int *group_of;    /* each parameter's group */
    int step_state;   /* the index of the "step" state (one int32 counter per group), -1 without */
};

/* What an update kernel launch covers: consecutive parameters of one group,
 * in the flat buffers (flat) or one parameter and its own gradient. Refs
 * of the elementwise states are in state[] (the step state's is not). */
typedef struct nn_optimizer_run {
    int group, first, count; /* parameters [first, first + count) */
    int64_t n;               /* their elements */
    nn_buffer_ref param, grad, state[NN_OPTIMIZER_MAX_STATES];
    nn_buffer_ref lr, step;  /* the group's rate and step count (step: absent without a step state) */
    nn_buffer_ref skip;      /* the kernels' skip argument (nn_loss_scaler_skip) */
} nn_optimizer_run;

/* The learning rate every optimizer accepts: finite and >= 0. */
nn_status nn_optimizer_check_lr(const char *fn, float lr);
/* For a constructor: opt's common part over the parameters (moved into
 * the flat buffers), the rate on the device. On failure the caller frees
 * opt with nn_optimizer_free. */
nn_status nn_optimizer_init(nn_optimizer *opt, const nn_optimizer_class *cls, const char *fn,
                            nn_tensor *const *params, int count, float lr);
/* As nn_optimizer_init, over parameter groups (each its own rate and
 * decay, on the device), the parameters in the groups' order. */
nn_status nn_optimizer_init_groups(nn_optimizer *opt, const nn_optimizer_class *cls, const char *fn,
                                   const nn_param_group *groups, int count);
/* Every group's class options (option_specs' order), for a constructor
 * after the groups exist; a group added later copies group 0's. */
void nn_optimizer_init_options(nn_optimizer *opt, const float *values);
/* Appends a group with no parameters yet (nn_optimizer_assign_group). */
nn_status nn_optimizer_add_group(nn_optimizer *opt, float lr, float weight_decay);
/* Assigns parameter i to group g (constructors that split parameters
 * themselves, as Muon's by rank); call before adding states. */
void nn_optimizer_assign_group(nn_optimizer *opt, int param, int group);
/* The "step" state: a step count per group (int32 on the device, saved per
 * parameter as PyTorch's 'step'), advanced by nn_optimizer_advance_steps. */
nn_status nn_optimizer_add_step_state(nn_optimizer *opt);
/* COUNTER_ADD of every group's step count that has a parameter with a
 * gradient (flat: every group). */
nn_status nn_optimizer_advance_steps(nn_optimizer *opt, bool flat);
/* Calls update for each run: with flat, maximal runs of consecutive
 * parameters of one group; else each parameter with a gradient. */
nn_status nn_optimizer_for_each_run(nn_optimizer *opt, bool flat,
                                    nn_status (*update)(nn_optimizer *opt, const nn_optimizer_run *run));
/* A weight decay every optimizer accepts: finite and >= 0. */
nn_status nn_optimizer_check_weight_decay(const char *fn, float weight_decay);
/* A named per-parameter state buffer (zeros), under PyTorch's name. */
nn_status nn_optimizer_add_state(nn_optimizer *opt, const char *name);
/* Options that are numbers (booleans as 0 and 1), described as text. */
typedef struct nn_optimizer_number {
    const char *name;
    double value;
} nn_optimizer_number;
int nn_optimizer_describe_numbers(nn_optimizer_option *out, int capacity, const nn_optimizer_number *numbers,
                                  int count);
/* Installs the optimizer's one gradient hook; refused when it has one. */
nn_status nn_optimizer_set_grad_hook(nn_optimizer *opt, const nn_grad_hook *hook);
/* What a step does to the gradients before the update: adopt them into the
 * flat buffers and run the gradient hook (data parallelism's average). */
nn_status nn_optimizer_prepare_grads(nn_optimizer *opt);
/* Dynamic loss scaling around an update (loss_scale.c): before, the
 * gradients divided by the scale, which flags a gradient that is not
 * finite; after, the scale updated. */
nn_status nn_loss_scaler_before_update(nn_optimizer *opt);
nn_status nn_loss_scaler_after_update(nn_optimizer *opt);
/* Whether nn_optimizer_unscale_grads ran since the last step (false without a scaler). */
bool nn_loss_scaler_unscaled(const nn_optimizer *opt);
/* The skip argument of the optimizer's update kernels and step counters
 * (kernels.h: skipped updates): the scaler's overflow flag, so a step whose
 * gradients overflowed writes nothing; absent without loss scaling. */
nn_buffer_ref nn_loss_scaler_skip(const nn_optimizer *opt);
void nn_loss_scaler_free(nn_loss_scaler *scaler);
/* The scaler's state [4] (scale, overflow found, good steps, skipped
 * steps), which a training state saves; NULL without loss scaling. */
nn_tensor *nn_loss_scaler_state(const nn_optimizer *opt);
/* The state a training-state file gave it, checked for values no run
 * leaves (NN_ERR_IO naming `path`); NN_OK without loss scaling. */
nn_status nn_loss_scaler_check_state(const nn_optimizer *opt, const char *who, const char *path);
/* The class's options (for the training state's metadata). */
int nn_optimizer_describe(const nn_optimizer *opt, nn_optimizer_option *out, int capacity);

#endif
