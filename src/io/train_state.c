/* The training state for --resume, as ONE safetensors file.
 *
 * Why one file and not weights + a side file: a resume must restore
 * parameters, optimizer state and progress together, and two files can get
 * out of step (one copied, renamed or overwritten without the other); one
 * atomically written file cannot. The cost is that this file is not a plain
 * state_dict: it also holds "optimizer.<param name>.<state name>" tensors
 * (the optimizer's named state, nn_optimizer_state_name: SGD's
 * "momentum_buffer"), so torch's load_state_dict(strict=True) would refuse
 * them. The weights-only file for torch and `eval --weights` is what
 * nn_save_module writes (the CLI's --save); in PyTorch, a training state's
 * parameters are the keys without the "optimizer." prefix.
 *
 * __metadata__ (all values are strings, as safetensors requires):
 *   format "nn-engine-train-state", format_version "1",
 *   epoch, step, seed, rng_state, rng_increment (decimal integers),
 *   epoch_step and the stopped epoch's figures so far, epoch_loss_sum,
 *   epoch_correct (%.17g) and epoch_images (only for a run stopped part
 *   way), best_epoch, best_metric
 *   (%.17g: the double read back exactly) and best_by (only when a best
 *   epoch is recorded),
 *   optimizer (nn_optimizer_name) and its options (informational: a
 *   resumed run may change the learning rate; the optimizer and the state
 *   it keeps must match).
 * With nn_train_extras, also "run" (the caller's description of the run) and
 * "schedule.step" (the schedule's counter) and
 * "ema.<name>" (the moving average's shadow of each state_dict entry). With
 * dynamic loss scaling (nn_optimizer_enable_loss_scaling), "loss_scale.state":
 * the scale, the overflow flag, the good steps since the scale last changed
 * and the steps skipped; a file without it (written before it was saved)
 * resumes at the run's initial scale. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_ema.h"
#include "nn_schedule.h"
#include "optim/optimizer.h"
#include "safetensors.h"

#define FORMAT_NAME NN_TRAIN_STATE_FORMAT
#define FORMAT_VERSION "1"
#define STATE_PREFIX "optimizer."
#define SCHEDULE_NAME "schedule.step"
#define MAX_EPOCHS INT32_MAX        /* epochs are counted in int by training loops */
#define MAX_STEPS (INT64_C(1) << 53) /* optimizer steps, exact as doubles too */
#define EMA_PREFIX "ema."
#define LOSS_SCALE_NAME "loss_scale.state"
#define MAX_OPTIONS 16

static nn_status check_pairing(const char *who, const nn_module *m, const nn_optimizer *opt) {
    int count = nn_optimizer_param_count(opt);
    if (count != nn_module_param_count(m))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: the optimizer holds %d parameters, the module %d",
                            who, count, nn_module_param_count(m));
    for (int i = 0; i < count; i++)
        if (nn_optimizer_param(opt, i) != nn_module_param(m, i))
            return nn_set_error(NN_ERR_ARGUMENT, "%s: optimizer parameter %d is not module "
                                                 "parameter %d ('%s'): create the optimizer over "
                                                 "the module's parameters in order",
                                who, i, i, nn_module_param_name(m, i));
    return NN_OK;
}

/* The file name of parameter `param`'s state `state` (caller frees). */
static char *state_name(const nn_module *m, const nn_optimizer *opt, int param, int state) {
    const char *suffix = nn_optimizer_state_name(opt, state), *param_name = nn_module_param_name(m, param);
    size_t len = strlen(STATE_PREFIX) + strlen(param_name) + 1 + strlen(suffix) + 1;
    char *name = malloc(len);
    if (name) snprintf(name, len, "%s%s.%s", STATE_PREFIX, param_name, suffix);
    return name;
}

/* How many names state_bindings allocates. */
static int allocated_names(const nn_module *m, const nn_optimizer *opt, const nn_train_extras *extras) {
    return nn_module_param_count(m) * nn_optimizer_state_count(opt) + (extras ? nn_ema_count(extras->ema) : 0);
}

