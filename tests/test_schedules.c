/* Learning-rate schedules on the device (nn_schedule.h), the moving
 * average of weights (nn_ema.h), gradient accumulation and their training
 * state: each schedule's rates for 130 steps against its formula written
 * here in double (torch.optim.lr_scheduler's closed forms), on the CPU and
 * Vulkan; the average after n updates against a double recurrence;
 * k micro-batches of b with the loss scaled by 1/k against one batch of
 * k*b; a captured step with a schedule and an average against the same
 * steps run eagerly, bit for bit; save and resume; bad arguments. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn_engine.h"
#include "test.h"
#include "vulkan_harness.h"

#define STEPS 130

/* The rate of step t, from the formulas of torch's schedulers. */
static double reference_rate(const nn_schedule_options *o, double base, int64_t t) {
    switch (o->kind) {
    case NN_SCHEDULE_CONSTANT: return base;
    case NN_SCHEDULE_STEP: return base * pow(o->gamma, (double)(t / o->step_size));
    case NN_SCHEDULE_MULTISTEP: {
        int passed = 0;
        for (int i = 0; i < o->milestone_count; i++) passed += t >= o->milestones[i];
        return base * pow(o->gamma, passed);
    }
    case NN_SCHEDULE_EXPONENTIAL: return base * pow(o->gamma, (double)t);
    case NN_SCHEDULE_COSINE:
        if (t < o->warmup) return base * (o->warmup_start + (1 - o->warmup_start) * (double)t / (double)o->warmup);
        return o->eta_min + (base - o->eta_min) *
                                (1 + cos(M_PI * (double)(t - o->warmup) / (double)(o->total_steps - o->warmup))) / 2;
    case NN_SCHEDULE_LINEAR: {
        double held = (double)(t < o->total_steps ? t : o->total_steps);
        return base * (o->start_factor + (o->end_factor - o->start_factor) * held / (double)o->total_steps);
    }
    case NN_SCHEDULE_ONECYCLE: {
        double total = (double)o->total_steps, pct = o->pct_start;
        double step = (double)(t < o->total_steps ? t : o->total_steps); /* held at the total */
        double initial = o->max_lr / o->div_factor, min = initial / o->final_div_factor;
        double ends[3] = {pct * total - 1, o->three_phase ? 2 * pct * total - 2 : total - 1, total - 1};
        double from[3] = {initial, o->max_lr, o->three_phase ? initial : min};
        double to[3] = {o->max_lr, o->three_phase ? initial : min, min};
        int phases = o->three_phase ? 3 : 2;
        double start = 0;
        for (int i = 0; i < phases; i++) {
            if (step <= ends[i] || i == phases - 1) {
                double f = (step - start) / (ends[i] - start);
                return o->anneal_linear ? (to[i] - from[i]) * f + from[i]
                                        : to[i] + (from[i] - to[i]) / 2 * (cos(M_PI * f) + 1);
            }
            start = ends[i];
        }
    }
    }
    return NAN;
}

static nn_schedule_options schedule_case(int c) {
    nn_schedule_options o = {.kind = NN_SCHEDULE_CONSTANT};
    switch (c) {
    case 1: o = (nn_schedule_options){.kind = NN_SCHEDULE_STEP, .step_size = 7, .gamma = 0.7}; break;
    case 2:
        o = (nn_schedule_options){.kind = NN_SCHEDULE_MULTISTEP, .gamma = 0.3, .milestone_count = 3,
                                  .milestones = {1, 40, 41}};
        break;
    case 3: o = (nn_schedule_options){.kind = NN_SCHEDULE_EXPONENTIAL, .gamma = 0.97}; break;
    case 4: o = (nn_schedule_options){.kind = NN_SCHEDULE_COSINE, .total_steps = STEPS}; break;
    case 5:
        o = (nn_schedule_options){.kind = NN_SCHEDULE_COSINE, .warmup = 11, .warmup_start = 0.1,
                                  .total_steps = 121, .eta_min = 1e-3};
        break;
    case 6:
        o = (nn_schedule_options){.kind = NN_SCHEDULE_ONECYCLE, .max_lr = 0.3, .total_steps = STEPS,
                                  .pct_start = 0.25, .div_factor = 25, .final_div_factor = 1e4};
        break;
    case 7:
        o = (nn_schedule_options){.kind = NN_SCHEDULE_ONECYCLE, .max_lr = 0.3, .total_steps = 127,
                                  .anneal_linear = true, .three_phase = true};
        break;
    case 8:
        o = (nn_schedule_options){.kind = NN_SCHEDULE_LINEAR, .start_factor = 0.1, .end_factor = 0.9,
                                  .total_steps = 23};
        break;
    case 9: /* a repeated milestone counts twice, as in torch's MultiStepLR */
        o = (nn_schedule_options){.kind = NN_SCHEDULE_MULTISTEP, .gamma = 0.5, .milestone_count = 3,
                                  .milestones = {5, 30, 30}};
        break;
    default: break;
    }
    return o;
}
#define SCHEDULE_CASES 10

