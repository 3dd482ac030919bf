/* Muon with its auxiliary AdamW (include/nn_optim.h) behind the optimizer
 * interface. A matrix's update is not elementwise: its momentum
 * (MUON_MOMENTUM), Frobenius norm (SUM_SQUARES, MUON_NORMALIZE), the
 * Newton-Schulz iterations as GEMM and SCALE launches, then MUON_APPLY,
 * one launch sequence per matrix into scratch buffers sized for the
 * largest. Groups of AdamW parameters run ADAM_UPDATE over their runs of
 * the flat buffers. */
#include <math.h>
#include <stdlib.h>

#include "optimizer.h"

/* Keller Jordan's quintic Newton-Schulz coefficients. */
#define NS_A 3.4445f
#define NS_B (-4.7750f)
#define NS_C 2.0315f
#define NS_EPS 1e-7f

typedef struct muon {
    nn_optimizer base; /* first: an nn_optimizer * is a muon * */
    nn_muon_options options;
    bool *group_adamw;     /* per group: updated by AdamW */
    nn_tensor *x[2];       /* the iterate and the next one [largest matrix] */
    nn_tensor *gram, *poly; /* A = X X^T and B = b A + c A A [largest min(rows, cols)^2] */
    nn_tensor *norm_sq;    /* [1] */
} muon;

enum { MOMENTUM_BUFFER, EXP_AVG, EXP_AVG_SQ, STEP };

/* A matrix parameter's rows (its first dimension) and columns (the rest). */
static void matrix_of(const nn_tensor *p, int64_t *rows, int64_t *cols) {
    *rows = p->shape[0];
    *cols = p->numel / p->shape[0];
}

static nn_status gemm(nn_ctx *ctx, nn_tensor *a, nn_tensor *b, nn_tensor *c, int m, int n, int k, int trans_a,
                      int trans_b, int lda, int ldb, float alpha, float beta) {
    nn_gemm_params p = {.m = m, .n = n, .k = k, .trans_a = trans_a, .trans_b = trans_b, .lda = lda, .ldb = ldb,
                        .ldc = n, .batch = 1, .alpha = alpha, .beta = beta};
    nn_buffer_ref args[3] = {nn_tensor_ref(a), nn_tensor_ref(b), nn_tensor_ref(c)};
    return nn_ctx_run(ctx, NN_KERNEL_GEMM, args, 3, &p);
}

static nn_status scale(nn_ctx *ctx, nn_tensor *x, nn_tensor *out, int64_t n, float alpha) {
    nn_pointwise_params p = {.n = n, .op = NN_EW_SCALE, .alpha = alpha};
    nn_buffer_ref args[3] = {nn_tensor_ref(x), {0}, nn_tensor_ref(out)};
    return nn_ctx_run(ctx, NN_KERNEL_ELEMENTWISE, args, 3, &p);
}

/* One Newton-Schulz iteration x[0] -> x[1] on a rows x cols matrix; a tall
 * one is iterated as its transpose (A = X^T X, X = a X + X B^T). */
static nn_status newton_schulz_step(muon *mu, int rows, int cols) {
    nn_ctx *ctx = mu->base.set.ctx;
    const bool tall = rows > cols;
    const int s = tall ? cols : rows;
    nn_tensor *x = mu->x[0], *next = mu->x[1];
    if (tall) NN_TRY(gemm(ctx, x, x, mu->gram, s, s, rows, 1, 0, cols, cols, 1.0f, 0.0f));
    else NN_TRY(gemm(ctx, x, x, mu->gram, s, s, cols, 0, 1, cols, cols, 1.0f, 0.0f));
    NN_TRY(scale(ctx, mu->gram, mu->poly, (int64_t)s * s, NS_B));
    NN_TRY(gemm(ctx, mu->gram, mu->gram, mu->poly, s, s, s, 0, 0, s, s, NS_C, 1.0f));
    NN_TRY(scale(ctx, x, next, (int64_t)rows * cols, NS_A));
    if (tall) NN_TRY(gemm(ctx, x, mu->poly, next, rows, cols, cols, 0, 1, cols, s, 1.0f, 1.0f));
    else NN_TRY(gemm(ctx, mu->poly, x, next, rows, cols, rows, 0, 0, s, cols, 1.0f, 1.0f));
    mu->x[0] = next;
    mu->x[1] = x;
    return NN_OK;
}