/* "ema.<name>" (caller frees). */
static char *ema_name(const nn_ema *ema, int i) {
    const char *name = nn_ema_name(ema, i);
    size_t len = strlen(EMA_PREFIX) + strlen(name) + 1;
    char *out = malloc(len);
    if (out) snprintf(out, len, "%s%s", EMA_PREFIX, name);
    return out;
}

/* The module's state_dict (parameters and buffers), then each state of the
 * optimizer for every parameter, then the extras' tensors. The names made
 * here are allocated into names[] (caller frees, allocated_names of them). */
/* What the file holds or will hold, bound to the run's tensors; the loss
 * scale's state only with_loss_scale. */
static nn_st_binding *state_bindings(const char *who, const nn_module *m, const nn_optimizer *opt,
                                     const nn_train_extras *extras, bool with_loss_scale, int *count, char ***names) {
    const int kept = nn_module_state_count(m), n = nn_module_param_count(m), states = nn_optimizer_state_count(opt);
    nn_schedule *schedule = extras ? extras->schedule : NULL;
    const nn_ema *ema = extras ? extras->ema : NULL;
    const int averaged = nn_ema_count(ema), allocated = allocated_names(m, opt, extras);
    const int total = kept + n * states + (schedule ? 1 : 0) + averaged + (with_loss_scale ? 1 : 0);
    nn_st_binding *b = calloc((size_t)total + 1, sizeof *b);
    char **state_names = calloc((size_t)allocated + 1, sizeof *state_names);
    bool ok = b && state_names;
    for (int i = 0; ok && i < kept; i++) b[i] = (nn_st_binding){nn_module_state_name(m, i), nn_module_state(m, i)};
    for (int i = 0; ok && i < n; i++)
        for (int s = 0; ok && s < states; s++) {
            char **name = &state_names[s * n + i];
            ok = (*name = state_name(m, opt, i, s)) != NULL;
            b[kept + s * n + i] = (nn_st_binding){*name, nn_optimizer_state(opt, i, s)};
        }
    int next = kept + n * states;
    if (ok && schedule) b[next++] = (nn_st_binding){SCHEDULE_NAME, nn_schedule_counter(schedule)};
    if (ok && with_loss_scale) b[next++] = (nn_st_binding){LOSS_SCALE_NAME, nn_loss_scaler_state(opt)};
    for (int i = 0; ok && i < averaged; i++) {
        char **name = &state_names[n * states + i];
        ok = (*name = ema_name(ema, i)) != NULL;
        b[next++] = (nn_st_binding){*name, nn_ema_tensor(ema, i)};
    }
    if (!ok) {
        for (int i = 0; state_names && i < allocated; i++) free(state_names[i]);
        free(state_names);
        free(b);
        return NN_FAIL_NULL(NN_ERR_MEMORY, "%s: out of host memory", who);
    }
    *count = total;
    *names = state_names;
    return b;
}

static void free_names(char **names, int n) {
    for (int i = 0; names && i < n; i++) free(names[i]);
    free(names);
}

/* best_by: what a metric name may be (it is written into JSON metadata and
 * compared by name), so "" and control characters are refused. */
static bool metric_name_ok(const char *name, size_t capacity) {
    size_t n = strnlen(name, capacity);
    if (n == 0 || n == capacity) return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == '"' || name[i] == '\\' || (unsigned char)name[i] >= 0x7f)
            return false;
    return true;
}

static nn_status check_best(const char *who, const nn_train_progress *p) {
    if (p->best_epoch == 0) return NN_OK;
    if (p->best_epoch < 0 || p->best_epoch > p->epoch)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: best_epoch must be in [0, epoch %" PRId64 "], got %" PRId64, who,
                            p->epoch, p->best_epoch);
    if (!isfinite(p->best_metric))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: best_metric of best_epoch %" PRId64 " must be finite, got %g", who,
                            p->best_epoch, p->best_metric);
    if (!metric_name_ok(p->best_by, sizeof p->best_by))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: best_by must name the metric in 1 to %zu printable ASCII characters "
                                             "(no quotes or backslashes)", who, sizeof p->best_by - 1);
    return NN_OK;
}

