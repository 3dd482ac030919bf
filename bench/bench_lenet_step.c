/* One LeNet-5 training step (forward, cross-entropy, backward, SGD with
 * momentum) on random data, timed over many steps. Not a test: it prints
 * figures for bench/README.md. PyTorch's peer is bench/torch_lenet_step.py.
 *
 *   build/bench/bench_lenet_step [--batch 64] [--threads T] [--steps 300] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nn_engine.h"

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int fail(const char *what) {
    fprintf(stderr, "bench_lenet_step: %s: %s\n", what, nn_last_error());
    return 1;
}

int main(int argc, char **argv) {
    int batch = 64, threads = 0, steps = 300, rounds = 5;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--batch") == 0) batch = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--threads") == 0) threads = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--steps") == 0) steps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--batch B] [--threads T] [--steps N]\n", argv[0]);
            return 2;
        }
    }
    if (batch < 1 || steps < 1 || threads < 0) {
        fprintf(stderr, "bench_lenet_step: batch and steps must be >= 1, threads >= 0\n");
        return 2;
    }
    nn_ctx_options o = {.device = "cpu", .threads = threads, .seed = 1};
    nn_ctx *ctx = nn_ctx_new(&o);
    if (!ctx) return fail("opening the CPU");
    nn_module *net = nn_lenet5(ctx, NN_INIT_KAIMING_UNIFORM);
    if (!net) return fail("building LeNet-5");
    nn_tensor *params[16];
    int count = nn_module_param_count(net);
    for (int i = 0; i < count; i++) params[i] = nn_module_param(net, i);
    nn_optimizer *opt = nn_sgd_new(params, count, &(nn_sgd_options){.lr = 0.01f, .momentum = 0.9f});
    if (!opt) return fail("making the optimizer");

    int64_t x_shape[4] = {batch, 1, 28, 28}, y_shape[1] = {batch};
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 4, x_shape);
    nn_tensor *y = nn_tensor_new(ctx, NN_I32, 1, y_shape);
    float *images = malloc(sizeof(float) * (size_t)batch * 784);
    int32_t *labels = malloc(sizeof(int32_t) * (size_t)batch);
    srand(1);
    for (int i = 0; i < batch * 784; i++) images[i] = (float)rand() / (float)RAND_MAX;
    for (int i = 0; i < batch; i++) labels[i] = rand() % 10;

    /* A step as a training loop runs it: copy the batch in, train, read the loss. */
    double *per_round = malloc(sizeof(double) * (size_t)rounds);
    float loss_value = 0.0f;
    for (int round = -1; round < rounds; round++) { /* round -1 warms up */
        double start = now_seconds();
        int n = round < 0 ? 20 : steps;
        for (int s = 0; s < n; s++) {
            nn_tensor_write(x, images, sizeof(float) * (size_t)batch * 784);
            nn_tensor_write(y, labels, sizeof(int32_t) * (size_t)batch);
            nn_tensor *loss = nn_softmax_cross_entropy(nn_module_forward(net, x), y);
            if (!loss || nn_optimizer_zero_grad(opt) || nn_backward(loss) || nn_optimizer_step(opt) ||
                nn_tensor_read(loss, &loss_value, sizeof loss_value))
                return fail("training step");
            nn_ctx_step_end(ctx);
        }
        if (round >= 0) per_round[round] = (now_seconds() - start) / steps;
    }
    qsort(per_round, (size_t)rounds, sizeof *per_round, compare_doubles);
    double median = per_round[rounds / 2];
    printf("nn-engine  lenet5 train step  batch %d  %s: %.3f ms/step (median of %d x %d steps, "
           "best %.3f), %.0f images/s, final loss %.4f\n",
           batch, nn_ctx_device_name(ctx), median * 1e3, rounds, steps, per_round[0] * 1e3,
           batch / median, loss_value);

    free(per_round);
    free(images);
    free(labels);
    nn_tensor_free(x);
    nn_tensor_free(y);
    nn_optimizer_free(opt);
    nn_module_free(net);
    nn_ctx_free(ctx);
    return 0;
}
