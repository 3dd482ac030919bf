/* nnengine train gpt-mini --text FILE: a causal language model of bytes
 * (text_model.h) trained on a text file (text_data.h) by next-byte
 * prediction with AdamW, warm-up then cosine; the loss and bits per byte
 * on held-out text every --eval-every steps; a sample at the end. The step
 * is captured once and replayed with each step's windows written in. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "dist_train.h"
#include "interrupt.h"
#include "options.h"
#include "output_paths.h"
#include "platform/files.h"
#include "progress.h"
#include "setup.h"
#include "text_data.h"
#include "text_model.h"

typedef struct text_config {
    const char *text, *device, *precision, *save, *checkpoint, *resume, *log, *prompt;
    int64_t context, width, depth, heads;
    int64_t steps, stop_after_step, batch, warmup, eval_every, eval_limit, limit, seed, threads, sample, top_k;
    double lr, min_lr, weight_decay, beta1, beta2, eps, val_fraction, temperature;
    bool no_capture, no_loss_scale, quiet;
} text_config;

typedef struct text_trainer {
    text_config c;
    text_model shape;
    text_data data;
    nn_ctx *ctx;
    nn_module *net;
    nn_optimizer *opt;
    nn_schedule *schedule;
    nn_step_runner *runner;
    nn_tensor *x, *y, *sums; /* the step's windows and targets; the loss summed over its bytes */
    int32_t *x_host, *y_host;
    bool loss_scale;
    int64_t step; /* optimizer steps done */
    bool stopped; /* by --stop-after-step: no sample */
    FILE *log;
} text_trainer;

#define LN2 0.69314718055994530942

static nn_status train_step(void *user) {
    text_trainer *t = user;
    const int64_t rows = t->c.batch * t->c.context;
    nn_status st = nn_optimizer_zero_grad(t->opt);
    if (st == NN_OK) st = nn_schedule_apply(t->schedule);
    nn_tensor *logits = st == NN_OK ? nn_module_forward(t->net, t->x) : NULL;
    nn_tensor *flat = logits ? nn_reshape(logits, 2, (const int64_t[]){rows, 256}) : NULL;
    nn_tensor *loss = flat ? nn_cross_entropy(flat, t->y, NULL, NN_REDUCTION_MEAN, -100, 0.0f) : NULL;
    nn_tensor *scaled = loss && t->loss_scale ? nn_optimizer_scale_loss(t->opt, loss) : loss;
    if (st == NN_OK && !scaled) st = nn_last_status() != NN_OK ? nn_last_status() : NN_ERR_STATE;
    if (st == NN_OK) st = nn_backward(scaled);
    if (st == NN_OK) st = nn_accumulate_metrics(flat, t->y, loss, t->sums);
    if (st == NN_OK) st = nn_optimizer_step(t->opt);
    if (st == NN_OK) st = nn_schedule_advance(t->schedule);
    nn_status end = nn_ctx_step_end(t->ctx);
    return st == NN_OK ? end : st;
}

/* AdamW with decay on the matrices and embeddings alone, as GPT-2's
 * trainers do (nanoGPT's configure_optimizers): the parameters in groups
 * of consecutive ones alike, so the optimizer keeps the module's order,
 * which a training state pairs them by. */
static nn_optimizer *new_optimizer(text_trainer *t) {
    const int count = nn_module_param_count(t->net);
    nn_tensor **params = malloc(sizeof *params * (size_t)count);
    nn_param_group *groups = malloc(sizeof *groups * (size_t)count);
    if (!params || !groups) {
        free(params), free(groups);
        return NULL;
    }
    int group_count = 0;
    for (int i = 0; i < count; i++) {
        params[i] = nn_module_param(t->net, i);
        const float decay = nn_tensor_ndim(params[i]) >= 2 ? (float)t->c.weight_decay : 0.0f;
        if (group_count == 0 || groups[group_count - 1].weight_decay != decay)
            groups[group_count++] = (nn_param_group){.params = params + i, .count = 0, .lr = (float)t->c.lr,
                                                     .weight_decay = decay};
        groups[group_count - 1].count++;
    }
    const nn_adam_options o = {.lr = (float)t->c.lr, .beta1 = (float)t->c.beta1, .beta2 = (float)t->c.beta2,
                               .eps = (float)t->c.eps, .weight_decay = (float)t->c.weight_decay};
    nn_optimizer *opt = nn_adamw_new_groups(groups, group_count, &o);
    free(params);
    free(groups);
    return opt;
}