/* One parameter and an SGD over it at lr 0.05. */
static nn_optimizer *one_param_sgd(nn_ctx *ctx, nn_tensor **param) {
    *param = nn_tensor_new(ctx, NN_F32, 1, (int64_t[]){3});
    nn_tensor_set_requires_grad(*param, true);
    return nn_sgd_new(param, 1, &(nn_sgd_options){.lr = 0.05f});
}

static float read_lr(nn_optimizer *opt) {
    float lr = NAN;
    CHECK(nn_tensor_read(nn_optimizer_lr_tensor(opt), &lr, sizeof lr) == NN_OK);
    return lr;
}

static void check_rates_on(const char *device, double tol) {
    nn_ctx *ctx = vkt_open_device(device);
    if (!ctx) return;
    for (int c = 0; c < SCHEDULE_CASES; c++) {
        nn_tensor *param;
        nn_optimizer *opt = one_param_sgd(ctx, &param);
        nn_schedule_options o = schedule_case(c);
        nn_schedule *s = nn_schedule_new(opt, &o);
        CHECK_MSG(s, "case %d: %s", c, nn_last_error());
        if (!s) continue;
        const nn_schedule_options *filled = nn_schedule_get_options(s);
        int bad = 0;
        for (int64_t t = 0; t < STEPS && bad < 3; t++) {
            double want = reference_rate(filled, (double)0.05f, t);
            float got = read_lr(opt);
            if (!(fabs(got - want) <= tol * fmax(fabs(want), 1e-3))) {
                bad++;
                CHECK_MSG(false, "%s case %d (%s) step %lld: lr %.9g, want %.9g", device, c,
                          nn_schedule_kind_name(o.kind), (long long)t, got, want);
            }
            CHECK(nn_schedule_step(s) == NN_OK);
        }
        int64_t step = -1;
        CHECK(nn_schedule_get_step(s, &step) == NN_OK && step == STEPS);
        /* set_step rewrites the rate of any step */
        CHECK(nn_schedule_set_step(s, 17) == NN_OK);
        CHECK_CLOSE(read_lr(opt), reference_rate(filled, (double)0.05f, 17), tol);
        nn_schedule_free(s);
        nn_optimizer_free(opt);
        nn_tensor_free(param);
    }
    nn_ctx_free(ctx);
}

/* apply at each step's start and advance after it write the rates step
 * writes, bit for bit: the CLI's steps take that split. */
static void check_apply_advance_on(const char *device) {
    nn_ctx *ctx = vkt_open_device(device);
    if (!ctx) return;
    for (int c = 0; c < SCHEDULE_CASES; c++) {
        nn_tensor *p1, *p2;
        nn_optimizer *o1 = one_param_sgd(ctx, &p1), *o2 = one_param_sgd(ctx, &p2);
        nn_schedule_options o = schedule_case(c);
        nn_schedule *whole = nn_schedule_new(o1, &o), *split = nn_schedule_new(o2, &o);
        CHECK(whole && split);
        for (int64_t t = 0; whole && split && t < STEPS; t++) {
            CHECK(nn_schedule_apply(split) == NN_OK);
            const float a = read_lr(o1), b = read_lr(o2);
            CHECK_MSG(memcmp(&a, &b, sizeof a) == 0, "%s case %d step %lld: %.9g by step, %.9g by apply", device, c,
                      (long long)t, a, b);
            CHECK(nn_schedule_step(whole) == NN_OK && nn_schedule_advance(split) == NN_OK);
        }
        CHECK(nn_schedule_apply(NULL) != NN_OK && nn_schedule_advance(NULL) != NN_OK);
        nn_schedule_free(whole);
        nn_schedule_free(split);
        nn_optimizer_free(o1);
        nn_optimizer_free(o2);
        nn_tensor_free(p1);
        nn_tensor_free(p2);
    }
    nn_ctx_free(ctx);
}

TEST(schedule_apply_then_advance_equals_step) {
    check_apply_advance_on("cpu");
    check_apply_advance_on("vulkan");
}

/* The CPU rounds the double rate once; Vulkan computes in float. */
TEST(schedules_match_their_formulas_for_130_steps) {
    check_rates_on("cpu", 1e-7);
    check_rates_on("vulkan", 2e-5);
}

