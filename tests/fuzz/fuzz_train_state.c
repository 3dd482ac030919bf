/* libFuzzer target for the training-state loader (nn_load_train_state_with,
 * issue 40): the input is one training-state file, loaded into a small
 * model (Linear 3->4, ReLU, Linear 4->2) with SGD momentum, a cosine
 * schedule, a moving average of the weights and fp16 loss scaling, as the
 * CLI's states are made. Built with `make fuzz-state`; `make fuzz-regress`
 * replays tests/fuzz/corpus_state/. With NN_FUZZ_WRITE_SEED=PATH it writes
 * a valid state of that model there and exits (the corpus's seed).
 *
 * Besides the sanitizers' checks: a load that succeeds gives progress
 * within the bounds the loader promises, and leaves the model and the
 * optimizer usable (a training step runs); a failure names the file. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nn_engine.h"

static nn_ctx *ctx;
static nn_module *net;
static nn_optimizer *opt;
static nn_schedule *schedule;
static nn_ema *ema;
static nn_tensor *input, *target;
static char path[64];

static void require(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "training-state loader violates: %s (%s)\n", what, nn_last_error());
        abort();
    }
}

/* One training step of the model: the state loaded must leave it usable. */
static void train_step(void) {
    nn_tensor *y = nn_module_forward(net, input);
    nn_tensor *loss = y ? nn_optimizer_scale_loss(opt, nn_mean(nn_mul(nn_sub(y, target), nn_sub(y, target)))) : NULL;
    require(loss && nn_backward(loss) == NN_OK, "a step after the load runs its backward");
    require(nn_optimizer_step(opt) == NN_OK && nn_schedule_step(schedule) == NN_OK, "a step after the load updates");
    require(nn_optimizer_zero_grad(opt) == NN_OK && nn_ema_update(ema) == NN_OK, "a step after the load ends");
    nn_ctx_step_end(ctx);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1, .seed = 7});
    net = nn_sequential(ctx);
    require(net && nn_sequential_append(net, "l1", nn_linear_layer(ctx, 3, 4, NN_INIT_KAIMING_UNIFORM)) == NN_OK &&
                nn_sequential_append(net, "relu", nn_relu_layer(ctx)) == NN_OK &&
                nn_sequential_append(net, "l2", nn_linear_layer(ctx, 4, 2, NN_INIT_KAIMING_UNIFORM)) == NN_OK,
            "the model builds");
    nn_tensor *params[8];
    int count = nn_module_param_count(net);
    for (int i = 0; i < count; i++) params[i] = nn_module_param(net, i);
    opt = nn_sgd_new(params, count, &(nn_sgd_options){.lr = 0.1f, .momentum = 0.9f, .weight_decay = 1e-4f});
    require(opt && nn_optimizer_enable_loss_scaling(opt, NULL) == NN_OK, "the optimizer builds");
    schedule = nn_schedule_new(opt, &(nn_schedule_options){.kind = NN_SCHEDULE_COSINE, .base_lr = 0.1f,
                                                           .total_steps = 1000});
    ema = nn_ema_new(net, 0.9f);
    const float x[6] = {0.5f, -1, 2, 1, 0, -0.5f}, t[4] = {1, 0, 0, 1};
    input = nn_tensor_from_data(ctx, NN_F32, 2, (int64_t[]){2, 3}, x);
    target = nn_tensor_from_data(ctx, NN_F32, 2, (int64_t[]){2, 2}, t);
    require(schedule && ema && input && target, "the schedule, the average and the data build");
    const char *seed = getenv("NN_FUZZ_WRITE_SEED");
    if (seed) { /* three steps in, a best epoch kept: the states the CLI writes */
        for (int s = 0; s < 3; s++) train_step();
        nn_train_progress p = {.epoch = 2, .step = 3, .seed = 7, .epoch_step = 1, .best_epoch = 1,
                               .best_metric = 0.75, .best_by = "accuracy"};
        require(nn_save_train_state_with(seed, net, opt, &(nn_train_extras){schedule, ema, NULL}, &p) == NN_OK,
                "the seed is written");
        exit(0);
    }
    snprintf(path, sizeof path, "/tmp/nn_fuzz_state_%d.safetensors", (int)getpid());
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    FILE *f = fopen(path, "wb");
    require(f && fwrite(data, 1, size, f) == size && fclose(f) == 0, "the fuzzer can write its file");
    nn_train_progress p;
    nn_status st = nn_load_train_state_with(path, net, opt, &(nn_train_extras){schedule, ema, NULL}, &p);
    if (st == NN_OK) {
        require(p.epoch >= 0 && p.step >= 0 && p.epoch_step >= 0 && p.best_epoch >= 0 && p.best_epoch <= p.epoch,
                "a loaded state's progress is within its bounds");
        require(p.best_epoch == 0 || (p.best_by[0] && memchr(p.best_by, 0, sizeof p.best_by)),
                "a loaded best epoch names its metric");
        train_step();
    } else {
        require(strstr(nn_last_error(), path) != NULL, "a refusal names the file");
    }
    nn_clear_error();
    /* The run's description: a string that fits, or a refusal naming the file. */
    char run[64];
    if (nn_train_state_run(path, run, sizeof run) == NN_OK)
        require(memchr(run, 0, sizeof run) != NULL, "a run description is a string within its buffer");
    else
        require(strstr(nn_last_error(), path) != NULL, "a refusal names the file");
    nn_clear_error();
    unlink(path);
    return 0;
}
