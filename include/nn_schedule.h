/* Learning-rate schedules computed on the device. A schedule owns a step
 * counter (int32 [1], a device tensor) and writes the optimizer's rate
 * (nn_optimizer_lr_tensor) from it with one small kernel, so a captured
 * step that calls nn_schedule_step replays with the right rate and no host
 * work. The rates are torch.optim.lr_scheduler's closed forms; call
 * nn_schedule_step after each nn_optimizer_step, as in PyTorch:
 *
 *     nn_schedule *s = nn_schedule_new(opt, &(nn_schedule_options){
 *         .kind = NN_SCHEDULE_COSINE, .warmup = 500, .total_steps = 10000});
 *     step:  ... nn_optimizer_step(opt); nn_schedule_step(s); ...
 *
 * With t the counter and base the group's rate at creation (options.base_lr
 * scales them: group 0's becomes base_lr; options.group_lrs gives each):
 *   CONSTANT     base
 *   STEP         base * gamma^floor(t / step_size)             (StepLR)
 *   MULTISTEP    base * gamma^(milestones <= t)                 (MultiStepLR)
 *   EXPONENTIAL  base * gamma^t                                 (ExponentialLR)
 *   COSINE       t < warmup: base * (s + (1 - s) * t / warmup), s = warmup_start;
 *                then eta_min + (base - eta_min) (1 + cos(pi (t - warmup) / (total - warmup))) / 2
 *                (SequentialLR of LinearLR(s, 1, warmup) and CosineAnnealingLR(total - warmup,
 *                eta_min) at milestone warmup; warmup 0 is plain CosineAnnealingLR(total))
 *   ONECYCLE     OneCycleLR(max_lr, total_steps, pct_start, anneal_strategy, div_factor,
 *                final_div_factor, three_phase), base unused (every group's peak is
 *                max_lr, or its group_lrs entry); t is held at total_steps. With
 *                cycle_momentum, each step also sets the groups' momentum option
 *                (Adam's and Lion's beta1, SGD's and RMSprop's momentum) from
 *                max_momentum to base_momentum and back, on the host: a step
 *                captured with it is refused at replay (its constants changed).
 *   LINEAR       base * (s + (e - s) * min(t, total_steps) / total_steps), s = start_factor,
 *                e = end_factor                                 (LinearLR, total_iters = total_steps)
 * nn_schedule_sequential joins schedules as torch's SequentialLR: the k-th
 * runs from milestone k-1 with its own t starting at 0.
 * The CPU computes in double and rounds once to float; Vulkan computes in
 * float; nn_schedule_rate gives the double. The counter is what a training
 * state saves (nn_io.h). */
#ifndef NN_SCHEDULE_H
#define NN_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>
#include "nn_optim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nn_schedule_kind {
    NN_SCHEDULE_CONSTANT = 0,
    NN_SCHEDULE_STEP = 1,
    NN_SCHEDULE_MULTISTEP = 2,
    NN_SCHEDULE_EXPONENTIAL = 3,
    NN_SCHEDULE_COSINE = 4,
    NN_SCHEDULE_ONECYCLE = 5,
    NN_SCHEDULE_LINEAR = 6
} nn_schedule_kind;

#define NN_SCHEDULE_MAX_MILESTONES 8

