/* The training step the step benchmarks time (bench_zoo_step.c,
 * bench_data_parallel.c): a model by name and one SGD step of softmax
 * cross-entropy on it. */
#ifndef NN_BENCH_STEP_H
#define NN_BENCH_STEP_H

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

static inline nn_status bench_step(nn_module *net, nn_optimizer *opt, nn_tensor *x, nn_tensor *y) {
    nn_status st = nn_optimizer_zero_grad(opt);
    nn_tensor *loss = st == NN_OK ? nn_softmax_cross_entropy(nn_module_forward(net, x), y) : NULL;
    if (!loss) return nn_last_status();
    if ((st = nn_backward(loss)) != NN_OK) return st;
    return nn_optimizer_step(opt);
}

#endif
