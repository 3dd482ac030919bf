/* nnengine train MODEL --data DIR [options]: the training loop. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "best_epoch.h"
#include "class_names.h"
#include "commands.h"
#include "device_steps.h"
#include "dist_train.h"
#include "epoch_log.h"
#include "evaluate.h"
#include "interrupt.h"
#include "label_check.h"
#include "loss_guard.h"
#include "model_summary.h"
#include "models.h"
#include "nn_io.h"
#include "optimizers.h"
#include "options.h"
#include "output_paths.h"
#include "photo_data.h"
#include "platform/files.h"
#include "progress.h"
#include "rank_flags.h"
#include "saved_flags.h"
#include "setup.h"
#include "tensorboard.h"

typedef struct train_config {
    const char *model, *data, *device, *save, *log, *normalize, *schedule;
    const char *checkpoint, *resume; /* training state written after each epoch / read at the start */
    const char *init;       /* fine-tuning: weights to start from (a state_dict, e.g. torchvision's) */
    int64_t classes;        /* 0, or the classifier's outputs (replacing the init file's) */
    option_strings freeze;  /* parameter-name prefixes left out of training */
    int64_t epochs, batch, threads, seed, limit;
    int64_t stop_after; /* 0, or end after this epoch (the schedule still spans --epochs) */
    int64_t stop_after_step; /* 0, or stop as Ctrl+C does after this optimizer step of the run */
    bool no_capture;    /* run every step eagerly instead of replaying a captured one */
    int64_t workers;    /* photos: decoding threads (0: one per core but one) */
    bool flip, random_crop; /* photos: augmentation; flip also for data on the device */
    int64_t crop_pad;       /* data on the device: random shifts of up to this many pixels */
    bool no_augment;        /* none of a model's default augmentation */
    const char *optimizer;  /* optimizers.h */
    const char *precision;  /* of the products: fp32, fp16, bf16 (nn_ctx_set_precision) */
    bool no_loss_scale;     /* fp16 without dynamic loss scaling */
    bool nesterov;
    double lr, momentum, weight_decay, beta1, beta2, eps, validation_fraction;
    /* the schedule (nn_schedule.h), in optimizer steps; accumulation; the weights' average */
    const char *milestones;
    int64_t warmup, step_size, accumulate;
    double gamma, warmup_start, eta_min, max_lr, pct_start, ema;
    bool allow_nan; /* train on past a non-finite loss (the divergence guard only warns) */
    /* what the run reports and keeps besides the epoch lines */
    const char *save_best, *save_best_by, *log_format, *tensorboard;
    int64_t patience;      /* 0, or stop after this many epochs without a better one */
    int64_t eval_limit;    /* 0, or evaluate on the first N test (or validation) images */
    bool no_eval;          /* no evaluation after the epochs */
    bool quiet;            /* no model summary */
    /* mpirun -n N (dist_train.h): the batch of all ranks together; BatchNorm statistics over all ranks */
    int64_t global_batch;
    bool sync_bn;
    const char *log_steps; /* each step's mean loss (over every rank's images), one line per step */
    const char *class_names; /* a file naming the data's classes, one per line (saved with the weights) */
} train_config;

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

static int shared_flags(const train_config *c, rank_flag *f) {
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
        {"--ema", c->ema}};
    for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++) add_flag(f, &n, reals[i].flag, "%.17g", reals[i].value);
    return n;
}

/* The defaults reach 89% test accuracy on Fashion-MNIST with LeNet-5 in 10
 * epochs (README); see bench/README.md for how they were chosen. Unset
 * values (negative, 0 or NULL) take the model's recipe (apply_recipe) and
 * the optimizer's defaults (optimizers.h). */
static train_config defaults(void) {
    return (train_config){
        .device = "auto", .normalize = "auto", .schedule = NULL, .optimizer = "sgd", .precision = "fp32",
        .epochs = 0, .batch = 0, .threads = 0, .seed = 1, .limit = 0, .crop_pad = -1,
        .lr = -1, .momentum = -1, .weight_decay = -1, .beta1 = -1, .beta2 = -1, .eps = -1,
        .validation_fraction = 0.1,
        .step_size = 1, .gamma = 0.1, .warmup_start = 0.1, .pct_start = 0.3, .accumulate = 1,
        .save_best_by = "accuracy",
    };
}

typedef struct trainer {
    train_config config;
    data_setup data;       /* images held in memory and on the device (LeNet, MLP) */
    bool photos;           /* the model takes photos: decoded batch by batch */
    photo_data photo;
    nn_ctx *ctx;
    nn_module *net;
    nn_optimizer *opt;
    nn_schedule *schedule; /* the learning rate, computed on the device from its step counter */
    nn_ema *ema;           /* --ema: the weights' moving average, evaluated and saved */
    device_steps steps;
    FILE *log;
    int64_t *order;  /* this epoch's permutation of the training set */
    int first_epoch;      /* 1, or the epoch after the one --resume restored */
    int64_t steps_done;   /* optimizer steps so far, saved with --checkpoint */
    int64_t photo_failures_reported;
    loss_guard guard;        /* the divergence guard */
    int64_t resume_step;     /* steps of first_epoch done before --resume (an interrupted epoch), else 0 */
    /* The stopped epoch's figures so far, every rank's: saved at a stop inside
     * an epoch, restored by --resume so the epoch's line covers all of it. */
    double stopped_loss_sum, stopped_correct;
    int64_t stopped_images;
    int64_t interrupted_at;  /* Ctrl+C: the steps of the epoch done when it stopped, else -1 */
    int64_t stop_step;       /* --stop-after-step: the step of this epoch to stop before, else -1 */
    bool stopped_by_step;    /* interrupted_at is --stop-after-step's, not a signal's */
    log_format log_as;
    best_epoch best;       /* --save-best, --patience */
    tensorboard tb;        /* --tensorboard */
    dist_train dist;       /* mpirun -n N: this rank */
    char epoch_failure[800]; /* why an epoch failed, where the library did not say */
    FILE *step_log;        /* --log-steps */
    char **class_names;    /* --class-names, for the data's training classes */
    bool logs_lost;        /* a log could not be written (lose_log): the run exits 1 after saving */
    rank_flag flags[64];   /* the flags every rank shares, as given (before --global-batch splits the batch) */
    int flag_count;
    char run_flags[NN_TRAIN_STATE_RUN_MAX]; /* them as saved_flags.h writes them into --checkpoint, or "" */
} trainer;

/* What --save keeps besides the weights (nn_io.h's model info): the
 * normalisation training fed the model and the class names, so that eval,
 * export and Python run it on raw pixels. */
static nn_model_info saved_info(const trainer *t) {
    nn_model_info info = {0};
    if (t->photos) {
        info.channels = 3;
        memcpy(info.mean, t->photo.mean, sizeof t->photo.mean);
        memcpy(info.std, t->photo.std, sizeof t->photo.std);
        info.class_count = t->photo.train.class_names ? t->photo.train.classes : 0;
        info.class_names = t->photo.train.class_names;
        if (t->class_names) info.class_count = t->photo.train.classes, info.class_names = t->class_names;
    } else {
        info.channels = 1; /* one mean and std for every channel */
        info.mean[0] = t->data.norm.mean;
        info.std[0] = t->data.norm.std;
        info.class_count = t->data.train.class_names ? t->data.train.classes : 0;
        info.class_names = t->data.train.class_names;
        if (t->class_names) info.class_count = t->data.train.classes, info.class_names = t->class_names;
    }
    return info;
}

/* A log that cannot be written (a full disk) is a loss to report, not a
 * reason to stop: it is closed with a warning naming the failure, training
 * goes on and writes its --save and --checkpoint, and the run exits 1.
 * `file`, where given, is closed and cleared. */
static void lose_log(trainer *t, const char *flag, const char *path, FILE **file, int error) {
    fprintf(stderr, "nnengine train: %s %s: writing failed (%s); that log stops here, training goes on (the run "
            "will exit 1)\n", flag, path, error ? strerror(error) : "a write error");
    if (file && *file) fclose(*file);
    if (file) *file = NULL;
    t->logs_lost = true;
}

/* Whether the lines written to f so far reached the file: errno says why not. */
static bool log_flushed(FILE *f) {
    errno = 0;
    return fflush(f) == 0 && !ferror(f);
}

/* The logs closed at the end: a failing close loses their last lines. */
static void close_logs(trainer *t) {
    FILE **files[2] = {&t->log, &t->step_log};
    const char *flags[2] = {"--log", "--log-steps"}, *paths[2] = {t->config.log, t->config.log_steps};
    for (int i = 0; i < 2; i++) {
        if (!*files[i]) continue;
        errno = 0;
        const int closed = fclose(*files[i]);
        *files[i] = NULL;
        if (closed != 0) lose_log(t, flags[i], paths[i], NULL, errno);
    }
}

static void trainer_free(trainer *t) {
    device_steps_close(&t->steps);
    free(t->order);
    nn_ema_free(t->ema);
    nn_schedule_free(t->schedule);
    nn_optimizer_free(t->opt);
    nn_module_free(t->net);
    nn_ctx_free(t->ctx);
    if (t->log) fclose(t->log);
    if (t->step_log) fclose(t->step_log);
    tensorboard_close(&t->tb);
    class_names_free(t->class_names, t->photos ? t->photo.train.classes : t->data.train.classes);
    data_setup_free(&t->data);
    photo_data_free(&t->photo);
}

/* Steps between progress-bar updates on a terminal: each update waits for
 * the device to read the running sums. Without a terminal, an epoch's
 * steps go to the device at once. */
#define STEPS_PER_TICK 50
#define PHOTO_STEPS_PER_TICK 5

