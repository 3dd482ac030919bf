/* The training steps of `nnengine train`, on the device: the training set is
 * uploaded once, and each step sums its loss and accuracy, gathers the next
 * batch by a device-side counter and advances the learning-rate schedule
 * (nn_schedule.h) and the moving average of the weights (nn_ema.h) there.
 * With --accumulate K, one step is K batches whose gradients are summed with
 * each loss scaled by 1/K before the optimizer steps: the captured step
 * holds all K (so a replay is exact, with no device-side condition). So a
 * step needs nothing from the host, and by default the full-batch step is
 * captured once and replayed by a step runner (nn_step.h): many steps per
 * submit, sums read only per epoch or progress tick. --no-capture runs the same kernels eagerly, step by step;
 * the results are the same bit for bit.
 *
 * Photos (AlexNet) do not fit on the device: they come decoded from the
 * image loader batch by batch (device_steps_open_host). Then the host writes
 * each batch into the step's input tensors and replays the step once. */
#ifndef NNENGINE_DEVICE_STEPS_H
#define NNENGINE_DEVICE_STEPS_H

#include <stdbool.h>
#include "evaluate.h"
#include "nn_engine.h"

/* What a step does besides training: both may be NULL; accumulate <= 1 is
 * one batch per optimizer step. */
typedef struct step_extras {
    nn_schedule *schedule;
    nn_ema *ema;
    int64_t accumulate;
    /* data on the device: shifts of up to crop_pad pixels and flips
     * (nn_device_dataset_set_augment) drawn from seed */
    int crop_pad;
    bool flip;
    uint64_t seed;
    int64_t shard_count; /* data parallel: this rank's images of an epoch (dist_train.h); 0: all */
    int rank, ranks;     /* data parallel: where this rank's images sit in each global batch (0 of 1: alone) */
    bool loss_scale;     /* the optimizer scales the loss (nn_optimizer_enable_loss_scaling) */
    float label_smoothing; /* the training loss's (nn_cross_entropy); 0: none */
} step_extras;

typedef struct device_steps {
    nn_ctx *ctx;
    nn_module *net;
    nn_optimizer *opt;
    nn_device_dataset *data;
    nn_schedule *schedule;
    nn_ema *ema;
    bool loss_scale;
    float label_smoothing;
    int64_t accumulate;              /* batches per optimizer step */
    int64_t images;                  /* of an epoch (this rank's shard when data parallel) */
    int64_t batch, full_batches_per_epoch;
    int64_t full_steps;              /* optimizer steps of `accumulate` full batches per epoch */
    int64_t leftover, tail;          /* full batches after them, images in the last partial one */
    nn_tensor *x, *y;                /* the batch (full size) */
    nn_tensor *x_tail, *y_tail;      /* the last, smaller batch, or NULL */
    nn_tensor *counter, *sums;
    bool host_fed;                /* batches written by the host (device_steps_host_step) */
    nn_step_runner *full_batches; /* runs the full-batch step: eager, captured, replayed */
} device_steps;

/* Uploads `train` (normalised by norm) and makes the step's tensors. Returns
 * the library's status; the message is in nn_last_error(). *s stays where it
 * is until device_steps_close: its step runner calls back with its address. */
nn_status device_steps_open(device_steps *s, nn_ctx *ctx, nn_module *net, nn_optimizer *opt, const nn_dataset *train,
                            normalization norm, int64_t batch, const step_extras *extras, bool use_capture);
/* A step fed by the host with batches of channels x height x width images;
 * `steps` is the steps of an epoch. One batch per optimizer step: extras->accumulate is not used. */
nn_status device_steps_open_host(device_steps *s, nn_ctx *ctx, nn_module *net, nn_optimizer *opt, int channels,
                                 int height, int width, int64_t batch, int64_t steps, const step_extras *extras,
                                 bool use_capture);
/* Host-fed: zeroes the sums and the step counter. */
nn_status device_steps_begin_host_epoch(device_steps *s);
/* Host-fed: one step on n images (n <= batch; a full batch replays the
 * captured step, a smaller one runs eagerly). */
nn_status device_steps_host_step(device_steps *s, const float *images, const int32_t *labels, int64_t n);

/* Optimizer steps per epoch (the last may take fewer or smaller batches). */
int64_t device_steps_per_epoch(const device_steps *s);
/* The epoch's order of the training images (its first s->images); zeroes the
 * sums. The steps run from optimizer step `first` of the epoch (0, or where
 * an interrupted epoch stopped; below device_steps_per_epoch): its batches and the augmentation's draws
 * continue from where epoch `epoch` (1, 2, ...) reaches that step, so a
 * resumed run trains on and draws what an uninterrupted one would. */
nn_status device_steps_begin_epoch(device_steps *s, const int64_t *order, int epoch, int64_t first);
/* Runs the epoch's steps [from, to) (to <= steps per epoch), in order. */
nn_status device_steps_run(device_steps *s, int64_t from, int64_t to);
/* The summed loss and correct predictions of the epoch's steps so far
 * (waits for them). */
nn_status device_steps_sums(device_steps *s, double *loss_sum, double *correct);
/* The sums a resumed epoch starts from: those of its steps before the stop. */
nn_status device_steps_set_sums(device_steps *s, double loss_sum, double correct);
void device_steps_close(device_steps *s);

#endif
