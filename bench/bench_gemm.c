/* GEMM throughput through the public API: nn_matmul on square sizes and on
 * the GEMM shapes of one LeNet-5 step (batch 64) and one AlexNet step (the
 * seed's AlexNet, batch 16), forward and backward. Not a test: it prints a
 * table of GFLOP/s for bench/README.md.
 *
 *   build/bench/bench_gemm [--threads T] [--quick]
 *
 * Convolutions are timed as the GEMMs of im2col: W[OC, K] x cols[K, P] per
 * image, with K = C*KH*KW and P = OH*OW. Each conv row is ONE nn_matmul with
 * the batch folded in, the same flop count as the per-image GEMMs:
 *   fwd  y[OC, B*P]  = W[OC, K] cols[K, B*P]          (batch folded into N)
 *   dW   dW[OC, K]   = dy[OC, B*P] cols[K, B*P]^T     (batch folded into K)
 *   dX   dcols[K, B*P] = W[OC, K]^T dy[OC, B*P]       (batch folded into N)
 * The first layer's dX is left out: nothing needs the input image's gradient.
 * Linear layers: fwd y = x W^T, dX = dy W, dW = dy^T x.
 *
 * A timed call is nn_matmul + nn_ctx_sync + nn_ctx_step_end (which frees the
 * result), as in a training step; inputs are made once per shape. */
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

