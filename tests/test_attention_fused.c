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

/* fp16 attention (nn_ctx_set_precision): q, k, v and the softmax's
 * unnormalised weights rounded to fp16, sums in fp32 (nn_attention_params).
 * Each backend's output against double-precision attention of the rounded
 * q, k and v (the weights' rounding is within the tolerance), the rounding
 * seen against the fp32 output, and the gradients (fp32 kernels) between
 * the CPU and Vulkan. On a GPU with matrix cores the forward runs
 * attention_forward_coopmat.comp (heads up to 128: the 200-wide case runs
 * the fp32 kernel there); lavapipe has none and runs the fp32 kernel. */
typedef struct fp16_case {
    int batch, heads, L, S, E, Ev;
    bool causal, masked, packed; /* packed: nn_attention_qkv_packed, S = L, Ev = E */
} fp16_case;

static float round16(float x) {
#ifdef __FLT16_MAX__
    return (float)(_Float16)x;
#else
    return x; /* the tolerance still holds; the rounding is checked by test_precision.c */
#endif
}

/* out and the gradients of sum(out * w) for q, k, v (packed: of qkv, in dq). */
static bool fp16_attend(nn_ctx *ctx, const fp16_case *c, nn_precision precision, const float *q, const float *k,
                        const float *v, const float *mask, const float *w, float *out, float *dq, float *dk,
                        float *dv) {
    const int64_t B = c->batch, H = c->heads, W = (int64_t)c->heads * c->E;
    nn_tensor *tq = NULL, *tk = NULL, *tv = NULL, *tm = NULL, *y = NULL;
    if (c->packed) {
        tq = nn_tensor_from_data(ctx, NN_F32, 3, (int64_t[]){B, c->L, 3 * W}, q);
        nn_tensor_set_requires_grad(tq, true);
    } else {
        tq = nn_tensor_from_data(ctx, NN_F32, 4, (int64_t[]){B, H, c->L, c->E}, q);
        tk = nn_tensor_from_data(ctx, NN_F32, 4, (int64_t[]){B, H, c->S, c->E}, k);
        tv = nn_tensor_from_data(ctx, NN_F32, 4, (int64_t[]){B, H, c->S, c->Ev}, v);
        if (c->masked) tm = nn_tensor_from_data(ctx, NN_F32, 2, (int64_t[]){c->L, c->S}, mask);
        nn_tensor_set_requires_grad(tq, true), nn_tensor_set_requires_grad(tk, true);
        nn_tensor_set_requires_grad(tv, true);
    }
    const int64_t out_n = B * H * c->L * c->Ev;
    nn_tensor *tw = c->packed ? nn_tensor_from_data(ctx, NN_F32, 3, (int64_t[]){B, c->L, W}, w)
                              : nn_tensor_from_data(ctx, NN_F32, 4, (int64_t[]){B, H, c->L, c->Ev}, w);
    CHECK(nn_ctx_set_precision(ctx, precision) == NN_OK);
    y = c->packed ? nn_attention_qkv_packed(tq, c->heads, c->causal)
                  : nn_scaled_dot_product_attention(tq, tk, tv, tm, c->causal, 0.0f);
    nn_tensor *loss = y ? nn_sum(nn_mul(y, tw)) : NULL;
    bool ok = loss && nn_backward(loss) == NN_OK && nn_tensor_read(y, out, sizeof(float) * out_n) == NN_OK;
    if (ok && c->packed) ok = nn_tensor_read(nn_tensor_grad(tq), dq, sizeof(float) * B * c->L * 3 * W) == NN_OK;
    if (ok && !c->packed)
        ok = nn_tensor_read(nn_tensor_grad(tq), dq, sizeof(float) * B * H * c->L * c->E) == NN_OK &&
             nn_tensor_read(nn_tensor_grad(tk), dk, sizeof(float) * B * H * c->S * c->E) == NN_OK &&
             nn_tensor_read(nn_tensor_grad(tv), dv, sizeof(float) * B * H * c->S * c->Ev) == NN_OK;
    CHECK_MSG(ok, "fp16 attention: %s", nn_last_error());
    CHECK(nn_ctx_set_precision(ctx, NN_PRECISION_FP32) == NN_OK);
    nn_ctx_step_end(ctx);
    nn_tensor *all[] = {tq, tk, tv, tm, tw};
    for (int i = 0; i < 5; i++)
        if (all[i]) nn_tensor_free(all[i]);
    return ok;
}

static double largest_gap(const float *a, const float *b, int64_t n, double *scale) {
    double d = 0.0;
    *scale = 1e-30;
    for (int64_t i = 0; i < n; i++) {
        const double g = fabs((double)a[i] - b[i]);
        d = g > d || isnan(g) ? g : d;
        *scale = fabs(b[i]) > *scale ? fabs(b[i]) : *scale;
    }
    return d;
}