/* Steps submitted between two looks at Ctrl+C: replays queue up without a
 * read back, so this bounds only how long a first Ctrl+C waits. */
#define STEPS_PER_INTERRUPT_CHECK 16

/* Whether to stop for Ctrl+C or SIGTERM, agreed by every rank (a
 * collective under mpirun): a signal that reaches one rank, or the ranks at
 * different steps, as a batch scheduler's does, stops all of them at the
 * same step instead of leaving the others waiting for it. */
static bool stop_requested(trainer *t) {
    double asked = interrupt_requested() ? 1 : 0;
    if (t->dist.size > 1 && dist_train_sum(&t->dist, &asked, 1) != NN_OK) return false; /* the next collective says */
    return asked > 0;
}

/* Whether to stop before step `s` of the epoch: Ctrl+C, or --stop-after-step
 * (then t->stopped_by_step). */
static bool stop_before(trainer *t, int64_t s) {
    if (s == t->stop_step) return t->stopped_by_step = true;
    return stop_requested(t);
}

/* Steps [from, to) of the epoch, stopping early (t->interrupted_at) after
 * Ctrl+C or at --stop-after-step. */
static nn_status run_steps(trainer *t, int64_t from, int64_t to) {
    for (int64_t s = from; s < to;) {
        if (stop_before(t, s)) {
            t->interrupted_at = s;
            return NN_OK;
        }
        int64_t end = s + STEPS_PER_INTERRUPT_CHECK < to ? s + STEPS_PER_INTERRUPT_CHECK : to;
        if (t->stop_step > s && t->stop_step < end) end = t->stop_step;
        nn_status st = device_steps_run(&t->steps, s, end);
        if (st != NN_OK) return st;
        s = end;
    }
    return NN_OK;
}

/* --log-steps: step `step` of the epoch, its loss summed over `images`
 * images of this rank; rank 0's line gives the mean over every rank's images
 * and their number. */
static nn_status log_step(trainer *t, int epoch, int64_t step, double loss_sum, int64_t images) {
    double v[2] = {loss_sum, (double)images};
    nn_status st = dist_train_sum(&t->dist, v, 2); /* every rank takes part; rank 0 writes */
    errno = 0;
    if (st == NN_OK && t->step_log &&
        fprintf(t->step_log, "{\"epoch\": %d, \"step\": %lld, \"loss\": %.9g, \"images\": %lld}\n", epoch,
                (long long)step, v[0] / (v[1] > 0 ? v[1] : 1), (long long)v[1]) < 0)
        lose_log(t, "--log-steps", t->config.log_steps, &t->step_log, errno);
    return st;
}

/* A resumed epoch (resume_step > 0) starts its sums from its figures before
 * the stop, held by the main rank alone: the epoch's totals add every
 * rank's. carried_images: the images those sums hold, 0 otherwise. */
static bool carries_figures(const trainer *t) { return t->resume_step > 0 && dist_train_is_main(&t->dist); }
static nn_status resume_sums(trainer *t) {
    if (!carries_figures(t)) return NN_OK;
    return device_steps_set_sums(&t->steps, t->stopped_loss_sum, t->stopped_correct);
}
static int64_t carried_images(const trainer *t) { return carries_figures(t) ? t->stopped_images : 0; }

/* An epoch over a dataset held on the device: the steps are submitted
 * in runs of `tick` (all at once without a progress bar), from `first`
 * (a resumed interrupted epoch) on. The divergence guard reads the sums
 * read after each run. */
static nn_status device_epoch(trainer *t, progress *bar, int epoch, int64_t steps, int64_t first, int64_t *images,
                              double *loss_sum, double *correct) {
    const int64_t step_images = t->steps.batch * t->steps.accumulate; /* a full optimizer step's */
    int64_t count = t->steps.images - first * step_images, logged_seen = 0;
    double logged_sum = 0;
    nn_status st = device_steps_begin_epoch(&t->steps, t->order, epoch, first);
    if (st == NN_OK) st = resume_sums(t);
    const int64_t carried = carried_images(t); /* in the sums, not in `seen` */
    int64_t tick = t->config.log_steps ? 1 : bar->enabled ? STEPS_PER_TICK : steps;
    for (int64_t s = first; st == NN_OK && s < steps && t->interrupted_at < 0; s += tick) {
        int64_t to = s + tick < steps ? s + tick : steps;
        st = run_steps(t, s, to);
        if (t->interrupted_at >= 0) to = t->interrupted_at;
        if (st == NN_OK) st = device_steps_sums(&t->steps, loss_sum, correct);
        if (st == NN_OK && !loss_guard_check(&t->guard, epoch, to, *loss_sum)) st = NN_ERR_STATE;
        if (st == NN_OK) {
            int64_t seen = (to - first) * step_images < count ? (to - first) * step_images : count;
            progress_update(bar, to, seen, *loss_sum / (double)(seen + carried > 0 ? seen + carried : 1));
            if (t->config.log_steps) st = log_step(t, epoch, to, *loss_sum - logged_sum, seen - logged_seen);
            logged_sum = *loss_sum;
            logged_seen = seen;
        }
    }
    *images = t->interrupted_at >= 0 ? (t->interrupted_at - first) * step_images : count;
    return st;
}

/* The loader leaves out a batch whose every image failed to decode: under
 * mpirun this rank would then take a step fewer than the others and the
 * job would wait for it forever, so it stops the job instead. `got` is the
 * batch the loader delivered (the batch count at the epoch's end), `want`
 * the one this step expects. */
static nn_status every_rank_has_the_batch(trainer *t, int64_t got, int64_t want) {
    if (!t->dist.active || got == want) return NN_OK;
    char first[600];
    nn_loader_failures(t->photo.train_loader, first, sizeof first);
    snprintf(t->epoch_failure, sizeof t->epoch_failure,
             "rank %d: every image of its share of global batch %lld failed to decode (the first failure: %s); "
             "the other ranks would wait for its step forever", t->dist.rank, (long long)want + 1, first);
    return NN_ERR_IO;
}

/* An epoch of photos decoded by the loader's threads while the device
 * trains on the previous batch. */
static nn_status photo_epoch(trainer *t, progress *bar, int epoch, int64_t *images, double *loss_sum,
                             double *correct) {
    nn_status st = device_steps_begin_host_epoch(&t->steps);
    if (st == NN_OK) st = resume_sums(t);
    const int64_t carried = carried_images(t); /* in the sums, not in `seen` */
    if (st == NN_OK) st = nn_loader_start_epoch(t->photo.train_loader, epoch - 1);
    nn_batch b;
    int64_t step = 0, seen = 0, logged_seen = 0;
    double logged_sum = 0;
    /* A resumed interrupted epoch: its first batches were trained on. */
    while (st == NN_OK && step < t->resume_step && (st = nn_loader_next(t->photo.train_loader, &b)) == NN_OK &&
           b.count > 0)
        step++;
    bool stopped = false;
    while (st == NN_OK && !(stopped = stop_before(t, step)) && (st = nn_loader_next(t->photo.train_loader, &b)) == NN_OK &&
           b.count > 0) {
        st = every_rank_has_the_batch(t, b.first / t->steps.batch, step);
        if (st == NN_OK) st = device_steps_host_step(&t->steps, b.images, b.labels, b.count);
        seen += b.count;
        step++;
        if (st == NN_OK && t->config.log_steps) { /* every rank takes part: it sums over the ranks */
            st = device_steps_sums(&t->steps, loss_sum, correct);
            if (st == NN_OK) st = log_step(t, epoch, step, *loss_sum - logged_sum, seen - logged_seen);
            logged_sum = *loss_sum, logged_seen = seen;
        }
        if (st == NN_OK && bar->enabled && step % PHOTO_STEPS_PER_TICK == 0) {
            st = device_steps_sums(&t->steps, loss_sum, correct);
            if (st == NN_OK && !loss_guard_check(&t->guard, epoch, step, *loss_sum)) st = NN_ERR_STATE;
            progress_update(bar, step, seen, *loss_sum / (double)(seen + carried));
        }
    }
    if (st == NN_OK && stopped) t->interrupted_at = step;
    if (st == NN_OK && t->interrupted_at < 0)
        st = every_rank_has_the_batch(t, nn_loader_batches(t->photo.train_loader), step);
    if (st == NN_OK) st = device_steps_sums(&t->steps, loss_sum, correct);
    if (st == NN_OK && !loss_guard_check(&t->guard, epoch, step, *loss_sum)) st = NN_ERR_STATE;
    char first[600];
    int64_t failed = nn_loader_failures(t->photo.train_loader, first, sizeof first);
    if (st == NN_OK && failed > t->photo_failures_reported) {
        progress_clear(bar);
        fprintf(stderr, "left out %lld image%s that failed to decode (the first: %s)\n", (long long)failed,
                failed == 1 ? "" : "s", first);
        t->photo_failures_reported = failed;
    }
    *images = seen;
    return st;
}

