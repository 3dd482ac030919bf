/* nn_attention_qkv_packed against the same attention over heads split out
 * by recorded operations (reshape, permute, select, then the heads merged
 * back): outputs and qkv's gradient, causal and not, on the CPU and on
 * Vulkan, through the kernels (heads of 5) and through the composition the
 * op falls back to (a head of 260, past the kernels' 256), with qkv read
 * by a second consumer so that its gradient is added to, not written. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn_engine.h"
#include "test.h"
#include "vulkan_harness.h"

enum { N = 2, T = 7 };

/* qkv's gradient and the output of one way, after sum(y * w) + sum(qkv * u). */
static void attend(nn_ctx *ctx, bool packed, int heads, int d, bool causal, float *out, float *grad) {
    const int64_t width = (int64_t)heads * d, cols = 3 * width;
    float *data = vkt_randoms((size_t)(N * T * cols), -1, 1, 51), *w = vkt_randoms((size_t)(N * T * width), -1, 1, 52);
    float *u = vkt_randoms((size_t)(N * T * cols), -1, 1, 53);
    nn_tensor *qkv = nn_tensor_from_data(ctx, NN_F32, 3, (int64_t[]){N, T, cols}, data);
    nn_tensor *tw = nn_tensor_from_data(ctx, NN_F32, 3, (int64_t[]){N, T, width}, w);
    nn_tensor *tu = nn_tensor_from_data(ctx, NN_F32, 3, (int64_t[]){N, T, cols}, u);
    CHECK(qkv && tw && tu && nn_tensor_set_requires_grad(qkv, true) == NN_OK);
    nn_tensor *y;
    if (packed) {
        y = nn_attention_qkv_packed(qkv, heads, causal);
    } else {
        nn_tensor *split = nn_permute(nn_reshape(qkv, 5, (int64_t[]){N, T, 3, heads, d}), (int[]){0, 2, 3, 1, 4}, 5);
        nn_tensor *h = nn_scaled_dot_product_attention(nn_select(split, 1, 0), nn_select(split, 1, 1),
                                                       nn_select(split, 1, 2), NULL, causal, 0.0f);
        y = nn_reshape(nn_transpose(h, 1, 2), 3, (int64_t[]){N, T, width});
    }
    nn_tensor *loss = y ? nn_add(nn_sum(nn_mul(y, tw)), nn_sum(nn_mul(qkv, tu))) : NULL;
    CHECK_MSG(loss && nn_backward(loss) == NN_OK, "%s", nn_last_error());
    CHECK(nn_tensor_read(y, out, sizeof(float) * (size_t)(N * T * width)) == NN_OK);
    CHECK(nn_tensor_read(nn_tensor_grad(qkv), grad, sizeof(float) * (size_t)(N * T * cols)) == NN_OK);
    nn_ctx_step_end(ctx);
    nn_tensor_free(qkv), nn_tensor_free(tw), nn_tensor_free(tu);
    free(data), free(w), free(u);
}

static double worst_gap(const float *a, const float *b, size_t n) {
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)a[i] - b[i]));
    return worst;
}

TEST(attention_qkv_packed_matches_split_heads) {
    const char *devices[] = {"cpu", "vulkan"};
    const int shapes[][2] = {{3, 5}, {1, 260}}; /* heads, head size */
    for (int dev = 0; dev < 2; dev++) {
        nn_ctx *ctx = vkt_open_device(devices[dev]);
        if (!ctx) continue;
        for (int s = 0; s < 2; s++)
            for (int causal = 0; causal < 2; causal++) {
                const int heads = shapes[s][0], d = shapes[s][1];
                const size_t outs = (size_t)(N * T * heads * d), grads = 3 * outs;
                float *out = malloc(sizeof(float) * outs), *want = malloc(sizeof(float) * outs);
                float *grad = malloc(sizeof(float) * grads), *want_grad = malloc(sizeof(float) * grads);
                attend(ctx, true, heads, d, causal, out, grad);
                attend(ctx, false, heads, d, causal, want, want_grad);
                const double gap = worst_gap(out, want, outs), grad_gap = worst_gap(grad, want_grad, grads);
                CHECK_MSG(gap < 1e-5 && grad_gap < 1e-5, "%s: %d heads of %d, causal %d: outputs %g, gradients %g apart",
                          devices[dev], heads, d, causal, gap, grad_gap);
                free(out), free(want), free(grad), free(want_grad);
            }
        nn_ctx_free(ctx);
    }
}

TEST(attention_qkv_packed_refuses_bad_shapes) {
    nn_ctx *ctx = vkt_open_device("cpu");
    nn_tensor *qkv = nn_tensor_new(ctx, NN_F32, 3, (int64_t[]){1, 4, 10});
    CHECK(nn_attention_qkv_packed(qkv, 2, false) == NULL);
    CHECK_MSG(strstr(nn_last_error(), "3 x heads x head size") != NULL, "%s", nn_last_error());
    CHECK(nn_attention_qkv_packed(qkv, 0, false) == NULL);
    CHECK(nn_attention_qkv_packed(NULL, 1, false) == NULL);
    nn_tensor_free(qkv);
    nn_ctx_free(ctx);
}
