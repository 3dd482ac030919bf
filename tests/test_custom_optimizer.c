/* A user's optimizer (nn_custom_optimizer_new, include/nn_custom.h): Lion
 * written as a custom kernel against the built-in nn_lion on the same
 * steps, over two parameter groups, on the CPU and Vulkan; its state in a
 * training state, resumed into a fresh optimizer, continuing as the
 * uninterrupted run; a captured step replaying as eager; loss scaling's
 * skipped step writing nothing; the description's refusals. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_engine.h"
#include "test.h"
#include "vulkan_harness.h"

/* buffers: param, grad, exp_avg, lr[1], skip[1] (may be absent); words: beta1, beta2, weight_decay */
static const char kLionGlsl[] =
    "void main() {\n"
    "    uint i = NN_INDEX.x;\n"
    "    if (i >= NN_GRID.x) return;\n"
    "    if (NN_COUNT(4) > 0u && NN_LOAD(4, 0) != 0.0) return;\n"
    "    float lr = NN_LOAD(3, 0), b1 = NN_PARAM_FLOAT(0), b2 = NN_PARAM_FLOAT(1), wd = NN_PARAM_FLOAT(2);\n"
    "    float g = NN_LOAD(1, i), m = NN_LOAD(2, i);\n"
    "    float c = m * b1 + g * (1.0 - b1);\n"
    "    NN_STORE(0, i, NN_LOAD(0, i) * (1.0 - lr * wd) - lr * sign(c));\n"
    "    NN_STORE(2, i, m * b2 + g * (1.0 - b2));\n"
    "}\n";

static int lion_cpu(nn_custom_cpu_call *c) {
    float *p = c->buffers[0], *m = c->buffers[2], w[3];
    const float *g = c->buffers[1], lr = ((const float *)c->buffers[3])[0];
    if (c->buffers[4] && ((const float *)c->buffers[4])[0] != 0.0f) return 0;
    memcpy(w, c->params, sizeof w);
    for (uint32_t i = 0; i < c->grid[0]; i++) {
        const float v = m[i] * w[0] + g[i] * (1.0f - w[0]);
        p[i] = p[i] * (1.0f - lr * w[2]) - lr * (float)((v > 0) - (v < 0));
        m[i] = m[i] * w[1] + g[i] * (1.0f - w[1]);
    }
    return 0;
}

static nn_status lion_update(const nn_custom_update *u) {
    nn_tensor *t[5] = {u->param, u->grad, u->state[0], u->lr, u->skip};
    const float words[3] = {u->options[0], u->options[1], u->weight_decay};
    return nn_custom_launch(u->user, t, u->skip ? 5 : 4, 1u | 4u, words, sizeof words,
                            (uint32_t[3]){(uint32_t)u->n, 1, 1});
}

static nn_custom_kernel *lion_kernel(void) {
    nn_custom_kernel *k = nn_custom_kernel_new(&(nn_custom_kernel_desc){
        .name = "user_lion", .cpu = lion_cpu, .glsl = nn_custom_glsl_available() ? kLionGlsl : NULL});
    CHECK_MSG(k, "%s", nn_last_error());
    return k;
}

static nn_custom_optimizer_desc lion_desc(nn_custom_kernel *k) {
    return (nn_custom_optimizer_desc){.name = "user_lion", .states = {"exp_avg"}, .state_count = 1,
                                      .options = {"beta1", "beta2"}, .option_values = {0.9f, 0.99f},
                                      .option_count = 2, .update = lion_update, .user = k};
}

typedef struct run {
    nn_module *net;
    nn_optimizer *opt;
    nn_tensor *x, *labels;
} run;

enum { BATCH = 11, IN = 13, CLASSES = 5 };

/* An MLP (13 -> 9 -> 5), each layer a parameter group of its own rate and
 * decay (the module's order, as training states want), under `custom` (the user's Lion) or the built-in Lion. */