nn_status nn_save_train_state(const char *path, const nn_module *module, const nn_optimizer *opt,
                              const nn_train_progress *progress) {
    return nn_save_train_state_with(path, module, opt, NULL, progress);
}

nn_status nn_save_train_state_with(const char *path, const nn_module *module, const nn_optimizer *opt,
                                   const nn_train_extras *extras, const nn_train_progress *progress) {
    const char *who = "nn_save_train_state";
    if (!module || !opt || !progress)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: %s is NULL", who,
                            !module ? "module" : !opt ? "optimizer" : "progress");
    if (!path || !*path) return nn_set_error(NN_ERR_ARGUMENT, "%s: path is NULL or empty", who);
    if (progress->epoch < 0 || progress->step < 0 || progress->epoch > MAX_EPOCHS || progress->step > MAX_STEPS ||
        progress->epoch_step < 0 || progress->epoch_step > progress->step)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: epoch, step and epoch_step must be in [0, %d], [0, 2^53] and [0, "
                                             "step], got %" PRId64 ", %" PRId64 " and %" PRId64, who, MAX_EPOCHS,
                            progress->epoch, progress->step, progress->epoch_step);
    NN_TRY(check_best(who, progress));
    if (!isfinite(progress->epoch_loss_sum) || !(progress->epoch_correct >= 0) ||
        !isfinite(progress->epoch_correct) || progress->epoch_images < 0 || progress->epoch_images > MAX_STEPS ||
        (!progress->epoch_step && (progress->epoch_loss_sum || progress->epoch_correct || progress->epoch_images)))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: the stopped epoch's figures must be finite, its correct and images "
                                             "counts at least 0, and all 0 without epoch_step; got loss sum %g, "
                                             "correct %g, images %" PRId64 " (epoch_step %" PRId64 ")", who,
                            progress->epoch_loss_sum, progress->epoch_correct, progress->epoch_images,
                            progress->epoch_step);
    NN_TRY(check_pairing(who, module, opt));
    const nn_rng *rng = &nn_module_ctx(module)->rng;
    char values[11][32];
    snprintf(values[0], 32, "%" PRId64, progress->epoch);
    snprintf(values[1], 32, "%" PRId64, progress->step);
    snprintf(values[2], 32, "%" PRIu64, progress->seed);
    snprintf(values[3], 32, "%" PRIu64, rng->state);
    snprintf(values[4], 32, "%" PRIu64, rng->increment);
    snprintf(values[5], 32, "%" PRId64, progress->epoch_step);
    snprintf(values[6], 32, "%" PRId64, progress->best_epoch);
    snprintf(values[7], 32, "%.17g", progress->best_metric);
    snprintf(values[8], 32, "%.17g", progress->epoch_loss_sum);
    snprintf(values[9], 32, "%.17g", progress->epoch_correct);
    snprintf(values[10], 32, "%" PRId64, progress->epoch_images);
    nn_st_meta meta[16 + MAX_OPTIONS] = { /* 8 always, 4 of a stopped epoch, 3 of the best epoch, run */
        {"format", FORMAT_NAME}, {"format_version", FORMAT_VERSION},
        {"epoch", values[0]}, {"step", values[1]}, {"seed", values[2]},
        {"rng_state", values[3]}, {"rng_increment", values[4]}, {"optimizer", (char *)nn_optimizer_name(opt)},
    };
    int meta_count = 8;
    if (progress->epoch_step) { /* only when stopped part way */
        meta[meta_count++] = (nn_st_meta){"epoch_step", values[5]};
        meta[meta_count++] = (nn_st_meta){"epoch_loss_sum", values[8]};
        meta[meta_count++] = (nn_st_meta){"epoch_correct", values[9]};
        meta[meta_count++] = (nn_st_meta){"epoch_images", values[10]};
    }
    if (progress->best_epoch) {
        meta[meta_count++] = (nn_st_meta){"best_epoch", values[6]};
        meta[meta_count++] = (nn_st_meta){"best_metric", values[7]};
        meta[meta_count++] = (nn_st_meta){"best_by", (char *)progress->best_by};
    }
    if (extras && extras->run) {
        const size_t length = strlen(extras->run);
        bool printable = length < NN_TRAIN_STATE_RUN_MAX;
        for (size_t i = 0; printable && i < length; i++) printable = (unsigned char)extras->run[i] >= 0x20;
        if (!printable)
            return nn_set_error(NN_ERR_ARGUMENT, "%s: extras->run must be printable text of at most %d bytes", who,
                                NN_TRAIN_STATE_RUN_MAX - 1);
        meta[meta_count++] = (nn_st_meta){"run", (char *)extras->run};
    }
    nn_optimizer_option options[MAX_OPTIONS];
    const int option_count = nn_optimizer_describe(opt, options, MAX_OPTIONS);
    for (int i = 0; i < option_count; i++) meta[meta_count + i] = (nn_st_meta){(char *)options[i].name, options[i].value};
    int count;
    char **names;
    nn_st_binding *b = state_bindings(who, module, opt, extras, nn_loss_scaler_state(opt) != NULL, &count, &names);
    if (!b) return nn_last_status();
    nn_status status = nn_st_save(who, path, b, count, meta, meta_count + option_count);
    free(b);
    free_names(names, allocated_names(module, opt, extras));
    return status;
}

