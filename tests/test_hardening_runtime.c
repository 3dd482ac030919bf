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

/* The settings are part of the context: another thread's setter is
 * refused while the context is in use, and changes nothing. */
typedef struct {
    nn_ctx *ctx;
    bool grad_previous, fusion_previous;
    nn_status grad_status, fusion_status, precision_status;
    char precision_message[256];
} other_thread_settings;

static void *set_from_other_thread(void *arg) {
    other_thread_settings *c = arg;
    nn_clear_error();
    c->grad_previous = nn_ctx_set_grad_enabled(c->ctx, false);
    c->grad_status = nn_last_status();
    nn_clear_error();
    c->fusion_previous = nn_ctx_set_fusion(c->ctx, false);
    c->fusion_status = nn_last_status();
    c->precision_status = nn_ctx_set_precision(c->ctx, NN_PRECISION_BF16);
    snprintf(c->precision_message, sizeof c->precision_message, "%s", nn_last_error());
    return NULL;
}

static nn_status settings_from_other_thread(void *user) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, set_from_other_thread, user) != 0) return NN_ERR_STATE;
    pthread_join(thread, NULL);
    return NN_OK;
}

TEST(hardening_threads_settings_refused_from_another_thread) {
    nn_ctx *ctx = ref_ctx(1);
    if (!ctx) return;
    other_thread_settings call = {.ctx = ctx};
    nn_step_runner *runner = nn_step_runner_new(ctx, settings_from_other_thread, &call,
                                                &(nn_step_options){.warmup = 1, .eager = true});
    CHECK_MSG(runner && nn_step_runner_run(runner, 1) == NN_OK, "%s", nn_last_error());
    CHECK(call.grad_status == NN_ERR_STATE && call.grad_previous);
    CHECK(call.fusion_status == NN_ERR_STATE && call.fusion_previous);
    CHECK_MSG(call.precision_status == NN_ERR_STATE && strstr(call.precision_message, "nn_ctx_set_precision") &&
                  strstr(call.precision_message, "in use by another thread"),
              "%s", call.precision_message);
    CHECK(nn_ctx_grad_enabled(ctx) && nn_ctx_precision(ctx) == NN_PRECISION_FP32);
    CHECK(nn_ctx_set_fusion(ctx, true)); /* still on: the refused call changed nothing */
    nn_step_runner_free(runner);
    /* Once the context is free, another thread's setters work. */
    settings_from_other_thread(&call);
    CHECK(call.grad_status == NN_OK && call.fusion_status == NN_OK && call.precision_status == NN_OK);
    CHECK(!nn_ctx_grad_enabled(ctx) && nn_ctx_precision(ctx) == NN_PRECISION_BF16 && !nn_ctx_set_fusion(ctx, true));
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

/* ---- output sizes that overflow: refused with a message, never a wrong
 * shape, a hang or undefined behaviour (the UBSan build checks the last) ---- */

static void expect_refused(nn_tensor *t, const char *fn, const char *word, const char *what) {
    CHECK_MSG(t == NULL, "%s: expected an error, got a tensor", what);
    CHECK_MSG(strstr(nn_last_error(), fn) && strstr(nn_last_error(), word), "%s: message \"%s\" lacks %s / %s",
              what, nn_last_error(), fn, word);
}

static nn_tensor *random_input(nn_ctx *ctx, int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    float *data = malloc((size_t)n * sizeof *data);
    for (int64_t i = 0; i < n; i++) data[i] = (float)((i * 37) % 17) * 0.125f - 1.0f;
    nn_tensor *t = ref_tensor_f32(ctx, ndim, shape, data);
    free(data);
    return t;
}

TEST(hardening_overflow_pooling_windows) {
    nn_ctx *ctx = ref_ctx(1);
    if (!ctx) return;
    nn_tensor *x = random_input(ctx, 4, (int64_t[]){1, 2, 5, 7});
    expect_refused(nn_maxpool2d_ex(x, INT32_MAX, 1, 0), "nn_maxpool2d", "larger", "maxpool kernel 2^31-1");
    expect_refused(nn_maxpool2d_ex(x, INT32_MAX, 1, INT32_MAX / 2), "nn_maxpool2d", "height",
                   "maxpool kernel 2^31-1 padding 2^30-1");
    expect_refused(nn_maxpool2d_ex(x, INT32_MAX, INT32_MAX, INT32_MAX / 2), "nn_maxpool2d", "height",
                   "maxpool stride 2^31-1");
    nn_pool2d_params window = {.kernel_h = INT32_MAX, .kernel_w = 3, .pad_h = INT32_MAX / 2, .ceil_mode = true};
    expect_refused(nn_maxpool2d_window(x, &window), "nn_maxpool2d", "height", "maxpool_window kernel 2^31-1");
    expect_refused(nn_avgpool2d(x, &window, true, 0), "nn_avgpool2d", "height", "avgpool kernel 2^31-1");
    window = (nn_pool2d_params){.kernel_h = 3, .kernel_w = 3, .stride_h = INT32_MAX, .stride_w = INT32_MAX,
                                .pad_h = 1, .pad_w = 1, .dilation_h = INT32_MAX, .ceil_mode = true};
    expect_refused(nn_maxpool2d_window(x, &window), "nn_maxpool2d", "window", "maxpool dilation 2^31-1");
    /* Huge but valid strides still give PyTorch's size: one window per axis. */
    nn_tensor *y = nn_maxpool2d_ex(x, 3, INT32_MAX, 1);
    CHECK_MSG(y && nn_tensor_dim(y, 2) == 1 && nn_tensor_dim(y, 3) == 1, "maxpool stride 2^31-1: %s",
              y ? "wrong shape" : nn_last_error());
    nn_ctx_free(ctx);
}

TEST(hardening_overflow_convolution_sizes) {
    nn_ctx *ctx = ref_ctx(1);
    if (!ctx) return;
    nn_tensor *x = random_input(ctx, 4, (int64_t[]){1, 2, 5, 7});
    nn_tensor *w = random_input(ctx, 4, (int64_t[]){3, 2, 3, 3});
    nn_conv2d_params p = {.stride_h = 1, .stride_w = 1, .pad_h = INT32_MAX, .pad_w = 0};
    expect_refused(nn_conv2d_ex(x, w, NULL, &p), "nn_conv2d", "padd", "conv2d padding 2^31-1");
    p.pad_h = 1 << 30;
    expect_refused(nn_conv2d_ex(x, w, NULL, &p), "nn_conv2d", "padd", "conv2d padding 2^30");
    p = (nn_conv2d_params){.stride_h = 1, .stride_w = 1, .dilation_h = INT32_MAX, .dilation_w = 1};
    expect_refused(nn_conv2d_ex(x, w, NULL, &p), "nn_conv2d", "kernel", "conv2d dilation 2^31-1");
    p = (nn_conv2d_params){.stride_h = INT32_MAX, .stride_w = INT32_MAX, .pad_h = 1, .pad_w = 1};
    nn_tensor *y = nn_conv2d_ex(x, w, NULL, &p);
    CHECK_MSG(y && nn_tensor_dim(y, 2) == 1 && nn_tensor_dim(y, 3) == 1, "conv2d stride 2^31-1: %s",
              y ? "wrong shape" : nn_last_error());

    nn_tensor *wt = random_input(ctx, 4, (int64_t[]){2, 3, 3, 3});
    nn_conv_transpose2d_params t = {.stride_h = 1, .stride_w = 1, .pad_h = INT32_MAX, .pad_w = 0};
    expect_refused(nn_conv_transpose2d(x, wt, NULL, &t), "nn_conv_transpose2d", "empty",
                   "conv_transpose2d padding 2^31-1");
    t = (nn_conv_transpose2d_params){.stride_h = INT32_MAX, .stride_w = 1};
    expect_refused(nn_conv_transpose2d(x, wt, NULL, &t), "nn_conv_transpose2d", "output height",
                   "conv_transpose2d stride 2^31-1");
    t = (nn_conv_transpose2d_params){.stride_h = 1, .stride_w = 1, .dilation_h = INT32_MAX};
    expect_refused(nn_conv_transpose2d(x, wt, NULL, &t), "nn_conv_transpose2d", "output height",
                   "conv_transpose2d dilation 2^31-1");
    nn_ctx_free(ctx);
}

/* Batched products: the operands are deferred expansions (nothing is
 * allocated), so only the recorded sizes are checked. */
TEST(hardening_overflow_batched_products) {
    nn_ctx *ctx = ref_ctx(1);
    if (!ctx) return;
    nn_tensor *one = random_input(ctx, 4, (int64_t[]){1, 1, 1, 1});
    /* a [2, 1, 2^15, 2^14] (2^30 elements) meets b's batch of 3: a is
     * expanded to 6 matrices, 3 * 2^30 elements, beyond 32 bits. */
    nn_tensor *a = nn_expand(one, 4, (int64_t[]){2, 1, 1 << 15, 1 << 14});
    nn_tensor *b = nn_expand(one, 4, (int64_t[]){1, 3, 1 << 14, 1});
    CHECK_MSG(a && b, "%s", nn_last_error());
    expect_refused(nn_matmul_batched(a, b), "nn_matmul_batched", "expanded", "a expanded to 3 * 2^30 elements");
    expect_refused(nn_matmul_batched(nn_transpose(b, 2, 3), nn_transpose(a, 2, 3)), "nn_matmul_batched",
                   "expanded", "b expanded to 3 * 2^30 elements");
    /* Batches of 2^32 and 2^32 broadcast to 2^64 entries: refused for the
     * operands' sizes before that product is formed (UBSan checks). */
    nn_tensor *wide = nn_expand(one, 4, (int64_t[]){1ll << 32, 1, 1, 1});
    nn_tensor *tall = nn_expand(one, 4, (int64_t[]){1, 1ll << 32, 1, 1});
    CHECK_MSG(wide && tall, "%s", nn_last_error());
    expect_refused(nn_matmul_batched(wide, tall), "nn_matmul_batched", "elements of a", "batches 2^32 x 2^32");
    /* Within the limits the same broadcast is recorded, with its shape. */
    nn_tensor *y = nn_matmul_batched(nn_expand(one, 4, (int64_t[]){2, 1, 5, 3}), nn_expand(one, 4, (int64_t[]){1, 3, 3, 7}));
    CHECK_MSG(y && nn_tensor_dim(y, 0) == 2 && nn_tensor_dim(y, 1) == 3 && nn_tensor_dim(y, 3) == 7, "%s",
              y ? "wrong shape" : nn_last_error());
    nn_ctx_free(ctx);
}

TEST(hardening_overflow_resampling_and_rearranging) {
    nn_ctx *ctx = ref_ctx(1);
    if (!ctx) return;
    nn_tensor *x = random_input(ctx, 4, (int64_t[]){1, 2, 5, 7});
    expect_refused(nn_interpolate(x, 0, 0, 1e300, 1.0, NN_INTERPOLATE_NEAREST, false), "nn_interpolate", "height",
                   "interpolate scale 1e300");
    expect_refused(nn_interpolate(x, 0, 0, 1e9, 1.0, NN_INTERPOLATE_NEAREST, false), "nn_interpolate", "height",
                   "interpolate scale 1e9");
    /* A step of 2^63-1 takes the first element: one, not an overflowed count. */
    nn_tensor *v = random_input(ctx, 1, (int64_t[]){11});
    nn_tensor *s = nn_slice(v, 0, 3, 11, INT64_MAX);
    float got = 0, all[11];
    CHECK_MSG(s && nn_tensor_dim(s, 0) == 1, "slice step 2^63-1: %s", s ? "wrong shape" : nn_last_error());
    CHECK(s && nn_tensor_read(s, &got, sizeof got) == NN_OK && nn_tensor_read(v, all, sizeof all) == NN_OK &&
          got == all[3]);
    /* Concatenating views whose sizes sum past int64 is refused. */
    nn_tensor *one = random_input(ctx, 1, (int64_t[]){1});
    nn_tensor *huge = nn_expand(one, 1, (int64_t[]){INT64_MAX / 8});
    CHECK_MSG(huge != NULL, "expand: %s", nn_last_error());
    nn_tensor *parts[12];
    for (int i = 0; i < 12; i++) parts[i] = huge;
    if (huge) expect_refused(nn_cat(parts, 12, 0), "nn_cat", "large", "cat of sizes past int64");
    /* Tensor element counts: products of dimensions past int64. */
    expect_refused(nn_tensor_new(ctx, NN_F32, 3, (int64_t[]){1LL << 40, 1LL << 40, 3}), "nn_tensor_new", "too large",
                   "tensor of 2^81 elements");
    nn_ctx_free(ctx);
}

/* Concatenating and stacking many tensors (issue 40, item 2: 100,000
 * inputs overflowed the stack, and the time grew with their square): the
 * values in order, and each input's gradient its own weight. */
TEST(hardening_cat_and_stack_of_many_tensors) {
    enum { COUNT = 100000, EVERY = 9973 };
    nn_ctx *ctx = ref_ctx(1);
    if (!ctx) return;
    nn_tensor **parts = malloc(sizeof *parts * COUNT);
    float *got = malloc(sizeof *got * 2 * COUNT), grad[2];
    for (int i = 0; i < COUNT; i++) {
        const float v[2] = {(float)i, (float)-i};
        parts[i] = ref_tensor_f32(ctx, 1, (int64_t[]){2}, v);
        nn_tensor_set_requires_grad(parts[i], i % EVERY == 0);
    }
    nn_tensor *joined = nn_cat(parts, COUNT, 0);
    CHECK_MSG(joined && nn_tensor_dim(joined, 0) == 2 * COUNT, "cat of %d: %s", COUNT, nn_last_error());
    if (joined && nn_tensor_read(joined, got, sizeof *got * 2 * COUNT) == NN_OK) {
        bool in_order = true;
        for (int i = 0; i < COUNT && in_order; i++) in_order = got[2 * i] == (float)i && got[2 * i + 1] == (float)-i;
        CHECK_MSG(in_order, "cat of %d: values out of order", COUNT);
        CHECK(nn_backward(nn_sum(joined)) == NN_OK); /* each part's gradient: 1 */
    }
    nn_ctx_step_end(ctx);
    /* Stacked along dim 1: [2, COUNT], row 0 the firsts, row 1 the seconds. */
    nn_tensor *stacked = nn_stack(parts, COUNT, 1);
    CHECK_MSG(stacked && nn_tensor_dim(stacked, 0) == 2 && nn_tensor_dim(stacked, 1) == COUNT, "stack of %d: %s",
              COUNT, nn_last_error());
    if (stacked && nn_tensor_read(stacked, got, sizeof *got * 2 * COUNT) == NN_OK) {
        bool in_order = true;
        for (int i = 0; i < COUNT && in_order; i++) in_order = got[i] == (float)i && got[COUNT + i] == (float)-i;
        CHECK_MSG(in_order, "stack of %d: values out of order", COUNT);
        CHECK(nn_backward(nn_sum(nn_mul_scalar(stacked, 3.0f))) == NN_OK); /* + 3, accumulated */
        for (int i = 0; i < COUNT; i += EVERY) {
            CHECK(nn_tensor_read(nn_tensor_grad(parts[i]), grad, sizeof grad) == NN_OK);
            CHECK_MSG(grad[0] == 4.0f && grad[1] == 4.0f, "parts[%d] gradient %g %g, want 4 4", i, grad[0], grad[1]);
        }
    }
    free(parts), free(got);
    nn_ctx_free(ctx);
}

/* ---- bounds on what a step holds ---- */

TEST(hardening_step_tensor_limit_names_the_limit_and_the_remedy) {
    nn_ctx *ctx = ref_ctx(1);
    if (!ctx) return;
    nn_tensor *x = random_input(ctx, 1, (int64_t[]){3});
    nn_tensor *y = x;
    int64_t made = 0;
    while (y && made <= NN_MAX_STEP_TENSORS) {
        y = nn_add(y, x);
        made += y != NULL;
    }
    CHECK_MSG(y == NULL && made == NN_MAX_STEP_TENSORS, "made %lld results", (long long)made);
    CHECK_MSG(strstr(nn_last_error(), "NN_MAX_STEP_TENSORS") && strstr(nn_last_error(), "nn_ctx_step_end"), "%s",
              nn_last_error());
    /* A step end frees them, and the context works on. */
    CHECK(nn_ctx_step_end(ctx) == NN_OK);
    CHECK(nn_ctx_step_tensor_count(ctx) == 0);
    nn_tensor *z = nn_add(x, x);
    float out[3], in[3];
    CHECK(z && nn_tensor_read(z, out, sizeof out) == NN_OK && nn_tensor_read(x, in, sizeof in) == NN_OK);
    for (int i = 0; i < 3; i++) CHECK(out[i] == 2 * in[i]);
    nn_ctx_free(ctx);
}

TEST(hardening_cpu_allocation_beyond_the_host_is_refused) {
    nn_ctx *ctx = ref_ctx(1);
    if (!ctx) return;
    /* 2^60 bytes: representable, far beyond any host. */
    nn_tensor *t = nn_tensor_new(ctx, NN_F32, 2, (int64_t[]){1LL << 29, 1LL << 29});
    CHECK(t == NULL);
    CHECK_MSG(strstr(nn_last_error(), "1152921504606846976 bytes") && strstr(nn_last_error(), "host"), "%s",
              nn_last_error());
    nn_ctx_free(ctx);
}
