/* nnengine train's settings (train_config.h). */
#include "train_config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "models.h"
#include "optimizers.h"

/* The flags every rank of an mpirun job must share (rank_flags.h), as this
 * rank parsed them: not --device, --threads, --workers, the dataset's and
 * the training state's paths (hosts may mount them elsewhere) nor the
 * outputs, which rank 0 alone writes. */
static void add_flag(rank_flag *flags, int *n, const char *flag, const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(flags[*n].value, sizeof flags[*n].value, format, args);
    va_end(args);
    flags[(*n)++].flag = flag;
}

int train_config_shared_flags(const train_config *c, rank_flag *f) {
    int n = 0;
    char frozen[96] = "";
    for (int i = 0; i < c->freeze.count; i++)
        snprintf(frozen + strlen(frozen), sizeof frozen - strlen(frozen), "%s%s", i ? "," : "", c->freeze.values[i]);
    add_flag(f, &n, "the model", "%s", c->model);
    add_flag(f, &n, "--normalize", "%s", c->normalize ? c->normalize : "auto");
    add_flag(f, &n, "--init", "%s", c->init ? "FILE" : "(not given)");
    add_flag(f, &n, "--freeze", "%s", frozen);
    add_flag(f, &n, "--optimizer", "%s", c->optimizer);
    add_flag(f, &n, "--precision", "%s", c->precision);
    add_flag(f, &n, "--schedule", "%s", c->schedule);
    add_flag(f, &n, "--milestones", "%s", c->milestones ? c->milestones : "");
    add_flag(f, &n, "--save-best-by", "%s", c->save_best_by);
    add_flag(f, &n, "--resume", "%s", c->resume ? "FILE" : "(not given)");
    const struct { const char *flag; int64_t value; } ints[] = {
        {"--classes", c->classes},       {"--epochs", c->epochs},       {"--batch", c->batch},
        {"--seed", c->seed},             {"--limit", c->limit},         {"--stop-after", c->stop_after},
        {"--stop-after-step", c->stop_after_step},
        {"--no-capture", c->no_capture}, {"--flip", c->flip},           {"--random-crop", c->random_crop},
        {"--crop-pad", c->crop_pad},     {"--no-augment", c->no_augment}, {"--no-loss-scale", c->no_loss_scale},
        {"--nesterov", c->nesterov},     {"--warmup", c->warmup},       {"--step-size", c->step_size},
        {"--accumulate", c->accumulate}, {"--allow-nan", c->allow_nan}, {"--patience", c->patience},
        {"--global-batch", c->global_batch}, {"--sync-bn", c->sync_bn}, {"--eval-limit", c->eval_limit},
        {"--no-eval", c->no_eval}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) add_flag(f, &n, ints[i].flag, "%lld", (long long)ints[i].value);
    const struct { const char *flag; double value; } reals[] = {
        {"--lr", c->lr},         {"--momentum", c->momentum}, {"--weight-decay", c->weight_decay},
        {"--beta1", c->beta1},   {"--beta2", c->beta2},       {"--eps", c->eps},
        {"--val-fraction", c->validation_fraction}, {"--gamma", c->gamma}, {"--warmup-start", c->warmup_start},
        {"--eta-min", c->eta_min}, {"--max-lr", c->max_lr},   {"--pct-start", c->pct_start},
        {"--ema", c->ema}, {"--label-smoothing", c->label_smoothing}};
    for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++) add_flag(f, &n, reals[i].flag, "%.17g", reals[i].value);
    return n;
}

/* They reach 89% test accuracy on Fashion-MNIST with LeNet-5 in 10 epochs
 * (README); bench/README.md says how they were chosen. */
train_config train_config_defaults(void) {
    return (train_config){
        .device = "auto", .normalize = "auto", .schedule = NULL, .optimizer = NULL, .precision = "fp32",
        .epochs = 0, .batch = 0, .threads = 0, .seed = 1, .limit = 0, .crop_pad = -1,
        .lr = -1, .momentum = -1, .weight_decay = -1, .beta1 = -1, .beta2 = -1, .eps = -1, .label_smoothing = -1,
        .validation_fraction = 0.1,
        .step_size = 1, .gamma = 0.1, .warmup_start = 0.1, .pct_start = 0.3, .accumulate = 1,
        .save_best_by = "accuracy",
    };
}

void train_config_apply_recipe(train_config *c) {
    const model_recipe r = model_recipe_of(c->model);
    const char *recipe_optimizer = r.optimizer ? r.optimizer : "sgd";
    if (!c->optimizer) c->optimizer = recipe_optimizer;
    /* The recipe's rate and decay are its optimizer's: another one keeps its own defaults. */
    const bool recipe_optimizer_used = strcmp(c->optimizer, recipe_optimizer) == 0;
    const bool sgd = strcmp(c->optimizer, "sgd") == 0;
    if (!c->epochs) c->epochs = r.epochs ? r.epochs : 10;
    if (!c->schedule) c->schedule = r.schedule ? r.schedule : "cosine";
    if (c->batch == 0) c->batch = r.batch; /* still 0 without one: the input kind's (train_setup) */
    if (c->lr < 0 && recipe_optimizer_used && r.lr > 0) c->lr = r.lr;
    if (c->weight_decay < 0 && recipe_optimizer_used && r.weight_decay > 0) c->weight_decay = r.weight_decay;
    c->warmup_fraction = c->warmup ? 0.0 : r.warmup_fraction; /* --warmup N wins */
    if (c->label_smoothing < 0) c->label_smoothing = r.label_smoothing;
    if (sgd && r.nesterov) c->nesterov = true;
    if (c->crop_pad < 0 && !c->no_augment && r.crop_pad > 0) c->crop_pad = r.crop_pad;
    if (!c->no_augment && r.flip) c->flip = true;
}

