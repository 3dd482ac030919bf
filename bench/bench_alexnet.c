/* AlexNet (torchvision's form, nn_alexnet_tv) training throughput on
 * synthetic data: each step is zero_grad, forward, softmax cross-entropy,
 * backward and SGD with momentum, in fp32, with one sync per step (the loss
 * is read back). Prints ms/step and images/s after warm-up, the peak device
 * memory (nn_ctx_memory_stats), and then where the time goes: each layer's
 * forward and backward timed alone, with a sync before and after, on the
 * shapes it has in the network. The step is also captured once and
 * replayed (nn_capture.h) and timed again. Not a test: figures for bench/README.md;
 * bench/torch_alexnet.py is PyTorch's peer and bench/run-alexnet.sh runs both.
 *
 *   build/bench/bench_alexnet [--device vulkan|cpu] [--batch 128] [--classes 1000] [--precision fp16]
 *                             [--steps 20] [--warmup 3] [--threads T] [--reps 5] [--no-layers]
 *                             [--seed-form]
 *
 * --seed-form times nn_alexnet instead (the per-layer table stays
 * torchvision's): its weights fit lavapipe's 128 MiB binding limit, which
 * torchvision's 9216x4096 weight (144 MiB) does not. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_timing.h"
#include "nn_capture.h"
#include "nn_engine.h"

static void die(const char *what) {
    fprintf(stderr, "bench_alexnet: %s: %s\n", what, nn_last_error());
    exit(1);
}

static double mib(uint64_t bytes) { return (double)bytes / (1024.0 * 1024.0); }

typedef struct options {
    const char *device;
    int batch, classes, steps, warmup, threads, reps;
    bool layers, seed_form;
} options;

/* One training step; returns its wall time in ms (the loss read is the sync). */
static double train_step(nn_ctx *ctx, nn_module *net, nn_optimizer *opt, nn_tensor *x, nn_tensor *y) {
    double t0 = now_ms();
    if (nn_optimizer_zero_grad(opt) != NN_OK) die("zero_grad");
    nn_tensor *loss = nn_softmax_cross_entropy(nn_module_forward(net, x), y);
    if (!loss) die("forward");
    if (nn_backward(loss) != NN_OK) die("backward");
    if (nn_optimizer_step(opt) != NN_OK) die("sgd step");
    float value;
    if (nn_tensor_read(loss, &value, sizeof value) != NN_OK) die("reading the loss");
    if (nn_ctx_step_end(ctx) != NN_OK) die("step end");
    return now_ms() - t0;
}

/* The same step captured once (nn_capture.h) and replayed: no graph
 * building, allocation or re-recording. Returns the median ms of replays
 * issued one at a time with a sync after each, and in *batched the mean ms
 * of `steps` replays in one call with one sync at the end. */
static double captured_step_ms(nn_ctx *ctx, nn_module *net, nn_optimizer *opt, nn_tensor *x, nn_tensor *y, int steps,
                               double *batched) {
    if (nn_capture_begin(ctx) != NN_OK) die("capture begin");
    nn_status st = nn_optimizer_zero_grad(opt);
    nn_tensor *loss = st == NN_OK ? nn_softmax_cross_entropy(nn_module_forward(net, x), y) : NULL;
    if (loss) st = nn_backward(loss);
    if (loss && st == NN_OK) st = nn_optimizer_step(opt);
    nn_ctx_step_end(ctx);
    nn_capture *step = nn_capture_end(ctx); /* ends the capture even after a failure */
    if (!loss || st != NN_OK || !step) die("capturing the step");
    double *times = malloc(sizeof(double) * steps);
    for (int i = 0; i < 2; i++) /* warm-up */
        if (nn_replay(step, 1) != NN_OK || nn_ctx_sync(ctx) != NN_OK) die("replay");
    for (int i = 0; i < steps; i++) {
        double t0 = now_ms();
        if (nn_replay(step, 1) != NN_OK || nn_ctx_sync(ctx) != NN_OK) die("replay");
        times[i] = now_ms() - t0;
    }
    double t0 = now_ms();
    if (nn_replay(step, steps) != NN_OK || nn_ctx_sync(ctx) != NN_OK) die("replay");
    *batched = (now_ms() - t0) / steps;
    double med = median(times, steps);
    free(times);
    nn_capture_free(step);
    return med;
}

