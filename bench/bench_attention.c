/* One attention layer's training step (issue 34): y = softmax(q k^T /
 * sqrt(E) [+ causal mask]) v and the gradients of q, k and v from sum(y),
 * through nn_scaled_dot_product_attention (the ATTENTION kernels: no score
 * matrix in memory). The step is captured --reps times and replayed; the
 * figure is the median over --runs replays divided by --reps, with the
 * step's peak memory. Each "attention" line carries the shape and our
 * figures for bench/torch_attention.py, which times PyTorch's
 * scaled_dot_product_attention on the same shapes.
 *
 *   build/bench/bench_attention [--device vulkan] [--shapes B,H,L,E,causal;...] [--reps 5] [--runs 7]
 *                               [--precision fp32|fp16|bf16] [--forward]
 *
 * --precision sets the context's (nn_ctx_set_precision: fp16 runs the
 * forward on matrix cores where the device has them); --forward times the
 * forward alone (no gradients). The lines carry both for torch_attention.py.
 *
 * The default shapes: GPT-2 small's (8, 12, 1024, 64, causal), ViT-tiny's
 * at batch 256 (256, 3, 50, 64) and a long sequence (2, 12, 4096, 64, causal). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_replay.h"
#include "nn_capture.h"
#include "nn_engine.h"

static void die(const char *what) {
    fprintf(stderr, "bench_attention: %s: %s\n", what, nn_last_error());
    exit(1);
}

static bool g_forward_only;

static nn_status step(nn_tensor *const *x, bool causal) {
    nn_tensor *y = nn_scaled_dot_product_attention(x[0], x[1], x[2], NULL, causal, 0.0f);
    if (g_forward_only) return y ? NN_OK : nn_last_status();
    nn_tensor *loss = y ? nn_sum(y) : NULL;
    return loss ? nn_backward(loss) : nn_last_status();
}

static void bench_shape(nn_ctx *ctx, const int64_t *shape, bool causal, int reps, int runs, const char *precision) {
    const int64_t n = shape[0] * shape[1] * shape[2] * shape[3];
    float *data = malloc(sizeof(float) * (size_t)n);
    if (!data) die("host memory");
    unsigned state = 1;
    for (int64_t i = 0; i < n; i++) data[i] = (float)((state = state * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
    nn_tensor *x[3];
    for (int i = 0; i < 3; i++) {
        x[i] = nn_tensor_from_data(ctx, NN_F32, 4, shape, data);
        if (!x[i] || nn_tensor_set_requires_grad(x[i], !g_forward_only) != NN_OK) die("inputs");
    }
    free(data);
    if (step(x, causal) != NN_OK || nn_ctx_sync(ctx) != NN_OK) die("the eager step");
    nn_ctx_step_end(ctx);
    if (nn_capture_begin(ctx) != NN_OK) die("capture begin");
    for (int r = 0; r < reps; r++) {
        if (step(x, causal) != NN_OK) die("the captured step");
        nn_ctx_step_end(ctx);
    }
    nn_capture *c = nn_capture_end(ctx);
    if (!c) die("capture end");
    const double ms = bench_replay_median_ms(ctx, c, reps, runs, "bench_attention");
    uint64_t peak = 0;
    nn_ctx_memory_stats(ctx, NULL, &peak, NULL);
    printf("attention %lld %lld %lld %lld %d %.4f %.1f %s %s\n", (long long)shape[0], (long long)shape[1],
           (long long)shape[2], (long long)shape[3], causal, ms, (double)peak / (1 << 20), precision,
           g_forward_only ? "forward" : "step");
    fflush(stdout);
    for (int i = 0; i < 3; i++) nn_tensor_free(x[i]);
}

int main(int argc, char **argv) {
    const char *device = "vulkan", *shapes = "8,12,1024,64,1;256,3,50,64,0;2,12,4096,64,1";
    const char *precision = "fp32";
    int reps = 5, runs = 7;
    for (int i = 1; i < argc; i++) {
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--device") == 0 && next) device = argv[++i];
        else if (strcmp(argv[i], "--shapes") == 0 && next) shapes = argv[++i];
        else if (strcmp(argv[i], "--reps") == 0 && next) reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--runs") == 0 && next) runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--precision") == 0 && next) precision = argv[++i];
        else if (strcmp(argv[i], "--forward") == 0) g_forward_only = true;
        else {
            fprintf(stderr, "usage: %s [--device D] [--shapes B,H,L,E,causal;...] [--reps N] [--runs N] "
                    "[--precision fp32|fp16|bf16] [--forward]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1 || runs < 1) {
        fprintf(stderr, "bench_attention: --reps and --runs take a count of at least 1\n");
        return 2;
    }
    nn_precision prec;
    if (nn_precision_parse(precision, &prec) != NN_OK) {
        fprintf(stderr, "bench_attention: --precision: %s\n", nn_last_error());
        return 2;
    }
    printf("nn-engine attention %s, device %s, %s, median of %d replays of %d steps; columns: B H L E causal ms "
           "peak_MiB precision what\n", g_forward_only ? "forward" : "step", device, precision, runs, reps);
    for (const char *s = shapes; s && *s;) {
        long long b, h, l, e;
        int causal;
        if (sscanf(s, "%lld,%lld,%lld,%lld,%d", &b, &h, &l, &e, &causal) != 5 || b < 1 || h < 1 || l < 1 || e < 1) {
            fprintf(stderr, "bench_attention: --shapes: \"%s\" is not B,H,L,E,causal\n", s);
            return 2;
        }
        /* a fresh context per shape: its peak is the shape's own */
        nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device});
        if (!ctx || nn_ctx_set_precision(ctx, prec) != NN_OK) die(device);
        bench_shape(ctx, (const int64_t[]){b, h, l, e}, causal != 0, reps, runs, precision);
        nn_ctx_free(ctx);
        s = strchr(s, ';');
        if (s) s++;
    }
    return 0;
}