TEST(schedules_refuse_bad_options_naming_them) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1});
    nn_tensor *param;
    nn_optimizer *opt = one_param_sgd(ctx, &param);
    static const struct {
        nn_schedule_options o;
        const char *says;
    } bad[] = {
        {{.kind = 9}, "kind 9"},
        {{.kind = NN_SCHEDULE_STEP, .step_size = 0, .gamma = 0.1}, "step_size"},
        {{.kind = NN_SCHEDULE_EXPONENTIAL, .gamma = -1}, "gamma"},
        {{.kind = NN_SCHEDULE_MULTISTEP, .gamma = 0.1, .milestone_count = 2, .milestones = {5, 4}}, "milestone 1"},
        {{.kind = NN_SCHEDULE_LINEAR, .start_factor = 0, .end_factor = 1, .total_steps = 5}, "start_factor"},
        {{.kind = NN_SCHEDULE_LINEAR, .start_factor = 0.5, .end_factor = 1}, "total_steps"},
        {{.kind = NN_SCHEDULE_ONECYCLE, .max_lr = 1, .total_steps = 10, .cycle_momentum = true, .max_momentum = 1},
         "max_momentum"},
        {{.kind = NN_SCHEDULE_COSINE, .warmup = 10, .total_steps = 10}, "warmup"},
        {{.kind = NN_SCHEDULE_COSINE, .total_steps = 10, .warmup_start = 2}, "warmup_start"},
        {{.kind = NN_SCHEDULE_ONECYCLE, .max_lr = 0, .total_steps = 10}, "max_lr"},
        {{.kind = NN_SCHEDULE_ONECYCLE, .max_lr = 1, .total_steps = 10, .pct_start = 0.1}, "phase of no steps"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(nn_schedule_new(opt, &bad[i].o) == NULL);
        CHECK_MSG(strstr(nn_last_error(), "nn_schedule_new") && strstr(nn_last_error(), bad[i].says),
                  "case %zu: %s", i, nn_last_error());
    }
    CHECK(nn_schedule_new(NULL, &(nn_schedule_options){0}) == NULL);
    CHECK(nn_schedule_step(NULL) != NN_OK);
    CHECK(nn_ema_new(NULL, 0.9f) == NULL);
    nn_module *net = nn_linear_layer(ctx, 3, 2, NN_INIT_KAIMING_UNIFORM);
    CHECK(nn_ema_new(net, 1.5f) == NULL && strstr(nn_last_error(), "decay"));
    nn_module_free(net);
    nn_optimizer_free(opt);
    nn_tensor_free(param);
    nn_ctx_free(ctx);
}

/* Two groups at 0.05 and 0.2 under Adam (beta1 0.9). */
static nn_optimizer *two_group_adam(nn_ctx *ctx, nn_tensor **params) {
    for (int i = 0; i < 2; i++) {
        params[i] = nn_tensor_new(ctx, NN_F32, 1, (int64_t[]){3 + i});
        nn_tensor_set_requires_grad(params[i], true);
    }
    const nn_param_group groups[2] = {{.params = &params[0], .count = 1, .lr = 0.05f},
                                      {.params = &params[1], .count = 1, .lr = 0.2f}};
    return nn_adam_new_groups(groups, 2, &(nn_adam_options){.beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f});
}

static void free_two_group_adam(nn_optimizer *opt, nn_tensor **params) {
    nn_optimizer_free(opt);
    nn_tensor_free(params[0]);
    nn_tensor_free(params[1]);
}

static float read_group_lr(nn_optimizer *opt, int group) {
    float lr = NAN;
    CHECK(nn_tensor_read(nn_optimizer_group_lr_tensor(opt, group), &lr, sizeof lr) == NN_OK);
    return lr;
}

/* Every group follows the schedule from its own base (torch's base_lrs),
 * or from group_lrs; one-cycle's peak is max_lr for every group unless
 * group_lrs gives each; nn_schedule_rate is the rate the device wrote
 * (the CPU rounds the same double). */
static void check_groups_on(const char *device, double tol) {
    nn_ctx *ctx = vkt_open_device(device);
    if (!ctx) return;
    for (int c = 0; c < SCHEDULE_CASES; c++)
        for (int given = 0; given < 2; given++) {
            nn_tensor *params[2];
            nn_optimizer *opt = two_group_adam(ctx, params);
            nn_schedule_options o = schedule_case(c);
            const double group_lrs[2] = {0.03, 0.4};
            if (given) o.group_lrs = group_lrs;
            nn_schedule *s = nn_schedule_new(opt, &o);
            CHECK_MSG(s, "case %d: %s", c, nn_last_error());
            nn_schedule_options filled = *nn_schedule_get_options(s);
            for (int64_t t = 0; s && t < STEPS; t += 9) {
                CHECK(nn_schedule_set_step(s, t) == NN_OK);
                for (int g = 0; g < 2; g++) {
                    double base = given ? group_lrs[g] : (double)(g == 0 ? 0.05f : 0.2f);
                    nn_schedule_options per_group = filled;
                    if (o.kind == NN_SCHEDULE_ONECYCLE && given) per_group.max_lr = group_lrs[g];
                    const double want = reference_rate(&per_group, base, t), host = nn_schedule_rate(s, g, t);
                    const float got = read_group_lr(opt, g);
                    CHECK_MSG(fabs(got - want) <= tol * fmax(fabs(want), 1e-3) && fabs(host - want) <= 1e-12 * fabs(want),
                              "%s case %d group %d step %lld: device %.9g, host %.12g, want %.12g", device, c, g,
                              (long long)t, got, host, want);
                    if (!strcmp(device, "cpu")) CHECK(got == (float)host);
                }
            }
            CHECK(isnan(nn_schedule_rate(s, 2, 0)) && strstr(nn_last_error(), "group 2"));
            CHECK(isnan(nn_schedule_rate(s, 0, -1)) && strstr(nn_last_error(), "step"));
            nn_schedule_free(s);
            free_two_group_adam(opt, params);
        }
    nn_ctx_free(ctx);
}