/* Bytes per evaluation pass at most: a pass's activations live until its
 * end, beside the captured step's, so it is kept a fraction of a step. */
#define EVAL_BYTES 4096

/* The mean loss per byte over the held-out windows, no gradients. */
static nn_status validation_loss(text_trainer *t, double *loss) {
    const int context = (int)t->c.context;
    const int64_t windows = text_data_validation_windows(&t->data, context, t->c.eval_limit);
    int64_t chunk = EVAL_BYTES / context < t->c.batch ? EVAL_BYTES / context : t->c.batch;
    if (chunk < 1) chunk = 1;
    const bool was_enabled = nn_ctx_set_grad_enabled(t->ctx, false);
    double sum = 0;
    nn_status st = NN_OK;
    for (int64_t first = 0; st == NN_OK && first < windows; first += chunk) {
        const int n = (int)(windows - first < chunk ? windows - first : chunk);
        text_data_validation_batch(&t->data, first, n, context, t->x_host, t->y_host);
        nn_tensor *x = nn_tensor_from_data(t->ctx, NN_I32, 2, (const int64_t[]){n, context}, t->x_host);
        nn_tensor *y = x ? nn_tensor_from_data(t->ctx, NN_I32, 1, (const int64_t[]){(int64_t)n * context}, t->y_host)
                         : NULL;
        nn_tensor *logits = y ? nn_module_forward(t->net, x) : NULL;
        nn_tensor *flat = logits ? nn_reshape(logits, 2, (const int64_t[]){(int64_t)n * context, 256}) : NULL;
        nn_tensor *mean = flat ? nn_cross_entropy(flat, y, NULL, NN_REDUCTION_MEAN, -100, 0.0f) : NULL;
        float value = 0;
        st = mean ? nn_tensor_read(mean, &value, sizeof value) : nn_last_status();
        sum += (double)value * n * context;
        nn_ctx_step_end(t->ctx);
        nn_tensor_free(x);
        nn_tensor_free(y);
    }
    nn_ctx_set_grad_enabled(t->ctx, was_enabled);
    *loss = windows > 0 ? sum / ((double)windows * context) : NAN;
    return st;
}

/* The shape and the settings a training state must share to be continued. */
static void run_description(const text_trainer *t, char *out, size_t size) {
    char shape[256];
    text_model_format(&t->shape, shape, sizeof shape);
    snprintf(out, size, "gpt-mini %s batch %lld steps %lld seed %lld", shape, (long long)t->c.batch,
             (long long)t->c.steps, (long long)t->c.seed);
}

static int write_checkpoint(text_trainer *t) {
    if (!t->c.checkpoint) return EXIT_OK;
    char run[512];
    run_description(t, run, sizeof run);
    const nn_train_progress done = {.step = t->step, .seed = (uint64_t)t->c.seed};
    const nn_train_extras extras = {t->schedule, NULL, run};
    if (nn_save_train_state_with(t->c.checkpoint, t->net, t->opt, &extras, &done) != NN_OK) {
        fprintf(stderr, "nnengine train: --checkpoint: %s\n", library_error());
        return EXIT_FAILURE_RUNTIME;
    }
    return EXIT_OK;
}

static int resume(text_trainer *t) {
    char saved[NN_TRAIN_STATE_RUN_MAX], run[512];
    run_description(t, run, sizeof run);
    if (nn_train_state_run(t->c.resume, saved, sizeof saved) == NN_OK && strcmp(saved, run) != 0) {
        fprintf(stderr, "nnengine train: --resume %s was saved by another run (%s); this one is %s: give the same "
                        "shape, --batch, --steps and --seed\n", t->c.resume, saved[0] ? saved : "not gpt-mini's", run);
        return EXIT_BAD_INPUT;
    }
    nn_train_progress p;
    const nn_train_extras extras = {t->schedule, NULL, NULL};
    if (nn_load_train_state_with(t->c.resume, t->net, t->opt, &extras, &p) != NN_OK) {
        fprintf(stderr, "nnengine train: --resume: %s\n", library_error());
        return EXIT_BAD_INPUT;
    }
    if (p.step < 0 || p.step >= t->c.steps) {
        fprintf(stderr, "nnengine train: --resume %s holds step %lld; this run has %lld steps (--steps)\n",
                t->c.resume, (long long)p.step, (long long)t->c.steps);
        return EXIT_BAD_INPUT;
    }
    t->step = p.step;
    fprintf(stderr, "resuming from %s after step %lld\n", t->c.resume, (long long)p.step);
    return EXIT_OK;
}

