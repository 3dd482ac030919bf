/* GEMM throughput through the public API: nn_matmul on square sizes and on
 * the GEMM shapes of one LeNet-5 step (batch 64) and one AlexNet step (the
 * seed's AlexNet, batch 16), forward and backward. Not a test: it prints a
 * table of GFLOP/s for bench/README.md.
 *
 *   build/bench/bench_gemm [--threads T] [--quick]
 *
 * Shapes and the table format: gemm_shapes.h.
 *
 * A timed call is nn_matmul + nn_ctx_sync + nn_ctx_step_end (which frees the
 * result), as in a training step; inputs are made once per shape. */
#include <stdlib.h>
#include <string.h>

#include "gemm_shapes.h"

static int fail(const char *what) {
    fprintf(stderr, "bench_gemm: %s: %s\n", what, nn_last_error());
    return 1;
}

/* One timed call: the product, waited for, and its result freed. */
static int one_call(nn_ctx *ctx, nn_tensor *a, nn_tensor *b, const gemm_shape *s) {
    nn_tensor *c = nn_matmul(a, b, s->ta, s->tb);
    if (!c || nn_ctx_sync(ctx) != NN_OK || nn_ctx_step_end(ctx) != NN_OK) return -1;
    return 0;
}

/* Best time per call over `samples` samples of about `sample_seconds` each. */
static int time_shape(nn_ctx *ctx, const gemm_shape *s, double sample_seconds, int samples,
                      double *seconds_per_call) {
    nn_tensor *a, *b;
    gemm_operands(ctx, s, &a, &b);
    int status = a && b ? 0 : -1;
    /* Warm up (caches, the library's buffers, page faults) and calibrate. */
    double start = gemm_now_seconds();
    if (status == 0) status = one_call(ctx, a, b, s);
    double first = gemm_now_seconds() - start;
    long calls = first > 0 ? (long)(sample_seconds / first) : 1000;
    if (calls < 1) calls = 1;
    if (calls > 100000) calls = 100000;
    double best = 1e30;
    for (int round = 0; round < samples && status == 0; round++) {
        start = gemm_now_seconds();
        for (long i = 0; i < calls && status == 0; i++) status = one_call(ctx, a, b, s);
        double per_call = (gemm_now_seconds() - start) / (double)calls;
        if (per_call < best) best = per_call;
    }
    nn_tensor_free(a);
    nn_tensor_free(b);
    *seconds_per_call = best;
    return status;
}

int main(int argc, char **argv) {
    int threads = 0;
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--threads") == 0) threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--quick") == 0) quick = true;
        else {
            fprintf(stderr, "usage: %s [--threads T] [--quick]\n", argv[0]);
            return 2;
        }
    }
    if (threads < 0) {
        fprintf(stderr, "bench_gemm: threads must be >= 0 (0 = one per core)\n");
        return 2;
    }

    gemm_shape_list shapes = {0};
    gemm_add(&shapes, "square 256", 256, 256, 256, false, false);
    gemm_add(&shapes, "square 512", 512, 512, 512, false, false);
    gemm_add(&shapes, "square 1024", 1024, 1024, 1024, false, false);
    gemm_add_networks(&shapes);

    nn_ctx_options options = {.device = "cpu", .threads = threads, .seed = 1};
    nn_ctx *ctx = nn_ctx_new(&options);
    if (!ctx) return fail("opening the CPU");
    nn_ctx_set_grad_enabled(ctx, false); /* plain products: no autograd tape */

    printf("nn-engine GEMM benchmark (nn_matmul), device: %s\n", nn_ctx_device_name(ctx));
    printf("LeNet-5 at batch %d, AlexNet at batch %d; conv rows are one nn_matmul with the batch\n"
           "folded into N (fwd, dX) or K (dW), the same flops as the per-image im2col GEMMs.\n",
           GEMM_LENET_BATCH, GEMM_ALEXNET_BATCH);
    gemm_print_header();
    double sample_seconds = quick ? 0.02 : 0.1;
    int samples = quick ? 2 : 5;
    for (int i = 0; i < shapes.count; i++) {
        const gemm_shape *s = &shapes.items[i];
        double seconds;
        if (time_shape(ctx, s, sample_seconds, samples, &seconds) != 0) {
            fail(s->name);
            nn_ctx_free(ctx);
            return 1;
        }
        gemm_print_row(s, seconds);
    }
    nn_ctx_free(ctx);
    return 0;
}
