/* The training steps of `nnengine train` (device_steps.h): full batches
 * through a step runner (nn_step.h), the smaller last batch eagerly. */
#include "device_steps.h"

#include <stdlib.h>
#include <string.h>

#define TRY(expr)                            \
    do {                                     \
        nn_status try_status_ = (expr);      \
        if (try_status_ != NN_OK) return try_status_; \
    } while (0)

static nn_tensor *new_tensor(nn_ctx *ctx, nn_dtype dtype, int ndim, int64_t a, int64_t b, int64_t c, int64_t d) {
    int64_t shape[4] = {a, b, c, d};
    return nn_tensor_new(ctx, dtype, ndim, shape);
}

int64_t device_steps_per_epoch(const device_steps *s) {
    return s->full_steps + (s->leftover || s->tail ? 1 : 0);
}

/* What both kinds of training step hold, once s's batch and step counts are
 * set: the batch's tensors (and the smaller last batch's), the step counter,
 * the sums. */
static nn_status open_tensors(device_steps *s, int channels, int height, int width) {
    s->x = new_tensor(s->ctx, NN_F32, 4, s->batch, channels, height, width);
    s->y = new_tensor(s->ctx, NN_I32, 1, s->batch, 0, 0, 0);
    if (s->tail) {
        s->x_tail = new_tensor(s->ctx, NN_F32, 4, s->tail, channels, height, width);
        s->y_tail = new_tensor(s->ctx, NN_I32, 1, s->tail, 0, 0, 0);
    }
    s->counter = new_tensor(s->ctx, NN_I32, 1, 1, 0, 0, 0);
    s->sums = new_tensor(s->ctx, NN_F32, 1, 2, 0, 0, 0);
    if (!s->x || !s->y || (s->tail && (!s->x_tail || !s->y_tail)) || !s->counter || !s->sums)
        return nn_last_status();
    return NN_OK;
}

static nn_status full_batch_step(void *steps);

static nn_status init(device_steps *s, nn_ctx *ctx, nn_module *net, nn_optimizer *opt, const step_extras *extras,
                      bool use_capture) {
    memset(s, 0, sizeof *s);
    s->ctx = ctx;
    s->net = net;
    s->opt = opt;
    s->schedule = extras->schedule;
    s->ema = extras->ema;
    s->loss_scale = extras->loss_scale;
    s->label_smoothing = extras->label_smoothing;
    s->accumulate = extras->accumulate > 1 ? extras->accumulate : 1;
    s->full_batches = nn_step_runner_new(ctx, full_batch_step, s, &(nn_step_options){.eager = !use_capture});
    return s->full_batches ? NN_OK : nn_last_status();
}

nn_status device_steps_open(device_steps *s, nn_ctx *ctx, nn_module *net, nn_optimizer *opt, const nn_dataset *train,
                            normalization norm, int64_t batch, const step_extras *extras, bool use_capture) {
    TRY(init(s, ctx, net, opt, extras, use_capture));
    s->images = extras->shard_count > 0 ? extras->shard_count : train->count;
    if (batch > s->images) batch = s->images;
    s->batch = batch;
    s->full_batches_per_epoch = s->images / batch;
    s->full_steps = s->full_batches_per_epoch / s->accumulate;
    s->leftover = s->full_batches_per_epoch % s->accumulate;
    s->tail = s->images % batch;
    float mean[4], std[4];
    for (int c = 0; c < 4; c++) mean[c] = norm.mean, std[c] = norm.std;
    s->data = nn_device_dataset_new(ctx, train, mean, std);
    if (!s->data) return nn_last_status();
    if (extras && (extras->crop_pad || extras->flip))
        TRY(nn_device_dataset_set_augment(s->data, extras->crop_pad, extras->flip, extras->seed));
    /* a rank's samples draw their augmentation as in one process at the global batch */
    if (extras && extras->ranks > 1) TRY(nn_device_dataset_set_shard(s->data, extras->rank, extras->ranks));
    return open_tensors(s, train->channels, train->height, train->width);
}

nn_status device_steps_open_host(device_steps *s, nn_ctx *ctx, nn_module *net, nn_optimizer *opt, int channels,
                                 int height, int width, int64_t batch, int64_t steps, const step_extras *extras,
                                 bool use_capture) {
    TRY(init(s, ctx, net, opt, extras, use_capture));
    s->accumulate = 1; /* a step per host batch */
    s->host_fed = true;
    s->batch = batch;
    s->full_steps = steps; /* a smaller batch's tensors are made when one comes */
    return open_tensors(s, channels, height, width);
}

/* A full batch is gathered by the step before it, at its end (the first of
 * an epoch by device_steps_begin_epoch): there the gather runs beside the
 * optimizer's update, which it does not wait for, and the step starts with
 * its forward pass -- one barrier fewer per step than gathering first. It is
 * read from the counter's position, so after the counter has advanced. */
