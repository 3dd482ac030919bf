/* Every distinct convolution of a model, each kernel alone (bench/README.md,
 * issue 33): the model's forward pass is recorded once, its convolutions
 * read off the tape with the layouts and precision the step would give
 * them, and for each distinct shape the forward, data-gradient and
 * weight-gradient kernels are timed: a capture of --reps launches of one
 * kernel, replayed, the median over --runs replays divided by --reps.
 * The data gradient of a layer whose input needs none (the stem) is not
 * run, as in training; the weight gradient adds into its output, as a
 * parameter's gradient does, and the data gradient with --data-accumulate
 * on (as a residual block's first convolution's, onto the shortcut's). Lines starting "conv" carry the shape and the
 * times for bench/torch_conv_layers.py, which times cuDNN on the same
 * shapes and prints the two side by side.
 *
 *   build/bench/bench_conv_layers [--model resnet18|resnet18-cifar|resnet50|mobilenet_v2|alexnet|...]
 *                                 [--batch B] [--size S] [--channels C] [--classes K]
 *                                 [--precision fp32|fp16|bf16] [--memory-format auto|contiguous|channels-last]
 *                                 [--reps 10] [--runs 7] [--data-accumulate off|on] [--device vulkan]
 *
 * The defaults per model are the issue's: resnet18 and resnet50 at
 * 3x224x224 (resnet50 at batch 64), resnet18-cifar at 1x28x28,
 * mobilenet_v2 and alexnet at 3x224x224, batch 128. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_step.h"
#include "bench_replay.h"
#include "core/graph.h" /* the tape, to read the model's convolutions off it */
#include "nn_capture.h"
#include "nn_engine.h"
#include "ops/ops.h"

#define MAX_SHAPES 128

typedef struct shape {
    nn_conv_params p;
    bool bias, data; /* the layer has a bias; its input wants a gradient */
    int count;       /* times it occurs in the model */
} shape;

static void die(const char *what) {
    fprintf(stderr, "bench_conv_layers: %s: %s\n", what, nn_last_error());
    exit(1);
}

static bool same(const nn_conv_params *a, const nn_conv_params *b) {
    return memcmp(&a->g, &b->g, sizeof a->g) == 0 && a->filters == b->filters && a->groups == b->groups &&
           a->image_layout == b->image_layout && a->output_layout == b->output_layout;
}

/* The model's convolutions, as its forward pass records them. */
static int trace(nn_ctx *ctx, nn_module *net, nn_tensor *x, shape *out) {
    nn_tensor *y = nn_module_forward(net, x);
    if (!y || nn_ctx_flush(ctx, y) != NN_OK) die("the forward pass");
    int count = 0;
    for (int64_t i = 0; i < ctx->tape_count; i++) {
        const nn_node *node = ctx->tape[i];
        if (node->op != &nn_op_conv2d) continue;
        nn_conv_params p = nn_conv2d_params_of(node, 0);
        p.epilogue = 0; /* the bias is added in the forward's store either way */
        int k = 0;
        while (k < count && !same(&out[k].p, &p)) k++;
        if (k == count) {
            if (count == MAX_SHAPES) die("more distinct convolutions than the table holds");
            out[count++] = (shape){.p = p, .bias = node->inputs[2] != NULL,
                                   .data = nn_tensor_requires_grad(node->inputs[0])};
        }
        out[k].count++;
    }
    nn_ctx_step_end(ctx);
    return count;
}

static nn_tensor *filled(nn_ctx *ctx, int64_t n) {
    nn_tensor *t = nn_tensor_new(ctx, NN_F32, 1, &n);
    if (!t || nn_init_uniform(t, -1, 1) != NN_OK) die("a tensor");
    return t;
}

/* Median milliseconds of one launch of `kernel`. */
static double time_kernel(nn_ctx *ctx, nn_kernel kernel, const nn_buffer_ref *args, int nargs, const nn_conv_params *p,
                          int reps, int runs) {
    if (nn_capture_begin(ctx) != NN_OK) die("capture begin");
    for (int r = 0; r < reps; r++)
        if (nn_ctx_run(ctx, kernel, args, nargs, p) != NN_OK) die(nn_kernel_name(kernel));
    nn_capture *c = nn_capture_end(ctx);
    if (!c) die("capture end");
    return bench_replay_median_ms(ctx, c, reps, runs, "bench_conv_layers");
}

