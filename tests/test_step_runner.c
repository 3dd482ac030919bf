/* The step runner (nn_step.h) against a step that adds 1 to a device
 * counter (nn_counter_add): the counter says how often the step ran, eager
 * or replayed, and the step's own count how often it was called. Warm-up
 * counts, the recorded call, replays, failures in the warm-up and while
 * recording, and bad arguments. */
#include <string.h>

#include "nn_engine.h"
#include "test.h"
#include "vulkan_harness.h"

typedef struct counting_step {
    nn_ctx *ctx;
    nn_step_runner *runner;
    nn_tensor *counter;       /* int32 [1]: +1 per step run, called or replayed */
    nn_tensor *not_a_counter; /* float32 [1]: nn_counter_add refuses it */
    int calls;                /* calls of the step function */
    nn_step_phase phase_seen; /* the runner's phase inside the latest call */
    int fail_on_call;         /* this call (1-based) fails after adding to the counter */
    nn_status fail_by;        /* it returns this bare; NN_OK: an operation's failure */
    int read_on_call;         /* this call reads the counter back and ignores the result */
    bool run_nested;          /* it calls nn_step_runner_run itself */
    nn_status nested;         /* what that returned */
} counting_step;

static nn_status count_step(void *user) {
    counting_step *c = user;
    c->calls++;
    c->phase_seen = nn_step_runner_phase(c->runner);
    nn_status st = nn_counter_add(c->counter, 1);
    if (c->run_nested) c->nested = nn_step_runner_run(c->runner, 1);
    if (st == NN_OK && c->calls == c->fail_on_call) {
        st = c->fail_by != NN_OK ? c->fail_by : nn_counter_add(c->not_a_counter, 1);
    }
    int32_t ignored;
    if (c->calls == c->read_on_call) (void)nn_tensor_read(c->counter, &ignored, sizeof ignored);
    nn_status end = nn_ctx_step_end(c->ctx); /* the step ends its own step */
    return st == NN_OK ? end : st;
}

static void counting_close(counting_step *c) {
    nn_step_runner_free(c->runner);
    nn_ctx_free(c->ctx); /* frees the tensors */
}

/* A context on `device` with the counter and a runner of count_step; false
 * (a test failure, nothing left open) when something could not be made. */
static bool counting_open(counting_step *c, const char *device, const nn_step_options *options) {
    memset(c, 0, sizeof *c);
    c->ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .threads = 1});
    int64_t one[1] = {1};
    int32_t zero = 0;
    c->counter = c->ctx ? nn_tensor_from_data(c->ctx, NN_I32, 1, one, &zero) : NULL;
    c->not_a_counter = c->ctx ? nn_tensor_new(c->ctx, NN_F32, 1, one) : NULL;
    c->runner = c->ctx ? nn_step_runner_new(c->ctx, count_step, c, options) : NULL;
    bool ok = c->counter && c->not_a_counter && c->runner;
    CHECK_MSG(ok, "%s: %s", device, nn_last_error());
    if (!ok) counting_close(c);
    return ok;
}

/* The steps the device ran so far. */
static int counted(counting_step *c) {
    int32_t value = -1;
    CHECK(nn_tensor_read(c->counter, &value, sizeof value) == NN_OK);
    return value;
}

/* One eager call, one recorded call, then replays only: the step function
 * is called twice whatever the number of steps, and every step ran. */
static void check_warmup_record_replay(const char *device) {
    counting_step c;
    if (!counting_open(&c, device, NULL)) return;
    CHECK(nn_step_runner_phase(c.runner) == NN_STEP_EAGER);
    CHECK(nn_step_runner_run(c.runner, 1) == NN_OK);
    CHECK(c.calls == 1 && c.phase_seen == NN_STEP_EAGER && nn_step_runner_command_count(c.runner) == 0);
    CHECK(nn_step_runner_phase(c.runner) == NN_STEP_RECORD);
    CHECK(nn_step_runner_run(c.runner, 1) == NN_OK);
    CHECK(c.calls == 2 && c.phase_seen == NN_STEP_RECORD);
    CHECK(nn_step_runner_phase(c.runner) == NN_STEP_REPLAY);
    CHECK_MSG(nn_step_runner_command_count(c.runner) == 1, "%s: %lld commands recorded", device,
              (long long)nn_step_runner_command_count(c.runner)); /* the counter's addition */
    CHECK(counted(&c) == 2);
    CHECK(nn_step_runner_run(c.runner, 5) == NN_OK && nn_step_runner_run(c.runner, 1) == NN_OK);
    CHECK(c.calls == 2);
    CHECK_MSG(counted(&c) == 8, "%s: %d steps ran, want 8", device, counted(&c));
    CHECK(nn_step_runner_steps(c.runner) == 8);
    counting_close(&c);
}

