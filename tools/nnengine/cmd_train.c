/* nnengine train MODEL --data DIR [options]: the command's flags and the
 * loop over the epochs; the rest of a run is in the files trainer.h lists. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "class_names.h"
#include "commands.h"
#include "interrupt.h"
#include "rank_flags.h"
#include "saved_flags.h"
#include "trainer.h"

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

static int train(train_config config) {
    train_config_apply_recipe(&config);
    const int checked = train_config_check(&config);
    if (checked != EXIT_OK) return checked;
    trainer t = {.config = config, .interrupted_at = -1, .stop_step = -1,
                 .guard = {.allow_nan = config.allow_nan, .checkpoint_epoch = -1}};
    train_config *c = &t.config;
    t.flag_count = train_config_shared_flags(c, t.flags); /* before --global-batch gives this rank its share */
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
    int status = train_setup(&t);
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
        status = train_run_epoch(&t, &bar, epoch, &stats);
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
                       train_log_flushed(t.log))) {
            train_lose_log(&t, "--log", c->log, &t.log, errno);
        }
        if (t.tb.file && !train_tensorboard_epoch(&t.tb, &stats, c->no_eval ? NULL : test_name)) {
            train_lose_log(&t, "--tensorboard", t.tb.path, NULL, errno);
            tensorboard_close(&t.tb);
        }
        bool stop = false;
        if (status == EXIT_OK) status = train_keep_best(&t, &stats, test_name, &stop);
        if (status == EXIT_OK) status = train_write_checkpoint(&t, epoch);
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
        if (train_write_checkpoint(&t, epoch - 1) != EXIT_OK) status = EXIT_FAILURE_RUNTIME;
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
        if (train_save_weights(&t, c->save) != NN_OK) {
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
    train_close_logs(&t);
    if (status == EXIT_INTERRUPTED && t.stopped_by_step) status = EXIT_OK; /* asked for: not a failure */
    if (status == EXIT_OK && t.logs_lost) status = EXIT_FAILURE_RUNTIME;
    trainer_free(&t);
    return dist_train_finish(&t.dist, status);
}

/* gpt-mini, or --text anywhere: the language model's trainer and flags. */
static bool trains_text(int argc, char **argv) {
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], "--text") == 0 || strncmp(argv[i], "--text=", 7) == 0 || strcmp(argv[i], "gpt-mini") == 0)
            return true;
    return false;
}

int command_train(int argc, char **argv) {
    if (trains_text(argc, argv)) return command_train_text(argc, argv);
    train_config c = train_config_defaults();
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
        {"--label-smoothing", OPTION_FLOAT, &c.label_smoothing, 0, 0.999, "E", "the training loss's label smoothing (PyTorch's cross_entropy label_smoothing; default 0, vit-tiny 0.1)"},
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
        "and BatchNorm statistics); --checkpoint keeps both.\n"
        "gpt-mini, a language model of bytes, trains on a text file instead:\n"
        "nnengine train gpt-mini --text FILE (its flags: nnengine train gpt-mini --help).",
        1, positional, options, (int)(sizeof options / sizeof options[0]), required,
    };
    int status;
    if (options_parse_or_help(&spec, argc, argv, &status)) return status;
    c.model = positional[0];
    return train(c);
}