static run make_run(nn_ctx *ctx, nn_custom_kernel *k, bool custom) {
    run r = {0};
    nn_ctx_manual_seed(ctx, 3);
    const int hidden[1] = {9};
    r.net = nn_mlp(ctx, IN, hidden, 1, CLASSES, NN_INIT_KAIMING_UNIFORM);
    nn_tensor *first[2] = {nn_module_get_parameter(r.net, "l1.weight"), nn_module_get_parameter(r.net, "l1.bias")};
    nn_tensor *second[2] = {nn_module_get_parameter(r.net, "l2.weight"), nn_module_get_parameter(r.net, "l2.bias")};
    const nn_param_group groups[2] = {{first, 2, 0.01f, 0.1f, false}, {second, 2, 0.02f, 0.0f, false}};
    if (custom) {
        const nn_custom_optimizer_desc d = lion_desc(k);
        r.opt = nn_custom_optimizer_new(&d, groups, 2);
    } else {
        r.opt = nn_lion_new_groups(groups, 2, &(nn_lion_options){.lr = 0.01f, .beta1 = 0.9f, .beta2 = 0.99f});
    }
    CHECK_MSG(r.net && r.opt, "%s", nn_last_error());
    float *x = vkt_randoms(BATCH * IN, -1, 1, 41);
    int32_t labels[BATCH];
    for (int i = 0; i < BATCH; i++) labels[i] = (i * 7) % CLASSES;
    r.x = nn_tensor_from_data(ctx, NN_F32, 2, (int64_t[]){BATCH, IN}, x);
    r.labels = nn_tensor_from_data(ctx, NN_I32, 1, (int64_t[]){BATCH}, labels);
    free(x);
    return r;
}

static void free_run(run *r) {
    nn_optimizer_free(r->opt);
    nn_module_free(r->net);
    nn_tensor_free(r->x);
    nn_tensor_free(r->labels);
}

static void step(run *r, float *loss_out) {
    nn_ctx *ctx = nn_module_ctx(r->net);
    CHECK(nn_optimizer_zero_grad(r->opt) == NN_OK);
    nn_tensor *loss = nn_module_forward_loss(r->net, r->x, r->labels, NULL);
    CHECK_MSG(loss && nn_backward(loss) == NN_OK && nn_optimizer_step(r->opt) == NN_OK, "%s", nn_last_error());
    if (loss_out) CHECK(nn_tensor_read(loss, loss_out, sizeof *loss_out) == NN_OK);
    CHECK(nn_ctx_step_end(ctx) == NN_OK);
}

enum { CAP = 1024 }; /* floats: the parameters and exp_avg of the MLP */

/* Each parameter and its exp_avg, in the optimizer's order, into out. */
static size_t state_of(run *r, float *out, size_t capacity) {
    size_t n = 0;
    for (int i = 0; i < nn_optimizer_param_count(r->opt); i++) {
        nn_tensor *p = nn_optimizer_param(r->opt, i), *m = nn_optimizer_state(r->opt, i, 0);
        const size_t count = (size_t)nn_tensor_numel(p);
        if (n + 2 * count > capacity) break;
        CHECK(m && nn_tensor_read(p, out + n, count * 4) == NN_OK && nn_tensor_read(m, out + n + count, count * 4) == NN_OK);
        n += 2 * count;
    }
    return n;
}

/* The context, or NULL where the device is absent or (Vulkan) GLSL cannot be compiled here. */
/* Both runs' parameters and exp_avg (CAP floats each); their count. */
static size_t states_of(run *a, run *b, float *sa, float *sb) {
    const size_t n = state_of(a, sa, CAP);
    CHECK(n > 200 && state_of(b, sb, CAP) == n);
    return n;
}

static nn_ctx *open_device(const char *device) {
    return strcmp(device, "vulkan") == 0 && !nn_custom_glsl_available() ? NULL : vkt_open_device(device);
}

static void check_against_builtin(const char *device) {
    nn_ctx *ctx = open_device(device);
    if (!ctx) return;
    nn_custom_kernel *k = lion_kernel();
    run mine = make_run(ctx, k, true), theirs = make_run(ctx, k, false);
    float a, b;
    for (int s = 0; s < 6; s++) {
        step(&mine, &a);
        step(&theirs, &b);
        CHECK_MSG(fabsf(a - b) <= 1e-5f * fmaxf(1.0f, fabsf(b)), "%s step %d: loss %g, built-in %g", device, s, a, b);
    }
    float *sa = malloc(CAP * 4), *sb = malloc(CAP * 4);
    const size_t n = states_of(&mine, &theirs, sa, sb);
    for (size_t i = 0; i < n; i++)
        if (fabsf(sa[i] - sb[i]) > 1e-5f * fmaxf(1.0f, fabsf(sb[i]))) {
            CHECK_MSG(0, "%s: state [%zu] %g, built-in %g", device, i, sa[i], sb[i]);
            break;
        }
    free(sa), free(sb);
    free_run(&mine), free_run(&theirs);
    nn_custom_kernel_free(k);
    nn_ctx_free(ctx);
}