/* A decimal metadata integer, strictly (digits only, in range). */
static nn_status meta_u64(const char *who, const char *path, const nn_st_header *h,
                          const char *key, uint64_t max, uint64_t *out) {
    const char *text = nn_st_meta_get(h, key);
    if (!text)
        return nn_set_error(NN_ERR_IO, "%s: %s: training state lacks metadata \"%s\"", who, path, key);
    bool digits = *text != '\0';
    for (const char *c = text; *c; c++) digits = digits && *c >= '0' && *c <= '9';
    errno = 0;
    unsigned long long v = digits ? strtoull(text, NULL, 10) : 0;
    if (!digits || errno == ERANGE || v > max)
        return nn_set_error(NN_ERR_IO, "%s: %s: metadata \"%s\" = \"%.40s\" is not an integer in "
                                       "[0, %" PRIu64 "]", who, path, key, text, max);
    *out = v;
    return NN_OK;
}

/* A finite decimal metadata number, at least `min` (-HUGE_VAL: any). */
static nn_status meta_double(const char *who, const char *path, const nn_st_header *h, const char *key, double min,
                             double *out) {
    const char *text = nn_st_meta_get(h, key);
    if (!text) return nn_set_error(NN_ERR_IO, "%s: %s: training state lacks metadata \"%s\"", who, path, key);
    char *end;
    errno = 0;
    const double value = strtod(text, &end);
    if (end == text || *end || !isfinite(value) || !(value >= min)) {
        char bound[48] = "";
        if (isfinite(min)) snprintf(bound, sizeof bound, " of at least %g", min);
        return nn_set_error(NN_ERR_IO, "%s: %s: metadata \"%s\" = \"%.40s\" is not a finite number%s", who, path,
                            key, text, bound);
    }
    *out = value;
    return NN_OK;
}

/* The stopped epoch's figures (all three, or none: an older file, or a
 * state written after a whole epoch). */
static nn_status read_stopped_epoch(const char *who, const char *path, const nn_st_header *h, uint64_t epoch_step,
                                    nn_train_progress *progress) {
    progress->epoch_loss_sum = progress->epoch_correct = 0;
    progress->epoch_images = 0;
    if (!epoch_step || !nn_st_meta_get(h, "epoch_images")) return NN_OK;
    uint64_t images;
    NN_TRY(meta_u64(who, path, h, "epoch_images", MAX_STEPS, &images));
    NN_TRY(meta_double(who, path, h, "epoch_loss_sum", -HUGE_VAL, &progress->epoch_loss_sum));
    NN_TRY(meta_double(who, path, h, "epoch_correct", 0, &progress->epoch_correct));
    progress->epoch_images = (int64_t)images;
    return NN_OK;
}

