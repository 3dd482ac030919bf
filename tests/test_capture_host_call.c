/* Host calls inside a captured step (nn_capture_host_call): the host
 * function runs where the step called it, in the recording and in every
 * replay, reading what the commands before it wrote and writing what the
 * commands after it read; outside a capture it runs at once. Checked
 * against host arithmetic on the CPU and on Vulkan. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h" /* nn_set_error: the host function reports as the library does */
#include "nn_engine.h"
#include "test.h"
#include "vulkan_harness.h"

#define N 37 /* prime: no tile multiple */

typedef struct host_step {
    nn_ctx *ctx;
    nn_tensor *x, *doubled, *shifted, *out; /* persistent */
    float host[N];
    int calls;
    bool fail; /* the host function reports a failure */
} host_step;

/* The host's part: shifted = doubled + 1, computed on the host. */
static nn_status add_one_on_host(void *user) {
    host_step *s = user;
    s->calls++;
    if (s->fail) return nn_set_error(NN_ERR_IO, "add_one_on_host: the peer went away");
    nn_status st = nn_tensor_read(s->doubled, s->host, sizeof s->host);
    for (int i = 0; i < N; i++) s->host[i] += 1.0f;
    return st == NN_OK ? nn_tensor_write(s->shifted, s->host, sizeof s->host) : st;
}

/* out = (2 x + 1) * 3, the middle on the host. */
static nn_status run_step(host_step *s) {
    nn_tensor *doubled = nn_scale(s->x, 2.0f);
    nn_status st = doubled ? nn_tensor_copy(s->doubled, doubled) : nn_last_status();
    if (st == NN_OK) st = nn_capture_host_call(s->ctx, add_one_on_host, s);
    nn_tensor *tripled = st == NN_OK ? nn_scale(s->shifted, 3.0f) : NULL;
    if (st == NN_OK) st = tripled ? nn_tensor_copy(s->out, tripled) : nn_last_status();
    nn_status end = nn_ctx_step_end(s->ctx);
    return st == NN_OK ? end : st;
}

static void random_values(float *v, unsigned *state) {
    for (int i = 0; i < N; i++) {
        *state = *state * 1664525u + 1013904223u;
        v[i] = (float)((*state >> 8) % 2001) / 100.0f - 10.0f;
    }
}

static void check_out(host_step *s, const float *x, const char *device, const char *when) {
    float out[N];
    CHECK(nn_tensor_read(s->out, out, sizeof out) == NN_OK);
    for (int i = 0; i < N; i++) {
        float want = (x[i] * 2.0f + 1.0f) * 3.0f;
        CHECK_MSG(out[i] == want, "%s, %s: out[%d] = %.9g, want %.9g", device, when, i, out[i], want);
    }
}

static void host_call_on(const char *device) {
    host_step s = {0};
    s.ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .threads = 2});
    CHECK_MSG(s.ctx, "%s: %s", device, nn_last_error());
    if (!s.ctx) return;
    const int64_t n = N;
    s.x = nn_tensor_new(s.ctx, NN_F32, 1, &n);
    s.doubled = nn_tensor_new(s.ctx, NN_F32, 1, &n);
    s.shifted = nn_tensor_new(s.ctx, NN_F32, 1, &n);
    s.out = nn_tensor_new(s.ctx, NN_F32, 1, &n);
    CHECK(s.x && s.doubled && s.shifted && s.out);
    unsigned state = 7;
    float x[N];
    random_values(x, &state);
    /* Eager: the host function runs at once. */
    CHECK(nn_tensor_write(s.x, x, sizeof x) == NN_OK);
    CHECK(run_step(&s) == NN_OK);
    CHECK(s.calls == 1);
    check_out(&s, x, device, "eager");
    /* Recorded: it runs while recording, and in each replay. */
    random_values(x, &state);
    CHECK(nn_tensor_write(s.x, x, sizeof x) == NN_OK);
    CHECK(nn_capture_begin(s.ctx) == NN_OK);
    CHECK(run_step(&s) == NN_OK);
    nn_capture *step = nn_capture_end(s.ctx);
    CHECK_MSG(step, "%s: %s", device, nn_last_error());
    if (!step) goto done;
    CHECK(s.calls == 2);
    CHECK(nn_capture_host_call_count(step) == 1);
    check_out(&s, x, device, "recorded");
    for (int r = 0; r < 3; r++) {
        random_values(x, &state);
        CHECK(nn_tensor_write(s.x, x, sizeof x) == NN_OK);
        CHECK(nn_replay(step, 1) == NN_OK);
        check_out(&s, x, device, "replayed");
    }
    CHECK(s.calls == 5);
    /* Several replays in one call: one host call each; the last one's
     * input is the same x, so the result is the same. */
    CHECK(nn_replay(step, 3) == NN_OK);
    CHECK(s.calls == 8);
    check_out(&s, x, device, "replayed 3 times");
    /* A failing host function stops the replay with its own message. */
    s.fail = true;
    CHECK(nn_replay(step, 2) == NN_ERR_IO);
    CHECK(strstr(nn_last_error(), "the peer went away") != NULL);
    CHECK(s.calls == 9);
    nn_capture_free(step);
done:
    nn_tensor_free(s.x);
    nn_tensor_free(s.doubled);
    nn_tensor_free(s.shifted);
    nn_tensor_free(s.out);
    nn_ctx_free(s.ctx);
}

TEST(capture_host_call_cpu) { host_call_on("cpu"); }

TEST(capture_host_call_vulkan) {
    if (vkt_skipped()) return;
    host_call_on("vulkan");
}

TEST(capture_host_call_refuses_misuse) {
    CHECK(nn_capture_host_call(NULL, add_one_on_host, NULL) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "nn_capture_host_call: ctx is NULL") != NULL);
    nn_ctx *ctx = nn_ctx_new(NULL);
    CHECK(nn_capture_host_call(ctx, NULL, NULL) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "fn is NULL") != NULL);
    CHECK(nn_capture_host_call_count(NULL) == 0);
    nn_ctx_free(ctx);
}
