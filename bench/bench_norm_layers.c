/* Every distinct BatchNorm of a model, its kernels alone (bench/README.md,
 * issue 33): the model's forward pass is recorded once, its BatchNorms read
 * off the tape with the layout the step gives them (channels-last on a GPU),
 * and for each distinct shape the training step's kernels are timed as
 * normalization.c runs them: the forward's statistics and apply, the
 * backward's sums and pointwise pass with the weight's and bias's
 * gradients (the backward of a BatchNorm whose input, weight and bias all
 * want gradients). Each figure: a capture of --reps launches, replayed,
 * the median over --runs replays divided by --reps. GB/s counts the bytes
 * each kernel must move at least (statistics: x once; apply: x and y;
 * sums: x and dy; pointwise: x, dy and dx, and the affine gradients). Lines starting "norm" carry the
 * shape and the times for bench/torch_norm_layers.py, which times
 * PyTorch's BatchNorm forward and backward on the same shapes.
 *
 *   build/bench/bench_norm_layers [--model resnet18|resnet18-cifar|resnet50|mobilenet_v2|...]
 *                                 [--batch B] [--size S] [--channels C] [--classes K]
 *                                 [--reps 10] [--runs 7] [--device vulkan]
 *
 * The defaults per model are bench_conv_layers.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_step.h"
#include "backends/norm_layout.h"
#include "bench_replay.h"
#include "core/graph.h" /* the tape, to read the model's BatchNorms off it */
#include "nn_capture.h"
#include "nn_engine.h"
#include "ops/ops.h"

#define MAX_SHAPES 128

typedef struct shape {
    nn_norm_params p;
    int64_t dims[4]; /* x as the user sees it: N, C, H, W */
    int count;
} shape;

static void die(const char *what) {
    fprintf(stderr, "bench_norm_layers: %s: %s\n", what, nn_last_error());
    exit(1);
}

static bool same(const shape *s, const nn_norm_params *p, const int64_t *dims) {
    return memcmp(s->dims, dims, sizeof s->dims) == 0 && s->p.outer == p->outer && s->p.inner == p->inner &&
           s->p.channel_inner == p->channel_inner && s->p.groups == p->groups && s->p.channels == p->channels;
}

static int trace(nn_ctx *ctx, nn_module *net, nn_tensor *x, shape *out) {
    nn_tensor *y = nn_module_forward(net, x);
    if (!y || nn_ctx_flush(ctx, y) != NN_OK) die("the forward pass");
    int count = 0;
    for (int64_t i = 0; i < ctx->tape_count; i++) {
        const nn_node *node = ctx->tape[i];
        if (node->op != &nn_op_batch_norm) continue;
        const nn_tensor *in = node->inputs[0];
        if (in->ndim != 4) continue;
        nn_norm_params p = nn_norm_params_of(node);
        int k = 0;
        while (k < count && !same(&out[k], &p, in->shape)) k++;
        if (k == count) {
            if (count == MAX_SHAPES) die("more distinct BatchNorms than the table holds");
            out[count] = (shape){.p = p};
            memcpy(out[count].dims, in->shape, sizeof out[count].dims);
            count++;
        }
        out[k].count++;
    }
    nn_ctx_step_end(ctx);
    return count;
}

static nn_tensor *filled(nn_ctx *ctx, int64_t n, float lo, float hi) {
    nn_tensor *t = nn_tensor_new(ctx, NN_F32, 1, &n);
    if (!t || nn_init_uniform(t, lo, hi) != NN_OK) die("a tensor");
    return t;
}

/* One launch of a sequence of kernels. */
typedef struct launch {
    nn_kernel kernel;
    nn_buffer_ref args[10];
    int nargs;
    const void *params;
} launch;