/* best_epoch, best_metric and best_by (all three, or none: an older file or
 * a run without a best epoch yet) into *progress. */
static nn_status read_best(const char *who, const char *path, const nn_st_header *h, uint64_t epoch,
                           nn_train_progress *progress) {
    progress->best_epoch = 0;
    progress->best_metric = 0;
    memset(progress->best_by, 0, sizeof progress->best_by);
    if (!nn_st_meta_get(h, "best_epoch")) return NN_OK;
    uint64_t best_epoch;
    NN_TRY(meta_u64(who, path, h, "best_epoch", epoch, &best_epoch));
    const char *metric = nn_st_meta_get(h, "best_metric"), *by = nn_st_meta_get(h, "best_by");
    if (!metric || !by)
        return nn_set_error(NN_ERR_IO, "%s: %s: training state has \"best_epoch\" but lacks metadata \"%s\"", who,
                            path, !metric ? "best_metric" : "best_by");
    double value;
    NN_TRY(meta_double(who, path, h, "best_metric", -HUGE_VAL, &value));
    if (!metric_name_ok(by, sizeof progress->best_by))
        return nn_set_error(NN_ERR_IO, "%s: %s: metadata \"best_by\" = \"%.40s\" is not a metric name (1 to %zu "
                                       "printable characters)", who, path, by, sizeof progress->best_by - 1);
    if (best_epoch == 0)
        return nn_set_error(NN_ERR_IO, "%s: %s: metadata \"best_epoch\" is 0 (epochs count from 1)", who, path);
    progress->best_epoch = (int64_t)best_epoch;
    progress->best_metric = value;
    snprintf(progress->best_by, sizeof progress->best_by, "%s", by);
    return NN_OK;
}

/* Everything in the metadata, checked before any tensor is touched. */
static nn_status read_metadata(const char *who, const char *path, const nn_st_header *h, const nn_optimizer *opt,
                               nn_train_progress *progress, nn_rng *rng) {
    const char *format = nn_st_meta_get(h, "format");
    if (!format || strcmp(format, FORMAT_NAME) != 0)
        return nn_set_error(NN_ERR_IO, "%s: %s: not an nn-engine training state (metadata "
                                       "\"format\" is %s%.40s%s); a weights-only checkpoint loads "
                                       "with nn_load_module", who, path, format ? "\"" : "",
                            format ? format : "missing", format ? "\"" : "");
    const char *version = nn_st_meta_get(h, "format_version");
    if (!version || strcmp(version, FORMAT_VERSION) != 0)
        return nn_set_error(NN_ERR_IO, "%s: %s: training state format_version %.20s, this build "
                                       "reads %s", who, path, version ? version : "(missing)",
                            FORMAT_VERSION);
    const char *optimizer = nn_st_meta_get(h, "optimizer");
    if (!optimizer)
        return nn_set_error(NN_ERR_IO, "%s: %s: training state lacks metadata \"optimizer\"", who, path);
    if (strcmp(optimizer, nn_optimizer_name(opt)) != 0)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: %s: a training state of optimizer \"%.20s\" cannot resume "
                                             "\"%s\"", who, path, optimizer, nn_optimizer_name(opt));
    uint64_t epoch, step, seed, state, increment;
    /* Sane bounds, so a crafted 2^63-1 cannot overflow the arithmetic a
     * resuming loop does with them (epoch * steps per epoch). */
    NN_TRY(meta_u64(who, path, h, "epoch", MAX_EPOCHS, &epoch));
    NN_TRY(meta_u64(who, path, h, "step", MAX_STEPS, &step));
    NN_TRY(meta_u64(who, path, h, "seed", UINT64_MAX, &seed));
    NN_TRY(meta_u64(who, path, h, "rng_state", UINT64_MAX, &state));
    NN_TRY(meta_u64(who, path, h, "rng_increment", UINT64_MAX, &increment));
    uint64_t epoch_step = 0;
    if (nn_st_meta_get(h, "epoch_step")) NN_TRY(meta_u64(who, path, h, "epoch_step", step, &epoch_step));
    NN_TRY(read_best(who, path, h, epoch, progress));
    NN_TRY(read_stopped_epoch(who, path, h, epoch_step, progress));
    if (increment % 2 == 0) /* PCG32 needs an odd increment */
        return nn_set_error(NN_ERR_IO, "%s: %s: metadata rng_increment must be odd", who, path);
    progress->epoch = (int64_t)epoch;
    progress->step = (int64_t)step;
    progress->seed = seed;
    progress->epoch_step = (int64_t)epoch_step;
    nn_rng_set_state(rng, state, increment);
    return NN_OK;
}

