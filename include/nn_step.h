/* A step runner: one training step run as nn_capture.h intends, by one
 * piece of code for every caller (the command line, Python, programs). The
 * step is a function; the runner calls it eagerly for the warm-up (which
 * creates the gradients and momentum buffers a captured step must find in
 * place), calls it once more while recording it, and from then on replays
 * the recording instead of calling it, several steps per submit.
 *
 *     static nn_status train_step(void *user) {
 *         my_state *s = user;
 *         ... forward, loss, nn_backward, nn_optimizer_step ...
 *         return nn_ctx_step_end(s->ctx);     // the step ends its own step
 *     }
 *
 *     nn_step_runner *runner = nn_step_runner_new(ctx, train_step, &state, NULL);
 *     for (...) {
 *         nn_tensor_write(x, ...);             // new data into the step's inputs
 *         nn_step_runner_run(runner, 1);       // or many steps at once
 *     }
 *     nn_step_runner_free(runner);             // before nn_ctx_free(ctx)
 *
 * The step function ends its step itself (nn_ctx_step_end, or whatever its
 * caller's end of a step is, e.g. Python's end_batch): the runner never
 * does, so a step decides what it keeps (nn_tensor_persist) and a caller
 * with its own bookkeeping at the end of a step keeps it there. A recorded
 * step's end is recorded with it; what nn_capture.h says about a captured
 * step (inputs live in tensors that exist when it is recorded, host-side
 * decisions are frozen, no reads back inside) holds for the step function.
 *
 * A failed step changes nothing in the runner: a warm-up call that fails
 * does not count, and a recording whose step fails is ended and dropped
 * (the context records nothing afterwards), so the next run calls the step
 * again in the same phase. nn_last_error() then holds the step's own
 * message. */
#ifndef NN_STEP_H
#define NN_STEP_H

#include <stdbool.h>
#include <stdint.h>
#include "nn_context.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nn_step_runner nn_step_runner;

/* One training step; returns NN_OK, or the failure's status with its
 * message in nn_last_error(). `user` is the pointer given to the runner. */
typedef nn_status (*nn_step_fn)(void *user);

/* Zeroed options (or NULL) are the defaults: one eager step, then capture. */
typedef struct nn_step_options {
    int warmup; /* eager calls before the recorded one; 0 means 1, the least capture needs */
    bool eager; /* call the step every time, never capture (the results are the same) */
} nn_step_options;

/* How a step runs. */
typedef enum nn_step_phase {
    NN_STEP_EAGER,  /* the step function is called: a warm-up, or every step of an eager runner */
    NN_STEP_RECORD, /* the step function is called while the context records it */
    NN_STEP_REPLAY  /* the recording is replayed; the step function is not called */
} nn_step_phase;

/* A runner of `step` on ctx. NULL (with nn_last_error()) for a NULL ctx or
 * step, or a negative warmup. Free it before ctx. */
nn_step_runner *nn_step_runner_new(nn_ctx *ctx, nn_step_fn step, void *user, const nn_step_options *options);

/* Runs `times` steps (times >= 1) in order: the warm-up calls still due,
 * eagerly; then, if not yet recorded, one call recorded as it runs; then
 * the rest as replays of the recording, in one nn_replay (on Vulkan, one
 * submit that is not waited for). Stops at the first failure and returns
 * its status; the steps before it have run. Refuses a call from inside the
 * runner's own step function. */
nn_status nn_step_runner_run(nn_step_runner *runner, int64_t times);

/* How the next step runs; inside the step function, how the running one
 * does (NN_STEP_EAGER for NULL). */
nn_step_phase nn_step_runner_phase(const nn_step_runner *runner);
/* Steps run so far, eager, recorded and replayed (failed ones not counted). */
int64_t nn_step_runner_steps(const nn_step_runner *runner);
/* Commands in the recorded step; 0 before it is recorded (and for NULL). */
int64_t nn_step_runner_command_count(const nn_step_runner *runner);

/* Frees the runner and its recording (replays still in flight finish
 * first). NULL is ignored. Not from inside its own step function. */
void nn_step_runner_free(nn_step_runner *runner);

#ifdef __cplusplus
}
#endif

#endif