TEST(schedules_drive_every_parameter_group) {
    check_groups_on("cpu", 1e-7);
    check_groups_on("vulkan", 2e-5);
}

/* torch's SequentialLR: a linear warm-up, then a cosine, then a step
 * schedule, each from its own step 0 at its milestone; step, set_step and
 * nn_schedule_rate agree with the parts' formulas. */
static void check_sequence_on(const char *device, double tol) {
    nn_ctx *ctx = vkt_open_device(device);
    if (!ctx) return;
    nn_tensor *params[2];
    nn_optimizer *opt = two_group_adam(ctx, params);
    const nn_schedule_options o[3] = {
        {.kind = NN_SCHEDULE_LINEAR, .start_factor = 0.05, .end_factor = 1, .total_steps = 11},
        {.kind = NN_SCHEDULE_COSINE, .total_steps = 60, .eta_min = 1e-4},
        {.kind = NN_SCHEDULE_STEP, .step_size = 5, .gamma = 0.5},
    };
    nn_schedule *parts[3];
    for (int k = 0; k < 3; k++) CHECK((parts[k] = nn_schedule_new(opt, &o[k])) != NULL);
    const int64_t milestones[2] = {11, 71};
    nn_schedule *s = nn_schedule_sequential(opt, parts, 3, milestones);
    CHECK_MSG(s, "%s", nn_last_error());
    for (int64_t t = 0; s && t < 100; t++) {
        const int k = t < 11 ? 0 : t < 71 ? 1 : 2;
        const int64_t local = t - (k == 0 ? 0 : milestones[k - 1]);
        for (int g = 0; g < 2; g++) {
            const double want = reference_rate(&o[k], (double)(g == 0 ? 0.05f : 0.2f), local);
            const float got = read_group_lr(opt, g);
            CHECK_MSG(fabs(got - want) <= tol * fmax(fabs(want), 1e-3), "%s step %lld group %d: %.9g, want %.9g",
                      device, (long long)t, g, got, want);
            CHECK(fabs(nn_schedule_rate(s, g, t) - want) <= 1e-12 * want);
        }
        CHECK(nn_schedule_step(s) == NN_OK);
    }
    CHECK(nn_schedule_set_step(s, 12) == NN_OK);
    CHECK_CLOSE(read_group_lr(opt, 0), reference_rate(&o[1], (double)0.05f, 1), tol);
    nn_schedule *nested = nn_schedule_sequential(opt, (nn_schedule *[]){s, parts[0]}, 2, (int64_t[]){5});
    CHECK(!nested && strstr(nn_last_error(), "part 0") && strstr(nn_last_error(), "nest"));
    CHECK(!nn_schedule_sequential(opt, parts, 3, (int64_t[]){11, 11}) && strstr(nn_last_error(), "milestone 1"));
    nn_schedule_free(s);
    for (int k = 0; k < 3; k++) nn_schedule_free(parts[k]);
    free_two_group_adam(opt, params);
    nn_ctx_free(ctx);
}

TEST(a_sequence_runs_its_parts_from_their_milestones) {
    check_sequence_on("cpu", 1e-7);
    check_sequence_on("vulkan", 2e-5);
}

/* One-cycle with cycle_momentum moves Adam's beta1 each step from
 * max_momentum to base_momentum and back (torch's curve, with the rate's
 * phases); an optimizer without momentum or beta1 is refused by name. */
