/* What the attention kernels add beyond the values and gradients
 * test_batched_matmul.c checks: a query whose keys are all masked gets 0
 * and no NaN reaches any gradient (torch's safe softmax), on the CPU and on
 * Vulkan; one tensor as q, k and v gets the sum of its three gradients; a
 * batch of more entries than a dispatch dimension takes (65535)
 * runs on Vulkan as on the CPU; and a training step's peak memory grows
 * linearly with the sequence, because the score matrix is never stored. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_devices.h"
#include "nn_engine.h"
#include "test.h"
#include "vulkan_harness.h"

enum { L = 3, S = 5, E = 4, EV = 2 };

/* out and q's gradient of attention with the given mask, after sum(out * w). */
static void attend(nn_ctx *ctx, const float *mask_data, float *out, float *dq, float *dk) {
    float *q = vkt_randoms(L * E, -1, 1, 11), *k = vkt_randoms(S * E, -1, 1, 12), *v = vkt_randoms(S * EV, -1, 1, 13);
    float *w = vkt_randoms(L * EV, -1, 1, 14);
    nn_tensor *tq = nn_tensor_from_data(ctx, NN_F32, 3, (int64_t[]){1, L, E}, q);
    nn_tensor *tk = nn_tensor_from_data(ctx, NN_F32, 3, (int64_t[]){1, S, E}, k);
    nn_tensor *tv = nn_tensor_from_data(ctx, NN_F32, 3, (int64_t[]){1, S, EV}, v);
    nn_tensor *tm = nn_tensor_from_data(ctx, NN_F32, 2, (int64_t[]){L, S}, mask_data);
    nn_tensor *tw = nn_tensor_from_data(ctx, NN_F32, 3, (int64_t[]){1, L, EV}, w);
    CHECK(tq && tk && tv && tm && tw);
    nn_tensor_set_requires_grad(tq, true);
    nn_tensor_set_requires_grad(tk, true);
    nn_tensor_set_requires_grad(tv, true);
    nn_tensor *y = nn_scaled_dot_product_attention(tq, tk, tv, tm, false, 0.0f);
    nn_tensor *loss = y ? nn_sum(nn_mul(y, tw)) : NULL;
    CHECK_MSG(loss && nn_backward(loss) == NN_OK, "%s", nn_last_error());
    CHECK(nn_tensor_read(y, out, sizeof(float) * L * EV) == NN_OK);
    CHECK(nn_tensor_read(nn_tensor_grad(tq), dq, sizeof(float) * L * E) == NN_OK);
    CHECK(nn_tensor_read(nn_tensor_grad(tk), dk, sizeof(float) * S * E) == NN_OK);
    nn_ctx_step_end(ctx);
    nn_tensor *all[] = {tq, tk, tv, tm, tw};
    for (int i = 0; i < 5; i++) nn_tensor_free(all[i]);
    free(q), free(k), free(v), free(w);
}

TEST(attention_query_seeing_no_key_gets_zero_and_no_nan) {
    const char *devices[] = {"cpu", "vulkan"};
    for (int d = 0; d < 2; d++) {
        nn_ctx *ctx = vkt_open_device(devices[d]);
        if (!ctx) continue;
        float hidden[L * S], open[L * S];
        for (int i = 0; i < L * S; i++) hidden[i] = open[i] = (float)(i % 4) * 0.25f - 0.5f;
        for (int j = 0; j < S; j++) hidden[1 * S + j] = -INFINITY, open[1 * S + j] = 0.0f;
        float out[L * EV], dq[L * E], dk[S * E], out_open[L * EV], dq_open[L * E], dk_open[S * E];
        attend(ctx, hidden, out, dq, dk);
        attend(ctx, open, out_open, dq_open, dk_open);
        for (int c = 0; c < EV; c++) {
            CHECK_MSG(out[1 * EV + c] == 0.0f, "%s: hidden query's output %g", devices[d], out[1 * EV + c]);
            /* the other queries do not depend on query 1's mask row */
            CHECK(fabsf(out[c] - out_open[c]) < 1e-6f && fabsf(out[2 * EV + c] - out_open[2 * EV + c]) < 1e-6f);
        }
        for (int e = 0; e < E; e++) {
            CHECK_MSG(dq[1 * E + e] == 0.0f, "%s: hidden query's gradient %g", devices[d], dq[1 * E + e]);
            CHECK(fabsf(dq[e] - dq_open[e]) < 1e-5f);
        }
        for (int i = 0; i < S * E; i++) CHECK_MSG(isfinite(dk[i]), "%s: dk[%d] = %g", devices[d], i, dk[i]);
        nn_ctx_free(ctx);
    }
}

