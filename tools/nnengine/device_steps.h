/* The training steps of `nnengine train`, on the device: the training set is
 * uploaded once, and each step looks up its learning rate, sums its loss and
 * accuracy and gathers the next step's batch there, by a device-side step
 * counter. So a
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

typedef struct device_steps {
    nn_ctx *ctx;
    nn_module *net;
    nn_optimizer *opt;
    nn_device_dataset *data;
    int64_t batch, full_steps, tail; /* full batches per epoch, images in the last partial one */
    nn_tensor *x, *y;                /* the batch (full size) */
    nn_tensor *x_tail, *y_tail;      /* the last, smaller batch, or NULL */
    nn_tensor *counter, *sums, *lr_table;
    bool host_fed;                /* batches written by the host (device_steps_host_step) */
    nn_step_runner *full_batches; /* runs the full-batch step: eager, captured, replayed */
} device_steps;

/* Uploads `train` (normalised by norm) and makes the step's tensors. Returns
 * the library's status; the message is in nn_last_error(). *s stays where it
 * is until device_steps_close: its step runner calls back with its address. */
nn_status device_steps_open(device_steps *s, nn_ctx *ctx, nn_module *net, nn_optimizer *opt, const nn_dataset *train,
                            normalization norm, int64_t batch, bool use_capture);
/* A step fed by the host with batches of channels x height x width images;
 * `steps` bounds the steps of an epoch (the learning-rate table). */
nn_status device_steps_open_host(device_steps *s, nn_ctx *ctx, nn_module *net, nn_optimizer *opt, int channels,
                                 int height, int width, int64_t batch, int64_t steps, bool use_capture);
/* Host-fed: the epoch's learning rates (device_steps_per_epoch entries);
 * zeroes the sums and the step counter. */
nn_status device_steps_begin_host_epoch(device_steps *s, const float *lrs);
/* Host-fed: one step on n images (n <= batch; a full batch replays the
 * captured step, a smaller one runs eagerly). */
nn_status device_steps_host_step(device_steps *s, const float *images, const int32_t *labels, int64_t n);

/* Steps per epoch (the last batch may be smaller). */
int64_t device_steps_per_epoch(const device_steps *s);
/* The epoch's order of the training images and the learning rate of each of
 * its steps (device_steps_per_epoch entries); zeroes the sums. */
nn_status device_steps_begin_epoch(device_steps *s, const int64_t *order, const float *lrs);
/* Runs the epoch's steps [from, to) (to <= steps per epoch), in order. */
nn_status device_steps_run(device_steps *s, int64_t from, int64_t to);
/* The summed loss and correct predictions of the epoch's steps so far
 * (waits for them). */
nn_status device_steps_sums(device_steps *s, double *loss_sum, double *correct);
void device_steps_close(device_steps *s);

#endif
