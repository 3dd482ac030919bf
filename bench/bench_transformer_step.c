/* A transformer's training step on synthetic data (issue 34): zero_grad,
 * forward, cross-entropy, backward and AdamW (lr 3e-4, weight decay 0.1),
 * captured once then replayed (nn_capture.h), the median of --steps after
 * 300 ms of replays discarded, with the step's peak memory. bench/torch_transformer_step.py is
 * PyTorch's peer: it reads these lines and times the same step.
 *
 *   gpt: nn_gpt (GPT-2's design, nanoGPT's names) on tokens [batch, context],
 *        next-token cross-entropy over every position; GPT-2 small is the
 *        default (12 layers, width 768, 12 heads, context 1024, vocabulary
 *        50257, batch 8);
 *   vit: nn_vision_transformer on [batch, channels, size, size] images (vit-tiny:
 *        28 x 28 x 1, patch 4, width 192, 6 layers, 3 heads, MLP 768, 10
 *        classes, batch 256).
 *
 *   build/bench/bench_transformer_step [--model gpt|vit] [--device vulkan|cpu] [--batch B]
 *        [--width W] [--depth L] [--heads H] [--context T] [--vocab V] (gpt)
 *        [--size S] [--channels C] [--patch P] [--mlp M] [--classes K] (vit)
 *        [--steps 10] [--precision fp32|fp16|bf16]
 * prints one line: "transformer <model> <batch> <width> <depth> <heads> <context or size>
 * <vocab or classes> <precision> <ms> <peak MiB>" and a readable one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_timing.h"
#include "nn_capture.h"
#include "nn_engine.h"

typedef struct args {
    const char *model, *device, *precision;
    int batch, width, depth, heads, context, vocab, size, channels, patch, mlp, classes, steps;
} args;

static void die(const char *what) {
    fprintf(stderr, "bench_transformer_step: %s: %s\n", what, nn_last_error());
    exit(1);
}

static nn_status step(nn_module *net, nn_optimizer *opt, nn_tensor *x, nn_tensor *y) {
    nn_status st = nn_optimizer_zero_grad(opt);
    nn_tensor *out = st == NN_OK ? nn_module_forward(net, x) : NULL;
    if (out && nn_tensor_ndim(out) == 3) /* [N, T, vocab] -> [N T, vocab] */
        out = nn_reshape(out, 2, (const int64_t[]){nn_tensor_dim(out, 0) * nn_tensor_dim(out, 1), nn_tensor_dim(out, 2)});
    nn_tensor *loss = out ? nn_cross_entropy(out, y, NULL, NN_REDUCTION_MEAN, -100, 0.0f) : NULL;
    if (!loss) return nn_last_status();
    st = nn_backward(loss);
    return st == NN_OK ? nn_optimizer_step(opt) : st;
}