/* The file's optimizer state, checked against the optimizer's before any
 * tensor is read: each state the optimizer keeps must be there, and the
 * file must hold no state the optimizer does not keep (named by the first
 * parameter's entries). */
static nn_status check_states(const char *who, const char *path, const nn_st_header *h, const nn_module *m,
                              const nn_optimizer *opt) {
    if (nn_module_param_count(m) == 0) return NN_OK;
    /* The module first: another model's file lacks its parameters before any optimizer state. */
    if (!nn_st_find(h, nn_module_param_name(m, 0)))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: %s: the file holds another model's state: it has no \"%.200s\" "
                                             "(this module's first parameter)", who, path, nn_module_param_name(m, 0));
    for (int s = 0; s < nn_optimizer_state_count(opt); s++) {
        char *name = state_name(m, opt, 0, s);
        if (!name) return nn_set_error(NN_ERR_MEMORY, "%s: out of host memory", who);
        bool found = nn_st_find(h, name) != NULL;
        free(name);
        if (!found)
            return nn_set_error(NN_ERR_ARGUMENT, "%s: %s: the optimizer keeps %s tensors but the file has none",
                                who, path, nn_optimizer_state_name(opt, s));
    }
    char prefix[512];
    snprintf(prefix, sizeof prefix, "%s%s.", STATE_PREFIX, nn_module_param_name(m, 0));
    for (int e = 0; e < h->count; e++) {
        const char *entry = h->entries[e].name;
        if (strncmp(entry, prefix, strlen(prefix)) != 0) continue;
        const char *state = entry + strlen(prefix);
        bool kept = false;
        for (int s = 0; s < nn_optimizer_state_count(opt) && !kept; s++)
            kept = strcmp(state, nn_optimizer_state_name(opt, s)) == 0;
        if (!kept)
            return nn_set_error(NN_ERR_ARGUMENT, "%s: %s: the file holds %.60s tensors but the optimizer keeps none "
                                                 "(another optimizer or other options)", who, path, state);
    }
    return NN_OK;
}

nn_status nn_load_train_state(const char *path, nn_module *module, nn_optimizer *opt, nn_train_progress *progress) {
    return nn_load_train_state_with(path, module, opt, NULL, progress);
}

/* The file's extras must be the run's: a schedule's counter or a moving
 * average that only one side has would be dropped or left at its start; so
 * would a loss scale the run does not use (one the file lacks starts at the
 * run's initial scale: files from before it was saved). */
static nn_status check_extras(const char *who, const char *path, const nn_st_header *h, const nn_train_extras *extras,
                            const nn_optimizer *opt) {
    bool schedule = extras && extras->schedule, file_schedule = nn_st_find(h, SCHEDULE_NAME) != NULL;
    if (schedule != file_schedule)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: %s: the file %s a learning-rate schedule's step (\"%s\") but the run "
                                             "%s one", who, path, file_schedule ? "holds" : "lacks", SCHEDULE_NAME,
                            schedule ? "has" : "has no");
    bool ema = extras && extras->ema, file_ema = false;
    for (int e = 0; e < h->count && !file_ema; e++)
        file_ema = strncmp(h->entries[e].name, EMA_PREFIX, strlen(EMA_PREFIX)) == 0;
    if (ema != file_ema)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: %s: the file %s moving-average weights (\"%s*\") but the run %s "
                                             "them", who, path, file_ema ? "holds" : "lacks", EMA_PREFIX,
                            ema ? "keeps" : "does not keep");
    if (nn_st_find(h, LOSS_SCALE_NAME) && !nn_loss_scaler_state(opt))
        return nn_set_error(NN_ERR_ARGUMENT, "%s: %s: the file holds a dynamic loss scale (\"%s\") but the run does "
                                             "not scale its loss", who, path, LOSS_SCALE_NAME);
    return NN_OK;
}

