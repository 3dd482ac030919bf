/* GEMM throughput on the Vulkan backend through the public API: nn_matmul
 * on square sizes up to 4096 and on the GEMM shapes of a LeNet-5 step
 * (batch 64) and an AlexNet step (the seed's AlexNet, batch 16), the same
 * shapes as bench_gemm.c. Not a test: it prints a table for bench/README.md
 * that bench/torch_gemm_cuda.py reads to time cuBLAS on the same shapes.
 *
 *   build/bench/bench_vulkan_gemm [--quick] [--device vulkan] [--only SUBSTRING] [--precision fp16|bf16]
 *                                 [--shape MxNxK]...
 *
 * --shape (repeatable): time these products (C[M, N] = A[M, K] B[K, N])
 * instead of the built-in list, e.g. a convolution's implicit GEMM as a
 * plain one, to tell the product's cost from the gather's.
 *
 * --precision: the context's product precision (nn_ctx_set_precision):
 * fp16 runs on the matrix cores where the device has them.
 *
 * A timed sample is `calls` nn_matmul recorded back to back, one
 * nn_ctx_sync, then nn_ctx_step_end (which frees the results): the GPU's
 * throughput with our recording and submission included, as in eager
 * training, without a host round trip per product. Best of 5 samples. */
#include <string.h>

#include "gemm_shapes.h"

/* `calls` products, one sync, results freed; returns seconds or -1. */
static double sample(nn_ctx *ctx, nn_tensor *a, nn_tensor *b, const gemm_shape *s, long calls) {
    double start = gemm_now_seconds();
    for (long i = 0; i < calls; i++)
        if (!nn_matmul(a, b, s->ta, s->tb)) return -1;
    if (nn_ctx_sync(ctx) != NN_OK) return -1;
    double elapsed = gemm_now_seconds() - start;
    if (nn_ctx_step_end(ctx) != NN_OK) return -1;
    return elapsed;
}

int main(int argc, char **argv) {
    bool quick = false;
    const char *device = "vulkan", *only = NULL, *precision = "fp32";
    gemm_shape_list shapes = {0};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) quick = true;
        else if (i + 1 < argc && strcmp(argv[i], "--device") == 0) device = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--only") == 0) only = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--precision") == 0) precision = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--shape") == 0 && shapes.count < GEMM_MAX_SHAPES) {
            long long m, n, k;
            char extra;
            if (sscanf(argv[++i], "%lldx%lldx%lld%c", &m, &n, &k, &extra) != 3 || m < 1 || n < 1 || k < 1) {
                fprintf(stderr, "%s: --shape %s: expected MxNxK, three positive integers\n", argv[0], argv[i]);
                return 2;
            }
            char name[64];
            snprintf(name, sizeof name, "%lldx%lldx%lld", m, n, k);
            gemm_add(&shapes, name, m, n, k, false, false);
        } else {
            fprintf(stderr,
                    "usage: %s [--quick] [--device vulkan|auto|cpu] [--only SUBSTRING] [--precision fp32|fp16|bf16] "
                    "[--shape MxNxK]...\n",
                    argv[0]);
            return 2;
        }
    }
    if (shapes.count == 0) {
        gemm_add(&shapes, "square 4096", 4096, 4096, 4096, false, false);
        gemm_add(&shapes, "square 4096 (TN)", 4096, 4096, 4096, true, false);
        gemm_add(&shapes, "square 4096 (NT)", 4096, 4096, 4096, false, true);
        gemm_add(&shapes, "square 2048", 2048, 2048, 2048, false, false);
        gemm_add(&shapes, "square 1024", 1024, 1024, 1024, false, false);
        gemm_add(&shapes, "square 256", 256, 256, 256, false, false);
        gemm_add_networks(&shapes);
    }

    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .seed = 1});
    if (!ctx) {
        fprintf(stderr, "bench_vulkan_gemm: %s\n", nn_last_error());
        return 1;
    }
    nn_ctx_set_grad_enabled(ctx, false);
    nn_precision chosen;
    if (nn_precision_parse(precision, &chosen) != NN_OK || nn_ctx_set_precision(ctx, chosen) != NN_OK) {
        fprintf(stderr, "bench_vulkan_gemm: --precision: %s\n", nn_last_error());
        return 2;
    }
    printf("nn-engine GEMM benchmark (nn_matmul, back to back, one sync per sample), device: %s, precision %s%s\n",
           nn_ctx_device_name(ctx), precision, nn_ctx_matrix_cores(ctx, chosen) ? " on matrix cores" : "");
    gemm_print_header();
    for (int i = 0; i < shapes.count; i++) {
        const gemm_shape *s = &shapes.items[i];
        if (quick && s->m * s->n * s->k > 1024LL * 1024 * 1024) continue;
        if (only && !strstr(s->name, only)) continue;
        nn_tensor *a, *b;
        gemm_operands(ctx, s, &a, &b);
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
        gemm_print_row(s, best);
    }
    nn_ctx_free(ctx);
    return 0;
}