/* ---- per-layer times ---- */

typedef struct layer_spec {
    const char *name, *what;
    char kind;                     /* c conv, r relu, p pool, f flatten, d dropout, l linear */
    int in, out, kernel, stride, pad;
} layer_spec;

static nn_module *build_layer(nn_ctx *ctx, const layer_spec *s) {
    switch (s->kind) {
    case 'c': return nn_conv2d_layer(ctx, s->in, s->out, s->kernel, s->stride, s->pad, NN_INIT_KAIMING_UNIFORM);
    case 'r': return nn_relu_layer(ctx);
    case 'p': return nn_maxpool2d_layer(ctx, 3, 2);
    case 'f': return nn_flatten_layer(ctx);
    case 'd': return nn_dropout_layer(ctx, 0.5f);
    default: return nn_linear_layer(ctx, s->in, s->out, NN_INIT_KAIMING_UNIFORM);
    }
}

static nn_tensor *random_tensor(nn_ctx *ctx, int ndim, const int64_t *shape, bool grad) {
    nn_tensor *t = nn_tensor_new(ctx, NN_F32, ndim, shape);
    if (!t || nn_init_uniform(t, -1.0f, 1.0f) != NN_OK || nn_tensor_set_requires_grad(t, grad) != NN_OK)
        die("making a layer input");
    return t;
}

/* Backward of sum(out * g) with respect to a leaf `out` alone: the cost of
 * seeding a layer's backward this way, subtracted from the layer's. */
static double seed_backward_ms(nn_ctx *ctx, nn_tensor *z, nn_tensor *g) {
    nn_tensor *loss = nn_sum(nn_mul(z, g));
    if (!loss || nn_ctx_sync(ctx) != NN_OK) die("seed loss");
    double t0 = now_ms();
    if (nn_backward(loss) != NN_OK || nn_ctx_sync(ctx) != NN_OK) die("seed backward");
    double t = now_ms() - t0;
    nn_ctx_step_end(ctx);
    return t;
}

