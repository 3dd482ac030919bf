/* Issue 25, the runtime half: the threading rule, output sizes that
 * overflow, the recorded-operation bound, allocation limits. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nn_engine.h"
#include "reference.h"
#include "test.h"

/* ---- threads ---- */

enum { HAMMER_THREADS = 4, HAMMER_ROUNDS = 300, FEATURES = 7, OUTPUTS = 5, ROWS = 3 };

typedef struct {
    nn_ctx *ctx;
    nn_tensor *weight, *bias; /* shared by every thread */
    int seed;
    atomic_int *refused, *succeeded, *wrong_message;
} hammer_args;

static bool refused_cleanly(hammer_args *a) {
    if (strstr(nn_last_error(), "in use by another thread")) {
        atomic_fetch_add(a->refused, 1);
        return true;
    }
    atomic_fetch_add(a->wrong_message, 1);
    return false;
}

/* One thread's forward, backward and read on the shared context: each call
 * either works or is refused with the threading rule's message. */
static void *hammer(void *arg) {
    hammer_args *a = arg;
    float data[ROWS * FEATURES];
    for (int round = 0; round < HAMMER_ROUNDS; round++) {
        for (int i = 0; i < ROWS * FEATURES; i++) data[i] = (float)((a->seed * 31 + round * 7 + i) % 13) - 6.0f;
        nn_tensor *x = nn_tensor_from_data(a->ctx, NN_F32, 2, (int64_t[]){ROWS, FEATURES}, data);
        if (!x) {
            refused_cleanly(a);
            continue;
        }
        nn_tensor *y = nn_linear(x, a->weight, a->bias);
        nn_tensor *loss = y ? nn_sum(y) : NULL;
        float value = 0;
        if (!loss || nn_backward(loss) != NN_OK || nn_tensor_read(loss, &value, sizeof value) != NN_OK)
            refused_cleanly(a);
        else
            atomic_fetch_add(a->succeeded, 1);
        nn_tensor_free(x);
    }
    return NULL;
}

TEST(hardening_threads_share_one_context_refused_cleanly) {
    nn_ctx *ctx = ref_ctx(1);
    if (!ctx) return;
    float w[OUTPUTS * FEATURES], b[OUTPUTS];
    for (int i = 0; i < OUTPUTS * FEATURES; i++) w[i] = (float)(i % 5) * 0.25f - 0.5f;
    for (int i = 0; i < OUTPUTS; i++) b[i] = (float)i;
    nn_tensor *weight = ref_tensor_f32(ctx, 2, (int64_t[]){OUTPUTS, FEATURES}, w);
    nn_tensor *bias = ref_tensor_f32(ctx, 1, (int64_t[]){OUTPUTS}, b);
    nn_tensor_set_requires_grad(weight, true);
    nn_tensor_set_requires_grad(bias, true);
    atomic_int refused = 0, succeeded = 0, wrong_message = 0;
    pthread_t threads[HAMMER_THREADS];
    hammer_args args[HAMMER_THREADS];
    for (int i = 0; i < HAMMER_THREADS; i++) {
        args[i] = (hammer_args){ctx, weight, bias, i, &refused, &succeeded, &wrong_message};
        CHECK(pthread_create(&threads[i], NULL, hammer, &args[i]) == 0);
    }
    for (int i = 0; i < HAMMER_THREADS; i++) pthread_join(threads[i], NULL);
    CHECK_MSG(atomic_load(&wrong_message) == 0, "%d failures without the threading rule's message",
              atomic_load(&wrong_message));
    CHECK(atomic_load(&succeeded) > 0);
    /* The context is still whole: a step on this thread works. */
    CHECK(nn_ctx_step_end(ctx) == NN_OK);
    nn_tensor *y = nn_linear(weight, weight, NULL);
    CHECK_MSG(y != NULL, "after the threads: %s", nn_last_error());
    float out[OUTPUTS * OUTPUTS];
    CHECK(y && nn_tensor_read(y, out, sizeof out) == NN_OK);
    nn_ctx_free(ctx);
}

/* The rule names the function and the context. */
typedef struct {
    nn_ctx *ctx;
    nn_status status;
    char message[256];
} other_thread_call;

static void *sync_from_other_thread(void *arg) {
    other_thread_call *c = arg;
    c->status = nn_ctx_sync(c->ctx);
    snprintf(c->message, sizeof c->message, "%s", nn_last_error());
    return NULL;
}

