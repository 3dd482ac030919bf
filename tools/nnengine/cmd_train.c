/* nnengine train MODEL --data DIR [options]: the training loop. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "device_steps.h"
#include "evaluate.h"
#include "models.h"
#include "nn_io.h"
#include "options.h"
#include "progress.h"
#include "setup.h"

typedef struct train_config {
    const char *model, *data, *device, *save, *log, *normalize, *schedule;
    const char *checkpoint, *resume; /* training state written after each epoch / read at the start */
    int64_t epochs, batch, threads, seed, limit;
    int64_t stop_after; /* 0, or end after this epoch (the schedule still spans --epochs) */
    bool no_capture;    /* run every step eagerly instead of replaying a captured one */
    double lr, momentum, weight_decay, validation_fraction;
} train_config;

/* The defaults reach 89% test accuracy on Fashion-MNIST with LeNet-5 in 10
 * epochs (README); see bench/README.md for how they were chosen. */
static train_config defaults(void) {
    return (train_config){
        .device = "auto", .normalize = "auto", .schedule = "cosine",
        .epochs = 10, .batch = 64, .threads = 0, .seed = 1, .limit = 0,
        .lr = 0.05, .momentum = 0.9, .weight_decay = 5e-4, .validation_fraction = 0.1,
    };
}

/* The learning rate of step `step` of `total`: constant, or cosine annealing
 * from lr to 0 over the run (Loshchilov & Hutter's SGDR without restarts). */
static double scheduled_lr(const train_config *c, int64_t step, int64_t total) {
    if (strcmp(c->schedule, "cosine") != 0 || total <= 1) return c->lr;
    return c->lr * 0.5 * (1.0 + cos(M_PI * (double)step / (double)total));
}

typedef struct trainer {
    train_config config;
    data_setup data;
    nn_ctx *ctx;
    nn_module *net;
    nn_sgd *opt;
    device_steps steps;
    FILE *log;
    int64_t *order;  /* this epoch's permutation of the training set */
    float *lrs;      /* this epoch's learning rate per step */
    int first_epoch;      /* 1, or the epoch after the one --resume restored */
    int64_t steps_done;   /* optimizer steps so far, saved with --checkpoint */
} trainer;

static void trainer_free(trainer *t) {
    device_steps_close(&t->steps);
    free(t->order), free(t->lrs);
    nn_sgd_free(t->opt);
    nn_module_free(t->net);
    nn_ctx_free(t->ctx);
    if (t->log) fclose(t->log);
    data_setup_free(&t->data);
}

/* Steps between progress-bar updates on a terminal: each update waits for
 * the device to read the running sums. Without a terminal, an epoch's
 * steps go to the device at once. */
#define STEPS_PER_TICK 50

static int run_epoch(trainer *t, progress *bar, int epoch, epoch_stats *stats) {
    const train_config *c = &t->config;
    int64_t count = t->data.train.count;
    int64_t steps = device_steps_per_epoch(&t->steps);
    nn_shuffle_indices(t->order, count, (uint64_t)c->seed, (uint64_t)(epoch - 1));
    for (int64_t s = 0; s < steps; s++)
        t->lrs[s] = (float)scheduled_lr(c, (int64_t)(epoch - 1) * steps + s, steps * c->epochs);
    progress_begin_epoch(bar, epoch, steps);
    double start = now_seconds(), loss_sum = 0, correct = 0;
    nn_status st = device_steps_begin_epoch(&t->steps, t->order, t->lrs);
    int64_t tick = bar->enabled ? STEPS_PER_TICK : steps;
    for (int64_t s = 0; st == NN_OK && s < steps; s += tick) {
        int64_t to = s + tick < steps ? s + tick : steps;
        st = device_steps_run(&t->steps, s, to);
        if (st == NN_OK) st = device_steps_sums(&t->steps, &loss_sum, &correct);
        if (st == NN_OK) {
            int64_t seen = to * t->steps.batch < count ? to * t->steps.batch : count;
            progress_update(bar, to, seen, loss_sum / (double)seen);
        }
    }
    if (st != NN_OK) {
        progress_clear(bar);
        fprintf(stderr, "nnengine train: epoch %d failed: %s\n", epoch, library_error());
        return EXIT_FAILURE_RUNTIME;
    }
    t->steps_done += steps;
    stats->epoch = epoch;
    stats->seconds = now_seconds() - start;
    stats->train_loss = loss_sum / count;
    stats->train_acc = correct / count;
    stats->images_per_s = count / stats->seconds;
    progress_clear(bar);
    if (evaluate(t->ctx, t->net, &t->data.test, t->data.norm, t->data.classes, &stats->test_loss,
                 &stats->test_acc) != NN_OK) {
        fprintf(stderr, "nnengine train: evaluation after epoch %d failed: %s\n", epoch, library_error());
        return EXIT_FAILURE_RUNTIME;
    }
    return EXIT_OK;
}

