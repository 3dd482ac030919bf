/* What the two GEMM benchmarks (bench_gemm.c on the CPU, bench_vulkan_gemm.c
 * on a GPU) share: the shapes of a LeNet-5 step (batch 64) and of the seed's
 * AlexNet step (batch 16), random operands, the clock and the table row, so
 * the CPU and GPU tables list the same products in the same format and the
 * PyTorch peers (torch_gemm.py, torch_gemm_cuda.py) can read either.
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
 * Header-only: every .c file in bench/ is a program of its own. */
#ifndef NN_BENCH_GEMM_SHAPES_H
#define NN_BENCH_GEMM_SHAPES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "nn_engine.h"

enum { GEMM_LENET_BATCH = 64, GEMM_ALEXNET_BATCH = 16, GEMM_MAX_SHAPES = 64 };

typedef struct gemm_shape {
    char name[48];
    int64_t m, n, k;
    bool ta, tb;
} gemm_shape;

typedef struct gemm_shape_list {
    gemm_shape items[GEMM_MAX_SHAPES];
    int count;
} gemm_shape_list;

static inline void gemm_add(gemm_shape_list *list, const char *name, int64_t m, int64_t n, int64_t k,
                            bool ta, bool tb) {
    if (list->count == GEMM_MAX_SHAPES) return;
    gemm_shape *s = &list->items[list->count++];
    snprintf(s->name, sizeof s->name, "%.47s", name); /* 47: the name's size less its end */
    s->m = m, s->n = n, s->k = k, s->ta = ta, s->tb = tb;
}

/* The three GEMMs of a convolution layer (see the top of the file). */
static inline void gemm_add_conv(gemm_shape_list *list, const char *net, const char *layer, int batch,
                                 int in_c, int out_c, int kernel, int out_hw, bool with_dx) {
    char name[48];
    int64_t k = (int64_t)in_c * kernel * kernel, p = (int64_t)out_hw * out_hw * batch;
    snprintf(name, sizeof name, "%s %s fwd", net, layer);
    gemm_add(list, name, out_c, p, k, false, false);
    snprintf(name, sizeof name, "%s %s dW", net, layer);
    gemm_add(list, name, out_c, k, p, false, true);
    if (with_dx) {
        snprintf(name, sizeof name, "%s %s dX", net, layer);
        gemm_add(list, name, k, p, out_c, true, false);
    }
}

/* The three GEMMs of a linear layer: x [batch, in], W [out, in]. */
static inline void gemm_add_linear(gemm_shape_list *list, const char *net, const char *layer, int batch,
                                   int in, int out) {
    char name[48];
    snprintf(name, sizeof name, "%s %s fwd", net, layer);
    gemm_add(list, name, batch, out, in, false, true); /* x W^T */
    snprintf(name, sizeof name, "%s %s dX", net, layer);
    gemm_add(list, name, batch, in, out, false, false); /* dy W */
    snprintf(name, sizeof name, "%s %s dW", net, layer);
    gemm_add(list, name, out, in, batch, true, false); /* dy^T x */
}

/* Every GEMM of a LeNet-5 and of an AlexNet training step. */
static inline void gemm_add_networks(gemm_shape_list *list) {
    /* LeNet-5 on 28x28: c1 1->6 k5 (24x24), pool, c2 6->16 k5 (8x8), pool, fc. */
    gemm_add_conv(list, "lenet", "c1", GEMM_LENET_BATCH, 1, 6, 5, 24, false);
    gemm_add_conv(list, "lenet", "c2", GEMM_LENET_BATCH, 6, 16, 5, 8, true);
    gemm_add_linear(list, "lenet", "fc1", GEMM_LENET_BATCH, 256, 120);
    gemm_add_linear(list, "lenet", "fc2", GEMM_LENET_BATCH, 120, 84);
    gemm_add_linear(list, "lenet", "fc3", GEMM_LENET_BATCH, 84, 10);
    /* The seed's AlexNet on 224x224: c1 3->64 k11 s4 p2 (55x55), pool, c2
     * 64->192 k5 p2 (27x27), pool, c3 192->384, c4 384->256, c5 256->256, all
     * k3 p1 (13x13), pool to 6x6, fc 9216->512->512->2. */
    gemm_add_conv(list, "alexnet", "c1", GEMM_ALEXNET_BATCH, 3, 64, 11, 55, false);
    gemm_add_conv(list, "alexnet", "c2", GEMM_ALEXNET_BATCH, 64, 192, 5, 27, true);
    gemm_add_conv(list, "alexnet", "c3", GEMM_ALEXNET_BATCH, 192, 384, 3, 13, true);
    gemm_add_conv(list, "alexnet", "c4", GEMM_ALEXNET_BATCH, 384, 256, 3, 13, true);
    gemm_add_conv(list, "alexnet", "c5", GEMM_ALEXNET_BATCH, 256, 256, 3, 13, true);
    gemm_add_linear(list, "alexnet", "fc1", GEMM_ALEXNET_BATCH, 9216, 512);
    gemm_add_linear(list, "alexnet", "fc2", GEMM_ALEXNET_BATCH, 512, 512);
    gemm_add_linear(list, "alexnet", "fc3", GEMM_ALEXNET_BATCH, 512, 2);
}

static inline double gemm_now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* rows x cols uniform in [-1, 1) (xorshift64 seeded by the size). */
static inline nn_tensor *gemm_random_matrix(nn_ctx *ctx, int64_t rows, int64_t cols) {
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

/* The stored operands of a shape: op(A) is m x k, op(B) is k x n. */
static inline void gemm_operands(nn_ctx *ctx, const gemm_shape *s, nn_tensor **a, nn_tensor **b) {
    *a = s->ta ? gemm_random_matrix(ctx, s->k, s->m) : gemm_random_matrix(ctx, s->m, s->k);
    *b = s->tb ? gemm_random_matrix(ctx, s->n, s->k) : gemm_random_matrix(ctx, s->k, s->n);
}

/* The table's header and one row; the peers parse this format. */
static inline void gemm_print_header(void) {
    printf("%-22s %6s %6s %6s %3s %9s %11s %9s\n", "shape", "M", "N", "K", "op", "MFLOP", "us/call",
           "GFLOP/s");
}

static inline void gemm_print_row(const gemm_shape *s, double seconds_per_call) {
    double flops = 2.0 * (double)s->m * (double)s->n * (double)s->k;
    printf("%-22s %6lld %6lld %6lld  %c%c %9.1f %11.1f %9.1f\n", s->name, (long long)s->m,
           (long long)s->n, (long long)s->k, s->ta ? 'T' : 'N', s->tb ? 'T' : 'N', flops * 1e-6,
           seconds_per_call * 1e6, flops / seconds_per_call * 1e-9);
    fflush(stdout);
}

#endif