/* Median milliseconds of one run of `n` launches. */
static double time_launches(nn_ctx *ctx, const launch *l, int n, int reps, int runs) {
    if (nn_capture_begin(ctx) != NN_OK) die("capture begin");
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < n; i++)
            if (nn_ctx_run(ctx, l[i].kernel, l[i].args, l[i].nargs, l[i].params) != NN_OK)
                die(nn_kernel_name(l[i].kernel));
    nn_capture *c = nn_capture_end(ctx);
    if (!c) die("capture end");
    return bench_replay_median_ms(ctx, c, reps, runs, "bench_norm_layers");
}

/* Half a second of the first shape's statistics before anything is timed:
 * the device leaves its idle clocks. */
static void warm_up(nn_ctx *ctx, const shape *s) {
    const int64_t n = nn_norm_elements(&s->p), c = s->p.channels;
    nn_tensor *tx = filled(ctx, n, -2, 2), *mean = filled(ctx, c, 0, 1), *var = filled(ctx, c, 0, 1);
    nn_norm_params p = s->p;
    const launch stats = {NN_KERNEL_NORM_STATS, {nn_tensor_ref(tx), nn_tensor_ref(mean), nn_tensor_ref(var)}, 3, &p};
    for (const double t0 = now_ms(); now_ms() - t0 < 500;) time_launches(ctx, &stats, 1, 10, 1);
    nn_tensor *made[3] = {tx, mean, var};
    for (int k = 0; k < 3; k++) nn_tensor_free(made[k]);
}