/* The folder of --save must exist and be writable: found out now, not after
 * an hour of training. */
static int check_save_path(const char *path) {
    char folder[4096];
    snprintf(folder, sizeof folder, "%s", path);
    char *slash = strrchr(folder, '/');
    if (!slash) snprintf(folder, sizeof folder, ".");
    else if (slash == folder) slash[1] = '\0';
    else *slash = '\0';
    if (access(folder, W_OK) != 0) {
        fprintf(stderr, "nnengine train: cannot write --save %s: folder %s does not exist or is not writable\n",
                path, folder);
        return EXIT_BAD_INPUT;
    }
    return EXIT_OK;
}

/* --resume: the state must come from a run with this data, batch and seed,
 * or the remaining epochs would not continue it. */
static int resume(trainer *t) {
    const train_config *c = &t->config;
    nn_train_progress p;
    if (nn_load_train_state(c->resume, t->net, t->opt, &p) != NN_OK) {
        fprintf(stderr, "nnengine train: --resume: %s\n", library_error());
        return EXIT_BAD_INPUT;
    }
    int64_t steps = device_steps_per_epoch(&t->steps);
    if (p.seed != (uint64_t)c->seed) {
        fprintf(stderr, "nnengine train: --resume %s was saved by a run with --seed %llu; give the same "
                        "--seed (this run has %lld)\n", c->resume, (unsigned long long)p.seed,
                (long long)c->seed);
        return EXIT_BAD_INPUT;
    }
    if (p.step != p.epoch * steps) {
        fprintf(stderr, "nnengine train: --resume %s holds %lld steps after %lld epochs, but this run "
                        "takes %lld steps per epoch (%lld images, batch %lld): give the same --data, "
                        "--limit and --batch\n", c->resume, (long long)p.step, (long long)p.epoch,
                (long long)steps, (long long)t->data.train.count, (long long)c->batch);
        return EXIT_BAD_INPUT;
    }
    if (p.epoch >= c->epochs) {
        fprintf(stderr, "nnengine train: --resume %s has already trained %lld epochs (--epochs %lld)\n",
                c->resume, (long long)p.epoch, (long long)c->epochs);
        return EXIT_BAD_INPUT;
    }
    t->first_epoch = (int)p.epoch + 1;
    t->steps_done = p.step;
    fprintf(stderr, "resuming from %s after epoch %lld (step %lld)\n", c->resume, (long long)p.epoch,
            (long long)p.step);
    return EXIT_OK;
}