TEST(step_runner_warms_up_records_and_replays_cpu) { check_warmup_record_replay("cpu"); }

TEST(step_runner_warms_up_records_and_replays_vulkan) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    check_warmup_record_replay("vulkan");
}

/* Warm-up calls as asked, in one run with the recording and the replays. */
TEST(step_runner_counts_its_warmup) {
    counting_step c;
    if (!counting_open(&c, "cpu", &(nn_step_options){.warmup = 3})) return;
    for (int i = 1; i <= 3; i++) {
        CHECK(nn_step_runner_phase(c.runner) == NN_STEP_EAGER);
        CHECK(nn_step_runner_run(c.runner, 1) == NN_OK && c.calls == i && c.phase_seen == NN_STEP_EAGER);
    }
    CHECK(nn_step_runner_phase(c.runner) == NN_STEP_RECORD);
    counting_close(&c);

    if (!counting_open(&c, "cpu", &(nn_step_options){.warmup = 2})) return;
    CHECK(nn_step_runner_run(c.runner, 10) == NN_OK);
    CHECK(c.calls == 3 && c.phase_seen == NN_STEP_RECORD); /* 2 eager, 1 recorded, 7 replayed */
    CHECK(counted(&c) == 10 && nn_step_runner_steps(c.runner) == 10);
    CHECK(nn_step_runner_phase(c.runner) == NN_STEP_REPLAY);
    counting_close(&c);
}

/* An eager runner calls the step every time and records nothing. */
TEST(step_runner_eager_calls_every_step) {
    counting_step c;
    if (!counting_open(&c, "cpu", &(nn_step_options){.eager = true})) return;
    CHECK(nn_step_runner_run(c.runner, 4) == NN_OK && nn_step_runner_run(c.runner, 1) == NN_OK);
    CHECK(c.calls == 5 && counted(&c) == 5 && nn_step_runner_steps(c.runner) == 5);
    CHECK(nn_step_runner_phase(c.runner) == NN_STEP_EAGER && nn_step_runner_command_count(c.runner) == 0);
    counting_close(&c);
}

/* A warm-up call that fails does not count: the next run warms up again. */
TEST(step_runner_failed_warmup_is_not_counted) {
    counting_step c;
    if (!counting_open(&c, "cpu", NULL)) return;
    c.fail_on_call = 1;
    CHECK(nn_step_runner_run(c.runner, 3) == NN_ERR_DTYPE);
    CHECK_MSG(strstr(nn_last_error(), "nn_counter_add"), "message: %s", nn_last_error()); /* the step's own */
    CHECK(c.calls == 1 && nn_step_runner_steps(c.runner) == 0);
    CHECK(nn_step_runner_phase(c.runner) == NN_STEP_EAGER);
    CHECK(nn_step_runner_run(c.runner, 3) == NN_OK);
    CHECK(c.calls == 3 && nn_step_runner_steps(c.runner) == 3); /* eager, recorded, replayed */
    CHECK(counted(&c) == 4);                                     /* the failed call had added 1 */
    counting_close(&c);
}

/* A recording whose step fails is ended and dropped: the context records
 * nothing more, and the next run records again, from a clean recording. */
TEST(step_runner_failed_recording_is_dropped) {
    counting_step c;
    if (!counting_open(&c, "cpu", NULL)) return;
    c.fail_on_call = 2;
    CHECK(nn_step_runner_run(c.runner, 4) == NN_ERR_DTYPE);
    CHECK_MSG(strstr(nn_last_error(), "nn_counter_add"), "message: %s", nn_last_error());
    CHECK(c.calls == 2 && c.phase_seen == NN_STEP_RECORD && nn_step_runner_steps(c.runner) == 1);
    CHECK(nn_step_runner_phase(c.runner) == NN_STEP_RECORD && nn_step_runner_command_count(c.runner) == 0);
    CHECK(nn_capture_end(c.ctx) == NULL && strstr(nn_last_error(), "no capture is recording"));
    CHECK(counted(&c) == 2);
    CHECK(nn_step_runner_run(c.runner, 3) == NN_OK);
    CHECK(c.calls == 3 && nn_step_runner_phase(c.runner) == NN_STEP_REPLAY);
    CHECK(nn_step_runner_command_count(c.runner) == 1);
    CHECK(counted(&c) == 5 && nn_step_runner_steps(c.runner) == 4);
    counting_close(&c);
}

