/* GEMM throughput on the Vulkan backend through the public API: nn_matmul
 * on square sizes up to 4096 and on the GEMM shapes of a LeNet-5 step
 * (batch 64) and an AlexNet step (the seed's AlexNet, batch 16), the same
 * shapes as bench_gemm.c. Not a test: it prints a table for bench/README.md
 * that bench/torch_gemm_cuda.py reads to time cuBLAS on the same shapes.
 *
 *   build/bench/bench_vulkan_gemm [--quick] [--device vulkan] [--only SUBSTRING]
 *
 * A timed sample is `calls` nn_matmul recorded back to back, one
 * nn_ctx_sync, then nn_ctx_step_end (which frees the results): the GPU's
 * throughput with our recording and submission included, as in eager
 * training, without a host round trip per product. Best of 5 samples. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nn_engine.h"

typedef struct shape {
    char name[48];
    int64_t m, n, k;
    bool ta, tb;
} shape;

static shape shapes[64];
static int shape_count;

static void add(const char *name, int64_t m, int64_t n, int64_t k, bool ta, bool tb) {
    if (shape_count == (int)(sizeof shapes / sizeof shapes[0])) return;
    shape *s = &shapes[shape_count++];
    snprintf(s->name, sizeof s->name, "%s", name);
    s->m = m, s->n = n, s->k = k, s->ta = ta, s->tb = tb;
}

/* A convolution's three im2col GEMMs with the batch folded in (as bench_gemm.c). */
static void add_conv(const char *net, const char *layer, int batch, int in_c, int out_c, int kernel, int out_hw,
                     bool with_dx) {
    char name[48];
    int64_t k = (int64_t)in_c * kernel * kernel, p = (int64_t)out_hw * out_hw * batch;
    snprintf(name, sizeof name, "%s %s fwd", net, layer);
    add(name, out_c, p, k, false, false);
    snprintf(name, sizeof name, "%s %s dW", net, layer);
    add(name, out_c, k, p, false, true);
    if (with_dx) {
        snprintf(name, sizeof name, "%s %s dX", net, layer);
        add(name, k, p, out_c, true, false);
    }
}