/* x's gradient through attention(h, h, h), h = x * 1 (copies = false), or
 * the sum of three copies' gradients (copies = true), from sum(out * w). */
static void self_attention_grad(nn_ctx *ctx, bool copies, float *grad) {
    const int64_t shape[3] = {2, 37, 5};
    float *data = vkt_randoms(2 * 37 * 5, -1, 1, 41), *w = vkt_randoms(2 * 37 * 5, -1, 1, 42);
    nn_tensor *x[3], *tw = nn_tensor_from_data(ctx, NN_F32, 3, shape, w);
    for (int i = 0; i < 3; i++) {
        x[i] = i == 0 || copies ? nn_tensor_from_data(ctx, NN_F32, 3, shape, data) : x[0];
        if (i == 0 || copies) nn_tensor_set_requires_grad(x[i], true);
    }
    /* computed inputs, whose gradients the first writer overwrites and the others add to */
    nn_tensor *h[3];
    for (int i = 0; i < 3; i++) h[i] = i == 0 || copies ? nn_mul_scalar(x[i], 1.0f) : h[0];
    nn_tensor *y = nn_scaled_dot_product_attention(h[0], h[1], h[2], NULL, true, 0.0f);
    CHECK_MSG(y && nn_backward(nn_sum(nn_mul(y, tw))) == NN_OK, "%s", nn_last_error());
    float part[2 * 37 * 5];
    for (int i = 0; i < 2 * 37 * 5; i++) grad[i] = 0.0f;
    for (int i = 0; i < (copies ? 3 : 1); i++) {
        CHECK(nn_tensor_read(nn_tensor_grad(x[i]), part, sizeof part) == NN_OK);
        for (int e = 0; e < 2 * 37 * 5; e++) grad[e] += part[e];
    }
    nn_ctx_step_end(ctx);
    for (int i = 0; i < (copies ? 3 : 1); i++) nn_tensor_free(x[i]);
    nn_tensor_free(tw);
    free(data), free(w);
}

/* q, k and v one tensor: the kernels write its three gradients into one buffer. */
TEST(attention_of_one_tensor_with_itself_sums_its_three_gradients) {
    const char *devices[] = {"cpu", "vulkan"};
    for (int d = 0; d < 2; d++) {
        nn_ctx *ctx = vkt_open_device(devices[d]);
        if (!ctx) continue;
        float one[2 * 37 * 5], three[2 * 37 * 5];
        self_attention_grad(ctx, false, one);
        self_attention_grad(ctx, true, three);
        double worst = 0.0;
        for (int i = 0; i < 2 * 37 * 5; i++) worst = fmax(worst, fabs((double)one[i] - three[i]));
        CHECK_MSG(worst < 1e-5, "%s: attention(x, x, x)'s gradient differs from its copies' sum by %g", devices[d],
                  worst);
        nn_ctx_free(ctx);
    }
}