static void layer_times(nn_ctx *ctx, const options *o, double step_ms) {
    static const layer_spec specs[] = {
        {"features.0", "conv 3->64 k11 s4 p2", 'c', 3, 64, 11, 4, 2},
        {"features.1", "relu", 'r', 0, 0, 0, 0, 0},
        {"features.2", "maxpool 3/2", 'p', 0, 0, 0, 0, 0},
        {"features.3", "conv 64->192 k5 p2", 'c', 64, 192, 5, 1, 2},
        {"features.4", "relu", 'r', 0, 0, 0, 0, 0},
        {"features.5", "maxpool 3/2", 'p', 0, 0, 0, 0, 0},
        {"features.6", "conv 192->384 k3 p1", 'c', 192, 384, 3, 1, 1},
        {"features.7", "relu", 'r', 0, 0, 0, 0, 0},
        {"features.8", "conv 384->256 k3 p1", 'c', 384, 256, 3, 1, 1},
        {"features.9", "relu", 'r', 0, 0, 0, 0, 0},
        {"features.10", "conv 256->256 k3 p1", 'c', 256, 256, 3, 1, 1},
        {"features.11", "relu", 'r', 0, 0, 0, 0, 0},
        {"features.12", "maxpool 3/2", 'p', 0, 0, 0, 0, 0},
        {"flatten", "flatten (a view)", 'f', 0, 0, 0, 0, 0},
        {"classifier.0", "dropout 0.5", 'd', 0, 0, 0, 0, 0},
        {"classifier.1", "linear 9216->4096", 'l', 9216, 4096, 0, 0, 0},
        {"classifier.2", "relu", 'r', 0, 0, 0, 0, 0},
        {"classifier.3", "dropout 0.5", 'd', 0, 0, 0, 0, 0},
        {"classifier.4", "linear 4096->4096", 'l', 4096, 4096, 0, 0, 0},
        {"classifier.5", "relu", 'r', 0, 0, 0, 0, 0},
        {"classifier.6", "linear 4096->classes", 'l', 4096, 0, 0, 0, 0},
    };
    int count = (int)(sizeof specs / sizeof specs[0]);
    int64_t shape[4] = {o->batch, 3, 224, 224};
    int ndim = 4;
    double total_fwd = 0, total_bwd = 0;
    double *fwd = malloc(sizeof(double) * o->reps), *bwd = malloc(sizeof(double) * o->reps),
           *seed = malloc(sizeof(double) * o->reps);
    printf("\nper layer (each alone, synced before and after; median of %d; backward without the cost of "
           "seeding it with a gradient):\n", o->reps);
    printf("%-13s %-22s %-20s %10s %10s %8s %12s\n", "layer", "what", "output", "fwd ms", "bwd ms", "% step",
           "im2col MiB");
    for (int i = 0; i < count; i++) {
        layer_spec s = specs[i];
        if (s.kind == 'l' && s.out == 0) s.out = o->classes;
        nn_module *layer = build_layer(ctx, &s);
        if (!layer) { /* e.g. a weight larger than the device binds: say so, stop the table */
            printf("%-13s %-22s refused: %s\n", s.name, s.what, nn_last_error());
            break;
        }
        /* The first layer's input needs no gradient, as in training. */
        nn_tensor *in = random_tensor(ctx, ndim, shape, i > 0);
        nn_tensor *probe = nn_module_forward(layer, in);
        if (!probe) die(s.name);
        int out_ndim = nn_tensor_ndim(probe);
        int64_t out_shape[4];
        for (int d = 0; d < out_ndim; d++) out_shape[d] = nn_tensor_dim(probe, d);
        nn_ctx_step_end(ctx);
        nn_tensor *g = random_tensor(ctx, out_ndim, out_shape, false);
        nn_tensor *z = random_tensor(ctx, out_ndim, out_shape, true);
        for (int r = 0; r < o->reps + 1; r++) { /* the first round warms up */
            if (nn_ctx_sync(ctx) != NN_OK) die("sync");
            double t0 = now_ms();
            nn_tensor *out = nn_module_forward(layer, in);
            if (!out || nn_ctx_sync(ctx) != NN_OK) die(s.name);
            double t1 = now_ms();
            nn_tensor *loss = nn_sum(nn_mul(out, g));
            if (!loss || nn_ctx_sync(ctx) != NN_OK) die("layer loss");
            double t2 = now_ms();
            if (nn_backward(loss) != NN_OK || nn_ctx_sync(ctx) != NN_OK) die(s.name);
            double t3 = now_ms();
            nn_ctx_step_end(ctx);
            double seeding = seed_backward_ms(ctx, z, g);
            if (r > 0) {
                fwd[r - 1] = t1 - t0;
                bwd[r - 1] = t3 - t2;
                seed[r - 1] = seeding;
            }
        }
        double f = median(fwd, o->reps), b = median(bwd, o->reps) - median(seed, o->reps);
        if (b < 0) b = 0;
        total_fwd += f;
        total_bwd += b;
        char out_text[64], cols[32] = "";
        if (out_ndim == 4)
            snprintf(out_text, sizeof out_text, "%lldx%lldx%lldx%lld", (long long)out_shape[0],
                     (long long)out_shape[1], (long long)out_shape[2], (long long)out_shape[3]);
        else
            snprintf(out_text, sizeof out_text, "%lldx%lld", (long long)out_shape[0], (long long)out_shape[1]);
        if (s.kind == 'c') /* the column matrix im2col fills: [batch, C*k*k, out_h*out_w] */
            snprintf(cols, sizeof cols, "%.0f", mib((uint64_t)o->batch * s.in * s.kernel * s.kernel *
                                                    out_shape[2] * out_shape[3] * 4));
        printf("%-13s %-22s %-20s %10.3f %10.3f %7.1f%% %12s\n", s.name, s.what, out_text, f, b,
               100.0 * (f + b) / step_ms, cols);
        fflush(stdout);
        nn_tensor_free(in);
        nn_tensor_free(g);
        nn_tensor_free(z);
        nn_module_free(layer);
        ndim = out_ndim;
        memcpy(shape, out_shape, sizeof(int64_t) * (size_t)out_ndim);
    }
    printf("%-13s %-22s %-20s %10.3f %10.3f %7.1f%%\n", "sum", "", "", total_fwd, total_bwd,
           100.0 * (total_fwd + total_bwd) / step_ms);
    free(fwd), free(bwd), free(seed);
}