int main(int argc, char **argv) {
    args a = {.model = "gpt", .device = "vulkan", .precision = "fp32", .batch = 0, .width = 0, .depth = 0, .heads = 0,
              .context = 1024, .vocab = 50257, .size = 28, .channels = 1, .patch = 4, .mlp = 768, .classes = 10,
              .steps = 10};
    struct { const char *flag; int *value; } ints[] = {
        {"--batch", &a.batch}, {"--width", &a.width}, {"--depth", &a.depth}, {"--heads", &a.heads},
        {"--context", &a.context}, {"--vocab", &a.vocab}, {"--size", &a.size}, {"--channels", &a.channels},
        {"--patch", &a.patch}, {"--mlp", &a.mlp}, {"--classes", &a.classes}, {"--steps", &a.steps}};
    for (int i = 1; i + 1 < argc; i += 2) {
        bool known = false;
        for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
            if (strcmp(argv[i], ints[k].flag) == 0) *ints[k].value = atoi(argv[i + 1]), known = true;
        if (strcmp(argv[i], "--model") == 0) a.model = argv[i + 1], known = true;
        if (strcmp(argv[i], "--device") == 0) a.device = argv[i + 1], known = true;
        if (strcmp(argv[i], "--precision") == 0) a.precision = argv[i + 1], known = true;
        if (!known) {
            fprintf(stderr, "bench_transformer_step: unknown flag %s (see the comment atop bench_transformer_step.c)\n",
                    argv[i]);
            return 2;
        }
    }
    const bool gpt = strcmp(a.model, "gpt") == 0;
    if (!gpt && strcmp(a.model, "vit") != 0) {
        fprintf(stderr, "bench_transformer_step: --model %s is not gpt or vit\n", a.model);
        return 2;
    }
    if (!a.batch) a.batch = gpt ? 8 : 256;
    if (!a.width) a.width = gpt ? 768 : 192;
    if (!a.depth) a.depth = gpt ? 12 : 6;
    if (!a.heads) a.heads = gpt ? 12 : 3;
    if (a.steps < 1) die("--steps");

    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = a.device, .seed = 1});
    nn_precision precision;
    if (!ctx) die("context");
    if (nn_precision_parse(a.precision, &precision) != NN_OK || nn_ctx_set_precision(ctx, precision) != NN_OK)
        die("--precision");
    nn_module *net = gpt ? nn_gpt(ctx, &(nn_gpt_options){.vocab_size = a.vocab, .context = a.context, .width = a.width,
                                                         .depth = a.depth, .heads = a.heads})
                         : nn_vision_transformer(ctx, &(nn_vit_options){
                               .image_size = a.size, .patch_size = a.patch, .in_channels = a.channels,
                               .num_classes = a.classes, .hidden_dim = a.width, .num_layers = a.depth,
                               .num_heads = a.heads, .mlp_dim = a.mlp});
    if (!net) die(a.model);
    const int count = nn_module_param_count(net);
    nn_tensor **params = malloc(sizeof *params * (size_t)count);
    for (int i = 0; i < count; i++) params[i] = nn_module_param(net, i);
    nn_optimizer *opt = nn_adamw_new(params, count, &(nn_adam_options){.lr = 3e-4f, .beta1 = 0.9f, .beta2 = 0.95f,
                                                                        .eps = 1e-8f, .weight_decay = 0.1f});
    if (!opt) die("the optimizer");

    /* Inputs: random tokens with their successors as targets, or images and labels. */
    const int64_t tokens = (int64_t)a.batch * a.context;
    nn_tensor *x = gpt ? nn_tensor_new(ctx, NN_I32, 2, (const int64_t[]){a.batch, a.context})
                       : nn_tensor_new(ctx, NN_F32, 4, (const int64_t[]){a.batch, a.channels, a.size, a.size});
    nn_tensor *y = nn_tensor_new(ctx, NN_I32, 1, (const int64_t[]){gpt ? tokens : a.batch});
    const int64_t labels = gpt ? tokens + 1 : a.batch;
    int32_t *ids = malloc(sizeof *ids * (size_t)labels);
    uint32_t seed = 12345;
    for (int64_t i = 0; i < labels; i++) {
        seed = seed * 1664525u + 1013904223u;
        ids[i] = (int32_t)((seed >> 8) % (uint32_t)(gpt ? a.vocab : a.classes));
    }
    if (!x || !y || !ids) die("inputs");
    if (gpt ? nn_tensor_write(x, ids, sizeof *ids * (size_t)tokens) != NN_OK ||
                  nn_tensor_write(y, ids + 1, sizeof *ids * (size_t)tokens) != NN_OK
            : nn_init_uniform(x, -1, 1) != NN_OK || nn_tensor_write(y, ids, sizeof *ids * (size_t)a.batch) != NN_OK)
        die("writing the inputs");

    for (int i = 0; i < 2; i++)
        if (step(net, opt, x, y) != NN_OK || nn_ctx_sync(ctx) != NN_OK || nn_ctx_step_end(ctx) != NN_OK)
            die("eager step");
    if (nn_capture_begin(ctx) != NN_OK) die("capture begin");
    nn_status st = step(net, opt, x, y);
    nn_ctx_step_end(ctx);
    nn_capture *captured = nn_capture_end(ctx);
    if (st != NN_OK || !captured) die("capturing the step");
    /* Replays discarded for 300 ms first: a GPU idle until now runs its first
     * ones at a fraction of its clock (bench/README.md, issue 33). */
    const double warm_until = now_ms() + 300.0;
    for (int i = 0; i < 2 || now_ms() < warm_until; i++)
        if (nn_replay(captured, 1) != NN_OK || nn_ctx_sync(ctx) != NN_OK) die("replay");
    double *times = malloc(sizeof *times * (size_t)a.steps);
    for (int i = 0; i < a.steps; i++) {
        const double t0 = now_ms();
        if (nn_replay(captured, 1) != NN_OK || nn_ctx_sync(ctx) != NN_OK) die("replay");
        times[i] = now_ms() - t0;
    }
    const double ms = median(times, a.steps);
    uint64_t current = 0, peak = 0, reserved = 0;
    nn_ctx_memory_stats(ctx, &current, &peak, &reserved);
    const int shape = gpt ? a.context : a.size, outputs = gpt ? a.vocab : a.classes;
    printf("transformer %s %d %d %d %d %d %d %s %.3f %.0f\n", a.model, a.batch, a.width, a.depth, a.heads, shape,
           outputs, a.precision, ms, (double)peak / (1 << 20));
    printf("# nn-engine %s (batch %d, width %d, %d layers, %d heads, %s %d, %s %d, %d parameters tensors) on %s, %s%s: "
           "captured %.2f ms/step, peak %.0f MiB\n",
           a.model, a.batch, a.width, a.depth, a.heads, gpt ? "context" : "size", shape, gpt ? "vocabulary" : "classes",
           outputs, count, nn_ctx_device_name(ctx), a.precision,
           nn_ctx_matrix_cores(ctx, precision) ? " (matrix cores)" : "", ms, (double)peak / (1 << 20));
    nn_capture_free(captured);
    free(times);
    free(ids);
    free(params);
    nn_tensor_free(x);
    nn_tensor_free(y);
    nn_optimizer_free(opt);
    nn_module_free(net);
    nn_ctx_free(ctx);
    return 0;
}