static nn_status update_matrix(muon *mu, int i, const nn_optimizer_run *run) {
    nn_optimizer *opt = &mu->base;
    nn_ctx *ctx = opt->set.ctx;
    nn_tensor *param = opt->set.params[i];
    int64_t rows, cols;
    matrix_of(param, &rows, &cols);
    const nn_muon_params p = {.n = param->numel, .momentum = mu->options.momentum,
                              .nesterov = mu->options.nesterov, .eps = NS_EPS,
                              .scale = sqrtf(fmaxf(1.0f, (float)rows / (float)cols)),
                              .weight_decay = opt->groups[run->group].weight_decay};
    nn_buffer_ref momentum[4] = {nn_tensor_ref(param->grad), nn_tensor_ref(opt->states[MOMENTUM_BUFFER].views[i]),
                                 nn_tensor_ref(mu->x[0]), run->skip};
    NN_TRY(nn_ctx_run(ctx, NN_KERNEL_MUON_MOMENTUM, momentum, 4, &p));
    nn_pointwise_params squares = {.n = param->numel};
    nn_buffer_ref norm[2] = {nn_tensor_ref(mu->x[0]), nn_tensor_ref(mu->norm_sq)};
    NN_TRY(nn_ctx_run(ctx, NN_KERNEL_SUM_SQUARES, norm, 2, &squares));
    NN_TRY(nn_ctx_run(ctx, NN_KERNEL_MUON_NORMALIZE, norm, 2, &p));
    for (int k = 0; k < mu->options.ns_steps; k++) NN_TRY(newton_schulz_step(mu, (int)rows, (int)cols));
    nn_buffer_ref apply[4] = {nn_tensor_ref(param), nn_tensor_ref(mu->x[0]), run->lr, run->skip};
    return nn_ctx_run(ctx, NN_KERNEL_MUON_APPLY, apply, 4, &p);
}

static nn_status muon_update(nn_optimizer *opt, const nn_optimizer_run *run) {
    muon *mu = (muon *)opt;
    if (!mu->group_adamw[run->group]) {
        for (int i = run->first; i < run->first + run->count; i++)
            if (opt->set.params[i]->grad) NN_TRY(update_matrix(mu, i, run));
        return NN_OK;
    }
    const nn_muon_options *o = &mu->options;
    const nn_adam_params p = {.n = run->n, .beta1 = o->adamw_beta1, .beta2 = o->adamw_beta2, .eps = o->adamw_eps,
                              .weight_decay = opt->groups[run->group].weight_decay, .decoupled = 1};
    nn_buffer_ref args[8] = {run->param, run->grad, run->state[EXP_AVG], run->state[EXP_AVG_SQ], {0}, run->lr,
                             run->step, run->skip};
    return nn_ctx_run(opt->set.ctx, NN_KERNEL_ADAM_UPDATE, args, 8, &p);
}

static nn_status muon_step(nn_optimizer *opt, bool flat) {
    NN_TRY(nn_optimizer_advance_steps(opt, flat));
    return nn_optimizer_for_each_run(opt, flat, muon_update);
}

/* Informational in a training state. */
static int muon_describe(const nn_optimizer *opt, nn_optimizer_option *out, int capacity) {
    const nn_muon_options *o = &((const muon *)opt)->options;
    const nn_optimizer_number numbers[] = {
        {"lr", opt->lr},           {"momentum", o->momentum},         {"nesterov", o->nesterov},
        {"ns_steps", o->ns_steps}, {"weight_decay", o->weight_decay}, {"adamw_lr", o->adamw_lr},
        {"adamw_beta1", o->adamw_beta1}, {"adamw_beta2", o->adamw_beta2}, {"adamw_eps", o->adamw_eps},
        {"adamw_weight_decay", o->adamw_weight_decay}};
    return nn_optimizer_describe_numbers(out, capacity, numbers, sizeof numbers / sizeof numbers[0]);
}

static void muon_release(nn_optimizer *opt) {
    muon *mu = (muon *)opt;
    nn_tensor *owned[] = {mu->x[0], mu->x[1], mu->gram, mu->poly, mu->norm_sq};
    for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++)
        if (owned[i]) nn_tensor_free(owned[i]);
    free(mu->group_adamw);
}

static const nn_optimizer_class kMuon = {
    .name = "muon", .step = muon_step, .describe = muon_describe, .release = muon_release};

static nn_status check_options(const char *fn, const nn_muon_options *o) {
    if (!(o->momentum >= 0.0f && o->momentum < 1.0f))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: momentum must be in [0, 1), got %g", fn, o->momentum);
    if (o->ns_steps < 1 || o->ns_steps > 100)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: ns_steps must be in [1, 100], got %d", fn, o->ns_steps);
    NN_TRY(nn_optimizer_check_weight_decay(fn, o->weight_decay));
    NN_TRY(nn_optimizer_check_lr(fn, o->adamw_lr));
    NN_TRY(nn_optimizer_check_weight_decay(fn, o->adamw_weight_decay));
    if (!(o->adamw_beta1 >= 0.0f && o->adamw_beta1 < 1.0f) || !(o->adamw_beta2 >= 0.0f && o->adamw_beta2 < 1.0f))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: adamw betas must be in [0, 1), got (%g, %g)", fn, o->adamw_beta1,
                            o->adamw_beta2);
    if (!(isfinite(o->adamw_eps) && o->adamw_eps >= 0.0f))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: adamw_eps must be finite and >= 0, got %g", fn, o->adamw_eps);
    return NN_OK;
}