static int setup(text_trainer *t) {
    text_config *c = &t->c;
    const output_path outputs[] = {{"--save", c->save}, {"--checkpoint", c->checkpoint}, {"--log", c->log}};
    if (check_writable_outputs("train", outputs, 3) != EXIT_OK || check_distinct_outputs("train", outputs, 3) != EXIT_OK)
        return EXIT_BAD_INPUT;
    if (c->width % c->heads != 0) {
        fprintf(stderr, "nnengine train: --heads %lld does not divide --width %lld\n", (long long)c->heads,
                (long long)c->width);
        return EXIT_BAD_INPUT;
    }
    if (c->min_lr < 0) c->min_lr = c->lr / 10;
    if (c->warmup < 0) c->warmup = c->steps / 10 < 100 ? c->steps / 10 : 100;
    if (c->warmup >= c->steps) {
        fprintf(stderr, "nnengine train: --warmup %lld must be fewer than the %lld --steps\n", (long long)c->warmup,
                (long long)c->steps);
        return EXIT_BAD_INPUT;
    }
    t->shape = (text_model){.context = c->context, .width = c->width, .depth = c->depth, .heads = c->heads};
    int status = text_data_load("train", c->text, c->limit, c->val_fraction, (int)c->context, &t->data);
    if (status != EXIT_OK) return status;
    t->ctx = open_device("train", c->device, (int)c->threads, (uint64_t)c->seed);
    if (!t->ctx) return EXIT_BAD_INPUT;
    nn_precision precision;
    if (nn_precision_parse(c->precision, &precision) != NN_OK || nn_ctx_set_precision(t->ctx, precision) != NN_OK) {
        fprintf(stderr, "nnengine train: --precision: %s\n", library_error());
        return EXIT_BAD_INPUT;
    }
    t->loss_scale = precision == NN_PRECISION_FP16 && !c->no_loss_scale;
    const size_t window_values = (size_t)(c->batch * c->context);
    t->x_host = malloc(sizeof *t->x_host * window_values);
    t->y_host = malloc(sizeof *t->y_host * window_values);
    t->net = text_model_build(t->ctx, &t->shape);
    t->opt = t->net ? new_optimizer(t) : NULL;
    nn_status st = t->opt && t->x_host && t->y_host ? NN_OK : nn_last_status() ? nn_last_status() : NN_ERR_MEMORY;
    if (st == NN_OK && t->loss_scale) st = nn_optimizer_enable_loss_scaling(t->opt, NULL);
    if (st == NN_OK) {
        /* step t of the warm-up at (t + 1) / (warmup + 1) of the rate, as nanoGPT's */
        const nn_schedule_options o = {.kind = NN_SCHEDULE_COSINE, .base_lr = c->lr, .warmup = c->warmup,
                                       .warmup_start = 1.0 / (double)(c->warmup + 1), .total_steps = c->steps,
                                       .eta_min = c->min_lr};
        if (!(t->schedule = nn_schedule_new(t->opt, &o))) st = nn_last_status();
    }
    t->x = st == NN_OK ? nn_tensor_new(t->ctx, NN_I32, 2, (const int64_t[]){c->batch, c->context}) : NULL;
    t->y = t->x ? nn_tensor_new(t->ctx, NN_I32, 1, (const int64_t[]){c->batch * c->context}) : NULL;
    t->sums = t->y ? nn_tensor_new(t->ctx, NN_F32, 1, (const int64_t[]){2}) : NULL;
    if (st == NN_OK && !t->sums) st = nn_last_status();
    if (st == NN_OK) st = nn_tensor_fill(t->sums, 0.0f);
    if (st == NN_OK && !(t->runner = nn_step_runner_new(t->ctx, train_step, t,
                                                        &(nn_step_options){.eager = c->no_capture})))
        st = nn_last_status();
    if (st != NN_OK) {
        fprintf(stderr, "nnengine train: %s\n", library_error());
        return st == NN_ERR_ARGUMENT || st == NN_ERR_SHAPE ? EXIT_BAD_INPUT : EXIT_FAILURE_RUNTIME;
    }
    if (c->resume && (status = resume(t)) != EXIT_OK) return status;
    if (c->log && !(t->log = nn_file_fopen(c->log, c->resume ? "a" : "w"))) {
        fprintf(stderr, "nnengine train: --log %s: %s\n", c->log, strerror(errno));
        return EXIT_BAD_INPUT;
    }
    const int64_t held_out = t->data.size - t->data.train_size;
    fprintf(stderr, "text: %s: %lld bytes, %lld trained on, %lld held out%s\n", c->text, (long long)t->data.size,
            (long long)t->data.train_size, (long long)held_out,
            c->eval_limit && c->eval_limit < held_out ? " (the first --eval-limit evaluated)" : "");
    if (t->data.invalid_utf8)
        fprintf(stderr, "nnengine train: note: %lld byte sequences of %s are not UTF-8; trained on as bytes all the "
                        "same\n", (long long)t->data.invalid_utf8, c->text);
    int64_t numbers = 0;
    for (int i = 0; i < nn_module_param_count(t->net); i++) numbers += nn_tensor_numel(nn_module_param(t->net, i));
    if (!c->quiet)
        fprintf(stderr, "gpt-mini: bytes, context %lld, width %lld, %lld layers, %lld heads: %.2fM parameters\n",
                (long long)c->context, (long long)c->width, (long long)c->depth, (long long)c->heads, numbers / 1e6);
    fprintf(stderr, "training gpt-mini: %lld steps of %lld windows of %lld bytes, adamw lr %g (warm-up %lld steps, "
                    "cosine to %g), weight decay %g on matrices and embeddings, betas %g %g, seed %lld; %s%s\n",
            (long long)c->steps, (long long)c->batch, (long long)c->context, c->lr, (long long)c->warmup, c->min_lr,
            c->weight_decay, c->beta1, c->beta2, (long long)c->seed,
            c->no_capture ? "every step eager (--no-capture)" : "one step captured and replayed",
            precision != NN_PRECISION_FP32 ? (t->loss_scale ? ", fp16 products, loss scaled" : ", reduced-precision products") : "");
    return EXIT_OK;
}

