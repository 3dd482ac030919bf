/* Training loops that stay on the device: the dataset uploaded once (uint8
 * pixels and int32 labels), each step's batch gathered there by a device-side
 * step counter, the learning rate looked up from a table by that counter, and
 * loss and accuracy summed there. A step built from these reads nothing from
 * the host and writes nothing the host must supply, so a captured step
 * (nn_capture.h) can be replayed many times in one submit, and the host reads
 * the sums only once per epoch or progress tick.
 *
 *     counter = int32 tensor [1], zeroed at the start of each epoch
 *     step:  nn_device_dataset_gather(data, counter, 0, x, y);
 *            nn_table_lookup(lr_table, counter, 0, nn_optimizer_lr_tensor(opt));
 *            nn_counter_add(counter, 1);
 *            ... forward, loss, nn_accumulate_metrics(logits, y, loss, sums),
 *            backward, optimizer step ...
 *
 * None of these operations records anything for autograd. */
#ifndef NN_DEVICE_LOOP_H
#define NN_DEVICE_LOOP_H

#include <stdint.h>
#include "nn_data.h"
#include "nn_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nn_device_dataset nn_device_dataset;

/* Copy `data`'s pixels and labels to ctx's device. A gathered pixel becomes
 * (pixel / 255 - mean[c]) / std[c] for channel c (1 to 4 channels; mean and
 * std have data->channels entries, std > 0). The order starts as 0..count-1. */
nn_device_dataset *nn_device_dataset_new(nn_ctx *ctx, const nn_dataset *data, const float *mean,
                                         const float *std);
void nn_device_dataset_free(nn_device_dataset *d);
int64_t nn_device_dataset_count(const nn_device_dataset *d);

/* The order in which batches take the samples: `count` indices (each in
 * [0, dataset count)), e.g. an epoch's nn_shuffle_indices permutation. */
nn_status nn_device_dataset_set_order(nn_device_dataset *d, const int64_t *order, int64_t count);

/* Augment every gathered sample on the device, as torchvision's
 * RandomCrop(size, padding=crop_pad) then RandomHorizontalFlip() would: a
 * shift by up to crop_pad pixels each way with black (pixel 0) coming in,
 * and a left-right mirror with probability 1/2 when flip is set. The draws
 * are a counter-based function of (seed, the sample's place in the batch, a
 * draw counter on the device that each gather advances), so every gather,
 * captured replays included, draws anew, and a seed repeats a run.
 * crop_pad 0 and flip false (the default) gather the samples as they are. */
nn_status nn_device_dataset_set_augment(nn_device_dataset *d, int crop_pad, bool flip, uint64_t seed);
/* Sets the draw counter (0 when made; each gather adds 1): where a resumed
 * run's draws continue. */
nn_status nn_device_dataset_set_draw(nn_device_dataset *d, int64_t draw);
/* This process is rank `rank` of `ranks` that split every global batch:
 * a gather of n samples is its share, rows rank * n .. rank * n + n - 1 of
 * a global batch of ranks * n. Its samples draw their augmentation as those
 * rows, so N ranks at batch n augment each sample as one process at batch
 * N * n does (given the same order and draw counter). Default 0 of 1. */
nn_status nn_device_dataset_set_shard(nn_device_dataset *d, int rank, int ranks);

/* x [n, C, H, W] (float32) and labels [n] (int32) <- the samples at order
 * positions first + counter[0] * n + i, i < n (counter NULL: 0). Positions
 * past the order give zero images and label 0. */
nn_status nn_device_dataset_gather(nn_device_dataset *d, nn_tensor *counter, int64_t first, nn_tensor *x,
                                   nn_tensor *labels);

/* counter[0] += delta (counter: int32 [1]). */
nn_status nn_counter_add(nn_tensor *counter, int32_t delta);

/* out[j] <- table[first + counter[0] * n + j] for j < n = numel(out), 32-bit
 * tables of either dtype (out has the table's dtype); positions past the
 * table give 0. With n = 1, a per-step value such as a learning rate. */
nn_status nn_table_lookup(nn_tensor *table, nn_tensor *counter, int64_t first, nn_tensor *out);

/* sums[0] += loss * rows, sums[1] += rows whose largest logit (the first of
 * equals) is at the label. logits [rows, classes] float32, labels [rows]
 * int32, loss [1] float32, sums [2] float32. */
nn_status nn_accumulate_metrics(nn_tensor *logits, nn_tensor *labels, nn_tensor *loss, nn_tensor *sums);

#ifdef __cplusplus
}
#endif

#endif