static int setup(trainer *t) {
    train_config *c = &t->config;
    if (c->save && check_save_path(c->save) != EXIT_OK) return EXIT_BAD_INPUT;
    if (c->checkpoint && check_save_path(c->checkpoint) != EXIT_OK) return EXIT_BAD_INPUT;
    int status = data_setup_load("train", c->data, c->validation_fraction, (uint64_t)c->seed,
                                 c->limit, c->normalize, &t->data);
    if (status != EXIT_OK) return status;
    const nn_dataset *train = &t->data.train;
    if (c->batch > train->count)
        fprintf(stderr, "nnengine train: note: --batch %lld is larger than the %lld training images\n",
                (long long)c->batch, (long long)train->count);
    t->ctx = open_device("train", c->device, (int)c->threads, (uint64_t)c->seed);
    if (!t->ctx) return EXIT_BAD_INPUT;
    char why[512];
    t->net = model_build(t->ctx, c->model, train->channels, train->height, train->width,
                         t->data.classes, why, sizeof why);
    if (!t->net) {
        fprintf(stderr, "nnengine train: %s\n", why);
        return EXIT_BAD_INPUT;
    }
    int count = nn_module_param_count(t->net);
    nn_tensor **params = malloc(sizeof *params * (size_t)count);
    if (params)
        for (int i = 0; i < count; i++) params[i] = nn_module_param(t->net, i);
    nn_sgd_options sgd = {.lr = (float)c->lr, .momentum = (float)c->momentum,
                          .weight_decay = (float)c->weight_decay};
    t->opt = params ? nn_sgd_new(params, count, &sgd) : NULL;
    free(params);
    if (!t->opt ||
        device_steps_open(&t->steps, t->ctx, t->net, t->opt, train, t->data.norm, c->batch, !c->no_capture) != NN_OK) {
        fprintf(stderr, "nnengine train: %s\n", library_error());
        return EXIT_FAILURE_RUNTIME;
    }
    t->order = malloc(sizeof(int64_t) * train->count);
    t->lrs = malloc(sizeof(float) * device_steps_per_epoch(&t->steps));
    if (!t->order || !t->lrs) {
        fprintf(stderr, "nnengine train: out of host memory\n");
        return EXIT_FAILURE_RUNTIME;
    }
    t->first_epoch = 1;
    if (c->resume && resume(t) != EXIT_OK) return EXIT_BAD_INPUT;
    /* A resumed run continues its log. */
    if (c->log && !(t->log = fopen(c->log, c->resume ? "a" : "w"))) {
        perror(c->log);
        fprintf(stderr, "nnengine train: cannot write the log file %s\n", c->log);
        return EXIT_BAD_INPUT;
    }
    fprintf(stderr, "data: %s: %lld training and %lld %s images of %dx%dx%d, %d classes\n", c->data,
            (long long)train->count, (long long)t->data.test.count,
            t->data.test_is_validation ? "validation" : "test", train->channels, train->height,
            train->width, t->data.classes);
    fprintf(stderr,
            "training %s: %d parameter tensors, batch %lld, lr %g (%s), momentum %g, "
            "weight decay %g, normalisation mean %.4f std %.4f, seed %lld; data on the device, %s\n",
            c->model, count, (long long)c->batch, c->lr, c->schedule, c->momentum, c->weight_decay,
            t->data.norm.mean, t->data.norm.std, (long long)c->seed,
            c->no_capture ? "every step eager (--no-capture)" : "one step captured and replayed");
    return EXIT_OK;
}

static int train(train_config config) {
    if (!model_known(config.model)) {
        fprintf(stderr, "nnengine train: unknown model '%s' (known: %s)\n", config.model, models_names());
        return EXIT_BAD_INPUT;
    }
    if (strcmp(config.schedule, "cosine") != 0 && strcmp(config.schedule, "constant") != 0) {
        fprintf(stderr, "nnengine train: --schedule takes cosine or constant, got '%s'\n", config.schedule);
        return EXIT_BAD_INPUT;
    }
    trainer t = {.config = config};
    int status = setup(&t);
    progress bar;
    progress_init(&bar, (int)config.epochs);
    const char *test_name = t.data.test_is_validation ? "val" : "test";
    int64_t last = config.stop_after > 0 && config.stop_after < config.epochs ? config.stop_after : config.epochs;
    for (int epoch = t.first_epoch; status == EXIT_OK && epoch <= last; epoch++) {
        epoch_stats stats;
        status = run_epoch(&t, &bar, epoch, &stats);
        if (status != EXIT_OK) break;
        print_epoch_line(&stats, (int)config.epochs, test_name);
        if (t.log && !write_epoch_json(t.log, &stats)) {
            fprintf(stderr, "nnengine train: writing the log %s failed\n", config.log);
            status = EXIT_FAILURE_RUNTIME;
        }
        nn_train_progress done = {.epoch = epoch, .step = t.steps_done, .seed = (uint64_t)config.seed};
        if (status == EXIT_OK && config.checkpoint &&
            nn_save_train_state(config.checkpoint, t.net, t.opt, &done) != NN_OK) {
            fprintf(stderr, "nnengine train: %s\n", library_error());
            status = EXIT_FAILURE_RUNTIME;
        }
    }
    if (status == EXIT_OK && config.save) {
        if (nn_save_module(t.net, config.save) != NN_OK) {
            fprintf(stderr, "nnengine train: %s\n", library_error());
            status = EXIT_FAILURE_RUNTIME;
        } else {
            fprintf(stderr, "saved the weights to %s\n", config.save);
        }
    }
    trainer_free(&t);
    return status;
}