static nn_status gather_full_batch(device_steps *s) {
    return nn_device_dataset_gather(s->data, s->counter, 0, s->x, s->y);
}

/* The start of an epoch, or of its part from full batch `batches` on: the
 * step counter there (the batches before it are done), the sums at zero. */
static nn_status reset_epoch(device_steps *s, int64_t batches) {
    int32_t counter = (int32_t)batches; /* at most an epoch's batches: the gather's positions are 32-bit */
    TRY(nn_tensor_write(s->counter, &counter, sizeof counter));
    return nn_tensor_fill(s->sums, 0.0f);
}

nn_status device_steps_begin_host_epoch(device_steps *s) { return reset_epoch(s, 0); }

nn_status device_steps_begin_epoch(device_steps *s, const int64_t *order, int epoch, int64_t first) {
    TRY(nn_device_dataset_set_order(s->data, order, s->images));
    /* Every gather draws once: an epoch gathers its first batch, one after
     * each full batch (the last full step's too) and its last; a full
     * batch's draw is then the epoch's first plus the full batches before
     * it, and the last step's follows the one after the full steps. */
    const int64_t done = first * s->accumulate; /* full batches of the steps before `first` */
    const bool full = first < s->full_steps;
    const int64_t after_full = !full && s->full_steps > 0 ? 1 : 0;
    TRY(nn_device_dataset_set_draw(s->data, (int64_t)(epoch - 1) * (s->full_batches_per_epoch + 2) + done + after_full));
    TRY(reset_epoch(s, done));
    return full ? gather_full_batch(s) : NN_OK; /* the first step's batch */
}

/* One micro-batch (x, y) of an optimizer step: the gradients are zeroed
 * before the first and the optimizer steps after the last, so the step's
 * gradient is the sum of the micro-batches' gradients of their losses
 * scaled by `scale` (their share of the step's images): the mean loss of
 * one batch of all of them. After the update come the moving average and
 * the schedule's next step. A counted micro-batch advances the counter its
 * gather reads; gather_next gathers the next full batch into x, y. */
static nn_status micro_step(device_steps *s, nn_tensor *x, nn_tensor *y, bool counted, float scale, bool first,
                            bool last, bool gather_next) {
    nn_status st = NN_OK;
    /* Zeroed first: the fill then runs beside the first layer, and the first
     * weight gradient of backward need not wait for it. The step's rate is
     * written then too (nn_schedule_apply), beside the forward pass: after
     * the update it would wait for it behind a barrier of its own. */
    if (first) st = nn_optimizer_zero_grad(s->opt);
    if (st == NN_OK && first && s->schedule) st = nn_schedule_apply(s->schedule);
    nn_tensor *logits = NULL;
    nn_tensor *loss = NULL;
    if (st == NN_OK && s->label_smoothing > 0.0f) { /* else the fused softmax cross-entropy */
        logits = nn_module_forward(s->net, x);
        loss = logits ? nn_cross_entropy(logits, y, NULL, NN_REDUCTION_MEAN, -100, s->label_smoothing) : NULL;
    } else if (st == NN_OK) {
        loss = nn_module_forward_loss(s->net, x, y, &logits);
    }
    if (st == NN_OK && !loss) st = nn_last_status() != NN_OK ? nn_last_status() : NN_ERR_STATE;
    /* Advanced here, after the forward pass and before the next batch's
     * gather reads it: at the step's start or end it would need a barrier
     * of its own. */
    if (st == NN_OK && counted) st = nn_counter_add(s->counter, 1);
    nn_tensor *scaled = st == NN_OK && scale != 1.0f ? nn_scale(loss, scale) : loss;
    if (st == NN_OK && scaled && s->loss_scale) scaled = nn_optimizer_scale_loss(s->opt, scaled);
    if (st == NN_OK && !scaled) st = nn_last_status();
    if (st == NN_OK) st = nn_backward(scaled);
    /* After backward: the sums read the loss, which the last kernel of the
     * forward pass writes; recorded earlier, they would wait for it behind a
     * barrier of their own, and backward's first kernels behind them. */
    if (st == NN_OK) st = nn_accumulate_metrics(logits, y, loss, s->sums);
    if (st == NN_OK && last) st = nn_optimizer_step(s->opt);
    if (st == NN_OK && last && s->ema) st = nn_ema_update(s->ema);
    if (st == NN_OK && last && s->schedule) st = nn_schedule_advance(s->schedule);
    if (st == NN_OK && gather_next) st = gather_full_batch(s);
    return st;
}

static nn_status end_step(device_steps *s, nn_status st) {
    nn_status end = nn_ctx_step_end(s->ctx);
    return st == NN_OK ? end : st;
}