/* Loss and optimizer rows: the rest of a step. */
static void loss_and_sgd_times(nn_ctx *ctx, nn_module *net, nn_optimizer *opt, nn_tensor *x, nn_tensor *y, const options *o) {
    double *ce = malloc(sizeof(double) * o->reps), *sgd = malloc(sizeof(double) * o->reps);
    for (int r = 0; r < o->reps; r++) {
        nn_tensor *logits = nn_module_forward(net, x);
        if (!logits || nn_ctx_sync(ctx) != NN_OK) die("forward");
        double t0 = now_ms();
        nn_tensor *loss = nn_softmax_cross_entropy(logits, y);
        if (!loss || nn_ctx_sync(ctx) != NN_OK) die("loss");
        ce[r] = now_ms() - t0;
        if (nn_backward(loss) != NN_OK || nn_ctx_sync(ctx) != NN_OK) die("backward");
        t0 = now_ms();
        if (nn_optimizer_step(opt) != NN_OK || nn_ctx_sync(ctx) != NN_OK) die("sgd");
        sgd[r] = now_ms() - t0;
        nn_optimizer_zero_grad(opt);
        nn_ctx_step_end(ctx);
    }
    printf("%-13s %-22s %-20s %10.3f %10s\n", "loss", "softmax-CE forward", "", median(ce, o->reps), "");
    printf("%-13s %-22s %-20s %10.3f %10s  (all parameters, momentum)\n", "optimizer", "SGD step", "",
           median(sgd, o->reps), "");
    free(ce), free(sgd);
}