int command_train(int argc, char **argv) {
    train_config c = defaults();
    const char *positional[1] = {NULL};
    const option_spec options[] = {
        {"--data", OPTION_STRING, &c.data, 0, 0, "DIR", "dataset folder: IDX files, or one folder per class (required)"},
        {"--epochs", OPTION_INT, &c.epochs, 1, 1e6, "N", "passes over the training set (default 10)"},
        {"--batch", OPTION_INT, &c.batch, 1, 65536, "B", "images per step (default 64)"},
        {"--lr", OPTION_FLOAT, &c.lr, 0, 1e3, "X", "learning rate (default 0.05)"},
        {"--schedule", OPTION_STRING, &c.schedule, 0, 0, "S", "learning-rate schedule: cosine (default) or constant"},
        {"--momentum", OPTION_FLOAT, &c.momentum, 0, 1, "M", "SGD momentum (default 0.9)"},
        {"--weight-decay", OPTION_FLOAT, &c.weight_decay, 0, 1, "W", "L2 weight decay (default 5e-4)"},
        {"--device", OPTION_STRING, &c.device, 0, 0, "D", "auto (a GPU when usable, else the CPU), cpu or vulkan"},
        {"--threads", OPTION_INT, &c.threads, 0, 1024, "T", "CPU worker threads (default 0: one per core)"},
        {"--seed", OPTION_INT, &c.seed, 0, 9.2e18, "S", "seed of the initial weights and the shuffles (default 1)"},
        {"--limit", OPTION_INT, &c.limit, 0, 9.2e18, "N", "train on the first N images only (default 0: all)"},
        {"--normalize", OPTION_STRING, &c.normalize, 0, 0, "N", "auto (training mean/std, default), none, or MEAN,STD"},
        {"--val-fraction", OPTION_FLOAT, &c.validation_fraction, 0, 1, "F", "held out for validation when DIR has no test set (default 0.1)"},
        {"--save", OPTION_STRING, &c.save, 0, 0, "FILE", "write the trained weights (safetensors) at the end"},
        {"--log", OPTION_STRING, &c.log, 0, 0, "FILE", "write one JSON object per epoch"},
        {"--checkpoint", OPTION_STRING, &c.checkpoint, 0, 0, "FILE", "after each epoch, write the training state (for --resume)"},
        {"--resume", OPTION_STRING, &c.resume, 0, 0, "FILE", "continue from a --checkpoint file (same flags as that run)"},
        {"--no-capture", OPTION_SWITCH, &c.no_capture, 0, 0, NULL, "run each step eagerly (default: capture one step, replay it)"},
        {"--stop-after", OPTION_INT, &c.stop_after, 0, 1e6, "E", "end after epoch E; the schedule still spans --epochs (default 0: run all)"},
    };
    const command_spec spec = {
        "train", "train MODEL --data DIR [options]", "Train a model (lenet5, mlp) with SGD.",
        "Prints one line per epoch (train loss and accuracy, test loss and accuracy,\n"
        "seconds of training, images per second) and, on a terminal, a progress bar.\n"
        "The JSON log has the fields epoch, train_loss, train_acc, test_loss,\n"
        "test_acc, seconds, images_per_s (accuracies as fractions).\n"
        "DIR holds train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz],\n"
        "t10k-images-idx3-ubyte[.gz] and t10k-labels-idx1-ubyte[.gz] (MNIST's format),\n"
        "or DIR/<class>/<image> folders of PNG/JPEG images (DIR/train and DIR/test\n"
        "when there is a test split; otherwise --val-fraction is held out).\n"
        "--resume FILE restores the weights, momentum and progress a --checkpoint\n"
        "FILE holds and runs the remaining epochs up to --epochs: with the same\n"
        "flags, the result equals an uninterrupted run bit for bit (CPU).",
        1, positional, options, (int)(sizeof options / sizeof options[0]),
    };
    int status;
    if (options_parse_or_help(&spec, argc, argv, &status)) return status;
    if (!c.data) {
        fprintf(stderr, "nnengine train: --data DIR is required\n(see: nnengine train --help)\n");
        return EXIT_BAD_INPUT;
    }
    c.model = positional[0];
    return train(c);
}
