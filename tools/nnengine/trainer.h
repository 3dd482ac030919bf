/* A run of nnengine train: its settings and everything it holds (the data,
 * the device, the model, the optimizer, the logs), shared by the files
 * that make it up:
 *
 *   cmd_train.c    the command: its flags, and the loop over the epochs
 *   train_config.c the settings, the model's recipe, the shared flags
 *   train_setup.c  the data (held on the device, or photos streamed by the
 *                  loader), the device, the model, the optimizer, the logs
 *   train_epoch.c  an epoch's steps from either data source, and its figures
 *   train_state.c  --checkpoint, --resume, --save, --save-best, --patience
 *   train_logs.c   --log, --log-steps, --tensorboard */
#ifndef NNENGINE_TRAINER_H
#define NNENGINE_TRAINER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "best_epoch.h"
#include "device_steps.h"
#include "dist_train.h"
#include "epoch_log.h"
#include "loss_guard.h"
#include "nn_io.h"
#include "photo_data.h"
#include "progress.h"
#include "setup.h"
#include "tensorboard.h"
#include "train_config.h"

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

/* train_setup.c: checks the outputs, loads the data, opens the device,
 * builds the model and the optimizer, resumes, opens the logs. 0 (EXIT_OK)
 * or the exit status, the reason printed. */
int train_setup(trainer *t);

/* train_epoch.c: one epoch of training and its evaluation into *stats;
 * EXIT_INTERRUPTED after Ctrl+C or --stop-after-step (t->interrupted_at). */
int train_run_epoch(trainer *t, progress *bar, int epoch, epoch_stats *stats);

/* train_state.c */
int train_resume(trainer *t);
/* --checkpoint after `epoch` finished epochs (and t->interrupted_at steps
 * of the next one, when stopped part way). */
int train_write_checkpoint(trainer *t, int epoch);
/* The weights evaluated (--ema: the average) to path, with the
 * normalisation and class names. */
nn_status train_save_weights(trainer *t, const char *path);
/* --save-best and --patience after an epoch (*stop: --patience ran out). */
int train_keep_best(trainer *t, const epoch_stats *s, const char *test_name, bool *stop);

/* train_logs.c */
void train_lose_log(trainer *t, const char *flag, const char *path, FILE **file, int error);
bool train_log_flushed(FILE *f);
void train_close_logs(trainer *t);
nn_status train_log_step(trainer *t, int epoch, int64_t step, double loss_sum, int64_t images);
bool train_tensorboard_epoch(tensorboard *tb, const epoch_stats *s, const char *test_name);

#endif
