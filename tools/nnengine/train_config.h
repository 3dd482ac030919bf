/* nnengine train's settings (train_config): the flags as parsed, the
 * defaults and each model's recipe filling what the flags left unset, the
 * flags every rank of an mpirun job must share, and the schedule they ask
 * for. */
#ifndef NNENGINE_TRAIN_CONFIG_H
#define NNENGINE_TRAIN_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include "nn_schedule.h"
#include "options.h"
#include "rank_flags.h"

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
    double label_smoothing; /* the training loss's; -1: the recipe's, else 0 */
    /* the schedule (nn_schedule.h), in optimizer steps; accumulation; the weights' average */
    const char *milestones;
    int64_t warmup, step_size, accumulate;
    double warmup_fraction; /* the recipe's warm-up, a fraction of the run's steps, where --warmup is not given */
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

/* The defaults: unset values (negative, 0 or NULL) take the model's recipe
 * (train_config_apply_recipe) and the optimizer's defaults (optimizers.h). */
train_config train_config_defaults(void);
/* The model's recipe (models.h) for what the flags left unset. */
void train_config_apply_recipe(train_config *c);
/* The settings' own checks, after the recipe: 0 (EXIT_OK) or the exit
 * status, the reason printed. */
int train_config_check(const train_config *c);
/* The flags every rank shares, into f (at most 64); their count. */
int train_config_shared_flags(const train_config *c, rank_flag *f);
/* --milestones "a,b,c" into o's milestones; NULL gives none. */
bool train_parse_milestones(const char *text, nn_schedule_options *o);
/* The schedule the flags ask for over `total` optimizer steps. */
nn_schedule_options train_schedule_options(const train_config *c, int64_t total);

#endif