/* One line (and --log's JSON object) for the steps since the last one. */
static int report(text_trainer *t, int64_t steps_since, double seconds, bool evaluate) {
    float sums[2];
    if (nn_tensor_read(t->sums, sums, sizeof sums) != NN_OK || nn_tensor_fill(t->sums, 0.0f) != NN_OK) {
        fprintf(stderr, "nnengine train: %s\n", library_error());
        return EXIT_FAILURE_RUNTIME;
    }
    const double bytes = (double)steps_since * (double)(t->c.batch * t->c.context);
    const double train_loss = bytes > 0 ? sums[0] / bytes : NAN;
    if (!isfinite(train_loss) && bytes > 0) {
        fprintf(stderr, "nnengine train: the training loss is %g at step %lld: the run diverged (a smaller --lr, "
                        "or more --warmup)\n", train_loss, (long long)t->step);
        return EXIT_FAILURE_RUNTIME;
    }
    double val_loss = NAN;
    const double eval_start = now_seconds();
    if (evaluate && validation_loss(t, &val_loss) != NN_OK) {
        fprintf(stderr, "nnengine train: evaluation at step %lld failed: %s\n", (long long)t->step, library_error());
        return EXIT_FAILURE_RUNTIME;
    }
    const int width = snprintf(NULL, 0, "%lld", (long long)t->c.steps);
    printf("step %*lld/%lld  train loss %.4f (%.3f bits/byte)", width, (long long)t->step, (long long)t->c.steps,
           train_loss, train_loss / LN2);
    if (evaluate) printf("  val loss %.4f (%.3f bits/byte)", val_loss, val_loss / LN2);
    printf("  %6.1f s  %8.0f bytes/s\n", seconds, bytes / seconds);
    fflush(stdout);
    if (t->log) {
        fprintf(t->log, "{\"step\": %lld, \"train_loss\": %.9g, \"train_bits_per_byte\": %.9g, ", (long long)t->step,
                train_loss, train_loss / LN2);
        if (evaluate && isfinite(val_loss))
            fprintf(t->log, "\"val_loss\": %.9g, \"val_bits_per_byte\": %.9g, ", val_loss, val_loss / LN2);
        fprintf(t->log, "\"seconds\": %.9g, \"eval_seconds\": %.9g, \"bytes_per_s\": %.9g}\n", seconds,
                now_seconds() - eval_start, bytes / seconds);
        if (fflush(t->log) != 0) {
            fprintf(stderr, "nnengine train: writing --log %s failed: %s\n", t->c.log, strerror(errno));
            return EXIT_FAILURE_RUNTIME;
        }
    }
    return EXIT_OK;
}