/* out and the three gradients of attention over [entries, 2, 3], after sum(out). */
static void attend_batch(nn_ctx *ctx, int64_t entries, float *out) {
    const int64_t n = entries * 2 * 3, shape[3] = {entries, 2, 3};
    float *data = vkt_randoms((size_t)n, -1, 1, 31);
    nn_tensor *x[3];
    for (int i = 0; i < 3; i++) {
        x[i] = nn_tensor_from_data(ctx, NN_F32, 3, shape, data);
        nn_tensor_set_requires_grad(x[i], true);
    }
    nn_tensor *y = nn_scaled_dot_product_attention(x[0], x[1], x[2], NULL, false, 0.0f);
    CHECK_MSG(y && nn_backward(nn_sum(y)) == NN_OK, "%s", nn_last_error());
    CHECK(nn_tensor_read(y, out, sizeof(float) * (size_t)n) == NN_OK);
    for (int i = 0; i < 3; i++)
        CHECK(nn_tensor_read(nn_tensor_grad(x[i]), out + (i + 1) * n, sizeof(float) * (size_t)n) == NN_OK);
    nn_ctx_step_end(ctx);
    for (int i = 0; i < 3; i++) nn_tensor_free(x[i]);
    free(data);
}

/* Whether the first Vulkan device is a hardware one: on lavapipe the
 * 65537 workgroups of each kernel take minutes. */
static bool vulkan_hardware(void) {
    nn_device_info info[16];
    const int n = nn_list_devices(info, 16);
    for (int i = 0; i < n && i < 16; i++)
        if (strcmp(info[i].backend, "vulkan") == 0 && info[i].usable) return strcmp(info[i].kind, "software") != 0;
    return false;
}

TEST(attention_batch_past_one_dispatch_dimension) {
    if (!vulkan_hardware()) {
        printf("    skipped: no hardware Vulkan device (a software one takes minutes for this batch)\n");
        return;
    }
    nn_ctx *vk = vkt_open_device("vulkan");
    if (!vk) return;
    enum { ENTRIES = 65537 };
    const size_t n = (size_t)ENTRIES * 6;
    float *on_cpu = malloc(sizeof(float) * n * 4), *on_vk = malloc(sizeof(float) * n * 4);
    nn_ctx *cpu = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 2});
    attend_batch(cpu, ENTRIES, on_cpu);
    attend_batch(vk, ENTRIES, on_vk);
    size_t bad = 0;
    for (size_t i = 0; i < n * 4; i++) bad += !(fabsf(on_cpu[i] - on_vk[i]) <= 1e-5f);
    CHECK_MSG(bad == 0, "%zu of %zu values differ between the CPU and Vulkan", bad, n * 4);
    free(on_cpu), free(on_vk);
    nn_ctx_free(cpu);
    nn_ctx_free(vk);
}

/* The peak of a causal attention step over [1, 2, seq, 32]. */
static uint64_t step_peak(int64_t seq) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 2});
    const int64_t shape[4] = {1, 2, seq, 32};
    float *data = vkt_randoms((size_t)(2 * seq * 32), -1, 1, 21);
    nn_tensor *x[3];
    for (int i = 0; i < 3; i++) {
        x[i] = nn_tensor_from_data(ctx, NN_F32, 4, shape, data);
        nn_tensor_set_requires_grad(x[i], true);
    }
    nn_tensor *y = nn_scaled_dot_product_attention(x[0], x[1], x[2], NULL, true, 0.0f);
    nn_tensor *loss = y ? nn_sum(y) : NULL;
    CHECK_MSG(loss && nn_backward(loss) == NN_OK, "%s", nn_last_error());
    CHECK(nn_ctx_sync(ctx) == NN_OK);
    uint64_t peak = 0;
    CHECK(nn_ctx_memory_stats(ctx, NULL, &peak, NULL) == NN_OK);
    nn_ctx_step_end(ctx);
    for (int i = 0; i < 3; i++) nn_tensor_free(x[i]);
    free(data);
    nn_ctx_free(ctx);
    return peak;
}

TEST(attention_memory_grows_linearly_with_the_sequence) {
    const uint64_t at_512 = step_peak(512), at_1024 = step_peak(1024);
    /* the scores alone would be 2 x 1024 x 1024 floats, 8 MiB, four times 512's */
    CHECK_MSG(at_1024 <= 2 * at_512 + 4096 && at_1024 < 8u << 20, "peak %llu bytes at 512, %llu at 1024",
              (unsigned long long)at_512, (unsigned long long)at_1024);
}