int main(int argc, char **argv) {
    options o = {"vulkan", 128, 1000, 20, 3, 0, 5, true, false};
    const char *precision = "fp32";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (has && strcmp(a, "--device") == 0) o.device = argv[++i];
        else if (has && strcmp(a, "--batch") == 0) o.batch = atoi(argv[++i]);
        else if (has && strcmp(a, "--classes") == 0) o.classes = atoi(argv[++i]);
        else if (has && strcmp(a, "--steps") == 0) o.steps = atoi(argv[++i]);
        else if (has && strcmp(a, "--warmup") == 0) o.warmup = atoi(argv[++i]);
        else if (has && strcmp(a, "--threads") == 0) o.threads = atoi(argv[++i]);
        else if (has && strcmp(a, "--reps") == 0) o.reps = atoi(argv[++i]);
        else if (has && strcmp(a, "--precision") == 0) precision = argv[++i];
        else if (strcmp(a, "--no-layers") == 0) o.layers = false;
        else if (strcmp(a, "--seed-form") == 0) o.seed_form = true;
        else {
            fprintf(stderr, "usage: %s [--device vulkan|cpu] [--batch B] [--classes C] [--steps N] [--warmup W] "
                            "[--threads T] [--reps R] [--no-layers] [--seed-form] [--precision fp32|fp16|bf16]\n",
                    argv[0]);
            return 2;
        }
    }
    if (o.batch < 1 || o.classes < 1 || o.steps < 1 || o.warmup < 0 || o.threads < 0 || o.reps < 1) {
        fprintf(stderr, "bench_alexnet: batch, classes, steps and reps must be >= 1; warmup, threads >= 0\n");
        return 2;
    }
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = o.device, .threads = o.threads, .seed = 1});
    if (!ctx) die("opening the device");
    nn_precision chosen;
    if (nn_precision_parse(precision, &chosen) != NN_OK || nn_ctx_set_precision(ctx, chosen) != NN_OK)
        die("--precision");
    nn_module *net = o.seed_form ? nn_alexnet(ctx, o.classes, NN_INIT_KAIMING_UNIFORM)
                                 : nn_alexnet_tv(ctx, o.classes, NN_INIT_KAIMING_UNIFORM);
    if (!net) die("building AlexNet");
    int count = nn_module_param_count(net);
    nn_tensor *params[32];
    for (int i = 0; i < count; i++) params[i] = nn_module_param(net, i);
    nn_optimizer *opt = nn_sgd_new(params, count, &(nn_sgd_options){.lr = 0.01f, .momentum = 0.9f});
    if (!opt) die("making the optimizer");
    int64_t x_shape[4] = {o.batch, 3, 224, 224}, y_shape[1] = {o.batch};
    nn_tensor *x = random_tensor(ctx, 4, x_shape, false);
    int32_t *labels = malloc(sizeof(int32_t) * (size_t)o.batch);
    for (int i = 0; i < o.batch; i++) labels[i] = (int32_t)((i * 7919u) % (unsigned)o.classes);
    nn_tensor *y = nn_tensor_from_data(ctx, NN_I32, 1, y_shape, labels);
    if (!y) die("labels");

    printf("AlexNet (%s form, %d classes), batch %d, 3x224x224 synthetic, %s products%s, SGD momentum 0.9\n",
           o.seed_form ? "the seed's" : "torchvision", o.classes, o.batch, precision,
           nn_ctx_matrix_cores(ctx, chosen) ? " on matrix cores" : "");
    printf("device: %s\n", nn_ctx_device_name(ctx));
    for (int i = 0; i < o.warmup; i++) train_step(ctx, net, opt, x, y);
    double *times = malloc(sizeof(double) * o.steps), sum = 0;
    for (int i = 0; i < o.steps; i++) sum += times[i] = train_step(ctx, net, opt, x, y);
    double med = median(times, o.steps), mean = sum / o.steps;
    uint64_t peak = 0, reserved = 0;
    if (nn_ctx_memory_stats(ctx, NULL, &peak, &reserved) != NN_OK) die("memory stats");
    printf("eager train step: median %.2f ms, mean %.2f ms over %d steps after %d warm-up; %.0f images/s\n", med,
           mean, o.steps, o.warmup, o.batch * 1000.0 / med);
    printf("device memory (eager): peak allocated %.0f MiB, reserved %.0f MiB (nn_ctx_memory_stats)\n", mib(peak),
           mib(reserved));
    /* Lines for bench/run-alexnet.sh to read. */
    printf("RESULT ms_per_step=%.3f images_per_s=%.1f peak_mib=%.0f\n", med, o.batch * 1000.0 / med, mib(peak));
    fflush(stdout);
    double batched = 0, captured = captured_step_ms(ctx, net, opt, x, y, o.steps, &batched);
    uint64_t peak_all = 0;
    if (nn_ctx_memory_stats(ctx, NULL, &peak_all, &reserved) != NN_OK) die("memory stats");
    printf("captured step, replayed: median %.2f ms with a sync per step (%.0f images/s); %.2f ms per step "
           "for %d replays in one call (%.0f images/s)\n", captured, o.batch * 1000.0 / captured, batched, o.steps,
           o.batch * 1000.0 / batched);
    printf("device memory (eager, then capture): peak allocated %.0f MiB, reserved %.0f MiB\n", mib(peak_all),
           mib(reserved));
    printf("RESULT_CAPTURED ms_per_step=%.3f images_per_s=%.1f peak_mib=%.0f\n", batched,
           o.batch * 1000.0 / batched, mib(peak_all));
    fflush(stdout);
    if (o.layers) {
        loss_and_sgd_times(ctx, net, opt, x, y, &o);
        layer_times(ctx, &o, med);
    }
    free(times);
    free(labels);
    nn_tensor_free(x);
    nn_tensor_free(y);
    nn_optimizer_free(opt);
    nn_module_free(net);
    nn_ctx_free(ctx);
    return 0;
}