static int run_epoch(trainer *t, progress *bar, int epoch, epoch_stats *stats) {
    const train_config *c = &t->config;
    int64_t steps = device_steps_per_epoch(&t->steps);
    if (!t->photos) nn_shuffle_indices(t->order, t->data.train.count, (uint64_t)c->seed, (uint64_t)(epoch - 1));
    if (!t->photos) dist_train_shard_order(&t->dist, t->order, t->data.train.count, t->steps.batch);
    progress_begin_epoch(bar, epoch, steps);
    double start = now_seconds(), loss_sum = 0, correct = 0;
    int64_t count = 0, first = t->resume_step;
    /* --stop-after-step inside this epoch (at its end, the epoch finishes as any other). */
    const int64_t stop = c->stop_after_step - t->steps_done + first;
    t->stop_step = c->stop_after_step > 0 && stop > first && stop < steps ? stop : -1;
    loss_guard_begin_epoch(&t->guard, first + 1);
    nn_status st = t->photos ? photo_epoch(t, bar, epoch, &count, &loss_sum, &correct)
                             : device_epoch(t, bar, epoch, steps, first, &count, &loss_sum, &correct);
    const int64_t carried = carried_images(t); /* the sums hold them already */
    count += carried;
    if (st == NN_OK && t->interrupted_at >= 0) { /* Ctrl+C: no evaluation; the caller saves */
        progress_clear(bar);
        t->steps_done += t->interrupted_at - first;
        double so_far[3] = {loss_sum, correct, (double)count}; /* every rank's, for the checkpoint */
        if ((st = dist_train_sum(&t->dist, so_far, 3)) != NN_OK) {
            fprintf(stderr, "nnengine train: epoch %d: %s\n", epoch, library_error());
            return EXIT_FAILURE_RUNTIME;
        }
        if (!isfinite(so_far[0]) || !isfinite(so_far[1])) /* the state saves none: the resumed part's alone */
            so_far[0] = so_far[1] = so_far[2] = 0;
        t->stopped_loss_sum = so_far[0], t->stopped_correct = so_far[1], t->stopped_images = (int64_t)so_far[2];
        return EXIT_INTERRUPTED;
    }
    if (st == NN_OK && count == 0) st = NN_ERR_STATE;
    if (st != NN_OK) {
        progress_clear(bar);
        if (isfinite(loss_sum))
            fprintf(stderr, "nnengine train: epoch %d failed: %s\n", epoch,
                    t->epoch_failure[0] ? t->epoch_failure : library_error());
        return EXIT_FAILURE_RUNTIME; /* a non-finite loss: the guard said so */
    }
    t->steps_done += steps - first;
    t->resume_step = 0;
    /* data parallel: every rank's images; the throughput counts those this run trained on */
    double totals[4] = {loss_sum, correct, (double)count, (double)(count - carried)};
    if ((st = dist_train_sum(&t->dist, totals, 4)) != NN_OK) {
        fprintf(stderr, "nnengine train: epoch %d: %s\n", epoch, library_error());
        return EXIT_FAILURE_RUNTIME;
    }
    loss_sum = totals[0], correct = totals[1], count = (int64_t)totals[2];
    stats->epoch = epoch;
    stats->seconds = now_seconds() - start;
    stats->train_loss = loss_sum / count;
    stats->train_acc = correct / count;
    stats->images_per_s = totals[3] / stats->seconds;
    progress_clear(bar);
    /* --ema: the averaged weights are the ones evaluated (swapped in and back). */
    if (t->ema && (st = nn_ema_swap(t->ema)) != NN_OK) {
        fprintf(stderr, "nnengine train: %s\n", library_error());
        return EXIT_FAILURE_RUNTIME;
    }
    /* mpirun: rank 0 evaluates the whole test set and every rank takes its
     * figures (BatchNorm statistics differ by rank), so that --save-best and
     * --patience decide alike on every rank. */
    stats->test_loss = stats->test_acc = 0;
    if (c->no_eval) stats->test_loss = stats->test_acc = NAN; /* none: the logs write null or an empty field */
    else if (dist_train_is_main(&t->dist))
        st = t->photos ? photo_evaluate(t->ctx, t->net, &t->photo, bar, &stats->test_loss, &stats->test_acc, NULL)
                       : evaluate(t->ctx, t->net, &t->data.test, t->data.norm, t->data.classes, c->eval_limit, bar,
                                  &stats->test_loss, &stats->test_acc, NULL);
    double figures[2] = {stats->test_loss, stats->test_acc};
    if (st == NN_OK) st = dist_train_from_main(&t->dist, figures, 2);
    stats->test_loss = figures[0], stats->test_acc = figures[1];
    if (st == NN_OK && t->ema) st = nn_ema_swap(t->ema);
    if (st != NN_OK) {
        fprintf(stderr, "nnengine train: evaluation after epoch %d failed: %s\n", epoch, library_error());
        return EXIT_FAILURE_RUNTIME;
    }
    return EXIT_OK;
}

/* An output path (--save, --checkpoint, --log) must be writable: found out
 * now, not after an hour of training. */
static int check_output_path(const char *flag, const char *path) {
    if (nn_check_writable_path(path) == NN_OK) return EXIT_OK;
    fprintf(stderr, "nnengine train: %s: %s\n", flag, library_error());
    return EXIT_BAD_INPUT;
}

/* A shared flag's value as a person reads it: a number as %g (the flags
 * keep 17 digits), -1 (unset: the recipe's or optimizer's) as "(default)". */
static const char *flag_shown(const char *value, char *out, size_t size) {
    char *end;
    const double v = strtod(value, &end);
    if (end == value || *end) snprintf(out, size, "%s", value);
    else if (v == -1) snprintf(out, size, "(default)");
    else snprintf(out, size, "%g", v);
    return out;
}

/* --resume: the state must come from a run with this data, batch and seed,
 * or the remaining epochs would not continue it. */
static int resume(trainer *t) {
    const train_config *c = &t->config;
    /* The flags the state was saved with: another model is refused by name,
     * other settings are named (the run takes this run's, but then it is
     * not the saved run continued bit for bit). */
    char saved[NN_TRAIN_STATE_RUN_MAX], value[128];
    if (nn_train_state_run(c->resume, saved, sizeof saved) != NN_OK) saved[0] = '\0'; /* the load says why */
    for (int i = 0; i < t->flag_count; i++) {
        const rank_flag *f = &t->flags[i];
        if (!saved_flags_differ(saved, f, value, sizeof value)) continue;
        if (strcmp(f->flag, "the model") == 0) {
            fprintf(stderr, "nnengine train: --resume %s was saved by a run of model %s, not %s\n", c->resume, value,
                    f->value);
            return EXIT_BAD_INPUT;
        }
        if (strcmp(f->flag, "--resume") == 0 || strncmp(f->flag, "--stop-after", 12) == 0) continue;
        if (!dist_train_is_main(&t->dist)) continue; /* rank 0 says it for all */
        char then[128], now[128];
        fprintf(stderr, "nnengine train: note: --resume %s was saved by a run with %s %s; this run has %s %s and "
                        "continues with it (the saved run's flags would continue it bit for bit)\n", c->resume,
                f->flag, flag_shown(value, then, sizeof then), f->flag, flag_shown(f->value, now, sizeof now));
    }
    nn_train_progress p;
    nn_train_extras extras = {t->schedule, t->ema, NULL};
    if (nn_load_train_state_with(c->resume, t->net, t->opt, &extras, &p) != NN_OK) {
        fprintf(stderr, "nnengine train: --resume: %s\n", library_error());
        return EXIT_BAD_INPUT;
    }
    int64_t steps = device_steps_per_epoch(&t->steps);
    /* Bounds before any arithmetic: a crafted file's 2^63-1 must not overflow. */
    if (p.epoch < 0 || p.epoch > c->epochs || p.step < 0 || p.step > (p.epoch + 1) * steps) {
        fprintf(stderr, "nnengine train: --resume %s holds epoch %lld and step %lld, outside this run's %lld epochs "
                        "of %lld optimizer steps (batch %lld, --accumulate %lld)\n", c->resume, (long long)p.epoch,
                (long long)p.step, (long long)c->epochs, (long long)steps, (long long)c->batch,
                (long long)c->accumulate);
        return EXIT_BAD_INPUT;
    }
    if (p.seed != (uint64_t)c->seed) {
        fprintf(stderr, "nnengine train: --resume %s was saved by a run with --seed %llu; give the same "
                        "--seed (this run has %lld)\n", c->resume, (unsigned long long)p.seed,
                (long long)c->seed);
        return EXIT_BAD_INPUT;
    }
    /* epoch_step: a run stopped by Ctrl+C within the next epoch. */
    if (p.step != p.epoch * steps + p.epoch_step || p.epoch_step >= steps) {
        fprintf(stderr, "nnengine train: --resume %s holds %lld optimizer steps after %lld epochs, but this run "
                        "takes %lld per epoch (%lld images, batch %lld, --accumulate %lld): give the same --data, "
                        "--limit, --batch and --accumulate\n", c->resume, (long long)p.step, (long long)p.epoch,
                (long long)steps, (long long)(t->photos ? t->photo.train.count : t->data.train.count),
                (long long)c->batch, (long long)c->accumulate);
        return EXIT_BAD_INPUT;
    }
    if (p.epoch >= c->epochs) {
        fprintf(stderr, "nnengine train: --resume %s has already trained %lld epochs (--epochs %lld)\n",
                c->resume, (long long)p.epoch, (long long)c->epochs);
        return EXIT_BAD_INPUT;
    }
    if (c->stop_after_step > 0 && p.step >= c->stop_after_step) {
        fprintf(stderr, "nnengine train: --resume %s has already trained %lld optimizer steps (--stop-after-step "
                        "%lld)\n", c->resume, (long long)p.step, (long long)c->stop_after_step);
        return EXIT_BAD_INPUT;
    }
    if (p.best_epoch > 0 && (p.best_metric < 0 || (strcmp(p.best_by, "accuracy") == 0 && p.best_metric > 1))) {
        fprintf(stderr, "nnengine train: --resume %s holds a best %s of %g, which no run gives (an accuracy is in "
                        "[0, 1], a loss at least 0)\n", c->resume, p.best_by, p.best_metric);
        return EXIT_BAD_INPUT;
    }
    if (!best_epoch_restore(&t->best, p.epoch, p.best_epoch, p.best_metric, p.best_by)) {
        fprintf(stderr, "nnengine train: --resume %s kept its best epoch by %s; give the same --save-best-by\n",
                c->resume, p.best_by);
        return EXIT_BAD_INPUT;
    }
    t->first_epoch = (int)p.epoch + 1;
    t->steps_done = p.step;
    t->resume_step = p.epoch_step;
    t->stopped_loss_sum = p.epoch_loss_sum, t->stopped_correct = p.epoch_correct, t->stopped_images = p.epoch_images;
    if (c->checkpoint && paths_name_the_same_file(c->checkpoint, c->resume)) t->guard.checkpoint_epoch = p.epoch;
    if (p.epoch_step)
        fprintf(stderr, "resuming from %s within epoch %lld after its step %lld (stopped part way)\n", c->resume,
                (long long)p.epoch + 1, (long long)p.epoch_step);
    else
        fprintf(stderr, "resuming from %s after epoch %lld (step %lld)\n", c->resume, (long long)p.epoch,
                (long long)p.step);
    return EXIT_OK;
}