int train_config_check(const train_config *c) {
    if (!model_known(c->model)) {
        char unknown[512];
        fprintf(stderr, "nnengine train: %s\n", model_unknown(c->model, unknown, sizeof unknown));
        return EXIT_BAD_INPUT;
    }
    if (!optimizer_known(c->optimizer)) {
        fprintf(stderr, "nnengine train: --optimizer takes %s, got '%s'\n", optimizer_names(), c->optimizer);
        return EXIT_BAD_INPUT;
    }
    if (c->freeze.count && (c->checkpoint || c->resume)) {
        fprintf(stderr, "nnengine train: --freeze cannot be combined with --checkpoint or --resume (a training "
                        "state holds every parameter's optimizer state)\n");
        return EXIT_BAD_INPUT;
    }
    /* --no-eval leaves nothing for these to compare or limit. */
    const char *needs_eval = c->save_best ? "--save-best" : c->patience ? "--patience"
                           : c->eval_limit ? "--eval-limit" : NULL;
    if (c->no_eval && needs_eval) {
        fprintf(stderr, "nnengine train: --no-eval cannot be combined with %s, which needs the evaluation after "
                        "each epoch\n", needs_eval);
        return EXIT_BAD_INPUT;
    }
    nn_schedule_kind kind;
    if (!nn_schedule_kind_parse(c->schedule, &kind)) {
        fprintf(stderr, "nnengine train: --schedule takes constant, step, multistep, exponential, cosine, onecycle or "
                        "linear, got '%s'\n", c->schedule);
        return EXIT_BAD_INPUT;
    }
    nn_schedule_options parsed;
    if (!train_parse_milestones(c->milestones, &parsed)) {
        fprintf(stderr, "nnengine train: --milestones takes 1 to %d increasing step numbers separated by commas, "
                        "got '%s'\n", NN_SCHEDULE_MAX_MILESTONES, c->milestones);
        return EXIT_BAD_INPUT;
    }
    if (kind == NN_SCHEDULE_MULTISTEP && !c->milestones) {
        fprintf(stderr, "nnengine train: --schedule multistep needs --milestones\n");
        return EXIT_BAD_INPUT;
    }
    if (c->ema >= 1) { /* a decay of 1 never moves the average: it would evaluate and save the initial weights */
        fprintf(stderr, "nnengine train: --ema takes a decay in [0, 1) (e.g. 0.999), got %g: at 1 the average "
                        "would stay the untrained initial weights\n", c->ema);
        return EXIT_BAD_INPUT;
    }
    return EXIT_OK;
}

/* --milestones "a,b,c" into o's milestones; NULL gives none. */
bool train_parse_milestones(const char *text, nn_schedule_options *o) {
    o->milestone_count = 0;
    if (!text) return true;
    const char *at = text;
    while (*at) {
        char *end;
        long long v = strtoll(at, &end, 10);
        if (end == at || v < 0 || o->milestone_count == NN_SCHEDULE_MAX_MILESTONES ||
            (o->milestone_count > 0 && v <= o->milestones[o->milestone_count - 1]))
            return false;
        o->milestones[o->milestone_count++] = v;
        if (*end == ',') end++;
        else if (*end) return false;
        at = end;
    }
    return o->milestone_count > 0;
}

/* The schedule the flags ask for over `total` optimizer steps; --max-lr
 * defaults to --lr (one-cycle). nn_schedule_new checks the values. */
nn_schedule_options train_schedule_options(const train_config *c, int64_t total) {
    const int64_t warmup = c->warmup ? c->warmup : (int64_t)(c->warmup_fraction * (double)total);
    nn_schedule_options o = {.base_lr = c->lr, .step_size = c->step_size, .gamma = c->gamma, .warmup = warmup,
                             .warmup_start = c->warmup_start, .total_steps = total, .eta_min = c->eta_min,
                             .max_lr = c->max_lr > 0 ? c->max_lr : c->lr, .pct_start = c->pct_start};
    nn_schedule_kind_parse(c->schedule, &o.kind);
    train_parse_milestones(c->milestones, &o);
    if (o.kind == NN_SCHEDULE_LINEAR) /* a ramp from --warmup-start of --lr to --lr, then --lr */
        o.start_factor = c->warmup_start, o.end_factor = 1.0, o.total_steps = warmup > 0 ? warmup : total;
    return o;
}