TEST(one_cycle_cycles_beta1_and_refuses_an_optimizer_without_momentum) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1});
    nn_tensor *params[2];
    nn_optimizer *opt = two_group_adam(ctx, params);
    const nn_schedule_options o = {.kind = NN_SCHEDULE_ONECYCLE, .max_lr = 0.3, .total_steps = 40,
                                   .cycle_momentum = true};
    nn_schedule *s = nn_schedule_new(opt, &o);
    CHECK_MSG(s, "%s", nn_last_error());
    const double end1 = 0.3 * 40 - 1;
    for (int64_t t = 0; s && t < 40; t++) {
        const double pct = t <= end1 ? t / end1 : (t - end1) / (39 - end1);
        const double from = t <= end1 ? 0.95 : 0.85, to = t <= end1 ? 0.85 : 0.95;
        const double want = to + (from - to) / 2 * (cos(M_PI * pct) + 1);
        float beta1 = NAN;
        for (int g = 0; g < 2; g++) {
            CHECK(nn_optimizer_group_option(opt, g, "beta1", &beta1) == NN_OK);
            CHECK_MSG(fabs(beta1 - want) < 1e-6 && fabs(nn_schedule_momentum(s, g, t) - want) < 1e-12,
                      "step %lld group %d: beta1 %.9g, want %.9g", (long long)t, g, beta1, want);
        }
        CHECK(nn_schedule_step(s) == NN_OK);
    }
    nn_schedule_free(s);
    nn_tensor *param = nn_tensor_new(ctx, NN_F32, 2, (int64_t[]){3, 3});
    nn_tensor_set_requires_grad(param, true);
    nn_optimizer *muon = nn_muon_new(&param, 1, &(nn_muon_options){.lr = 0.02f, .momentum = 0.95f, .ns_steps = 5});
    s = nn_schedule_new(muon, &o); /* Muon's momentum is fixed at creation */
    CHECK_MSG(!s && strstr(nn_last_error(), "momentum or beta1; muon has neither"), "%s", nn_last_error());
    nn_optimizer_free(muon);
    nn_tensor_free(param);
    free_two_group_adam(opt, params);
    nn_ctx_free(ctx);
}

/* A linear layer and a BatchNorm: parameters and buffers (running
 * statistics, an int32 count) to average. */
static nn_module *small_net(nn_ctx *ctx, int in, int hidden, int out, bool norm) {
    nn_module *net = nn_sequential(ctx);
    nn_sequential_append(net, "fc1", nn_linear_layer(ctx, in, hidden, NN_INIT_KAIMING_UNIFORM));
    if (norm) nn_sequential_append(net, "bn", nn_batchnorm1d(ctx, hidden, 1e-5f, 0.1f, true, true));
    nn_sequential_append(net, "relu", nn_relu_layer(ctx));
    nn_sequential_append(net, "fc2", nn_linear_layer(ctx, hidden, out, NN_INIT_KAIMING_UNIFORM));
    return net;
}

TEST(ema_after_n_updates_equals_a_double_reference) {
    const char *devices[] = {"cpu", "vulkan"};
    for (int d = 0; d < 2; d++) {
        nn_ctx *ctx = vkt_open_device(devices[d]);
        if (!ctx) continue;
        nn_module *net = small_net(ctx, 5, 7, 3, true);
        const float decay = 0.9f;
        nn_ema *ema = nn_ema_new(net, decay);
        CHECK(ema && nn_ema_count(ema) == nn_module_state_count(net));
        const int count = nn_module_state_count(net);
        double *want[16] = {0};
        unsigned seed = 11;
        for (int i = 0; i < count; i++) { /* the shadow starts as the weights */
            nn_tensor *t = nn_module_state(net, i);
            int64_t n = nn_tensor_numel(t);
            float *v = malloc(sizeof(float) * (size_t)n);
            CHECK(nn_tensor_read(t, v, sizeof(float) * (size_t)n) == NN_OK);
            want[i] = malloc(sizeof(double) * (size_t)n);
            for (int64_t j = 0; j < n; j++)
                want[i][j] = nn_tensor_dtype(t) == NN_F32 ? v[j] : (double)((int32_t *)v)[j];
            free(v);
        }
        for (int step = 0; step < 23; step++) {
            for (int i = 0; i < count; i++) { /* new weights, then one update */
                nn_tensor *t = nn_module_state(net, i);
                int64_t n = nn_tensor_numel(t);
                float *v = malloc(sizeof(float) * (size_t)n);
                for (int64_t j = 0; j < n; j++) {
                    if (nn_tensor_dtype(t) == NN_F32) {
                        v[j] = (float)vkt_uniform(&seed, -2, 2);
                        want[i][j] = want[i][j] * (double)decay + (1.0 - (double)decay) * v[j];
                    } else {
                        ((int32_t *)v)[j] = step * 3 + (int32_t)j; /* counts are copied */
                        want[i][j] = step * 3 + (double)j;
                    }
                }
                CHECK(nn_tensor_write(t, v, sizeof(float) * (size_t)n) == NN_OK);
                free(v);
            }
            CHECK(nn_ema_update(ema) == NN_OK);
        }
        for (int i = 0; i < count; i++) {
            nn_tensor *t = nn_ema_tensor(ema, i);
            int64_t n = nn_tensor_numel(t);
            float *v = malloc(sizeof(float) * (size_t)n);
            CHECK(nn_tensor_read(t, v, sizeof(float) * (size_t)n) == NN_OK);
            for (int64_t j = 0; j < n; j++) {
                double got = nn_tensor_dtype(t) == NN_F32 ? v[j] : (double)((int32_t *)v)[j];
                CHECK_MSG(fabs(got - want[i][j]) <= 2e-6 * fmax(1, fabs(want[i][j])), "%s %s[%lld] = %.9g, want %.9g",
                          devices[d], nn_ema_name(ema, i), (long long)j, got, want[i][j]);
            }
            free(v);
        }
        /* swap exchanges the shadow and the weights; a second swap undoes it */
        nn_tensor *w = nn_module_state(net, 0);
        size_t bytes = sizeof(float) * (size_t)nn_tensor_numel(w);
        float *live = malloc(bytes), *shadow = malloc(bytes), *after = malloc(bytes);
        CHECK(nn_tensor_read(w, live, bytes) == NN_OK);
        CHECK(nn_tensor_read(nn_ema_tensor(ema, 0), shadow, bytes) == NN_OK);
        CHECK(memcmp(live, shadow, bytes) != 0);
        CHECK(nn_ema_swap(ema) == NN_OK);
        CHECK(nn_tensor_read(w, after, bytes) == NN_OK && memcmp(after, shadow, bytes) == 0);
        CHECK(nn_tensor_read(nn_ema_tensor(ema, 0), after, bytes) == NN_OK && memcmp(after, live, bytes) == 0);
        CHECK(nn_ema_swap(ema) == NN_OK);
        CHECK(nn_tensor_read(w, after, bytes) == NN_OK && memcmp(after, live, bytes) == 0);
        free(live), free(shadow), free(after);
        for (int i = 0; i < count; i++) free(want[i]);
        nn_ema_free(ema);
        nn_module_free(net);
        nn_ctx_free(ctx);
    }
}