/* --classes K gives the classifier K outputs: at least one per class of the data. */
static int fine_tuning_classes(const train_config *c, int data_classes) {
    if (!c->classes || c->classes >= data_classes) return EXIT_OK;
    fprintf(stderr, "nnengine train: --classes %lld is fewer than the %d classes of %s\n", (long long)c->classes,
            data_classes, c->data);
    return EXIT_BAD_INPUT;
}

/* --init FILE: the weights to start from, all of them (strict). With
 * --classes the classifier is taken from the file when it has that shape,
 * and otherwise left out and trained from its initial values. */
static int load_initial_weights(trainer *t) {
    const train_config *c = &t->config;
    const char *classifier = model_classifier(c->model);
    if (nn_load_module(t->net, c->init) == NN_OK) {
        fprintf(stderr, "initial weights: %s\n", c->init);
        return EXIT_OK;
    }
    if (!c->classes) {
        fprintf(stderr, "nnengine train: --init: %s\n(to replace the classifier %s with one for this data, give "
                        "--classes K)\n", library_error(), classifier);
        return EXIT_BAD_INPUT;
    }
    if (nn_load_module_except(t->net, c->init, classifier) != NN_OK) {
        fprintf(stderr, "nnengine train: --init: %s\n", library_error());
        return EXIT_BAD_INPUT;
    }
    fprintf(stderr, "initial weights: %s, except the classifier %s (new, %lld classes)\n", c->init, classifier,
            (long long)c->classes);
    return EXIT_OK;
}

static bool frozen(const train_config *c, const char *name) {
    for (int i = 0; i < c->freeze.count; i++)
        if (strncmp(name, c->freeze.values[i], strlen(c->freeze.values[i])) == 0) return true;
    return false;
}

/* --freeze PREFIX: those parameters stop requiring grad. Each prefix must
 * name some parameter, and some parameter must stay trainable. */
static int freeze_parameters(trainer *t, int *trainable) {
    const train_config *c = &t->config;
    const int count = nn_module_param_count(t->net);
    for (int f = 0; f < c->freeze.count; f++) {
        bool matched = false;
        for (int i = 0; i < count && !matched; i++)
            matched = strncmp(nn_module_param_name(t->net, i), c->freeze.values[f], strlen(c->freeze.values[f])) == 0;
        if (!matched) {
            fprintf(stderr, "nnengine train: --freeze %s matches no parameter of %s (its names run from %s to %s)\n",
                    c->freeze.values[f], c->model, nn_module_param_name(t->net, 0),
                    nn_module_param_name(t->net, count - 1));
            return EXIT_BAD_INPUT;
        }
    }
    *trainable = 0;
    for (int i = 0; i < count; i++) {
        if (!frozen(c, nn_module_param_name(t->net, i))) {
            (*trainable)++;
        } else if (nn_tensor_set_requires_grad(nn_module_param(t->net, i), false) != NN_OK) {
            fprintf(stderr, "nnengine train: %s\n", library_error());
            return EXIT_FAILURE_RUNTIME;
        }
    }
    if (*trainable == 0) {
        fprintf(stderr, "nnengine train: --freeze leaves no parameter of %s to train\n", c->model);
        return EXIT_BAD_INPUT;
    }
    if (c->freeze.count)
        fprintf(stderr, "frozen: %d of %d parameter tensors\n", count - *trainable, count);
    return EXIT_OK;
}

/* The data held in memory (IDX files, small images of one size): loaded,
 * the model built for its size, and the step's data put on the device. */
static int setup_memory_data(trainer *t, char *why, size_t why_size) {
    train_config *c = &t->config;
    int status = data_setup_load("train", c->data, c->validation_fraction, (uint64_t)c->seed, c->limit,
                                 c->normalize, &t->data);
    if (status == EXIT_OK)
        status = check_labels("train", c->data, &t->data.train, &t->data.test, t->data.test_is_validation, c->classes);
    if (status == EXIT_OK) status = fine_tuning_classes(c, t->data.classes);
    if (status != EXIT_OK) return status;
    const nn_dataset *train = &t->data.train;
    if (c->batch > train->count)
        fprintf(stderr, "nnengine train: note: --batch %lld is larger than the %lld training images\n",
                (long long)c->batch, (long long)train->count);
    t->ctx = open_device("train", c->device, (int)c->threads, (uint64_t)c->seed);
    if (!t->ctx) return EXIT_BAD_INPUT;
    if (c->classes) t->data.classes = (int)c->classes; /* checked against the data by fine_tuning_classes */
    t->net = model_build(t->ctx, c->model, train->channels, train->height, train->width, t->data.classes, why,
                         why_size);
    if (!t->net) return EXIT_BAD_INPUT;
    fprintf(stderr, "data: %s: %lld training and %lld %s images of %dx%dx%d, %d classes, normalisation mean %.4f "
                    "std %.4f; held on the device\n", c->data, (long long)train->count, (long long)t->data.test.count,
            t->data.test_is_validation ? "validation" : "test", train->channels, train->height, train->width,
            t->data.classes, t->data.norm.mean, t->data.norm.std);
    return EXIT_OK;
}

/* Photos for a model with a fixed input size: indexed, decoded and resized
 * batch by batch on worker threads. */
static int setup_photo_data(trainer *t, int channels, int height, int width, char *why, size_t why_size) {
    train_config *c = &t->config;
    photo_options o = {.channels = channels, .height = height, .width = width, .batch = c->batch,
                       .limit = c->limit, .eval_limit = c->eval_limit,
                       .validation_fraction = c->validation_fraction, .seed = (uint64_t)c->seed,
                       .normalize = c->normalize, .workers = (int)c->workers, .flip = c->flip,
                       .random_crop = c->random_crop, .rank = t->dist.rank, .ranks = t->dist.size};
    int status = photo_data_load("train", c->data, &o, &t->photo);
    if (status == EXIT_OK) status = fine_tuning_classes(c, t->photo.classes);
    if (status != EXIT_OK) return status;
    t->ctx = open_device("train", c->device, (int)c->threads, (uint64_t)c->seed);
    if (!t->ctx) return EXIT_BAD_INPUT;
    if (c->classes) t->photo.classes = (int)c->classes; /* checked against the data by fine_tuning_classes */
    t->net = model_build(t->ctx, c->model, channels, height, width, t->photo.classes, why, why_size);
    if (!t->net) return EXIT_BAD_INPUT;
    fprintf(stderr, "data: %s: %lld training and %lld %s images, %d classes, decoded to %dx%dx%d on %d threads "
                    "(%s%s), normalisation mean %.3f,%.3f,%.3f std %.3f,%.3f,%.3f\n", c->data,
            (long long)option_first_or_all(c->limit, t->photo.train.count),
            (long long)t->photo.test.count, t->photo.test_is_validation ? "validation" : "test", t->photo.classes,
            channels, height, width, t->photo.workers, c->random_crop ? "random resized crops" : "whole images",
            c->flip ? ", random flips" : "", t->photo.mean[0], t->photo.mean[1], t->photo.mean[2],
            t->photo.std[0], t->photo.std[1], t->photo.std[2]);
    if (t->dist.active)
        fprintf(stderr, "data parallel: each of the %d ranks decodes its share of every global batch of %lld images "
                        "(%lld batches an epoch)\n", t->dist.size, (long long)(c->batch * t->dist.size),
                (long long)nn_loader_batches(t->photo.train_loader));
    return EXIT_OK;
}