typedef struct nn_schedule_options {
    nn_schedule_kind kind;
    double base_lr;      /* 0: the optimizer's rate at creation */
    const double *group_lrs; /* NULL, or one per parameter group: its base (ONECYCLE: its max_lr) */
    int64_t step_size;   /* STEP: > 0 */
    double gamma;        /* STEP, MULTISTEP, EXPONENTIAL: >= 0 */
    int64_t milestones[NN_SCHEDULE_MAX_MILESTONES]; /* MULTISTEP: non-decreasing, >= 0 (a repeat counts twice) */
    int milestone_count;
    int64_t warmup;      /* COSINE: linear warm-up steps (0: none) */
    double warmup_start; /* COSINE: the warm-up's first factor s, in [0, 1] */
    int64_t total_steps; /* COSINE (> warmup), ONECYCLE, LINEAR (> 0) */
    double start_factor, end_factor; /* LINEAR: in (0, 1] and [0, 1] */
    double eta_min;      /* COSINE: the final rate */
    double max_lr;       /* ONECYCLE: > 0 */
    double pct_start;    /* ONECYCLE: in [0, 1]; 0 takes torch's 0.3 */
    bool anneal_linear;  /* ONECYCLE: linear instead of cosine annealing */
    double div_factor;       /* ONECYCLE: initial_lr = max_lr / div_factor; 0 takes torch's 25 */
    double final_div_factor; /* ONECYCLE: min_lr = initial_lr / final_div_factor; 0 takes torch's 1e4 */
    bool three_phase;        /* ONECYCLE */
    bool cycle_momentum;     /* ONECYCLE: cycle the momentum (beta1) too */
    double base_momentum, max_momentum; /* ONECYCLE: 0 takes torch's 0.85 and 0.95 */
} nn_schedule_options;

typedef struct nn_schedule nn_schedule;

/* A schedule of opt's rate, its counter at 0: writes the rate of step 0.
 * NULL (with nn_last_error() naming the option) for invalid options. The
 * schedule borrows opt: free it first. */
nn_schedule *nn_schedule_new(nn_optimizer *opt, const nn_schedule_options *options);
/* torch's SequentialLR: parts[0] until milestones[0], then parts[1] from
 * its own step 0, and so on (count - 1 milestones, increasing, > 0). The
 * parts are schedules of opt, copied (free them as before); the sequence
 * has a counter of its own and writes the rate of step 0. Sequences do not
 * nest. */
nn_schedule *nn_schedule_sequential(nn_optimizer *opt, nn_schedule *const *parts, int count,
                                    const int64_t *milestones);
/* Advances the counter by one and writes the rate of the new step, on the
 * device (recorded in a captured step like any kernel). */
nn_status nn_schedule_step(nn_schedule *s);
/* nn_schedule_step's two halves, for a step that writes its rate at its
 * start (where the kernel runs beside the forward pass instead of after the
 * update, which reads the rate, behind a barrier of its own):
 * nn_schedule_apply writes the rate of the counter's step; nn_schedule_advance
 * adds one to the counter. apply at a step's start and advance after its
 * update give the rates nn_schedule_step after the update gives. */
nn_status nn_schedule_apply(nn_schedule *s);
nn_status nn_schedule_advance(nn_schedule *s);
/* Sets the counter to `step` (>= 0, < 2^31) and writes that step's rate:
 * a resumed run's schedule continues where it was. */
nn_status nn_schedule_set_step(nn_schedule *s, int64_t step);
/* The counter's value (reads it back: waits for the device). */
nn_status nn_schedule_get_step(nn_schedule *s, int64_t *step);
/* The rate of `group` at `step` (>= 0), in double, computed on the host
 * by the formulas the kernels run: what a scheduler reports. NAN (with
 * nn_last_error()) for a group or step out of range. */
double nn_schedule_rate(const nn_schedule *s, int group, int64_t step);
/* The momentum (beta1) a cycling ONECYCLE gives `group` at `step`; NAN
 * when the schedule cycles none. */
double nn_schedule_momentum(const nn_schedule *s, int group, int64_t step);
/* The counter, int32 [1] (borrowed). */
nn_tensor *nn_schedule_counter(nn_schedule *s);
/* The options as given, with the defaults filled in (a sequence: its
 * first part's; group_lrs is not kept: NULL). */
const nn_schedule_options *nn_schedule_get_options(const nn_schedule *s);
/* "constant", "step", "multistep", "exponential", "cosine", "onecycle",
 * "linear";
 * nn_schedule_kind_parse is the inverse (false for an unknown name). */
const char *nn_schedule_kind_name(nn_schedule_kind kind);
bool nn_schedule_kind_parse(const char *name, nn_schedule_kind *kind);
void nn_schedule_free(nn_schedule *s);

#ifdef __cplusplus
}
#endif
#endif
