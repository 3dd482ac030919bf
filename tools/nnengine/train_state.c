/* nnengine train's saved state (trainer.h): the training state written by
 * --checkpoint and read by --resume, the weights --save and --save-best
 * write, and --patience's early stop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "output_paths.h"
#include "saved_flags.h"
#include "trainer.h"

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
int train_resume(trainer *t) {
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

/* --checkpoint after `epoch` finished epochs and t->steps_done steps (more
 * when Ctrl+C stopped the next epoch part way). */
int train_write_checkpoint(trainer *t, int epoch) {
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

/* The weights evaluated (--ema: the average, swapped in and back) to path,
 * with the normalisation and class names (saved_info). */
nn_status train_save_weights(trainer *t, const char *path) {
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
int train_keep_best(trainer *t, const epoch_stats *s, const char *test_name, bool *stop) {
    const train_config *c = &t->config;
    /* Tracked on every run, so that a training state carries it to --resume. */
    bool better = best_epoch_update(&t->best, s);
    if (!c->save_best && !c->patience) return EXIT_OK;
    char best[64];
    if (better && c->save_best) {
        if (train_save_weights(t, c->save_best) != NN_OK) {
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