/* --milestones "a,b,c" into o's milestones; NULL gives none. */
static bool parse_milestones(const char *text, nn_schedule_options *o) {
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
static nn_schedule_options schedule_options(const train_config *c, int64_t total) {
    nn_schedule_options o = {.base_lr = c->lr, .step_size = c->step_size, .gamma = c->gamma, .warmup = c->warmup,
                             .warmup_start = c->warmup_start, .total_steps = total, .eta_min = c->eta_min,
                             .max_lr = c->max_lr > 0 ? c->max_lr : c->lr, .pct_start = c->pct_start};
    nn_schedule_kind_parse(c->schedule, &o.kind);
    parse_milestones(c->milestones, &o);
    if (o.kind == NN_SCHEDULE_LINEAR) /* a ramp from --warmup-start of --lr to --lr, then --lr */
        o.start_factor = c->warmup_start, o.end_factor = 1.0, o.total_steps = c->warmup > 0 ? c->warmup : total;
    return o;
}

static int setup(trainer *t) {
    train_config *c = &t->config;
    if (c->save && check_output_path("--save", c->save) != EXIT_OK) return EXIT_BAD_INPUT;
    if (c->checkpoint && check_output_path("--checkpoint", c->checkpoint) != EXIT_OK) return EXIT_BAD_INPUT;
    if (c->log && check_output_path("--log", c->log) != EXIT_OK) return EXIT_BAD_INPUT;
    if (c->save_best && check_output_path("--save-best", c->save_best) != EXIT_OK) return EXIT_BAD_INPUT;
    if (c->log_steps && check_output_path("--log-steps", c->log_steps) != EXIT_OK) return EXIT_BAD_INPUT;
    const output_path outputs[] = {{"--save", c->save},           {"--checkpoint", c->checkpoint},
                                   {"--save-best", c->save_best}, {"--log", c->log},
                                   {"--log-steps", c->log_steps}, {"--tensorboard", c->tensorboard}};
    if (check_distinct_outputs("train", outputs, (int)(sizeof outputs / sizeof outputs[0])) != EXIT_OK)
        return EXIT_BAD_INPUT;
    /* A model that takes colour photos at a fixed size gets them from the
     * image loader; the others train on data held on the device. */
    int channels, height, width;
    t->photos = model_input(c->model, &channels, &height, &width) && channels == 3;
    /* The model's defaults (help text). AlexNet's were chosen on a small
     * synthetic set (stripes against dots, tests/cli): batch 16 and lr 0.03
     * learn it within 8 epochs where 32/64 and 0.01-0.02 do not start. */
    if (c->lr < 0 && strcmp(c->optimizer, "sgd") == 0) c->lr = t->photos ? 0.03 : 0.05;
    if (c->batch == 0) c->batch = t->photos ? 16 : 64;
    optimizer_settings settings = {.lr = c->lr, .weight_decay = c->weight_decay, .momentum = c->momentum,
                                   .nesterov = c->nesterov, .beta1 = c->beta1, .beta2 = c->beta2, .eps = c->eps};
    optimizer_defaults(c->optimizer, &settings);
    c->lr = settings.lr, c->weight_decay = settings.weight_decay, c->momentum = settings.momentum;
    if (t->photos && c->crop_pad > 0) {
        fprintf(stderr, "nnengine train: --crop-pad shifts images held on the device; %s takes photos (use "
                        "--random-crop)\n", c->model);
        return EXIT_BAD_INPUT;
    }
    char why[512] = "";
    if (t->photos && c->accumulate > 1) {
        fprintf(stderr, "nnengine train: --accumulate needs a dataset held on the device; %s takes photos batch by "
                        "batch from the host\n", c->model);
        return EXIT_BAD_INPUT;
    }
    int status = t->photos ? setup_photo_data(t, channels, height, width, why, sizeof why)
                           : setup_memory_data(t, why, sizeof why);
    if (status != EXIT_OK) {
        if (why[0]) fprintf(stderr, "nnengine train: %s\n", why);
        return status;
    }
    if (c->class_names &&
        !(t->class_names = class_names_read("train", c->class_names, t->photos ? t->photo.train.classes
                                                                                : t->data.train.classes)))
        return EXIT_BAD_INPUT;
    if (c->init && (status = load_initial_weights(t)) != EXIT_OK) return status;
    nn_precision precision;
    if (nn_precision_parse(c->precision, &precision) != NN_OK || nn_ctx_set_precision(t->ctx, precision) != NN_OK) {
        fprintf(stderr, "nnengine train: --precision: %s\n", library_error());
        return EXIT_BAD_INPUT;
    }
    if (precision != NN_PRECISION_FP32)
        fprintf(stderr, "products (convolutions, Linear layers) take %s operands with fp32 sums%s\n", c->precision,
                nn_ctx_matrix_cores(t->ctx, precision) ? ", on the device's matrix cores"
                                                       : "; this device has no matrix cores for them, so they run "
                                                         "on its fp32 units, rounded");
    int count;
    if ((status = freeze_parameters(t, &count)) != EXIT_OK) return status;
    /* The optimizer gets the trainable parameters only (no decay of frozen ones). */
    nn_tensor **params = malloc(sizeof *params * (size_t)count);
    for (int i = 0, n = 0; params && i < nn_module_param_count(t->net); i++)
        if (!frozen(c, nn_module_param_name(t->net, i))) params[n++] = nn_module_param(t->net, i);
    t->opt = params ? optimizer_new(c->optimizer, params, count, &settings) : NULL;
    free(params);
    nn_status st = !t->opt ? nn_last_status() : NN_OK;
    if (st == NN_OK && c->ema > 0 && !(t->ema = nn_ema_new(t->net, (float)c->ema))) st = nn_last_status();
    /* fp16 operands lose gradients below 2^-24: the loss is scaled up, steps that overflow are skipped. */
    const bool loss_scale = strcmp(c->precision, "fp16") == 0 && !c->no_loss_scale;
    if (st == NN_OK && loss_scale) st = nn_optimizer_enable_loss_scaling(t->opt, NULL);
    if (st == NN_OK && !c->quiet) {
        const nn_dataset *d = &t->data.train;
        st = t->photos ? model_summary_print(t->ctx, t->net, c->model, channels, height, width, c->batch, t->opt,
                                             c->optimizer, stderr)
                       : model_summary_print(t->ctx, t->net, c->model, d->channels, d->height, d->width, c->batch,
                                             t->opt, c->optimizer, stderr);
    }
    step_extras extras = {.ema = t->ema, .accumulate = c->accumulate, .crop_pad = c->crop_pad > 0 ? (int)c->crop_pad : 0,
                          .flip = c->flip, .seed = (uint64_t)c->seed,
                          .shard_count = t->photos ? 0 : dist_train_shard_count(&t->dist, t->data.train.count, c->batch),
                          .rank = t->dist.rank, .ranks = t->dist.size,
                          .loss_scale = loss_scale};
    if (st == NN_OK)
        st = t->photos ? device_steps_open_host(&t->steps, t->ctx, t->net, t->opt, channels, height, width, c->batch,
                                                nn_loader_batches(t->photo.train_loader), &extras, !c->no_capture)
                       : device_steps_open(&t->steps, t->ctx, t->net, t->opt, &t->data.train, t->data.norm, c->batch,
                                           &extras, !c->no_capture);
    /* The schedule spans every epoch's optimizer steps. */
    const int64_t per_epoch = device_steps_per_epoch(&t->steps);
    if (st == NN_OK) {
        nn_schedule_options o = schedule_options(c, per_epoch * c->epochs);
        t->steps.schedule = t->schedule = nn_schedule_new(t->opt, &o);
        if (!t->schedule) st = nn_last_status();
    }
    if (st != NN_OK) { /* the library refusing a value the flags gave is bad input, as the CLI's own checks */
        fprintf(stderr, "nnengine train: %s\n", library_error());
        /* A run too short for its schedule (a small --limit): say which flags make it fit. */
        if (st == NN_ERR_ARGUMENT && t->schedule == NULL && strstr(library_error(), "nn_schedule_new"))
            fprintf(stderr, "nnengine train: the run has %lld optimizer step%s (--epochs %lld x %lld an epoch); give "
                            "more --epochs, more images (--limit) or a smaller --batch, or another --schedule "
                            "(constant or cosine fit any length)\n", (long long)(per_epoch * c->epochs),
                    per_epoch * c->epochs == 1 ? "" : "s", (long long)c->epochs, (long long)per_epoch);
        return st == NN_ERR_ARGUMENT ? EXIT_BAD_INPUT : EXIT_FAILURE_RUNTIME;
    }
    t->order = t->photos ? NULL : malloc(sizeof(int64_t) * t->data.train.count);
    if (!t->photos && !t->order) {
        fprintf(stderr, "nnengine train: out of host memory\n");
        return EXIT_FAILURE_RUNTIME;
    }
    t->first_epoch = 1;
    if (c->resume && resume(t) != EXIT_OK) return EXIT_BAD_INPUT;
    /* After --resume (every rank reads the file): then rank 0's state is everyone's. */
    if (dist_train_prepare(&t->dist, t->net, t->opt) != NN_OK) {
        fprintf(stderr, "nnengine train: %s\n", library_error());
        return EXIT_FAILURE_RUNTIME;
    }
    if (c->sync_bn) {
        const int synced = dist_train_sync_batch_norm(&t->dist, t->net, c->model);
        if (synced != EXIT_OK) return synced;
    }
    if (c->log_steps && dist_train_is_main(&t->dist) && !(t->step_log = nn_file_fopen(c->log_steps, c->resume ? "a" : "w"))) {
        perror(c->log_steps);
        return EXIT_BAD_INPUT;
    }
    /* A resumed run continues its log. */
    if (c->log && !(t->log = nn_file_fopen(c->log, c->resume ? "a" : "w"))) {
        perror(c->log);
        fprintf(stderr, "nnengine train: cannot write the log file %s\n", c->log);
        return EXIT_BAD_INPUT;
    }
    if (c->tensorboard && !tensorboard_open(&t->tb, c->tensorboard)) return EXIT_BAD_INPUT;
    /* A resumed run appends to its log, whose header is already there. */
    if (t->log && t->log_as == LOG_CSV && fseek(t->log, 0, SEEK_END) == 0 && ftell(t->log) == 0 &&
        !write_epoch_csv_header(t->log)) {
        fprintf(stderr, "nnengine train: writing the log %s failed\n", c->log);
        return EXIT_FAILURE_RUNTIME;
    }
    fprintf(stderr,
            "training %s: %d parameter tensors, batch %lld, %s lr %g (%s), momentum %g%s, weight decay %g, seed %lld; "
            "%s\n", c->model, count, (long long)c->batch, c->optimizer, c->lr, c->schedule, c->momentum,
            c->nesterov ? " (nesterov)" : "", c->weight_decay, (long long)c->seed,
            c->no_capture ? "every step eager (--no-capture)" : "one step captured and replayed");
    if (!t->photos && (c->crop_pad > 0 || c->flip))
        fprintf(stderr, "augmenting on the device: shifts of up to %lld pixels, %s\n",
                (long long)(c->crop_pad > 0 ? c->crop_pad : 0), c->flip ? "random flips" : "no flips");
    if (c->accumulate > 1 || t->ema)
        fprintf(stderr, "accumulating the gradients of %lld batches per step; %s\n", (long long)c->accumulate,
                t->ema ? "evaluating and saving the weights' moving average (--ema)" : "no moving average");
    return EXIT_OK;
}

/* resnet18-cifar's recipe, the one PyTorch reached 94.74% on Fashion-MNIST
 * with in 15 epochs (issue 22): SGD with Nesterov momentum 0.9, weight
 * decay 5e-4, one-cycle to 0.1, batch 128, 2-pixel shifts and flips. The
 * other models: 10 epochs, the cosine schedule, no augmentation. */
static void apply_recipe(train_config *c) {
    const bool cifar = strcmp(c->model, "resnet18-cifar") == 0;
    if (!c->epochs) c->epochs = cifar ? 15 : 10;
    if (!c->schedule) c->schedule = cifar ? "onecycle" : "cosine";
    if (!cifar) return;
    const bool sgd = strcmp(c->optimizer, "sgd") == 0;
    if (c->batch == 0) c->batch = 128;
    if (c->lr < 0 && sgd) c->lr = 0.1;
    if (sgd) c->nesterov = true;
    if (c->crop_pad < 0 && !c->no_augment) c->crop_pad = 2;
    if (!c->no_augment) c->flip = true;
}

/* --checkpoint after `epoch` finished epochs and t->steps_done steps (more
 * when Ctrl+C stopped the next epoch part way). */
static int write_checkpoint(trainer *t, int epoch) {
    if (!t->config.checkpoint) return EXIT_OK;
    const bool part_way = t->interrupted_at > 0;
    nn_train_progress done = {.epoch = epoch, .step = t->steps_done, .seed = (uint64_t)t->config.seed,
                              .epoch_step = part_way ? t->interrupted_at : 0,
                              .epoch_loss_sum = part_way ? t->stopped_loss_sum : 0,
                              .epoch_correct = part_way ? t->stopped_correct : 0,
                              .epoch_images = part_way ? t->stopped_images : 0};
    best_epoch_save(&t->best, &done.best_epoch, &done.best_metric, done.best_by, sizeof done.best_by);
    nn_train_extras extras = {t->schedule, t->ema, t->run_flags[0] ? t->run_flags : NULL};
    if (nn_save_train_state_with(t->config.checkpoint, t->net, t->opt, &extras, &done) != NN_OK) {
        fprintf(stderr, "nnengine train: %s\n", library_error());
        return EXIT_FAILURE_RUNTIME;
    }
    if (t->interrupted_at < 0) t->guard.checkpoint_epoch = epoch;
    if (t->interrupted_at >= 0) fprintf(stderr, "wrote the training state to %s\n", t->config.checkpoint);
    return EXIT_OK;
}

/* An epoch's figures as TensorBoard scalars, the epoch as the step. */
static bool tensorboard_epoch(tensorboard *tb, const epoch_stats *s, const char *test_name) {
    if (!test_name) { /* --no-eval: the train figures only */
        const char *tags[3] = {"train/loss", "train/accuracy", "train/images_per_s"};
        double values[3] = {s->train_loss, s->train_acc, s->images_per_s};
        return tensorboard_scalars(tb, s->epoch, tags, values, 3);
    }
    char test_loss[32], test_acc[32];
    snprintf(test_loss, sizeof test_loss, "%s/loss", test_name);
    snprintf(test_acc, sizeof test_acc, "%s/accuracy", test_name);
    const char *tags[5] = {"train/loss", "train/accuracy", test_loss, test_acc, "train/images_per_s"};
    double values[5] = {s->train_loss, s->train_acc, s->test_loss, s->test_acc, s->images_per_s};
    return tensorboard_scalars(tb, s->epoch, tags, values, 5);
}

/* The weights evaluated (--ema: the average, swapped in and back) to path,
 * with the normalisation and class names (saved_info). */
static nn_status save_weights(trainer *t, const char *path) {
    nn_status st = t->ema ? nn_ema_swap(t->ema) : NN_OK;
    nn_model_info info = saved_info(t);
    if (st == NN_OK) st = nn_save_module_info(t->net, path, &info);
    if (t->ema) {
        nn_status back = nn_ema_swap(t->ema);
        if (st == NN_OK) st = back;
    }
    return st;
}

/* --save-best and --patience after an epoch: the best weights so far saved
 * (atomically: a crash keeps the previous best), *stop set when --patience
 * epochs passed without a better one. */
static int keep_best(trainer *t, const epoch_stats *s, const char *test_name, bool *stop) {
    const train_config *c = &t->config;
    /* Tracked on every run, so that a training state carries it to --resume. */
    bool better = best_epoch_update(&t->best, s);
    if (!c->save_best && !c->patience) return EXIT_OK;
    char best[64];
    if (better && c->save_best) {
        if (save_weights(t, c->save_best) != NN_OK) {
            fprintf(stderr, "nnengine train: --save-best: %s\n", library_error());
            return EXIT_FAILURE_RUNTIME;
        }
        best_epoch_describe(&t->best, best, sizeof best);
        fprintf(stderr, "saved the best weights so far (epoch %d, %s %s) to %s\n", s->epoch, test_name, best,
                c->save_best);
    }
    if (c->patience && t->best.stale >= c->patience && s->epoch < c->epochs) {
        best_epoch_describe(&t->best, best, sizeof best);
        fprintf(stderr, "early stopping after epoch %d: %s %s has not improved for %lld epoch%s (--patience %lld; "
                        "best: epoch %d, %s)\n", s->epoch, test_name, t->best.by_loss ? "loss" : "accuracy",
                (long long)t->best.stale, t->best.stale == 1 ? "" : "s", (long long)c->patience, t->best.epoch, best);
        *stop = true;
    }
    return EXIT_OK;
}

static int train(train_config config) {
    if (!model_known(config.model)) {
        char unknown[512];
        fprintf(stderr, "nnengine train: %s\n", model_unknown(config.model, unknown, sizeof unknown));
        return EXIT_BAD_INPUT;
    }
    if (!optimizer_known(config.optimizer)) {
        fprintf(stderr, "nnengine train: --optimizer takes %s, got '%s'\n", optimizer_names(), config.optimizer);
        return EXIT_BAD_INPUT;
    }
    apply_recipe(&config);
    if (config.freeze.count && (config.checkpoint || config.resume)) {
        fprintf(stderr, "nnengine train: --freeze cannot be combined with --checkpoint or --resume (a training "
                        "state holds every parameter's optimizer state)\n");
        return EXIT_BAD_INPUT;
    }
    /* --no-eval leaves nothing for these to compare or limit. */
    const char *needs_eval = config.save_best ? "--save-best" : config.patience ? "--patience"
                           : config.eval_limit ? "--eval-limit" : NULL;
    if (config.no_eval && needs_eval) {
        fprintf(stderr, "nnengine train: --no-eval cannot be combined with %s, which needs the evaluation after "
                        "each epoch\n", needs_eval);
        return EXIT_BAD_INPUT;
    }
    nn_schedule_kind kind;
    if (!nn_schedule_kind_parse(config.schedule, &kind)) {
        fprintf(stderr, "nnengine train: --schedule takes constant, step, multistep, exponential, cosine, onecycle or "
                        "linear, got '%s'\n", config.schedule);
        return EXIT_BAD_INPUT;
    }
    nn_schedule_options parsed;
    if (!parse_milestones(config.milestones, &parsed)) {
        fprintf(stderr, "nnengine train: --milestones takes 1 to %d increasing step numbers separated by commas, "
                        "got '%s'\n", NN_SCHEDULE_MAX_MILESTONES, config.milestones);
        return EXIT_BAD_INPUT;
    }
    if (kind == NN_SCHEDULE_MULTISTEP && !config.milestones) {
        fprintf(stderr, "nnengine train: --schedule multistep needs --milestones\n");
        return EXIT_BAD_INPUT;
    }
    if (config.ema >= 1) { /* a decay of 1 never moves the average: it would evaluate and save the initial weights */
        fprintf(stderr, "nnengine train: --ema takes a decay in [0, 1) (e.g. 0.999), got %g: at 1 the average "
                        "would stay the untrained initial weights\n", config.ema);
        return EXIT_BAD_INPUT;
    }
    trainer t = {.config = config, .interrupted_at = -1, .stop_step = -1,
                 .guard = {.allow_nan = config.allow_nan, .checkpoint_epoch = -1}};
    train_config *c = &t.config;
    t.flag_count = shared_flags(c, t.flags); /* before --global-batch gives this rank its share */
    if (!saved_flags_format(t.flags, t.flag_count, t.run_flags, sizeof t.run_flags)) t.run_flags[0] = '\0';
    int started = dist_train_start(&t.dist, c->device, c->global_batch, &c->batch, &c->threads);
    if (started != EXIT_OK) return dist_train_finish(&t.dist, started);
    if ((started = rank_flags_agree(&t.dist, t.flags, t.flag_count)) != EXIT_OK)
        return dist_train_finish(&t.dist, started);
    if (!dist_train_is_main(&t.dist)) /* rank 0 writes the files */
        c->save = c->checkpoint = c->log = c->save_best = c->tensorboard = NULL;
    t.guard.checkpoint = c->checkpoint;
    if (!best_epoch_parse_metric(c->save_best_by, &t.best.by_loss)) {
        fprintf(stderr, "nnengine train: --save-best-by takes accuracy or loss, got '%s'\n", c->save_best_by);
        return dist_train_finish(&t.dist, EXIT_BAD_INPUT);
    }
    if (!epoch_log_format(c->log_format, c->log, &t.log_as)) {
        fprintf(stderr, "nnengine train: --log-format takes json or csv, got '%s'\n", c->log_format);
        return dist_train_finish(&t.dist, EXIT_BAD_INPUT);
    }
    int status = setup(&t);
    if (status == EXIT_OK) interrupt_install();
    const int64_t test_images = t.photos ? t.photo.test.count : t.data.test.count;
    if (status == EXIT_OK && c->eval_limit && c->eval_limit < test_images)
        fprintf(stderr, "evaluating on the first %lld of the %lld %s images after each epoch (--eval-limit)\n",
                (long long)c->eval_limit, (long long)test_images,
                (t.photos ? t.photo.test_is_validation : t.data.test_is_validation) ? "validation" : "test");
    progress bar;
    progress_init(&bar, (int)c->epochs);
    /* Under mpirun no bar: Open MPI gives the ranks a terminal even when its
     * own output goes to a file, which the bar's control codes would fill. */
    if (t.dist.size > 1) bar.enabled = false;
    const char *test_name = (t.photos ? t.photo.test_is_validation : t.data.test_is_validation) ? "val" : "test";
    int64_t last = c->stop_after > 0 && c->stop_after < c->epochs ? c->stop_after : c->epochs;
    int epoch = t.first_epoch;
    float scale;
    int64_t skipped, skipped_before = 0;
    if (t.opt && nn_optimizer_loss_scale_stats(t.opt, &scale, &skipped) == NN_OK) skipped_before = skipped;
    for (; status == EXIT_OK && epoch <= last; epoch++) {
        epoch_stats stats;
        const int64_t steps_before = t.steps_done;
        status = run_epoch(&t, &bar, epoch, &stats);
        if (status != EXIT_OK) break;
        if (t.opt && nn_optimizer_loss_scale_stats(t.opt, &scale, &skipped) == NN_OK) {
            const bool moving = loss_guard_check_skips(&t.guard, epoch, t.steps_done - steps_before,
                                                       skipped - skipped_before, scale);
            skipped_before = skipped;
            if (!moving) {
                status = EXIT_FAILURE_RUNTIME;
                break;
            }
        }
        print_epoch_line(&stats, (int)c->epochs, c->no_eval ? NULL : test_name);
        if (t.log && !((t.log_as == LOG_CSV ? write_epoch_csv(t.log, &stats) : write_epoch_json(t.log, &stats)) &&
                       log_flushed(t.log))) {
            lose_log(&t, "--log", c->log, &t.log, errno);
        }
        if (t.tb.file && !tensorboard_epoch(&t.tb, &stats, c->no_eval ? NULL : test_name)) {
            lose_log(&t, "--tensorboard", t.tb.path, NULL, errno);
            tensorboard_close(&t.tb);
        }
        bool stop = false;
        if (status == EXIT_OK) status = keep_best(&t, &stats, test_name, &stop);
        if (status == EXIT_OK) status = write_checkpoint(&t, epoch);
        if (c->stop_after_step > 0 && t.steps_done >= c->stop_after_step && epoch < last) {
            fprintf(stderr, "stopped after step %lld of the run (--stop-after-step) at the end of epoch %d\n",
                    (long long)t.steps_done, epoch);
            break;
        }
        if (stop) break;
    }
    /* Ctrl+C or --stop-after-step: the steps so far are kept as an
     * uninterrupted run's would be. */
    if (status == EXIT_INTERRUPTED) {
        if (t.stopped_by_step)
            fprintf(stderr, "stopped after step %lld of the run (--stop-after-step) in epoch %d after step %lld of "
                            "%lld\n", (long long)t.steps_done, epoch, (long long)t.interrupted_at,
                    (long long)device_steps_per_epoch(&t.steps));
        else
            fprintf(stderr, "stopped by %s in epoch %d after step %lld of %lld\n", interrupt_name(), epoch,
                    (long long)t.interrupted_at, (long long)device_steps_per_epoch(&t.steps));
        if (write_checkpoint(&t, epoch - 1) != EXIT_OK) status = EXIT_FAILURE_RUNTIME;
    }
    if (status == EXIT_OK && t.opt && nn_optimizer_loss_scale_stats(t.opt, &scale, &skipped) == NN_OK)
        fprintf(stderr, "fp16 loss scaling: %lld step%s skipped (gradients not finite), scale now %g\n",
                (long long)skipped, skipped == 1 ? "" : "s", scale);
    uint64_t current, peak, reserved;
    if (status == EXIT_OK && nn_ctx_memory_stats(t.ctx, &current, &peak, &reserved) == NN_OK)
        fprintf(stderr, "peak device memory %.1f MiB allocated (%.1f MiB reserved at the end) (%s)\n", peak / 1048576.0,
                reserved / 1048576.0, nn_ctx_device_name(t.ctx));
    if ((status == EXIT_OK || status == EXIT_INTERRUPTED) && c->save) {
        /* --ema: the saved weights are the average (swapped in, saved, swapped back). */
        if (save_weights(&t, c->save) != NN_OK) {
            fprintf(stderr, "nnengine train: %s\n", library_error());
            status = EXIT_FAILURE_RUNTIME;
        } else {
            fprintf(stderr, "saved the weights to %s\n", c->save);
        }
    }
    /* Stopped by a signal: no rank exits (130) before rank 0 has written its
     * files, since mpirun ends the job at the first rank's non-zero exit. */
    double files_written = 0;
    if (status == EXIT_INTERRUPTED && t.dist.size > 1) dist_train_sum(&t.dist, &files_written, 1);
    interrupt_restore();
    close_logs(&t);
    if (status == EXIT_INTERRUPTED && t.stopped_by_step) status = EXIT_OK; /* asked for: not a failure */
    if (status == EXIT_OK && t.logs_lost) status = EXIT_FAILURE_RUNTIME;
    trainer_free(&t);
    return dist_train_finish(&t.dist, status);
}

int command_train(int argc, char **argv) {
    train_config c = defaults();
    const char *positional[1] = {NULL};
    const option_spec options[] = {
        {"--data", OPTION_STRING, &c.data, 0, 0, "DIR", "dataset folder: IDX files, or one folder per class"},
        {"--epochs", OPTION_INT, &c.epochs, 1, 1e6, "N", "passes over the training set (default 10; resnet18-cifar 15)"},
        {"--batch", OPTION_INT, &c.batch, 1, 65536, "B", "images per step (default 64; 3x224x224 models 16; resnet18-cifar 128)"},
        {"--optimizer", OPTION_STRING, &c.optimizer, 0, 0, "O", "sgd (default), adam, adamw, rmsprop, lion or muon"},
        {"--lr", OPTION_FLOAT, &c.lr, 0, 1e3, "X", "learning rate (sgd 0.05, 3x224x224 models 0.03, resnet18-cifar 0.1; adam, adamw 1e-3; rmsprop 1e-2; lion 1e-4; muon 0.02)"},
        {"--schedule", OPTION_STRING, &c.schedule, 0, 0, "S", "learning-rate schedule: cosine (default; resnet18-cifar onecycle), constant, step, multistep, exponential, onecycle or linear"},
        {"--warmup", OPTION_INT, &c.warmup, 0, 2e9, "N", "cosine and linear: linear warm-up over the first N optimizer steps (default 0)"},
        {"--warmup-start", OPTION_FLOAT, &c.warmup_start, 0, 1, "F", "cosine and linear: the warm-up's first rate, a fraction of --lr (default 0.1)"},
        {"--eta-min", OPTION_FLOAT, &c.eta_min, 0, 1e3, "X", "cosine: the final learning rate (default 0)"},
        {"--step-size", OPTION_INT, &c.step_size, 1, 2e9, "N", "step: multiply the rate by --gamma every N optimizer steps (default 1)"},
        {"--gamma", OPTION_FLOAT, &c.gamma, 0, 1e3, "G", "step, multistep, exponential: the factor (default 0.1)"},
        {"--milestones", OPTION_STRING, &c.milestones, 0, 0, "A,B", "multistep: the optimizer steps where the rate is multiplied by --gamma"},
        {"--max-lr", OPTION_FLOAT, &c.max_lr, 0, 1e3, "X", "onecycle: the peak rate (default --lr); starts at max/25, ends at max/25e4"},
        {"--pct-start", OPTION_FLOAT, &c.pct_start, 0, 1, "F", "onecycle: the fraction of steps rising to the peak (default 0.3)"},
        {"--accumulate", OPTION_INT, &c.accumulate, 1, 65536, "K", "sum the gradients of K batches (losses scaled by 1/K) per optimizer step (default 1)"},
        {"--ema", OPTION_FLOAT, &c.ema, 0, 1, "D", "keep a moving average of the weights with decay D in [0, 1) (e.g. 0.999), evaluated and saved (default 0: off)"},
        {"--momentum", OPTION_FLOAT, &c.momentum, 0, 1, "M", "sgd, rmsprop, muon momentum (default 0.9; rmsprop 0; muon 0.95)"},
        {"--nesterov", OPTION_SWITCH, &c.nesterov, 0, 0, NULL, "sgd: Nesterov momentum (resnet18-cifar: on)"},
        {"--weight-decay", OPTION_FLOAT, &c.weight_decay, 0, 1, "W", "weight decay (sgd 5e-4 (L2), adamw 1e-2 (decoupled), the others 0)"},
        {"--beta1", OPTION_FLOAT, &c.beta1, 0, 1, "B", "adam, adamw, lion: beta1 (default 0.9)"},
        {"--beta2", OPTION_FLOAT, &c.beta2, 0, 1, "B", "adam, adamw, lion: beta2 (default 0.999; lion 0.99)"},
        {"--eps", OPTION_FLOAT, &c.eps, 0, 1, "E", "adam, adamw, rmsprop: eps (default 1e-8)"},
        {"--device", OPTION_STRING, &c.device, 0, 0, "D", "auto (a GPU when usable, else the CPU), cpu or vulkan"},
        {"--precision", OPTION_STRING, &c.precision, 0, 0, "P", "fp32 (default), fp16 or bf16: the operands of convolutions and Linear layers, rounded (fp16 on matrix cores where the GPU has them); sums, weights and the rest stay fp32"},
        {"--no-loss-scale", OPTION_SWITCH, &c.no_loss_scale, 0, 0, NULL, "fp16: no dynamic loss scaling (default: the loss scaled by 65536, halved after a step that overflows, which is skipped; doubled after 2000 good ones)"},
        {"--threads", OPTION_INT, &c.threads, 0, 1024, "T", "CPU worker threads (default 0: one per core)"},
        {"--seed", OPTION_INT, &c.seed, 0, 9.2e18, "S", "seed of the initial weights and the shuffles (default 1)"},
        {"--limit", OPTION_INT, &c.limit, 0, 9.2e18, "N", "train on the first N images only (default 0: all)"},
        {"--normalize", OPTION_STRING, &c.normalize, 0, 0, "N", "auto (training mean/std, default), none, or MEAN,STD"},
        {"--val-fraction", OPTION_FLOAT, &c.validation_fraction, 0, 1, "F", "held out for validation when DIR has no test set (default 0.1)"},
        {"--save", OPTION_STRING, &c.save, 0, 0, "FILE", "write the trained weights (safetensors) at the end"},
        {"--log", OPTION_STRING, &c.log, 0, 0, "FILE", "write one JSON object per epoch"},
        {"--checkpoint", OPTION_STRING, &c.checkpoint, 0, 0, "FILE", "after each epoch, write the training state (for --resume; it keeps the best epoch for --save-best and --patience)"},
        {"--resume", OPTION_STRING, &c.resume, 0, 0, "FILE", "continue from a --checkpoint file (same flags as that run)"},
        {"--workers", OPTION_INT, &c.workers, 0, 1024, "N", "photos: decoding threads (default 0: one per core but one)"},
        {"--flip", OPTION_SWITCH, &c.flip, 0, 0, NULL, "random horizontal flips (resnet18-cifar: on)"},
        {"--crop-pad", OPTION_INT, &c.crop_pad, 0, 64, "P", "data on the device: random shifts of up to P pixels, black coming in (RandomCrop(padding=P); resnet18-cifar 2)"},
        {"--no-augment", OPTION_SWITCH, &c.no_augment, 0, 0, NULL, "none of the model's default augmentation"},
        {"--random-crop", OPTION_SWITCH, &c.random_crop, 0, 0, NULL, "photos: random resized crops (torchvision's RandomResizedCrop)"},
        {"--allow-nan", OPTION_SWITCH, &c.allow_nan, 0, 0, NULL, "train on when the loss becomes nan or inf (default: stop with exit 1, keeping the last --checkpoint)"},
        {"--no-capture", OPTION_SWITCH, &c.no_capture, 0, 0, NULL, "run each step eagerly (default: capture one step, replay it)"},
        {"--stop-after", OPTION_INT, &c.stop_after, 0, 1e6, "E", "end after epoch E; the schedule still spans --epochs (default 0: run all)"},
        {"--stop-after-step", OPTION_INT, &c.stop_after_step, 0, 1e15, "S", "stop after optimizer step S of the run (--resume continues its count), saving the weights and --checkpoint as Ctrl+C does, for a later --resume (default 0: run all)"},
        {"--init", OPTION_STRING, &c.init, 0, 0, "FILE", "start from these weights (a state_dict in safetensors, e.g. torchvision's; strict)"},
        {"--classes", OPTION_INT, &c.classes, 1, 1 << 20, "K", "a classifier (fc, classifier.1, ...) of K outputs; with --init, the file's is skipped unless it has K"},
        {"--freeze", OPTION_STRING_LIST, &c.freeze, 0, 0, "PREFIX", "parameters whose name starts with PREFIX are not trained (repeatable)"},
        {"--save-best", OPTION_STRING, &c.save_best, 0, 0, "FILE", "after each epoch that beats the previous ones on the test (or validation) set, write the weights"},
        {"--save-best-by", OPTION_STRING, &c.save_best_by, 0, 0, "M", "what --save-best and --patience compare: accuracy (default) or loss"},
        {"--eval-limit", OPTION_INT, &c.eval_limit, 1, 1e12, "N", "evaluate after each epoch on the first N test (or validation) images only (default: all)"},
        {"--no-eval", OPTION_SWITCH, &c.no_eval, 0, 0, NULL, "no evaluation after the epochs (the epoch line and logs then have no test figures)"},
        {"--class-names", OPTION_STRING, &c.class_names, 0, 0, "FILE", "the data's class names, one per line (IDX files have none; examples/fashion-mnist.names), saved with the weights"},
        {"--patience", OPTION_INT, &c.patience, 0, 1e6, "N", "stop early after N epochs without a better one (default 0: never)"},
        {"--tensorboard", OPTION_STRING, &c.tensorboard, 0, 0, "DIR", "write each epoch's losses and accuracies as TensorBoard scalars to an event file in DIR"},
        {"--quiet", OPTION_SWITCH, &c.quiet, 0, 0, NULL, "no model summary (layers, output shapes, parameters, memory) before training"},
        {"--global-batch", OPTION_INT, &c.global_batch, 1, 1 << 24, "G", "under mpirun -n N: G images per step over all ranks (--batch G/N each; default N x --batch)"},
        {"--sync-bn", OPTION_SWITCH, &c.sync_bn, 0, 0, NULL, "under mpirun: BatchNorm statistics over all ranks (PyTorch's SyncBatchNorm)"},
        {"--log-steps", OPTION_STRING, &c.log_steps, 0, 0, "FILE", "write each step's mean loss and its images (over all ranks) as one JSON object per line"},
        {"--log-format", OPTION_STRING, &c.log_format, 0, 0, "F", "--log as json (one object per line) or csv (default: csv for a FILE ending in .csv, else json)"},
    };
    static const char *const required[] = {"--data", NULL};
    const command_spec spec = {
        "train", "train MODEL --data DIR [options]", "Train a model (see nnengine --help for the models).",
        "Prints one line per epoch (train loss and accuracy, test loss and accuracy,\n"
        "seconds of training, images per second) and, on a terminal, a progress bar.\n"
        "The JSON log has the fields epoch, train_loss, train_acc, test_loss,\n"
        "test_acc, seconds, images_per_s (accuracies as fractions); the CSV log has\n"
        "them as columns (plot either with python -m nn_engine.plot LOG).\n"
        "--save-best and --patience compare the test (or validation) set's accuracy\n"
        "or loss (--save-best-by); with --resume they count from the resumed epoch.\n"
        "DIR holds train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz],\n"
        "t10k-images-idx3-ubyte[.gz] and t10k-labels-idx1-ubyte[.gz] (MNIST's format),\n"
        "or DIR/<class>/<image> folders of PNG/JPEG images (DIR/train and DIR/test\n"
        "when there is a test split; otherwise --val-fraction is held out).\n"
        "lenet5 and mlp keep the images in memory and on the device (one size, made\n"
        "grey). alexnet and alexnet-tv take photos of any size: decoded on worker\n"
        "threads ahead of training, resized to 224x224 RGB (bilinear), normalised\n"
        "with ImageNet's mean and std (--normalize auto); files that fail to\n"
        "decode are left out and reported once.\n"
        "resnet18, resnet34, resnet50 and mobilenet_v2 (torchvision's names) take\n"
        "photos as alexnet does; resnet18-cifar takes the data's channels and size.\n"
        "Fine-tuning: --init FILE (torchvision's state_dict in safetensors) with\n"
        "--classes K replaces the classifier; --freeze layer1 keeps layer1.* fixed.\n"
        "Data parallel: mpirun -n N nnengine train ... runs N ranks (one GPU each,\n"
        "or --device cpu), each on its shard of every global batch of N x --batch\n"
        "images, gradients averaged over the ranks; rank 0 prints and writes files.\n"
        "--resume FILE restores the weights, momentum and progress a --checkpoint\n"
        "FILE holds and runs the remaining epochs up to --epochs: with the same\n"
        "flags, the result equals an uninterrupted run bit for bit (CPU); the\n"
        "schedule's step and the --ema average are part of the training state.\n"
        "Schedules count optimizer steps (--warmup, --step-size, --milestones),\n"
        "each --accumulate batches; the rate is computed on the device from a step\n"
        "counter, with torch.optim.lr_scheduler's formulas (nn_schedule.h).\n"
        "With --ema, evaluation and --save use the averaged weights (parameters\n"
        "and BatchNorm statistics); --checkpoint keeps both.",
        1, positional, options, (int)(sizeof options / sizeof options[0]), required,
    };
    int status;
    if (options_parse_or_help(&spec, argc, argv, &status)) return status;
    c.model = positional[0];
    return train(c);
}