nn_status nn_train_state_run(const char *path, char *out, size_t size) {
    const char *who = "nn_train_state_run";
    if (!out || size == 0) return nn_set_error(NN_ERR_ARGUMENT, "%s: no room for the text", who);
    nn_st_header header; /* the metadata alone: the tensors stay on disk */
    NN_TRY(nn_st_read_header(who, path, &header));
    const char *format = nn_st_meta_get(&header, "format");
    const char *run = nn_st_meta_get(&header, "run");
    nn_status status = NN_OK;
    if (!format || strcmp(format, FORMAT_NAME) != 0)
        status = nn_set_error(NN_ERR_ARGUMENT, "%s: %s is not an nn-engine training state", who, path);
    else if (run && strlen(run) >= size)
        status = nn_set_error(NN_ERR_ARGUMENT, "%s: %s: its run description (%zu bytes) does not fit %zu", who, path,
                              strlen(run), size);
    else snprintf(out, size, "%s", run ? run : "");
    nn_st_header_free(&header);
    return status;
}

nn_status nn_load_train_state_with(const char *path, nn_module *module, nn_optimizer *opt,
                                   const nn_train_extras *extras, nn_train_progress *progress) {
    const char *who = "nn_load_train_state";
    if (!module || !opt || !progress)
        return nn_set_error(NN_ERR_ARGUMENT, "%s: %s is NULL", who,
                            !module ? "module" : !opt ? "optimizer" : "progress");
    NN_TRY(check_pairing(who, module, opt));
    nn_st_file file;
    NN_TRY(nn_st_open(who, path, &file));
    nn_train_progress loaded;
    nn_rng rng;
    nn_status status = read_metadata(who, path, &file.header, opt, &loaded, &rng);
    if (status == NN_OK) status = check_states(who, path, &file.header, module, opt);
    if (status == NN_OK) status = check_extras(who, path, &file.header, extras, opt);
    int count = 0;
    char **names = NULL;
    nn_st_binding *b = NULL;
    if (status == NN_OK) {
        const bool loss_scale = nn_loss_scaler_state(opt) && nn_st_find(&file.header, LOSS_SCALE_NAME);
        b = state_bindings(who, module, opt, extras, loss_scale, &count, &names);
        if (!b) status = nn_last_status();
    }
    if (status == NN_OK) status = nn_st_assign(who, path, &file, b, count);
    /* The counter is restored; the rate of its step is written from it. It
     * counts optimizer steps, so it cannot be past the file's (nor near the
     * int32 counter's end, where the next step would overflow it). */
    int64_t step;
    if (status == NN_OK && extras && extras->schedule && (status = nn_schedule_get_step(extras->schedule, &step)) == NN_OK) {
        if (step < 0 || step > loaded.step || step >= INT32_MAX)
            status = nn_set_error(NN_ERR_IO, "%s: %s: the schedule's step (\"%s\") is %lld, outside [0, %lld], the "
                                  "file's optimizer steps", who, path, SCHEDULE_NAME, (long long)step,
                                  (long long)loaded.step);
        else status = nn_schedule_set_step(extras->schedule, step);
    }
    if (status == NN_OK && nn_st_find(&file.header, LOSS_SCALE_NAME))
        status = nn_loss_scaler_check_state(opt, who, path);
    if (status == NN_OK) {
        nn_module_ctx(module)->rng = rng;
        *progress = loaded;
    }
    free(b);
    free_names(names, allocated_names(module, opt, extras));
    nn_st_close(&file);
    return status;
}
