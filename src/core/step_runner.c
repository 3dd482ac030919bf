/* The step runner (nn_step.h): warm-up calls, one recorded call, replays.
 * It is built on the public capture API alone (nn_capture.h), so it holds
 * no rule of its own about what a capture records. */
#include <stdio.h>
#include <stdlib.h>

#include "ctx_guard.h"
#include "base/error.h"
#include "nn_capture.h"
#include "nn_step.h"

struct nn_step_runner {
    nn_ctx *ctx;
    nn_step_fn step;
    void *user;
    bool eager;          /* every step calls the step function; nothing is recorded */
    int warmup;          /* eager calls due before the recorded one */
    int warmed_up;       /* eager calls that succeeded, up to warmup */
    nn_capture *capture; /* the recorded step, once recorded */
    int64_t steps;       /* steps run: eager, recorded and replayed */
    bool running;        /* inside nn_step_runner_run (a nested run is refused) */
};

nn_step_runner *nn_step_runner_new(nn_ctx *ctx, nn_step_fn step, void *user, const nn_step_options *options) {
    if (!ctx) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_step_runner_new: ctx is NULL");
    if (!step) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_step_runner_new: step function is NULL");
    nn_step_options defaults = {0};
    if (!options) options = &defaults;
    if (options->warmup < 0)
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "nn_step_runner_new: warmup must be >= 0 (0: one eager step), got %d",
                            options->warmup);
    nn_step_runner *r = calloc(1, sizeof *r);
    if (!r) return NN_FAIL_NULL(NN_ERR_MEMORY, "nn_step_runner_new: out of host memory");
    r->ctx = ctx;
    r->step = step;
    r->user = user;
    r->eager = options->eager;
    r->warmup = options->warmup > 0 ? options->warmup : 1;
    return r;
}

/* One call of the step function. After a failure nn_last_error() is the
 * step's message, or the runner's when the step left none. */
static nn_status call_step(nn_step_runner *r) {
    nn_clear_error(); /* a message left from before is not this step's */
    nn_status status = r->step(r->user);
    if (status == NN_OK) return NN_OK;
    if ((int)status < (int)NN_ERR_ARGUMENT || (int)status > (int)NN_ERR_IO)
        return nn_set_error(NN_ERR_STATE, "nn_step_runner_run: the step function returned %d, which is no nn_status",
                            (int)status);
    if (nn_last_status() == NN_OK)
        return nn_set_error(status, "nn_step_runner_run: the step function failed (%s) and left no message",
                            nn_status_name(status));
    return status;
}

/* One call recorded as it runs. A failed call's recording is ended and
 * dropped, keeping the step's message: it names the cause, where
 * nn_capture_end's would only say that the recording is unusable. */
static nn_status record_step(nn_step_runner *r) {
    NN_TRY(nn_capture_begin(r->ctx));
    nn_status status = call_step(r);
    if (status != NN_OK) {
        char message[1024];
        snprintf(message, sizeof message, "%s", nn_last_error());
        nn_capture_free(nn_capture_end(r->ctx));
        return nn_set_error(status, "%s", message);
    }
    r->capture = nn_capture_end(r->ctx);
    return r->capture ? NN_OK : nn_last_status();
}

/* Runs the next step, or all `times` of them when they are replays;
 * returns how many ran in *ran. */
static nn_status run_next(nn_step_runner *r, int64_t times, int64_t *ran) {
    *ran = 0;
    switch (nn_step_runner_phase(r)) {
    case NN_STEP_EAGER:
        NN_TRY(call_step(r));
        if (r->warmed_up < r->warmup) r->warmed_up++;
        *ran = 1;
        return NN_OK;
    case NN_STEP_RECORD:
        NN_TRY(record_step(r));
        *ran = 1;
        return NN_OK;
    case NN_STEP_REPLAY:
        NN_TRY(nn_replay(r->capture, times));
        *ran = times;
        return NN_OK;
    }
    return nn_set_error(NN_ERR_STATE, "nn_step_runner_run: the runner is in no known phase");
}

nn_status nn_step_runner_run(nn_step_runner *r, int64_t times) {
    if (!r) return nn_set_error(NN_ERR_ARGUMENT, "nn_step_runner_run: runner is NULL");
    if (times < 1) return nn_set_error(NN_ERR_ARGUMENT, "nn_step_runner_run: times must be >= 1, got %lld", (long long)times);
    if (r->running)
        return nn_set_error(NN_ERR_STATE, "nn_step_runner_run: called from inside the runner's own step function");
    /* The whole run, the step function included, holds the context. */
    NN_TRY(nn_ctx_enter(r->ctx, "nn_step_runner_run"));
    r->running = true;
    nn_status status = NN_OK;
    while (status == NN_OK && times > 0) {
        int64_t ran;
        status = run_next(r, times, &ran);
        r->steps += ran;
        times -= ran;
    }
    r->running = false;
    nn_ctx_leave(r->ctx);
    return status;
}

nn_step_phase nn_step_runner_phase(const nn_step_runner *r) {
    if (!r || r->eager || r->warmed_up < r->warmup) return NN_STEP_EAGER;
    return r->capture ? NN_STEP_REPLAY : NN_STEP_RECORD;
}

int64_t nn_step_runner_steps(const nn_step_runner *r) { return r ? r->steps : 0; }

int64_t nn_step_runner_command_count(const nn_step_runner *r) {
    return r ? nn_capture_command_count(r->capture) : 0;
}

void nn_step_runner_free(nn_step_runner *r) {
    if (!r) return;
    nn_capture_free(r->capture);
    free(r);
}
