/* The training step the step benchmarks time (bench_zoo_step.c,
 * bench_data_parallel.c): a model by name and one SGD step of softmax
 * cross-entropy on it. */
#ifndef NN_BENCH_STEP_H
#define NN_BENCH_STEP_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_engine.h"

/* The zoo's models, torchvision's AlexNet and LeNet-5 (NULL when the
 * factory fails); another name ends `program` with exit status 2. */
static inline nn_module *bench_model(nn_ctx *ctx, const char *name, int channels, int classes, const char *program) {
    if (strcmp(name, "resnet18-cifar") == 0) return nn_resnet18_cifar(ctx, channels, classes);
    if (strcmp(name, "resnet18") == 0) return nn_resnet18(ctx, classes);
    if (strcmp(name, "resnet34") == 0) return nn_resnet34(ctx, classes);
    if (strcmp(name, "resnet50") == 0) return nn_resnet50(ctx, classes);
    if (strcmp(name, "mobilenet_v2") == 0) return nn_mobilenet_v2(ctx, classes);
    if (strcmp(name, "alexnet") == 0) return nn_alexnet_tv(ctx, classes, NN_INIT_KAIMING_UNIFORM);
    if (strcmp(name, "lenet5") == 0) return nn_lenet5(ctx, NN_INIT_KAIMING_UNIFORM);
    fprintf(stderr, "%s: unknown model %s\n", program, name);
    exit(2);
}

/* The model and input the model benchmarks share: --model, --device,
 * --batch, --size, --channels, --classes (0 where not given). */
typedef struct bench_model_args {
    const char *model, *device;
    int batch, size, channels, classes;
} bench_model_args;

/* Takes `flag` with its value when it is one of bench_model_args' flags. */
static inline bool bench_model_arg(bench_model_args *a, const char *flag, const char *value) {
    if (strcmp(flag, "--model") == 0) a->model = value;
    else if (strcmp(flag, "--device") == 0) a->device = value;
    else if (strcmp(flag, "--batch") == 0) a->batch = atoi(value);
    else if (strcmp(flag, "--size") == 0) a->size = atoi(value);
    else if (strcmp(flag, "--channels") == 0) a->channels = atoi(value);
    else if (strcmp(flag, "--classes") == 0) a->classes = atoi(value);
    else return false;
    return true;
}

/* Issue 33's defaults for what was not given: resnet18-cifar 1x28x28 with
 * 10 classes, the others 3x224x224 with 1000; batch 128 (ResNet-50: 64). */
static inline void bench_model_defaults(bench_model_args *a) {
    const bool cifar = strcmp(a->model, "resnet18-cifar") == 0;
    if (!a->batch) a->batch = strcmp(a->model, "resnet50") == 0 ? 64 : 128;
    if (!a->size) a->size = cifar ? 28 : 224;
    if (!a->channels) a->channels = cifar ? 1 : 3;
    if (!a->classes) a->classes = cifar ? 10 : 1000;
}

/* One training step; the loss goes through the optimizer's scale where it
 * has dynamic loss scaling (as `nnengine train --precision fp16` does). */
static inline nn_status bench_step(nn_module *net, nn_optimizer *opt, nn_tensor *x, nn_tensor *y, bool scaled) {
    nn_status st = nn_optimizer_zero_grad(opt);
    nn_tensor *loss = st == NN_OK ? nn_softmax_cross_entropy(nn_module_forward(net, x), y) : NULL;
    if (loss && scaled) loss = nn_optimizer_scale_loss(opt, loss);
    if (!loss) return nn_last_status();
    if ((st = nn_backward(loss)) != NN_OK) return st;
    return nn_optimizer_step(opt);
}

#endif