/* The scratch buffers for the largest matrix. */
static nn_status make_scratch(muon *mu) {
    nn_optimizer *opt = &mu->base;
    int64_t largest = 1, square = 1;
    for (int i = 0; i < opt->set.count; i++) {
        if (mu->group_adamw[opt->group_of[i]]) continue;
        int64_t rows, cols;
        matrix_of(opt->set.params[i], &rows, &cols);
        const int64_t s = rows < cols ? rows : cols;
        if (rows * cols > largest) largest = rows * cols;
        if (s * s > square) square = s * s;
    }
    const int64_t one = 1;
    nn_ctx *ctx = opt->set.ctx;
    mu->x[0] = nn_tensor_new(ctx, NN_F32, 1, &largest);
    mu->x[1] = mu->x[0] ? nn_tensor_new(ctx, NN_F32, 1, &largest) : NULL;
    mu->gram = mu->x[1] ? nn_tensor_new(ctx, NN_F32, 1, &square) : NULL;
    mu->poly = mu->gram ? nn_tensor_new(ctx, NN_F32, 1, &square) : NULL;
    mu->norm_sq = mu->poly ? nn_tensor_new(ctx, NN_F32, 1, &one) : NULL;
    return mu->norm_sq ? NN_OK : nn_last_status();
}

/* split_by_rank: nn_muon_new's one group, its parameters of rank < 2 moved to an AdamW group. */
static nn_optimizer *make(const char *fn, const nn_param_group *groups, int count, const nn_muon_options *options,
                          bool split_by_rank) {
    if (!options) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: options is NULL", fn);
    if (check_options(fn, options)) return NULL;
    for (int g = 0; !split_by_rank && groups && g < count; g++)
        for (int k = 0; !groups[g].adamw && groups[g].params && k < groups[g].count; k++)
            if (groups[g].params[k] && groups[g].params[k]->ndim < 2)
                return NN_FAIL_NULL(NN_ERR_ARGUMENT,
                                    "%s: group %d parameter %d has %d dimension(s): Muon updates matrices; put it "
                                    "in a group with adamw = true", fn, g, k, groups[g].params[k]->ndim);
    muon *mu = calloc(1, sizeof *mu);
    if (!mu) return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", fn);
    mu->options = *options;
    nn_status st = nn_optimizer_init_groups(&mu->base, &kMuon, fn, groups, count);
    /* By rank: group 0 (Muon, the given one) and group 1 (AdamW), the order kept. */
    if (st == NN_OK && split_by_rank) st = nn_optimizer_add_group(&mu->base, options->adamw_lr,
                                                                   options->adamw_weight_decay);
    const int group_count = mu->base.group_count;
    mu->group_adamw = st == NN_OK ? calloc((size_t)group_count, sizeof *mu->group_adamw) : NULL;
    if (st == NN_OK && !mu->group_adamw) st = nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", fn);
    for (int g = 0; st == NN_OK && g < group_count; g++) mu->group_adamw[g] = split_by_rank ? g == 1 : groups[g].adamw;
    for (int i = 0; st == NN_OK && split_by_rank && i < mu->base.set.count; i++)
        nn_optimizer_assign_group(&mu->base, i, mu->base.set.params[i]->ndim >= 2 ? 0 : 1);
    if (st == NN_OK) st = nn_optimizer_add_state(&mu->base, "momentum_buffer");
    if (st == NN_OK) st = nn_optimizer_add_state(&mu->base, "exp_avg");
    if (st == NN_OK) st = nn_optimizer_add_state(&mu->base, "exp_avg_sq");
    if (st == NN_OK) st = nn_optimizer_add_step_state(&mu->base);
    if (st == NN_OK) st = make_scratch(mu);
    if (st != NN_OK) {
        nn_optimizer_free(&mu->base);
        return NULL;
    }
    return &mu->base;
}

nn_optimizer *nn_muon_new(nn_tensor *const *params, int count, const nn_muon_options *options) {
    const char *fn = "nn_muon_new";
    if (!options) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: options is NULL", fn);
    if (!params) return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: need at least one parameter (params is NULL)", fn);
    const nn_param_group group = {params, count, options->lr, options->weight_decay, false};
    return make(fn, &group, 1, options, true);
}

nn_optimizer *nn_muon_new_groups(const nn_param_group *groups, int count, const nn_muon_options *options) {
    return make("nn_muon_new_groups", groups, count, options, false);
}