/* A step that returns NN_OK although a read failed while it was recorded:
 * the recording cannot be replayed, and the runner says so. */
TEST(step_runner_refuses_a_broken_recording) {
    counting_step c;
    if (!counting_open(&c, "cpu", NULL)) return;
    c.read_on_call = 2;
    CHECK(nn_step_runner_run(c.runner, 2) == NN_ERR_STATE);
    CHECK_MSG(strstr(nn_last_error(), "cannot be replayed"), "message: %s", nn_last_error());
    CHECK(nn_step_runner_phase(c.runner) == NN_STEP_RECORD);
    CHECK(nn_step_runner_run(c.runner, 2) == NN_OK && counted(&c) == 4);
    counting_close(&c);
}

/* A step that fails without a message, or returns what is no status, is
 * named by the runner. */
TEST(step_runner_names_a_silent_failure) {
    counting_step c;
    if (!counting_open(&c, "cpu", NULL)) return;
    c.fail_on_call = 1;
    c.fail_by = NN_ERR_IO;
    CHECK(nn_step_runner_run(c.runner, 1) == NN_ERR_IO);
    CHECK_MSG(strstr(nn_last_error(), "step function failed (i/o error) and left no message"), "message: %s",
              nn_last_error());
    c.fail_on_call = 2;
    c.fail_by = (nn_status)42;
    CHECK(nn_step_runner_run(c.runner, 1) == NN_ERR_STATE);
    CHECK_MSG(strstr(nn_last_error(), "returned 42"), "message: %s", nn_last_error());
    CHECK(nn_step_runner_steps(c.runner) == 0 && nn_step_runner_phase(c.runner) == NN_STEP_EAGER);
    counting_close(&c);
}

/* Recording needs the context to itself: inside a capture of the caller's,
 * the runner's recording fails as nn_capture_begin does. */
TEST(step_runner_cannot_record_inside_another_capture) {
    counting_step c;
    if (!counting_open(&c, "cpu", NULL)) return;
    CHECK(nn_capture_begin(c.ctx) == NN_OK);
    CHECK(nn_step_runner_run(c.runner, 2) == NN_ERR_STATE); /* the warm-up runs, the recording cannot start */
    CHECK_MSG(strstr(nn_last_error(), "already recording"), "message: %s", nn_last_error());
    CHECK(c.calls == 1 && nn_step_runner_phase(c.runner) == NN_STEP_RECORD);
    nn_capture_free(nn_capture_end(c.ctx));
    CHECK(nn_step_runner_run(c.runner, 2) == NN_OK && c.calls == 2 && counted(&c) == 3);
    counting_close(&c);
}

TEST(step_runner_refuses_bad_arguments) {
    counting_step c;
    if (!counting_open(&c, "cpu", NULL)) return;
    CHECK(nn_step_runner_new(NULL, count_step, &c, NULL) == NULL && nn_last_status() == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "ctx is NULL"));
    CHECK(nn_step_runner_new(c.ctx, NULL, &c, NULL) == NULL && nn_last_status() == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "step function is NULL"));
    CHECK(nn_step_runner_new(c.ctx, count_step, &c, &(nn_step_options){.warmup = -1}) == NULL);
    CHECK(nn_last_status() == NN_ERR_ARGUMENT && strstr(nn_last_error(), "warmup must be >= 0"));
    CHECK(nn_step_runner_run(NULL, 1) == NN_ERR_ARGUMENT && strstr(nn_last_error(), "runner is NULL"));
    CHECK(nn_step_runner_run(c.runner, 0) == NN_ERR_ARGUMENT && strstr(nn_last_error(), "times must be >= 1"));
    CHECK(nn_step_runner_run(c.runner, -5) == NN_ERR_ARGUMENT);
    CHECK(c.calls == 0);
    CHECK(nn_step_runner_phase(NULL) == NN_STEP_EAGER && nn_step_runner_steps(NULL) == 0);
    CHECK(nn_step_runner_command_count(NULL) == 0);
    nn_step_runner_free(NULL);
    /* A run from inside the step is refused; the outer run goes on. */
    c.run_nested = true;
    CHECK(nn_step_runner_run(c.runner, 1) == NN_OK);
    CHECK(c.nested == NN_ERR_STATE && c.calls == 1 && counted(&c) == 1);
    counting_close(&c);
}