TEST(custom_optimizer_lion_matches_the_builtin_cpu) { check_against_builtin("cpu"); }
TEST(custom_optimizer_lion_matches_the_builtin_vulkan) { check_against_builtin("vulkan"); }

/* Three steps, a training state, then (a) three more steps and (b) a fresh
 * run resumed from the state and three more steps: the same parameters and
 * exp_avg bit for bit. Then a captured step replays as eager. */
static void check_resume_and_capture(const char *device) {
    nn_ctx *ctx = open_device(device);
    if (!ctx) return;
    nn_custom_kernel *k = lion_kernel();
    run a = make_run(ctx, k, true), b = make_run(ctx, k, true);
    for (int s = 0; s < 3; s++) step(&a, NULL);
    char path[64];
    snprintf(path, sizeof path, "/tmp/nn_custom_opt_%s.safetensors", device);
    nn_train_progress progress = {.epoch = 1, .step = 3, .seed = 3};
    CHECK_MSG(nn_save_train_state(path, a.net, a.opt, &progress) == NN_OK, "%s", nn_last_error());
    nn_train_progress loaded;
    CHECK_MSG(nn_load_train_state(path, b.net, b.opt, &loaded) == NN_OK && loaded.step == 3, "%s", nn_last_error());
    run builtin = make_run(ctx, k, false); /* a state of user_lion is no state of lion */
    CHECK_MSG(nn_load_train_state(path, builtin.net, builtin.opt, &loaded) != NN_OK &&
                  strstr(nn_last_error(), "user_lion"), "%s", nn_last_error());
    free_run(&builtin);
    for (int s = 0; s < 2; s++) step(&a, NULL), step(&b, NULL);
    /* captured: one step recorded on each, then two replays */
    nn_capture *caps[2];
    run *runs[2] = {&a, &b};
    for (int i = 0; i < 2; i++) {
        CHECK(nn_capture_begin(ctx) == NN_OK);
        step(runs[i], NULL);
        caps[i] = nn_capture_end(ctx);
        CHECK_MSG(caps[i], "%s: %s", device, nn_last_error());
    }
    CHECK(caps[0] && nn_replay(caps[0], 2) == NN_OK); /* a: replayed */
    for (int s = 0; s < 2; s++) step(&b, NULL);       /* b: eager */
    float *sa = malloc(CAP * 4), *sb = malloc(CAP * 4);
    const size_t n = states_of(&a, &b, sa, sb);
    CHECK_MSG(memcmp(sa, sb, n * 4) == 0, "%s: resumed and replayed runs differ", device);
    free(sa), free(sb);
    for (int i = 0; i < 2; i++) nn_capture_free(caps[i]);
    free_run(&a), free_run(&b);
    remove(path);
    nn_custom_kernel_free(k);
    nn_ctx_free(ctx);
}

TEST(custom_optimizer_resumes_and_replays_as_eager_cpu) { check_resume_and_capture("cpu"); }
TEST(custom_optimizer_resumes_and_replays_as_eager_vulkan) { check_resume_and_capture("vulkan"); }

/* With loss scaling, a step whose gradients hold an infinity writes nothing. */
TEST(custom_optimizer_skips_an_overflowed_step) {
    nn_ctx *ctx = vkt_open_device("cpu");
    nn_custom_kernel *k = lion_kernel();
    run r = make_run(ctx, k, true);
    CHECK(nn_optimizer_enable_loss_scaling(r.opt, &(nn_loss_scale_options){0}) == NN_OK);
    step(&r, NULL);
    float *before = malloc(CAP * 4), *after = malloc(CAP * 4);
    const size_t n = state_of(&r, before, CAP);
    CHECK(nn_optimizer_zero_grad(r.opt) == NN_OK);
    nn_tensor *loss = nn_module_forward_loss(r.net, r.x, r.labels, NULL);
    nn_tensor *huge = nn_scale(loss, INFINITY);
    CHECK(huge && nn_backward(nn_optimizer_scale_loss(r.opt, huge)) == NN_OK && nn_optimizer_step(r.opt) == NN_OK);
    CHECK(nn_ctx_step_end(ctx) == NN_OK);
    CHECK(state_of(&r, after, CAP) == n && memcmp(before, after, n * 4) == 0);
    float scale;
    int64_t skipped;
    CHECK(nn_optimizer_loss_scale_stats(r.opt, &scale, &skipped) == NN_OK && skipped == 1);
    free(before), free(after);
    free_run(&r);
    nn_custom_kernel_free(k);
    nn_ctx_free(ctx);
}