static int train_loop(text_trainer *t) {
    const bool evaluate = t->c.val_fraction > 0;
    double start = now_seconds();
    int64_t since = 0;
    int status = EXIT_OK;
    interrupt_install();
    while (status == EXIT_OK && t->step < t->c.steps) {
        if (interrupt_requested()) {
            status = EXIT_INTERRUPTED;
            break;
        }
        if (t->c.stop_after_step > 0 && t->step == t->c.stop_after_step) { /* asked for: the state kept as at Ctrl+C, and no failure */
            if (since > 0) status = report(t, since, now_seconds() - start, false);
            fprintf(stderr, "stopped after step %lld of %lld (--stop-after-step)\n", (long long)t->step,
                    (long long)t->c.steps);
            if (status == EXIT_OK) status = write_checkpoint(t);
            if (status == EXIT_OK && t->c.checkpoint)
                fprintf(stderr, "wrote the training state to %s\n", t->c.checkpoint);
            t->stopped = true;
            break;
        }
        text_data_training_batch(&t->data, (uint64_t)t->c.seed, t->step, (int)t->c.batch, (int)t->c.context,
                                 t->x_host, t->y_host);
        const size_t bytes = sizeof(int32_t) * (size_t)(t->c.batch * t->c.context);
        nn_status st = nn_tensor_write(t->x, t->x_host, bytes);
        if (st == NN_OK) st = nn_tensor_write(t->y, t->y_host, bytes);
        if (st == NN_OK) st = nn_step_runner_run(t->runner, 1);
        if (st != NN_OK) {
            fprintf(stderr, "nnengine train: step %lld failed: %s\n", (long long)t->step + 1, library_error());
            status = EXIT_FAILURE_RUNTIME;
            break;
        }
        t->step++, since++;
        if (t->step % t->c.eval_every == 0 || t->step == t->c.steps) {
            status = report(t, since, now_seconds() - start, evaluate);
            if (status == EXIT_OK) status = write_checkpoint(t);
            since = 0;
            start = now_seconds();
        }
    }
    interrupt_restore();
    if (status == EXIT_INTERRUPTED) {
        fprintf(stderr, "stopped by %s after step %lld of %lld\n", interrupt_name(), (long long)t->step,
                (long long)t->c.steps);
        if (write_checkpoint(t) != EXIT_OK) status = EXIT_FAILURE_RUNTIME;
        else if (t->c.checkpoint) fprintf(stderr, "wrote the training state to %s\n", t->c.checkpoint);
    }
    return status;
}

static int finish(text_trainer *t, int status) {
    uint64_t current, peak, reserved;
    if (status == EXIT_OK && nn_ctx_memory_stats(t->ctx, &current, &peak, &reserved) == NN_OK)
        fprintf(stderr, "peak device memory %.1f MiB allocated (%s)\n", peak / 1048576.0, nn_ctx_device_name(t->ctx));
    if ((status == EXIT_OK || status == EXIT_INTERRUPTED) && t->c.save) {
        if (text_model_save(t->net, &t->shape, t->c.save) != NN_OK) {
            fprintf(stderr, "nnengine train: --save: %s\n", library_error());
            status = EXIT_FAILURE_RUNTIME;
        } else {
            fprintf(stderr, "saved the weights to %s (nnengine generate %s samples from them)\n", t->c.save,
                    t->c.save);
        }
    }
    if (status == EXIT_OK && !t->stopped && t->c.sample > 0) {
        const char *prompt = t->c.prompt[0] ? t->c.prompt : "\n";
        const text_sampling s = {.bytes = t->c.sample, .temperature = t->c.temperature, .top_k = t->c.top_k,
                                 .seed = (uint64_t)t->c.seed};
        fprintf(stderr, "a sample of %lld bytes after the prompt (temperature %g%s):\n", (long long)t->c.sample,
                t->c.temperature, t->c.top_k ? ", top-k" : "");
        fputs(prompt, stdout);
        if (text_model_sample(t->ctx, t->net, t->c.context, (const uint8_t *)prompt, (int64_t)strlen(prompt), &s,
                              stdout) != NN_OK) {
            fprintf(stderr, "\nnnengine train: sampling failed: %s\n", library_error());
            status = EXIT_FAILURE_RUNTIME;
        }
        printf("\n");
    }
    if (t->log) fclose(t->log);
    nn_step_runner_free(t->runner);
    nn_tensor *tensors[] = {t->x, t->y, t->sums};
    for (int i = 0; i < 3; i++) nn_tensor_free(tensors[i]);
    nn_schedule_free(t->schedule);
    nn_optimizer_free(t->opt);
    nn_module_free(t->net);
    nn_ctx_free(t->ctx);
    free(t->x_host);
    free(t->y_host);
    text_data_free(&t->data);
    return status;
}