/* The parameters' values, concatenated (caller frees). */
static float *read_params(nn_module *net, int64_t *total) {
    int64_t n = 0;
    for (int i = 0; i < nn_module_param_count(net); i++) n += nn_tensor_numel(nn_module_param(net, i));
    float *all = malloc(sizeof(float) * (size_t)n), *at = all;
    for (int i = 0; i < nn_module_param_count(net); i++) {
        nn_tensor *p = nn_module_param(net, i);
        CHECK(nn_tensor_read(p, at, sizeof(float) * (size_t)nn_tensor_numel(p)) == NN_OK);
        at += nn_tensor_numel(p);
    }
    *total = n;
    return all;
}

static nn_tensor *batch_of(nn_ctx *ctx, const float *x, int rows, int cols) {
    return nn_tensor_from_data(ctx, NN_F32, 2, (int64_t[]){rows, cols}, x);
}

static nn_tensor *labels_of(nn_ctx *ctx, const int32_t *y, int rows) {
    return nn_tensor_from_data(ctx, NN_I32, 1, (int64_t[]){rows}, y);
}

/* Two SGD steps with momentum on one batch of k*b rows against two steps
 * of k micro-batches of b rows, each loss scaled by 1/k (the CLI's
 * --accumulate): the gradients' mean is the batch's, so the weights agree
 * to float rounding. b = 1 and odd sizes. */