int main(int argc, char **argv) {
    bench_model_args m = {.model = "resnet18", .device = "vulkan"};
    int reps = 10, runs = 7;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (bench_model_arg(&m, a, v)) continue;
        if (strcmp(a, "--reps") == 0) reps = atoi(v);
        else if (strcmp(a, "--runs") == 0) runs = atoi(v);
        else {
            fprintf(stderr, "usage: %s [--model M] [--batch B] [--size S] [--channels C] [--classes K] "
                            "[--reps R] [--runs N] [--device D]\n", argv[0]);
            return 2;
        }
    }
    bench_model_defaults(&m);
    const char *name = m.model, *device = m.device;
    const int batch = m.batch, size = m.size, channels = m.channels, classes = m.classes;
    if (batch < 1 || size < 1 || channels < 1 || classes < 1 || reps < 1 || runs < 1) die("arguments");
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .seed = 1});
    if (!ctx) die("context");
    nn_module *net = bench_model(ctx, name, channels, classes, "bench_norm_layers");
    if (!net) die(name);
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 4, (int64_t[]){batch, channels, size, size});
    if (!x || nn_init_uniform(x, -1, 1) != NN_OK) die("the input");
    static shape shapes[MAX_SHAPES];
    const int count = trace(ctx, net, x, shapes);
    printf("nn-engine %s, batch %d, %dx%dx%d, on %s: %d distinct BatchNorms (ms per launch, median of %d replays "
           "of %d; GB/s over the bytes each kernel must move)\n", name, batch, channels, size, size,
           nn_ctx_device_name(ctx), count, runs, reps);
    printf("%-26s %5s %7s %8s %6s %8s %6s %8s %6s %8s %6s %8s %8s\n", "BatchNorm (N x C x H x W)", "count", "MB",
           "stats", "GB/s", "apply", "GB/s", "sums", "GB/s", "dx", "GB/s", "forward", "backward");
    double total[2] = {0, 0};
    for (int i = 0; i < count; i++) {
        if (i == 0) warm_up(ctx, &shapes[0]);
        const shape *s = &shapes[i];
        const int64_t n = nn_norm_elements(&s->p), c = s->p.channels, two = 2 * c;
        nn_tensor *tx = filled(ctx, n, -2, 2), *ty = filled(ctx, n, -1, 1), *tdy = filled(ctx, n, -1, 1);
        nn_tensor *tdx = filled(ctx, n, -1, 1), *mean = filled(ctx, c, -0.1f, 0.1f), *var = filled(ctx, c, 0.5f, 1.5f);
        nn_tensor *w = filled(ctx, c, 0.5f, 1.5f), *b = filled(ctx, c, -0.5f, 0.5f), *sums = filled(ctx, two, 0, 1);
        nn_tensor *dw = filled(ctx, c, 0, 1), *db = filled(ctx, c, 0, 1);
        const nn_buffer_ref none = {0};
        nn_norm_params stats = s->p, apply = s->p, reduce = s->p, pointwise = s->p;
        reduce.batch_stats = pointwise.batch_stats = 1;
        pointwise.sums_unweighted = 1;
        pointwise.affine_accumulate = 3; /* the weight's and bias's gradients add into theirs, as a parameter's do */
        const launch forward[2] = {
            {NN_KERNEL_NORM_STATS, {nn_tensor_ref(tx), nn_tensor_ref(mean), nn_tensor_ref(var)}, 3, &stats},
            {NN_KERNEL_NORM_APPLY,
             {nn_tensor_ref(tx), nn_tensor_ref(mean), nn_tensor_ref(var), nn_tensor_ref(w), nn_tensor_ref(b),
              nn_tensor_ref(ty), none}, 7, &apply}};
        const launch backward[2] = {
            {NN_KERNEL_NORM_BACKWARD_SUMS,
             {nn_tensor_ref(tx), nn_tensor_ref(mean), nn_tensor_ref(var), none, nn_tensor_ref(tdy),
              nn_tensor_ref(sums), none}, 7, &reduce},
            {NN_KERNEL_NORM_BACKWARD_FROM_SUMS,
             {nn_tensor_ref(tx), nn_tensor_ref(mean), nn_tensor_ref(var), nn_tensor_ref(w), nn_tensor_ref(tdy),
              nn_tensor_ref(tdx), nn_tensor_ref(sums), nn_tensor_ref(dw), nn_tensor_ref(db), none}, 10, &pointwise}};
        double ms[6];
        ms[0] = time_launches(ctx, &forward[0], 1, reps, runs);
        ms[1] = time_launches(ctx, &forward[1], 1, reps, runs);
        ms[2] = time_launches(ctx, &backward[0], 1, reps, runs);
        ms[3] = time_launches(ctx, &backward[1], 1, reps, runs);
        ms[4] = time_launches(ctx, forward, 2, reps, runs);
        ms[5] = time_launches(ctx, backward, 2, reps, runs);
        const double mb = (double)n * sizeof(float) * 1e-6;
        char label[64];
        snprintf(label, sizeof label, "%lldx%lldx%lldx%lld", (long long)s->dims[0], (long long)s->dims[1],
                 (long long)s->dims[2], (long long)s->dims[3]);
        printf("%-26s %5d %7.1f %8.3f %6.0f %8.3f %6.0f %8.3f %6.0f %8.3f %6.0f %8.3f %8.3f\n", label, s->count, mb,
               ms[0], mb / ms[0], ms[1], 2 * mb / ms[1], ms[2], 2 * mb / ms[2], ms[3], 3 * mb / ms[3], ms[4], ms[5]);
        printf("norm %s %d %lld %lld %lld %lld %d %d %.4f %.4f\n", name, i, (long long)s->dims[0],
               (long long)s->dims[1], (long long)s->dims[2], (long long)s->dims[3], s->p.inner == 1, s->count,
               ms[4], ms[5]);
        total[0] += s->count * ms[4];
        total[1] += s->count * ms[5];
        nn_tensor *made[11] = {tx, ty, tdy, tdx, mean, var, w, b, sums, dw, db};
        for (int k = 0; k < 11; k++) nn_tensor_free(made[k]);
    }
    printf("sum over the model's BatchNorms (each shape times its count): forward %.2f ms, backward %.2f ms, "
           "all %.2f ms\n", total[0], total[1], total[0] + total[1]);
    nn_tensor_free(x);
    nn_module_free(net);
    nn_ctx_free(ctx);
    return 0;
}
