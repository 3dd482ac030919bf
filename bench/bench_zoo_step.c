/* A zoo model's training step on synthetic data (bench/README.md, issue
 * 22): zero_grad, forward, softmax cross-entropy, backward and SGD with
 * Nesterov momentum, fp32, timed eager (a sync per step: the loss is read
 * back) and captured once then replayed (nn_capture.h), the median of
 * --steps after warm-up. bench/torch_resnet18_cifar_step.py is PyTorch's
 * peer. --loss-scale on adds the optimizer's dynamic loss scaling, as
 * `nnengine train --precision fp16` trains (PyTorch's bf16 autocast, the
 * peer, needs none); off by default.
 *
 *   build/bench/bench_zoo_step [--model resnet18-cifar|resnet18|resnet34|resnet50|mobilenet_v2|alexnet|lenet5]
 *                              [--device vulkan|cpu] [--batch 128] [--size 28] [--channels 1]
 *                              [--classes 10] [--steps 30] [--precision fp32|fp16|bf16]
 *                              [--loss-scale on|off] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_step.h"
#include "bench_timing.h"
#include "nn_capture.h"
#include "nn_engine.h"

static void die(const char *what) {
    fprintf(stderr, "bench_zoo_step: %s: %s\n", what, nn_last_error());
    exit(1);
}

int main(int argc, char **argv) {
    bench_model_args m = {.model = "resnet18-cifar", .device = "vulkan", .batch = 128, .size = 28, .channels = 1,
                          .classes = 10};
    const char *precision = "fp32", *scaling = "off";
    int steps = 30;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (bench_model_arg(&m, a, v)) continue;
        if (strcmp(a, "--steps") == 0) steps = atoi(v);
        else if (strcmp(a, "--precision") == 0) precision = v;
        else if (strcmp(a, "--loss-scale") == 0) scaling = v;
        else {
            fprintf(stderr, "usage: %s [--model M] [--device D] [--batch B] [--size S] [--channels C] "
                            "[--classes K] [--steps N] [--precision fp32|fp16|bf16] [--loss-scale on|off]\n", argv[0]);
            return 2;
        }
    }
    const char *name = m.model, *device = m.device;
    const int batch = m.batch, size = m.size, channels = m.channels, classes = m.classes;
    if (batch < 1 || size < 1 || channels < 1 || classes < 1 || steps < 1) die("arguments");
    const bool scaled = strcmp(scaling, "on") == 0;
    if (!scaled && strcmp(scaling, "off") != 0) {
        fprintf(stderr, "bench_zoo_step: --loss-scale %s is not on or off\n", scaling);
        return 2;
    }
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .seed = 1});
    if (!ctx) die("context");
    nn_precision chosen;
    if (nn_precision_parse(precision, &chosen) != NN_OK || nn_ctx_set_precision(ctx, chosen) != NN_OK)
        die("--precision");
    nn_module *net = bench_model(ctx, name, channels, classes, "bench_zoo_step");
    if (!net) die(name);
    nn_tensor *params[512];
    const int count = nn_module_param_count(net);
    if (count > 512) die("too many parameters");
    for (int i = 0; i < count; i++) params[i] = nn_module_param(net, i);
    nn_optimizer *opt = nn_sgd_new(params, count,
                                   &(nn_sgd_options){.lr = 0.01f, .momentum = 0.9f, .weight_decay = 5e-4f,
                                                     .nesterov = true});
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 4, (int64_t[]){batch, channels, size, size});
    nn_tensor *y = nn_tensor_new(ctx, NN_I32, 1, (int64_t[]){batch});
    int32_t *labels = malloc(sizeof *labels * (size_t)batch);
    for (int i = 0; i < batch; i++) labels[i] = (i * 7) % classes;
    if (!opt || (scaled && nn_optimizer_enable_loss_scaling(opt, NULL) != NN_OK)) die("the optimizer");
    if (!x || !y || !labels || nn_init_uniform(x, -1, 1) != NN_OK ||
        nn_tensor_write(y, labels, sizeof *labels * (size_t)batch) != NN_OK)
        die("setup");
    double *times = malloc(sizeof(double) * (size_t)steps);
    for (int i = 0; i < steps + 3; i++) {
        const double t0 = now_ms();
        if (bench_step(net, opt, x, y, scaled) != NN_OK || nn_ctx_sync(ctx) != NN_OK || nn_ctx_step_end(ctx) != NN_OK)
            die("eager step");
        if (i >= 3) times[i - 3] = now_ms() - t0;
    }
    const double eager = median(times, steps);
    if (nn_capture_begin(ctx) != NN_OK) die("capture begin");
    nn_status st = bench_step(net, opt, x, y, scaled);
    nn_ctx_step_end(ctx);
    nn_capture *captured = nn_capture_end(ctx);
    if (st != NN_OK || !captured) die("capturing the step");
    for (int i = 0; i < steps + 2; i++) {
        const double t0 = now_ms();
        if (nn_replay(captured, 1) != NN_OK || nn_ctx_sync(ctx) != NN_OK) die("replay");
        if (i >= 2) times[i - 2] = now_ms() - t0;
    }
    const double replayed = median(times, steps);
    uint64_t current, peak, reserved;
    const bool have_memory = nn_ctx_memory_stats(ctx, &current, &peak, &reserved) == NN_OK;
    printf("nn-engine %s batch %d, %dx%dx%d, %d classes, %s products%s%s on %s: eager %.2f ms/step (%.0f images/s), "
           "captured %.2f ms/step (%.0f images/s)",
           name, batch, channels, size, size, classes, precision, nn_ctx_matrix_cores(ctx, chosen) ? " (matrix cores)" : "",
           scaled ? ", loss scaled" : "",
           nn_ctx_device_name(ctx), eager, batch / eager * 1e3, replayed, batch / replayed * 1e3);
    if (have_memory) printf(", peak %.0f MiB", (double)peak / (1 << 20));
    printf("\n");
    nn_capture_free(captured);
    free(times);
    free(labels);
    nn_tensor_free(x);
    nn_tensor_free(y);
    nn_optimizer_free(opt);
    nn_module_free(net);
    nn_ctx_free(ctx);
    return 0;
}