static nn_status call_from_other_thread(void *user) {
    other_thread_call *c = user;
    pthread_t thread;
    if (pthread_create(&thread, NULL, sync_from_other_thread, c) != 0) return NN_ERR_STATE;
    pthread_join(thread, NULL);
    return NN_OK;
}

TEST(hardening_threads_refusal_names_function_and_context) {
    nn_ctx *ctx = ref_ctx(1);
    if (!ctx) return;
    other_thread_call call = {.ctx = ctx};
    /* A step function runs inside the context (the step runner entered it);
     * a second thread calling in meanwhile is refused. */
    nn_step_runner *runner = nn_step_runner_new(ctx, call_from_other_thread, &call,
                                                &(nn_step_options){.warmup = 1, .eager = true});
    CHECK_MSG(runner != NULL, "%s", nn_last_error());
    CHECK(runner && nn_step_runner_run(runner, 1) == NN_OK);
    CHECK(call.status == NN_ERR_STATE);
    CHECK_MSG(strstr(call.message, "nn_ctx_sync") && strstr(call.message, "in use by another thread"), "%s",
              call.message);
    /* Once the runner is done, the other thread may use it. */
    call_from_other_thread(&call);
    CHECK_MSG(call.status == NN_OK, "%s", call.message);
    nn_step_runner_free(runner);
    nn_ctx_free(ctx);
}

/* Separate contexts on separate threads give what one thread gives. */
typedef struct {
    int seed;
    double result;
    bool ok;
} own_context_run;

static void *train_own_context(void *arg) {
    own_context_run *r = arg;
    r->ok = false;
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1, .seed = 1});
    if (!ctx) return NULL;
    float w[OUTPUTS * FEATURES], x[ROWS * FEATURES];
    for (int i = 0; i < OUTPUTS * FEATURES; i++) w[i] = (float)((i * 5 + r->seed) % 11) * 0.1f - 0.5f;
    nn_tensor *weight = nn_tensor_from_data(ctx, NN_F32, 2, (int64_t[]){OUTPUTS, FEATURES}, w);
    nn_tensor_set_requires_grad(weight, true);
    double total = 0;
    bool ok = weight != NULL;
    for (int step = 0; step < 40 && ok; step++) {
        for (int i = 0; i < ROWS * FEATURES; i++) x[i] = (float)((i * 3 + step + r->seed) % 7) - 3.0f;
        nn_tensor *input = nn_tensor_from_data(ctx, NN_F32, 2, (int64_t[]){ROWS, FEATURES}, x);
        nn_tensor *y = input ? nn_linear(input, weight, NULL) : NULL;
        nn_tensor *loss = y ? nn_sum(nn_mul(y, y)) : NULL;
        float value = 0, grad[OUTPUTS * FEATURES];
        ok = loss && nn_backward(loss) == NN_OK && nn_tensor_read(loss, &value, sizeof value) == NN_OK &&
             nn_tensor_read(nn_tensor_grad(weight), grad, sizeof grad) == NN_OK;
        total += value;
        for (int i = 0; ok && i < OUTPUTS * FEATURES; i++) total += grad[i] * 1e-3 * (i + 1);
        ok = ok && nn_tensor_zero_grad(weight) == NN_OK && nn_ctx_step_end(ctx) == NN_OK;
        nn_tensor_free(input);
    }
    nn_ctx_free(ctx);
    r->result = total;
    r->ok = ok;
    return NULL;
}

TEST(hardening_threads_separate_contexts_in_parallel) {
    own_context_run serial[HAMMER_THREADS], parallel[HAMMER_THREADS];
    pthread_t threads[HAMMER_THREADS];
    for (int i = 0; i < HAMMER_THREADS; i++) {
        serial[i] = (own_context_run){.seed = i};
        parallel[i] = serial[i];
        train_own_context(&serial[i]);
        CHECK_MSG(serial[i].ok, "serial run %d: %s", i, nn_last_error());
    }
    for (int i = 0; i < HAMMER_THREADS; i++) CHECK(pthread_create(&threads[i], NULL, train_own_context, &parallel[i]) == 0);
    for (int i = 0; i < HAMMER_THREADS; i++) pthread_join(threads[i], NULL);
    for (int i = 0; i < HAMMER_THREADS; i++) {
        CHECK_MSG(parallel[i].ok, "thread %d failed", i);
        CHECK_CLOSE(parallel[i].result, serial[i].result, 0);
    }
}

