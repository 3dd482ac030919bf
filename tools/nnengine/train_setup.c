/* nnengine train's setup (trainer.h): the outputs checked, the data loaded
 * (held on the device, or indexed for the loader), the device opened, the
 * model built (with --init, --freeze), the optimizer, schedule and moving
 * average made, the steps prepared (captured or eager), --resume, the logs
 * opened. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "class_names.h"
#include "commands.h"
#include "label_check.h"
#include "model_summary.h"
#include "models.h"
#include "optimizers.h"
#include "output_paths.h"
#include "platform/files.h"
#include "trainer.h"

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

int train_setup(trainer *t) {
    train_config *c = &t->config;
    const output_path files[] = {{"--save", c->save},           {"--checkpoint", c->checkpoint}, {"--log", c->log},
                                 {"--save-best", c->save_best}, {"--log-steps", c->log_steps}};
    if (check_writable_outputs("train", files, (int)(sizeof files / sizeof files[0])) != EXIT_OK)
        return EXIT_BAD_INPUT;
    const output_path outputs[] = {{"--save", c->save},           {"--checkpoint", c->checkpoint},
                                   {"--save-best", c->save_best}, {"--log", c->log},
                                   {"--log-steps", c->log_steps}, {"--tensorboard", c->tensorboard}};
    if (check_distinct_outputs("train", outputs, (int)(sizeof outputs / sizeof outputs[0])) != EXIT_OK)
        return EXIT_BAD_INPUT;
    /* A model that takes colour photos at a fixed size gets them from the
     * image loader; the others train on data held on the device. */
    int channels, height, width;
    t->photos = model_input(c->model, &channels, &height, &width) && channels == 3;
    /* The input kind's defaults where the model's recipe has none (help
     * text). The photos' were chosen with AlexNet on a small synthetic set
     * (stripes against dots, tests/cli): batch 16 and lr 0.03 learn it within
     * 8 epochs where 32/64 and 0.01-0.02 do not start. Set here, after the
     * flags a training state records, which show them as "(default)". */
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
                          .flip = c->flip, .label_smoothing = (float)c->label_smoothing, .seed = (uint64_t)c->seed,
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
        nn_schedule_options o = train_schedule_options(c, per_epoch * c->epochs);
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
    if (c->resume && train_resume(t) != EXIT_OK) return EXIT_BAD_INPUT;
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
            "training %s: %d parameter tensors, batch %lld, %s lr %g (%s%s), momentum %g%s, weight decay %g, label "
            "smoothing %g, seed %lld; %s\n", c->model, count, (long long)c->batch, c->optimizer, c->lr, c->schedule,
            c->warmup || c->warmup_fraction > 0 ? ", warm-up" : "", c->momentum, c->nesterov ? " (nesterov)" : "", c->weight_decay,
            c->label_smoothing, (long long)c->seed,
            c->no_capture ? "every step eager (--no-capture)" : "one step captured and replayed");
    if (!t->photos && (c->crop_pad > 0 || c->flip))
        fprintf(stderr, "augmenting on the device: shifts of up to %lld pixels, %s\n",
                (long long)(c->crop_pad > 0 ? c->crop_pad : 0), c->flip ? "random flips" : "no flips");
    if (c->accumulate > 1 || t->ema)
        fprintf(stderr, "accumulating the gradients of %lld batches per step; %s\n", (long long)c->accumulate,
                t->ema ? "evaluating and saving the weights' moving average (--ema)" : "no moving average");
    return EXIT_OK;
}