/* The three GEMMs of a convolution layer (see the top of the file). */
static void add_conv(const char *net, const char *layer, int batch, int in_c, int out_c, int kernel,
                     int out_hw, bool with_dx) {
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

/* The three GEMMs of a linear layer: x [batch, in], W [out, in]. */
static void add_linear(const char *net, const char *layer, int batch, int in, int out) {
    char name[48];
    snprintf(name, sizeof name, "%s %s fwd", net, layer);
    add(name, batch, out, in, false, true); /* x W^T */
    snprintf(name, sizeof name, "%s %s dX", net, layer);
    add(name, batch, in, out, false, false); /* dy W */
    snprintf(name, sizeof name, "%s %s dW", net, layer);
    add(name, out, in, batch, true, false); /* dy^T x */
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int fail(const char *what) {
    fprintf(stderr, "bench_gemm: %s: %s\n", what, nn_last_error());
    return 1;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static float random_float(void) { /* xorshift64, uniform in [-1, 1) */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)(rng_state >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

static nn_tensor *random_matrix(nn_ctx *ctx, int64_t rows, int64_t cols) {
    size_t count = (size_t)(rows * cols);
    float *data = malloc(count * sizeof *data);
    if (!data) return NULL;
    for (size_t i = 0; i < count; i++) data[i] = random_float();
    int64_t dims[2] = {rows, cols};
    nn_tensor *t = nn_tensor_from_data(ctx, NN_F32, 2, dims, data);
    free(data);
    return t;
}

/* One timed call: the product, waited for, and its result freed. */
static int one_call(nn_ctx *ctx, nn_tensor *a, nn_tensor *b, const shape *s) {
    nn_tensor *c = nn_matmul(a, b, s->ta, s->tb);
    if (!c || nn_ctx_sync(ctx) != NN_OK || nn_ctx_step_end(ctx) != NN_OK) return -1;
    return 0;
}

/* Best time per call over `samples` samples of about `sample_seconds` each. */
static int time_shape(nn_ctx *ctx, const shape *s, double sample_seconds, int samples,
                      double *seconds_per_call) {
    /* Stored operands: op(A) is m x k, op(B) is k x n. */
    nn_tensor *a = s->ta ? random_matrix(ctx, s->k, s->m) : random_matrix(ctx, s->m, s->k);
    nn_tensor *b = s->tb ? random_matrix(ctx, s->n, s->k) : random_matrix(ctx, s->k, s->n);
    int status = a && b ? 0 : -1;
    /* Warm up (caches, the library's buffers, page faults) and calibrate. */
    double start = now_seconds();
    if (status == 0) status = one_call(ctx, a, b, s);
    double first = now_seconds() - start;
    long calls = first > 0 ? (long)(sample_seconds / first) : 1000;
    if (calls < 1) calls = 1;
    if (calls > 100000) calls = 100000;
    double best = 1e30;
    for (int round = 0; round < samples && status == 0; round++) {
        start = now_seconds();
        for (long i = 0; i < calls && status == 0; i++) status = one_call(ctx, a, b, s);
        double per_call = (now_seconds() - start) / (double)calls;
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

    const int lenet_batch = 64, alexnet_batch = 16;
    add("square 256", 256, 256, 256, false, false);
    add("square 512", 512, 512, 512, false, false);
    add("square 1024", 1024, 1024, 1024, false, false);
    /* LeNet-5 on 28x28: c1 1->6 k5 (24x24), pool, c2 6->16 k5 (8x8), pool, fc. */
    add_conv("lenet", "c1", lenet_batch, 1, 6, 5, 24, false);
    add_conv("lenet", "c2", lenet_batch, 6, 16, 5, 8, true);
    add_linear("lenet", "fc1", lenet_batch, 256, 120);
    add_linear("lenet", "fc2", lenet_batch, 120, 84);
    add_linear("lenet", "fc3", lenet_batch, 84, 10);
    /* The seed's AlexNet on 224x224: c1 3->64 k11 s4 p2 (55x55), pool, c2
     * 64->192 k5 p2 (27x27), pool, c3 192->384, c4 384->256, c5 256->256, all
     * k3 p1 (13x13), pool to 6x6, fc 9216->512->512->2. */
    add_conv("alexnet", "c1", alexnet_batch, 3, 64, 11, 55, false);
    add_conv("alexnet", "c2", alexnet_batch, 64, 192, 5, 27, true);
    add_conv("alexnet", "c3", alexnet_batch, 192, 384, 3, 13, true);
    add_conv("alexnet", "c4", alexnet_batch, 384, 256, 3, 13, true);
    add_conv("alexnet", "c5", alexnet_batch, 256, 256, 3, 13, true);
    add_linear("alexnet", "fc1", alexnet_batch, 9216, 512);
    add_linear("alexnet", "fc2", alexnet_batch, 512, 512);
    add_linear("alexnet", "fc3", alexnet_batch, 512, 2);

    nn_ctx_options options = {.device = "cpu", .threads = threads, .seed = 1};
    nn_ctx *ctx = nn_ctx_new(&options);
    if (!ctx) return fail("opening the CPU");
    nn_ctx_set_grad_enabled(ctx, false); /* plain products: no autograd tape */

    printf("nn-engine GEMM benchmark (nn_matmul), device: %s\n", nn_ctx_device_name(ctx));
    printf("LeNet-5 at batch %d, AlexNet at batch %d; conv rows are one nn_matmul with the batch\n"
           "folded into N (fwd, dX) or K (dW), the same flops as the per-image im2col GEMMs.\n",
           lenet_batch, alexnet_batch);
    printf("%-22s %6s %6s %6s %3s %9s %11s %9s\n", "shape", "M", "N", "K", "op", "MFLOP",
           "us/call", "GFLOP/s");
    double sample_seconds = quick ? 0.02 : 0.1;
    int samples = quick ? 2 : 5;
    for (int i = 0; i < shape_count; i++) {
        const shape *s = &shapes[i];
        double seconds;
        if (time_shape(ctx, s, sample_seconds, samples, &seconds) != 0) {
            fail(s->name);
            nn_ctx_free(ctx);
            return 1;
        }
        double flops = 2.0 * (double)s->m * (double)s->n * (double)s->k;
        printf("%-22s %6lld %6lld %6lld  %c%c %9.1f %11.1f %9.1f\n", s->name, (long long)s->m,
               (long long)s->n, (long long)s->k, s->ta ? 'T' : 'N', s->tb ? 'T' : 'N',
               flops * 1e-6, seconds * 1e6, flops / seconds * 1e-9);
        fflush(stdout);
    }
    nn_ctx_free(ctx);
    return 0;
}