static double gflop(const nn_conv_params *p) {
    const nn_conv_geometry *g = &p->g;
    return 2.0 * p->filters * (g->channels / (p->groups > 0 ? p->groups : 1)) * g->kernel_h * g->kernel_w *
           g->out_h * g->out_w * (double)g->batch * 1e-9;
}

int main(int argc, char **argv) {
    bench_model_args m = {.model = "resnet18", .device = "vulkan"};
    const char *precision = "fp32", *format = "auto";
    int reps = 10, runs = 7, data_accumulate = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (bench_model_arg(&m, a, v)) continue;
        if (strcmp(a, "--precision") == 0) precision = v;
        else if (strcmp(a, "--memory-format") == 0) format = v;
        else if (strcmp(a, "--reps") == 0) reps = atoi(v);
        else if (strcmp(a, "--runs") == 0) runs = atoi(v);
        else if (strcmp(a, "--data-accumulate") == 0 && (strcmp(v, "on") == 0 || strcmp(v, "off") == 0))
            data_accumulate = strcmp(v, "on") == 0;
        else {
            fprintf(stderr, "usage: %s [--model M] [--batch B] [--size S] [--channels C] [--classes K] "
                            "[--precision fp32|fp16|bf16] [--memory-format auto|contiguous|channels-last] "
                            "[--reps R] [--runs N] [--data-accumulate on|off] [--device D]\n", argv[0]);
            return 2;
        }
    }
    bench_model_defaults(&m);
    const char *name = m.model, *device = m.device;
    const int batch = m.batch, size = m.size, channels = m.channels, classes = m.classes;
    nn_memory_format memory = NN_MEMORY_FORMAT_AUTO;
    if (strcmp(format, "contiguous") == 0) memory = NN_MEMORY_FORMAT_CONTIGUOUS;
    else if (strcmp(format, "channels-last") == 0) memory = NN_MEMORY_FORMAT_CHANNELS_LAST;
    else if (strcmp(format, "auto") != 0) {
        fprintf(stderr, "bench_conv_layers: --memory-format %s is not auto, contiguous or channels-last\n", format);
        return 2;
    }
    if (batch < 1 || size < 1 || channels < 1 || classes < 1 || reps < 1 || runs < 1) die("arguments");
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .seed = 1});
    if (!ctx) die("context");
    nn_precision chosen;
    if (nn_precision_parse(precision, &chosen) != NN_OK || nn_ctx_set_precision(ctx, chosen) != NN_OK)
        die("--precision");
    nn_ctx_set_memory_format(ctx, memory);
    nn_module *net = bench_model(ctx, name, channels, classes, "bench_conv_layers");
    if (!net) die(name);
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 4, (int64_t[]){batch, channels, size, size});
    if (!x || nn_init_uniform(x, -1, 1) != NN_OK) die("the input");
    static shape shapes[MAX_SHAPES];
    const int count = trace(ctx, net, x, shapes);
    printf("nn-engine %s, batch %d, %dx%dx%d, %s products%s, memory format %s, on %s: %d distinct convolutions "
           "(ms per launch, median of %d replays of %d)\n", name, batch, channels, size, size, precision,
           nn_ctx_matrix_cores(ctx, chosen) ? " (matrix cores)" : "", format, nn_ctx_device_name(ctx), count, runs,
           reps);
    printf("%-44s %5s %8s %9s %9s %9s %9s\n", "layer (batch x C x H x W, filters, window, stride, pad, groups, layouts)",
           "count", "GFLOP", "forward", "data", "weight", "TFLOP/s");
    double total[3] = {0, 0, 0};
    for (int i = 0; i < count; i++) {
        shape *s = &shapes[i];
        nn_conv_params p = s->p;
        const nn_conv_geometry *g = &p.g;
        const int64_t groups = p.groups > 0 ? p.groups : 1;
        const int64_t nx = (int64_t)g->batch * g->channels * g->height * g->width;
        const int64_t nw = (int64_t)p.filters * (g->channels / groups) * g->kernel_h * g->kernel_w;
        const int64_t ny = (int64_t)g->batch * p.filters * g->out_h * g->out_w;
        nn_tensor *tx = filled(ctx, nx), *tw = filled(ctx, nw), *ty = filled(ctx, ny), *tb = filled(ctx, p.filters);
        nn_tensor *tdx = filled(ctx, nx), *tdw = filled(ctx, nw), *cols = NULL;
        const bool depthwise = nn_conv_is_depthwise(&p);
        if (!depthwise && nn_ctx_conv_keeps_columns(ctx, &p))
            cols = filled(ctx, (int64_t)g->batch * g->channels * g->kernel_h * g->kernel_w * g->out_h * g->out_w);
        double ms[3] = {0, 0, 0};
        nn_conv_params forward = p;
        forward.epilogue = s->bias ? NN_EPI_BIAS_ROWS : 0;
        if (depthwise) {
            nn_buffer_ref f[4] = {nn_tensor_ref(tx), nn_tensor_ref(tw), nn_tensor_ref(ty), nn_optional_ref(s->bias ? tb : NULL)};
            ms[0] = time_kernel(ctx, NN_KERNEL_DEPTHWISE_CONV2D_FORWARD, f, 4, &forward, reps, runs);
        } else {
            nn_buffer_ref f[5] = {nn_tensor_ref(tx), nn_tensor_ref(tw), nn_tensor_ref(ty),
                                  nn_optional_ref(s->bias ? tb : NULL), nn_optional_ref(cols)};
            ms[0] = time_kernel(ctx, NN_KERNEL_CONV2D_FORWARD, f, 5, &forward, reps, runs);
        }
        if (s->data) {
            nn_buffer_ref d[3] = {nn_tensor_ref(ty), nn_tensor_ref(tw), nn_tensor_ref(tdx)};
            nn_conv_params data = p;
            data.g.accumulate = data_accumulate; /* on: added to dx, as a block's first convolution does */
            ms[1] = time_kernel(ctx, depthwise ? NN_KERNEL_DEPTHWISE_CONV2D_BACKWARD_DATA : NN_KERNEL_CONV2D_BACKWARD_DATA,
                                d, 3, &data, reps, runs);
        }
        nn_conv_params weight = p;
        weight.g.accumulate = 1;
        nn_buffer_ref w[4] = {nn_tensor_ref(ty), nn_tensor_ref(tx), nn_tensor_ref(tdw), nn_optional_ref(cols)};
        ms[2] = time_kernel(ctx, depthwise ? NN_KERNEL_DEPTHWISE_CONV2D_BACKWARD_WEIGHT : NN_KERNEL_CONV2D_BACKWARD_WEIGHT,
                            w, depthwise ? 3 : 4, &weight, reps, runs);
        char label[96];
        snprintf(label, sizeof label, "%dx%dx%dx%d f%d k%dx%d s%d p%d g%lld %s/%s", g->batch, g->channels, g->height,
                 g->width, p.filters, g->kernel_h, g->kernel_w, g->stride_h, g->pad_h, (long long)groups,
                 p.image_layout ? "nhwc" : "nchw", p.output_layout ? "nhwc" : "nchw");
        const double flop = gflop(&p), passes = s->data ? 3 : 2;
        const double sum = ms[0] + ms[1] + ms[2];
        char data[16] = "        -";
        if (s->data) snprintf(data, sizeof data, "%9.3f", ms[1]);
        printf("%-44s %5d %8.2f %9.3f %s %9.3f %9.1f\n", label, s->count, flop, ms[0], data, ms[2],
               flop * passes / sum);
        printf("conv %s %d %d %d %d %d %d %d %d %d %d %d %d %d %d %lld %d %d %d %.4f %.4f %.4f\n", name, i, g->batch,
               g->channels, g->height, g->width, p.filters, g->kernel_h, g->kernel_w, g->stride_h, g->stride_w,
               g->pad_h, g->pad_w, nn_conv_dilation_h(g), nn_conv_dilation_w(g), (long long)groups, s->bias, s->data,
               s->count, ms[0], ms[1], ms[2]);
        for (int k = 0; k < 3; k++) total[k] += s->count * ms[k];
        nn_tensor *made[7] = {tx, tw, ty, tb, tdx, tdw, cols};
        for (int k = 0; k < 7; k++) nn_tensor_free(made[k]);
    }
    printf("sum over the model's convolutions (each shape times its count): forward %.2f ms, data %.2f ms, "
           "weight %.2f ms, all %.2f ms\n", total[0], total[1], total[2], total[0] + total[1] + total[2]);
    uint64_t current, peak, reserved;
    if (nn_ctx_memory_stats(ctx, &current, &peak, &reserved) == NN_OK)
        printf("peak device memory %.0f MiB\n", (double)peak / (1 << 20));
    nn_tensor_free(x);
    nn_module_free(net);
    nn_ctx_free(ctx);
    return 0;
}