TEST(accumulating_k_micro_batches_equals_one_batch_of_k_times_b) {
    static const int shapes[][2] = {{3, 1}, {2, 5}, {4, 7}}; /* k, b */
    enum { IN = 9, CLASSES = 4 };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int k = shapes[s][0], b = shapes[s][1], rows = k * b;
        float *x = vkt_randoms((size_t)rows * IN, -1, 1, 5 + (unsigned)s);
        int32_t *y = malloc(sizeof(int32_t) * (size_t)rows);
        for (int r = 0; r < rows; r++) y[r] = (r * 7 + 3) % CLASSES;
        float *weights[2];
        int64_t n = 0;
        for (int accumulate = 0; accumulate < 2; accumulate++) {
            nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1, .seed = 3});
            nn_module *net = small_net(ctx, IN, 11, CLASSES, false);
            nn_tensor *params[8];
            for (int i = 0; i < nn_module_param_count(net); i++) params[i] = nn_module_param(net, i);
            nn_optimizer *opt =
                nn_sgd_new(params, nn_module_param_count(net), &(nn_sgd_options){.lr = 0.1f, .momentum = 0.9f});
            for (int step = 0; step < 2; step++) {
                CHECK(nn_optimizer_zero_grad(opt) == NN_OK);
                for (int m = 0; m < (accumulate ? k : 1); m++) {
                    int first = accumulate ? m * b : 0, count = accumulate ? b : rows;
                    nn_tensor *xb = batch_of(ctx, x + (size_t)first * IN, count, IN);
                    nn_tensor *yb = labels_of(ctx, y + first, count);
                    nn_tensor *loss = nn_module_forward_loss(net, xb, yb, NULL);
                    if (accumulate) loss = nn_scale(loss, 1.0f / (float)k);
                    CHECK_MSG(loss && nn_backward(loss) == NN_OK, "%s", nn_last_error());
                    nn_tensor_free(xb);
                    nn_tensor_free(yb);
                }
                CHECK(nn_optimizer_step(opt) == NN_OK);
                CHECK(nn_ctx_step_end(ctx) == NN_OK);
            }
            weights[accumulate] = read_params(net, &n);
            nn_optimizer_free(opt);
            nn_module_free(net);
            nn_ctx_free(ctx);
        }
        for (int64_t i = 0; i < n; i++)
            CHECK_MSG(fabsf(weights[0][i] - weights[1][i]) <= 1e-5f * fmaxf(1, fabsf(weights[0][i])),
                      "k %d b %d: weight %lld: one batch %.9g, accumulated %.9g", k, b, (long long)i, weights[0][i],
                      weights[1][i]);
        free(weights[0]);
        free(weights[1]);
        free(x);
        free(y);
    }
}

/* A training step with a device schedule and a moving average, for the
 * step runner: the rate comes from the schedule's counter, so a replayed
 * step needs nothing from the host. */
typedef struct scheduled_training {
    nn_ctx *ctx;
    nn_module *net;
    nn_optimizer *opt;
    nn_schedule *schedule;
    nn_ema *ema;
    nn_tensor *x, *y, *sums;
    nn_step_runner *runner;
} scheduled_training;

static nn_status scheduled_step(void *user) {
    scheduled_training *t = user;
    nn_status st = nn_optimizer_zero_grad(t->opt);
    nn_tensor *logits = NULL;
    nn_tensor *loss = st == NN_OK ? nn_module_forward_loss(t->net, t->x, t->y, &logits) : NULL;
    if (st == NN_OK && !loss) st = nn_last_status();
    if (st == NN_OK) st = nn_backward(loss);
    if (st == NN_OK) st = nn_accumulate_metrics(logits, t->y, loss, t->sums);
    if (st == NN_OK) st = nn_optimizer_step(t->opt);
    if (st == NN_OK) st = nn_ema_update(t->ema);
    if (st == NN_OK) st = nn_schedule_step(t->schedule);
    nn_status end = nn_ctx_step_end(t->ctx);
    return st == NN_OK ? end : st;
}

static bool scheduled_open(scheduled_training *t, nn_ctx *ctx, bool capture) {
    memset(t, 0, sizeof *t);
    t->ctx = ctx;
    nn_ctx_manual_seed(ctx, 5);
    t->net = small_net(ctx, 6, 9, 3, true);
    nn_tensor *params[8];
    for (int i = 0; i < nn_module_param_count(t->net); i++) params[i] = nn_module_param(t->net, i);
    t->opt = nn_sgd_new(params, nn_module_param_count(t->net), &(nn_sgd_options){.lr = 0.2f, .momentum = 0.9f});
    t->schedule = t->opt ? nn_schedule_new(t->opt, &(nn_schedule_options){.kind = NN_SCHEDULE_ONECYCLE,
                                                                           .max_lr = 0.5, .total_steps = 40}) : NULL;
    t->ema = nn_ema_new(t->net, 0.8f);
    float *x = vkt_randoms(5 * 6, -1, 1, 77);
    int32_t y[5] = {0, 2, 1, 1, 0};
    t->x = batch_of(ctx, x, 5, 6);
    t->y = labels_of(ctx, y, 5);
    free(x);
    t->sums = nn_tensor_new(ctx, NN_F32, 1, (int64_t[]){2});
    t->runner = nn_step_runner_new(ctx, scheduled_step, t, &(nn_step_options){.eager = !capture});
    bool ok = t->opt && t->schedule && t->ema && t->x && t->y && t->sums && t->runner;
    CHECK_MSG(ok, "%s", nn_last_error());
    return ok;
}

static void scheduled_close(scheduled_training *t) {
    nn_step_runner_free(t->runner);
    nn_ema_free(t->ema);
    nn_schedule_free(t->schedule);
    nn_optimizer_free(t->opt);
    nn_module_free(t->net);
    nn_tensor_free(t->x), nn_tensor_free(t->y), nn_tensor_free(t->sums);
}

/* The summed loss after each step, the rates, the final weights and the
 * average: a captured and replayed step gives the eager values bit for bit. */