/* The step of `accumulate` full batches, as the runner calls it: the first
 * of the run eagerly (it creates the gradients and momentum buffers a
 * captured step must find in place), the second while it is captured; the
 * runner replays that for the others, as many per call as asked. Each
 * batch is gathered by the one before it (the first of an epoch by
 * device_steps_begin_epoch), at its end: there the gather runs beside the
 * backward pass or the update, and the next batch starts with its forward
 * pass -- one barrier fewer than gathering first. */
static nn_status full_batch_step(void *steps) {
    device_steps *s = steps;
    nn_status st = NN_OK;
    for (int64_t i = 0; st == NN_OK && i < s->accumulate; i++)
        st = micro_step(s, s->x, s->y, !s->host_fed, 1.0f / (float)s->accumulate, i == 0, i == s->accumulate - 1,
                        !s->host_fed);
    return end_step(s, st);
}

/* The epoch's last step, eagerly: the full batches that do not fill a step
 * and the smaller last batch, gathered from fixed positions, each loss
 * scaled by its share of the step's images. */
static nn_status last_step(device_steps *s) {
    const int64_t images = s->leftover * s->batch + s->tail, first = s->full_steps * s->accumulate;
    nn_status st = NN_OK;
    for (int64_t i = 0; st == NN_OK && i < s->leftover; i++) {
        st = nn_device_dataset_gather(s->data, NULL, (first + i) * s->batch, s->x, s->y);
        if (st == NN_OK)
            st = micro_step(s, s->x, s->y, false, (float)((double)s->batch / (double)images), i == 0,
                            i == s->leftover - 1 && !s->tail, false);
    }
    if (st == NN_OK && s->tail) st = nn_device_dataset_gather(s->data, NULL, s->full_batches_per_epoch * s->batch,
                                                            s->x_tail, s->y_tail);
    if (st == NN_OK && s->tail)
        st = micro_step(s, s->x_tail, s->y_tail, false, (float)((double)s->tail / (double)images), s->leftover == 0,
                        true, false);
    return end_step(s, st);
}

nn_status device_steps_run(device_steps *s, int64_t from, int64_t to) {
    int64_t full_to = to < s->full_steps ? to : s->full_steps;
    if (from < full_to) TRY(nn_step_runner_run(s->full_batches, full_to - from));
    if ((s->leftover || s->tail) && from <= s->full_steps && to > s->full_steps) TRY(last_step(s));
    return NN_OK;
}

nn_status device_steps_host_step(device_steps *s, const float *images, const int32_t *labels, int64_t n) {
    size_t image = (size_t)(nn_tensor_numel(s->x) / s->batch);
    if (n == s->batch) {
        TRY(nn_tensor_write(s->x, images, sizeof(float) * image * (size_t)n));
        TRY(nn_tensor_write(s->y, labels, sizeof(int32_t) * (size_t)n));
        return nn_step_runner_run(s->full_batches, 1);
    }
    /* A smaller batch (the last one, or one that lost undecodable files):
     * tensors of its size, kept while the size repeats. */
    if (!s->x_tail || nn_tensor_dim(s->x_tail, 0) != n) {
        nn_tensor_free(s->x_tail);
        nn_tensor_free(s->y_tail);
        int64_t shape[NN_MAX_DIMS];
        nn_tensor_shape(s->x, shape);
        s->x_tail = new_tensor(s->ctx, NN_F32, 4, n, shape[1], shape[2], shape[3]);
        s->y_tail = new_tensor(s->ctx, NN_I32, 1, n, 0, 0, 0);
        if (!s->x_tail || !s->y_tail) return nn_last_status();
    }
    TRY(nn_tensor_write(s->x_tail, images, sizeof(float) * image * (size_t)n));
    TRY(nn_tensor_write(s->y_tail, labels, sizeof(int32_t) * (size_t)n));
    return end_step(s, micro_step(s, s->x_tail, s->y_tail, false, 1.0f, true, true, false));
}

nn_status device_steps_sums(device_steps *s, double *loss_sum, double *correct) {
    float sums[2];
    TRY(nn_tensor_read(s->sums, sums, sizeof sums));
    *loss_sum = sums[0];
    *correct = sums[1];
    return NN_OK;
}

nn_status device_steps_set_sums(device_steps *s, double loss_sum, double correct) {
    const float sums[2] = {(float)loss_sum, (float)correct}; /* read from these floats: exact */
    return nn_tensor_write(s->sums, sums, sizeof sums);
}

void device_steps_close(device_steps *s) {
    nn_step_runner_free(s->full_batches);
    nn_device_dataset_free(s->data);
    nn_tensor *tensors[] = {s->x, s->y, s->x_tail, s->y_tail, s->counter, s->sums};
    for (size_t i = 0; i < sizeof tensors / sizeof tensors[0]; i++) nn_tensor_free(tensors[i]);
    memset(s, 0, sizeof *s);
}