static nn_status no_update(const nn_custom_update *u) { return NN_OK; }

TEST(custom_optimizer_refuses_bad_descriptions) {
    nn_ctx *ctx = vkt_open_device("cpu");
    nn_tensor *w = nn_tensor_new(ctx, NN_F32, 1, (int64_t[]){4});
    nn_tensor_set_requires_grad(w, true);
    const nn_param_group g = {&w, 1, 0.1f, 0.0f, false};
    struct {
        nn_custom_optimizer_desc d;
        const char *message;
    } cases[] = {
        {{.name = "x"}, "desc.update is NULL"},
        {{.name = "has space", .update = no_update}, "name 'has space' has ' '"},
        {{.name = "s", .states = {"step"}, .state_count = 1, .update = no_update}, "'step' is the step count's"},
        {{.name = "s", .states = {"m", "m"}, .state_count = 2, .update = no_update}, "state 'm' is named twice"},
        {{.name = "o", .options = {"lr"}, .option_count = 1, .update = no_update}, "option 'lr' is every"},
        {{.name = "o", .state_count = 4, .update = no_update}, "4 states and 0 options; at most 3 and 4"},
        {{.name = "o", .options = {"beta"}, .option_values = {NAN}, .option_count = 1, .update = no_update},
         "option 'beta' is nan"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        nn_optimizer *opt = nn_custom_optimizer_new(&cases[i].d, &g, 1);
        CHECK_MSG(!opt && strstr(nn_last_error(), cases[i].message), "case %zu: %s", i, nn_last_error());
        nn_optimizer_free(opt);
    }
    nn_tensor_free(w);
    nn_ctx_free(ctx);
}

/* The step count: a "step" state per group, advanced before each update,
 * which sees it as an int32 [1] tensor (and the run's options and decay). */
static nn_status expect_step(const nn_custom_update *u) {
    int32_t *seen = u->user, step = -1;
    if (!u->step || nn_tensor_dtype(u->step) != NN_I32 || nn_tensor_read(u->step, &step, sizeof step) != NN_OK)
        return NN_ERR_STATE;
    seen[u->group] = step;
    return u->options[0] == 2.5f && u->weight_decay == 0.25f ? NN_OK : NN_ERR_STATE;
}

TEST(custom_optimizer_counts_steps_per_group) {
    nn_ctx *ctx = vkt_open_device("cpu");
    nn_tensor *w = nn_tensor_new(ctx, NN_F32, 1, (int64_t[]){4});
    nn_tensor_set_requires_grad(w, true);
    int32_t seen[1] = {0};
    const nn_param_group g = {&w, 1, 0.1f, 0.25f, false};
    const nn_custom_optimizer_desc d = {.name = "counts", .step_count = true, .options = {"k"},
                                        .option_values = {2.5f}, .option_count = 1, .update = expect_step,
                                        .user = seen};
    nn_optimizer *opt = nn_custom_optimizer_new(&d, &g, 1);
    CHECK_MSG(opt && nn_optimizer_state_count(opt) == 1 && strcmp(nn_optimizer_state_name(opt, 0), "step") == 0,
              "%s", nn_last_error());
    for (int s = 1; s <= 3 && opt; s++) {
        CHECK(nn_backward(nn_sum(nn_mul(w, w))) == NN_OK && nn_optimizer_step(opt) == NN_OK);
        CHECK_MSG(seen[0] == s, "step %d: the update saw %d", s, seen[0]);
        CHECK(nn_ctx_step_end(ctx) == NN_OK);
    }
    nn_optimizer_free(opt);
    nn_tensor_free(w);
    nn_ctx_free(ctx);
}