TEST(attention_fp16_rounds_q_k_v_and_weights_on_every_backend) {
    const fp16_case cases[] = {
        {2, 3, 100, 100, 64, 64, true, false, false},  /* edges of 64-query blocks, causal */
        {1, 2, 70, 90, 37, 24, false, true, false},    /* odd widths (scalar loads), a mask */
        {1, 2, 80, 80, 128, 128, true, false, false},  /* 128 wide: the second variant */
        {1, 1, 40, 33, 200, 200, false, false, false}, /* past the matrix-core kernel: fp32 there */
        {2, 3, 130, 130, 64, 64, true, false, true},   /* packed heads: qkv_row, out_row */
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const fp16_case *c = &cases[ci];
        const int64_t B = c->batch, H = c->heads, W = (int64_t)H * c->E;
        const int64_t nq = c->packed ? B * c->L * 3 * W : B * H * c->L * c->E, nk = B * H * c->S * c->E;
        const int64_t nv = B * H * c->S * c->Ev, nout = B * H * c->L * c->Ev;
        float *q = vkt_randoms((size_t)nq, -2, 2, 31 + (unsigned)ci), *k = vkt_randoms((size_t)nk, -2, 2, 41);
        float *v = vkt_randoms((size_t)nv, -1, 1, 51), *w = vkt_randoms((size_t)nout, -1, 1, 61);
        float *mask = vkt_randoms((size_t)c->L * c->S, -2, 0, 71);
        for (int i = 0; i < c->L; i++) mask[i * c->S + (i * 7) % c->S] = -INFINITY;
        float *res[2][4], *fp32_out = malloc(sizeof(float) * nout), *scratch = malloc(sizeof(float) * (nq + 3 * nv + 3 * nk));
        for (int d = 0; d < 2; d++) {
            res[d][0] = malloc(sizeof(float) * nout), res[d][1] = malloc(sizeof(float) * nq);
            res[d][2] = malloc(sizeof(float) * nk), res[d][3] = malloc(sizeof(float) * nv);
        }
        /* the reference: double attention of the rounded operands */
        double *ref = calloc((size_t)nout, sizeof(double)), *s = malloc(sizeof(double) * c->S);
        const double scale = 1.0 / sqrt((double)c->E);
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < H; h++)
                for (int i = 0; i < c->L; i++) {
                    double top = -INFINITY, sum = 0.0;
                    for (int j = 0; j < c->S; j++) {
                        double dot = 0.0;
                        for (int e = 0; e < c->E; e++) {
                            const float qe = c->packed ? q[(b * c->L + i) * 3 * W + h * c->E + e]
                                                       : q[((b * H + h) * c->L + i) * c->E + e];
                            const float ke = c->packed ? q[(b * c->L + j) * 3 * W + W + h * c->E + e]
                                                       : k[((b * H + h) * c->S + j) * c->E + e];
                            dot += (double)round16(qe) * round16(ke);
                        }
                        s[j] = dot * scale + (c->masked ? mask[i * c->S + j] : 0.0);
                        if (c->causal && j > i) s[j] = -INFINITY;
                        top = s[j] > top ? s[j] : top;
                    }
                    for (int j = 0; j < c->S; j++) sum += s[j] = s[j] == -INFINITY ? 0.0 : exp(s[j] - top);
                    for (int e = 0; e < c->Ev; e++) {
                        double o = 0.0;
                        for (int j = 0; j < c->S; j++) {
                            const float ve = c->packed ? q[(b * c->L + j) * 3 * W + 2 * W + h * c->E + e]
                                                       : v[((b * H + h) * c->S + j) * c->Ev + e];
                            o += s[j] * round16(ve);
                        }
                        /* out's layout: [B, L, W] packed, else [B, H, L, Ev] */
                        ref[c->packed ? (b * c->L + i) * W + h * c->E + e : ((b * H + h) * c->L + i) * c->Ev + e] =
                            o / sum;
                    }
                }
        float *ref_f = malloc(sizeof(float) * nout);
        for (int64_t i = 0; i < nout; i++) ref_f[i] = (float)ref[i];
        const char *devices[2] = {"cpu", "vulkan"};
        bool have[2] = {false, false};
        for (int d = 0; d < 2; d++) {
            nn_ctx *ctx = vkt_open_device(devices[d]);
            if (!ctx) continue;
            have[d] = fp16_attend(ctx, c, NN_PRECISION_FP16, q, k, v, mask, w, res[d][0], res[d][1], res[d][2],
                                  res[d][3]);
            if (have[d]) {
                double sc, gap = largest_gap(res[d][0], ref_f, nout, &sc);
                CHECK_MSG(gap <= 2e-3 * sc, "case %zu %s%s: fp16 output %.3g from the rounded reference (scale %.3g)",
                          ci, devices[d], d && nn_ctx_matrix_cores(ctx, NN_PRECISION_FP16) ? " (matrix cores)" : "",
                          gap, sc);
            }
            if (d == 0 && have[d] &&
                fp16_attend(ctx, c, NN_PRECISION_FP32, q, k, v, mask, w, fp32_out, scratch, scratch + nq,
                            scratch + nq + nk)) {
                double sc, gap = largest_gap(fp32_out, res[0][0], nout, &sc);
                CHECK_MSG(gap > 1e-5 * sc, "case %zu: fp16 output within %.3g of fp32's: no rounding?", ci, gap);
            }
            nn_ctx_free(ctx);
        }
        if (have[0] && have[1]) {
            const int64_t counts[4] = {nout, nq, c->packed ? 0 : nk, c->packed ? 0 : nv};
            for (int g = 1; g < 4; g++) {
                double sc, gap = largest_gap(res[1][g], res[0][g], counts[g], &sc);
                CHECK_MSG(gap <= 1e-2 * sc, "case %zu: gradient %d differs by %.3g between the CPU and Vulkan (scale %.3g)",
                          ci, g, gap, sc);
            }
        }
        for (int d = 0; d < 2; d++)
            for (int g = 0; g < 4; g++) free(res[d][g]);
        free(q), free(k), free(v), free(w), free(mask), free(fp32_out), free(scratch), free(ref), free(s), free(ref_f);
    }
}