TEST(a_captured_step_with_a_device_schedule_replays_the_eager_losses) {
    const char *devices[] = {"cpu", "vulkan"};
    for (int d = 0; d < 2; d++) {
        float sums[2][24], rates[2][24], *weights[2] = {NULL, NULL}, shadow[2][9 * 6];
        int64_t n = 0;
        bool opened = true;
        for (int capture = 0; capture < 2 && opened; capture++) {
            nn_ctx *ctx = vkt_open_device(devices[d]);
            if (!ctx) { opened = false; break; }
            scheduled_training t;
            if (scheduled_open(&t, ctx, capture)) {
                for (int s = 0; s < 24; s++) {
                    float pair[2];
                    CHECK(nn_step_runner_run(t.runner, 1) == NN_OK);
                    CHECK(nn_tensor_read(t.sums, pair, sizeof pair) == NN_OK);
                    sums[capture][s] = pair[0];
                    rates[capture][s] = read_lr(t.opt);
                }
                weights[capture] = read_params(t.net, &n);
                CHECK(nn_tensor_read(nn_ema_tensor(t.ema, 0), shadow[capture], sizeof shadow[capture]) == NN_OK);
                if (capture) CHECK(nn_step_runner_command_count(t.runner) > 0);
            }
            scheduled_close(&t);
            nn_ctx_free(ctx);
        }
        if (!opened || !weights[0] || !weights[1]) {
            free(weights[0]), free(weights[1]);
            continue;
        }
        CHECK_MSG(memcmp(sums[0], sums[1], sizeof sums[0]) == 0, "%s: losses differ", devices[d]);
        CHECK_MSG(memcmp(rates[0], rates[1], sizeof rates[0]) == 0, "%s: rates differ", devices[d]);
        CHECK_MSG(memcmp(weights[0], weights[1], sizeof(float) * (size_t)n) == 0, "%s: weights differ", devices[d]);
        CHECK_MSG(memcmp(shadow[0], shadow[1], sizeof shadow[0]) == 0, "%s: averages differ", devices[d]);
        CHECK(rates[0][0] != rates[0][10]); /* the schedule moved */
        free(weights[0]), free(weights[1]);
    }
}

/* Save after 9 steps, run 7 more; a fresh run resumed from the file runs
 * the same 7: schedule, average and weights continue bit for bit. A run
 * without the schedule or the average is refused, naming what differs. */
TEST(a_resumed_schedule_and_average_continue_bit_for_bit) {
    const char *path = "build/tests/schedule_state.safetensors";
    float rates[2][7], *weights[2] = {NULL, NULL}, shadow[2][9 * 6];
    int64_t n = 0;
    for (int resumed = 0; resumed < 2; resumed++) {
        nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1});
        scheduled_training t;
        if (scheduled_open(&t, ctx, true)) {
            nn_train_extras extras = {t.schedule, t.ema, NULL};
            nn_train_progress p = {.epoch = 1, .step = 9, .seed = 1};
            if (!resumed) {
                CHECK(nn_step_runner_run(t.runner, 9) == NN_OK);
                CHECK_MSG(nn_save_train_state_with(path, t.net, t.opt, &extras, &p) == NN_OK, "%s", nn_last_error());
                CHECK(nn_load_train_state(path, t.net, t.opt, &p) != NN_OK &&
                      strstr(nn_last_error(), "schedule.step"));
                nn_train_extras no_ema = {t.schedule, NULL, NULL};
                CHECK(nn_load_train_state_with(path, t.net, t.opt, &no_ema, &p) != NN_OK &&
                      strstr(nn_last_error(), "moving-average"));
            } else {
                CHECK_MSG(nn_load_train_state_with(path, t.net, t.opt, &extras, &p) == NN_OK, "%s", nn_last_error());
                int64_t step = -1;
                CHECK(nn_schedule_get_step(t.schedule, &step) == NN_OK && step == 9);
            }
            for (int s = 0; s < 7; s++) {
                CHECK(nn_step_runner_run(t.runner, 1) == NN_OK);
                rates[resumed][s] = read_lr(t.opt);
            }
            weights[resumed] = read_params(t.net, &n);
            CHECK(nn_tensor_read(nn_ema_tensor(t.ema, 0), shadow[resumed], sizeof shadow[resumed]) == NN_OK);
        }
        scheduled_close(&t);
        nn_ctx_free(ctx);
    }
    if (weights[0] && weights[1]) {
        CHECK(memcmp(rates[0], rates[1], sizeof rates[0]) == 0);
        CHECK(memcmp(weights[0], weights[1], sizeof(float) * (size_t)n) == 0);
        CHECK(memcmp(shadow[0], shadow[1], sizeof shadow[0]) == 0);
    }
    free(weights[0]), free(weights[1]);
    remove(path);
}