static void add_linear(const char *net, const char *layer, int batch, int in, int out) {
    char name[48];
    snprintf(name, sizeof name, "%s %s fwd", net, layer);
    add(name, batch, out, in, false, true);
    snprintf(name, sizeof name, "%s %s dX", net, layer);
    add(name, batch, in, out, false, false);
    snprintf(name, sizeof name, "%s %s dW", net, layer);
    add(name, out, in, batch, true, false);
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static nn_tensor *random_matrix(nn_ctx *ctx, int64_t rows, int64_t cols) {
    size_t count = (size_t)(rows * cols);
    float *data = malloc(count * sizeof *data);
    if (!data) return NULL;
    uint64_t s = 0x9e3779b97f4a7c15ull ^ (uint64_t)(rows * 31 + cols);
    for (size_t i = 0; i < count; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        data[i] = (float)(s >> 40) * (2.0f / 16777216.0f) - 1.0f;
    }
    int64_t dims[2] = {rows, cols};
    nn_tensor *t = nn_tensor_from_data(ctx, NN_F32, 2, dims, data);
    free(data);
    return t;
}

/* `calls` products, one sync, results freed; returns seconds or -1. */
static double sample(nn_ctx *ctx, nn_tensor *a, nn_tensor *b, const shape *s, long calls) {
    double start = now_seconds();
    for (long i = 0; i < calls; i++)
        if (!nn_matmul(a, b, s->ta, s->tb)) return -1;
    if (nn_ctx_sync(ctx) != NN_OK) return -1;
    double elapsed = now_seconds() - start;
    if (nn_ctx_step_end(ctx) != NN_OK) return -1;
    return elapsed;
}

int main(int argc, char **argv) {
    bool quick = false;
    const char *device = "vulkan", *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) quick = true;
        else if (i + 1 < argc && strcmp(argv[i], "--device") == 0) device = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--only") == 0) only = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--quick] [--device vulkan|auto|cpu] [--only SUBSTRING]\n", argv[0]);
            return 2;
        }
    }
    add("square 4096", 4096, 4096, 4096, false, false);
    add("square 4096 (TN)", 4096, 4096, 4096, true, false);
    add("square 4096 (NT)", 4096, 4096, 4096, false, true);
    add("square 2048", 2048, 2048, 2048, false, false);
    add("square 1024", 1024, 1024, 1024, false, false);
    add("square 256", 256, 256, 256, false, false);
    add_conv("lenet", "c1", 64, 1, 6, 5, 24, false);
    add_conv("lenet", "c2", 64, 6, 16, 5, 8, true);
    add_linear("lenet", "fc1", 64, 256, 120);
    add_linear("lenet", "fc2", 64, 120, 84);
    add_linear("lenet", "fc3", 64, 84, 10);
    add_conv("alexnet", "c1", 16, 3, 64, 11, 55, false);
    add_conv("alexnet", "c2", 16, 64, 192, 5, 27, true);
    add_conv("alexnet", "c3", 16, 192, 384, 3, 13, true);
    add_conv("alexnet", "c4", 16, 384, 256, 3, 13, true);
    add_conv("alexnet", "c5", 16, 256, 256, 3, 13, true);
    add_linear("alexnet", "fc1", 16, 9216, 512);
    add_linear("alexnet", "fc2", 16, 512, 512);
    add_linear("alexnet", "fc3", 16, 512, 2);

    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .seed = 1});
    if (!ctx) {
        fprintf(stderr, "bench_vulkan_gemm: %s\n", nn_last_error());
        return 1;
    }
    nn_ctx_set_grad_enabled(ctx, false);
    printf("nn-engine GEMM benchmark (nn_matmul, back to back, one sync per sample), device: %s\n",
           nn_ctx_device_name(ctx));
    printf("%-22s %6s %6s %6s %3s %9s %11s %9s\n", "shape", "M", "N", "K", "op", "MFLOP", "us/call", "GFLOP/s");
    for (int i = 0; i < shape_count; i++) {
        const shape *s = &shapes[i];
        if (quick && s->m * s->n * s->k > 1024LL * 1024 * 1024) continue;
        if (only && !strstr(s->name, only)) continue;
        nn_tensor *a = s->ta ? random_matrix(ctx, s->k, s->m) : random_matrix(ctx, s->m, s->k);
        nn_tensor *b = s->tb ? random_matrix(ctx, s->n, s->k) : random_matrix(ctx, s->k, s->n);
        double first = a && b ? sample(ctx, a, b, s, 1) : -1; /* warm-up: pipelines, memory */
        first = first >= 0 ? sample(ctx, a, b, s, 1) : -1;
        if (first < 0) {
            fprintf(stderr, "bench_vulkan_gemm: %s: %s\n", s->name, nn_last_error());
            return 1;
        }
        double target = quick ? 0.02 : 0.2;
        long calls = first > 0 ? (long)(target / first) : 1000;
        /* Results stay allocated until the sample ends: at most ~2 GiB of them. */
        long max_calls = (long)((2LL << 30) / (s->m * s->n * 4 + 1));
        if (calls > max_calls) calls = max_calls;
        if (calls > 20000) calls = 20000;
        if (calls < 1) calls = 1;
        double best = 1e30;
        for (int round = 0; round < (quick ? 2 : 5); round++) {
            double t = sample(ctx, a, b, s, calls);
            if (t < 0) {
                fprintf(stderr, "bench_vulkan_gemm: %s: %s\n", s->name, nn_last_error());
                return 1;
            }
            if (t / calls < best) best = t / calls;
        }
        nn_tensor_free(a);
        nn_tensor_free(b);
        double flops = 2.0 * (double)s->m * (double)s->n * (double)s->k;
        printf("%-22s %6lld %6lld %6lld  %c%c %9.1f %11.1f %9.1f\n", s->name, (long long)s->m, (long long)s->n,
               (long long)s->k, s->ta ? 'T' : 'N', s->tb ? 'T' : 'N', flops * 1e-6, best * 1e6, flops / best * 1e-9);
        fflush(stdout);
    }
    nn_ctx_free(ctx);
    return 0;
}