int command_train_text(int argc, char **argv) {
    text_config c = {.device = "auto", .precision = "fp32", .prompt = "", .context = 256, .width = 384, .depth = 6,
                     .heads = 6, .steps = 2000, .batch = 64, .warmup = -1, .eval_every = 250, .eval_limit = 1 << 20,
                     .seed = 1, .sample = 300, .lr = 1e-3, .min_lr = -1, .weight_decay = 0.1, .beta1 = 0.9,
                     .beta2 = 0.99, .eps = 1e-8, .val_fraction = 0.1, .temperature = 0.8};
    const char *positional[1] = {NULL};
    const option_spec options[] = {
        {"--text", OPTION_STRING, &c.text, 0, 0, "FILE", "the text to learn, any file read as bytes (UTF-8 text: one byte a token)"},
        {"--context", OPTION_INT, &c.context, 1, 1 << 16, "T", "bytes the model sees, a window's length (default 256)"},
        {"--width", OPTION_INT, &c.width, 1, 1 << 14, "W", "the model's width (default 384)"},
        {"--depth", OPTION_INT, &c.depth, 1, 256, "L", "transformer blocks (default 6)"},
        {"--heads", OPTION_INT, &c.heads, 1, 256, "H", "attention heads, dividing the width (default 6)"},
        {"--steps", OPTION_INT, &c.steps, 1, 1e12, "N", "optimizer steps (default 2000)"},
        {"--batch", OPTION_INT, &c.batch, 1, 65536, "B", "windows per step, each at a random offset (default 64)"},
        {"--lr", OPTION_FLOAT, &c.lr, 0, 1e3, "X", "AdamW's peak learning rate (default 1e-3)"},
        {"--min-lr", OPTION_FLOAT, &c.min_lr, 0, 1e3, "X", "the rate the cosine ends at (default --lr / 10)"},
        {"--stop-after-step", OPTION_INT, &c.stop_after_step, 0, 1e12, "S", "stop after step S, writing --checkpoint and --save, for a later --resume (default 0: run all)"},
        {"--warmup", OPTION_INT, &c.warmup, 0, 1e12, "N", "linear warm-up over the first N steps (default 100, or a tenth of --steps when fewer)"},
        {"--weight-decay", OPTION_FLOAT, &c.weight_decay, 0, 1, "W", "AdamW's decoupled decay of the matrices and embeddings (default 0.1; none on biases and norms)"},
        {"--beta1", OPTION_FLOAT, &c.beta1, 0, 1, "B", "AdamW's beta1 (default 0.9)"},
        {"--beta2", OPTION_FLOAT, &c.beta2, 0, 1, "B", "AdamW's beta2 (default 0.99)"},
        {"--eps", OPTION_FLOAT, &c.eps, 0, 1, "E", "AdamW's eps (default 1e-8)"},
        {"--val-fraction", OPTION_FLOAT, &c.val_fraction, 0, 0.9, "F", "the end of the text held out for evaluation (default 0.1; 0: none)"},
        {"--eval-every", OPTION_INT, &c.eval_every, 1, 1e12, "N", "steps between evaluations and report lines (default 250)"},
        {"--eval-limit", OPTION_INT, &c.eval_limit, 0, 1e15, "N", "evaluate on the first N held-out bytes (default 1048576; 0: all)"},
        {"--limit", OPTION_INT, &c.limit, 0, 1e15, "N", "read the first N bytes of the text only (default 0: all)"},
        {"--sample", OPTION_INT, &c.sample, 0, 1e9, "N", "bytes sampled from the model at the end, to stdout (default 300; 0: none)"},
        {"--prompt", OPTION_STRING, &c.prompt, 0, 0, "TEXT", "what the sample continues (default a newline)"},
        {"--temperature", OPTION_FLOAT, &c.temperature, 1e-3, 100, "T", "the sample's temperature (default 0.8)"},
        {"--top-k", OPTION_INT, &c.top_k, 0, 256, "K", "sample from the K likeliest bytes only (default 0: all)"},
        {"--device", OPTION_STRING, &c.device, 0, 0, "D", "auto (a GPU when usable, else the CPU), cpu or vulkan"},
        {"--precision", OPTION_STRING, &c.precision, 0, 0, "P", "fp32 (default), fp16 or bf16: the products' operands (fp16 with dynamic loss scaling)"},
        {"--no-loss-scale", OPTION_SWITCH, &c.no_loss_scale, 0, 0, NULL, "fp16: no dynamic loss scaling"},
        {"--threads", OPTION_INT, &c.threads, 0, 1024, "T", "CPU worker threads (default 0: one per core)"},
        {"--seed", OPTION_INT, &c.seed, 0, 9.2e18, "S", "seed of the initial weights, the windows and the sample (default 1)"},
        {"--save", OPTION_STRING, &c.save, 0, 0, "FILE", "write the trained weights (safetensors, with the model's shape) at the end"},
        {"--checkpoint", OPTION_STRING, &c.checkpoint, 0, 0, "FILE", "at each evaluation, write the training state (for --resume)"},
        {"--resume", OPTION_STRING, &c.resume, 0, 0, "FILE", "continue from a --checkpoint file (same shape, --batch, --steps, --seed)"},
        {"--log", OPTION_STRING, &c.log, 0, 0, "FILE", "write one JSON object per report line"},
        {"--no-capture", OPTION_SWITCH, &c.no_capture, 0, 0, NULL, "run each step eagerly (default: capture one step, replay it)"},
        {"--quiet", OPTION_SWITCH, &c.quiet, 0, 0, NULL, "no model summary line"},
    };
    static const char *const required[] = {"--text", NULL};
    const command_spec spec = {
        "train gpt-mini", "train gpt-mini --text FILE [options]",
        "Train gpt-mini, a causal language model of bytes (GPT-2's design), on a text file.",
        "Every step draws --batch windows of --context bytes at random offsets of\n"
        "the text's first part and learns each byte from the ones before it; the\n"
        "last --val-fraction is held out. Every --eval-every steps a line gives\n"
        "the training loss since the last line and the held-out loss, in nats and\n"
        "in bits per byte (loss / ln 2), the seconds and the bytes trained per\n"
        "second. At the end the model continues --prompt by --sample bytes.\n"
        "nnengine generate FILE samples from weights saved with --save. The\n"
        "shape flags (--context, --width, --depth, --heads) make any GPT-2-like\n"
        "model of bytes; their defaults are gpt-mini's (10.8M parameters).",
        1, positional, options, (int)(sizeof options / sizeof options[0]), required,
    };
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], "--data") == 0 || strncmp(argv[i], "--data=", 7) == 0) {
            fprintf(stderr, "nnengine train: gpt-mini learns a text file: give --text FILE (--data is the image "
                            "models')\n");
            return EXIT_BAD_INPUT;
        }
    int status;
    if (options_parse_or_help(&spec, argc, argv, &status)) return status;
    if (strcmp(positional[0], "gpt-mini") != 0) {
        fprintf(stderr, "nnengine train: --text trains gpt-mini, not %s (image models take --data)\n", positional[0]);
        return EXIT_BAD_INPUT;
    }
    dist_train dist = {0};
    int64_t batch = c.batch, threads = c.threads;
    if ((status = dist_train_start(&dist, c.device, 0, &batch, &threads)) != EXIT_OK)
        return dist_train_finish(&dist, status);
    if (dist.active) {
        fprintf(stderr, "nnengine train: gpt-mini trains in one process; under mpirun only the image models train "
                        "data-parallel\n");
        return dist_train_finish(&dist, EXIT_BAD_INPUT);
    }
    text_trainer t = {.c = c};
    status = setup(&t);
    if (status == EXIT_OK) status = train_loop(&t);
    status = finish(&t, status);
    return dist_train_finish(&dist, status);
}
