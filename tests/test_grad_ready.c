/* The context's grad-ready hook (nn_ctx_set_grad_ready, what the
 * data-parallel optimizer copies gradients early by): during nn_backward each
 * leaf that requires grad is told once, after the last node reading it has
 * run its backward, so its gradient is then whole; leaves are told in the
 * order backward completes them (the last layer's first); a second watcher
 * is refused; no hook, no calls. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "nn_engine.h"
#include "test.h"

typedef struct told {
    nn_tensor *leaves[8];
    float grad_then[8][64]; /* each leaf's gradient when it was told */
    int count;
} told;

static nn_status remember(void *user, nn_tensor *leaf) {
    told *t = user;
    if (t->count == 8) return NN_OK;
    const int64_t n = nn_tensor_numel(leaf);
    t->leaves[t->count] = leaf;
    nn_status st = nn_tensor_read(nn_tensor_grad(leaf), t->grad_then[t->count], sizeof(float) * (size_t)(n < 64 ? n : 64));
    t->count++;
    return st;
}

static int index_of(const told *t, const nn_tensor *leaf) {
    for (int i = 0; i < t->count; i++)
        if (t->leaves[i] == leaf) return i;
    return -1;
}

static nn_tensor *leaf(nn_ctx *ctx, int ndim, const int64_t *shape) {
    nn_tensor *t = nn_tensor_new(ctx, NN_F32, ndim, shape);
    nn_init_uniform(t, -0.5f, 0.5f);
    nn_tensor_set_requires_grad(t, true);
    return t;
}

TEST(grad_ready_tells_each_leaf_once_when_its_gradient_is_whole) {
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1, .seed = 11});
    CHECK(ctx != NULL);
    /* loss = sum(linear(relu(linear(x, w1, b1)), w2, b2)) + sum(w1 * w1):
     * w1 is read by the first linear and (twice) by the product. */
    nn_tensor *w1 = leaf(ctx, 2, (int64_t[]){5, 3}), *b1 = leaf(ctx, 1, (int64_t[]){5});
    nn_tensor *w2 = leaf(ctx, 2, (int64_t[]){2, 5}), *b2 = leaf(ctx, 1, (int64_t[]){2});
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 2, (int64_t[]){7, 3});
    CHECK(nn_init_uniform(x, -1, 1) == NN_OK);
    told t = {0};
    CHECK(nn_ctx_set_grad_ready(ctx, remember, &t) == NN_OK);
    CHECK(nn_ctx_set_grad_ready(ctx, remember, NULL) == NN_ERR_STATE); /* someone else's */
    nn_tensor *out = nn_linear(nn_relu(nn_linear(x, w1, b1)), w2, b2);
    nn_tensor *loss = nn_add(nn_sum(out), nn_sum(nn_mul(w1, w1)));
    CHECK(nn_backward(loss) == NN_OK);
    CHECK_MSG(t.count == 4, "told %d leaves, want 4 (x does not require grad)", t.count);
    const int i_w1 = index_of(&t, w1), i_b1 = index_of(&t, b1), i_w2 = index_of(&t, w2), i_b2 = index_of(&t, b2);
    CHECK(i_w1 >= 0 && i_b1 >= 0 && i_w2 >= 0 && i_b2 >= 0);
    /* The last layer's gradients are whole first. */
    CHECK(i_w2 < i_w1 && i_b2 < i_w1 && i_w2 < i_b1);
    /* When told, each gradient was already what it is at the end. */
    nn_tensor *leaves[4] = {w1, b1, w2, b2};
    for (int k = 0; k < 4; k++) {
        float final_grad[64];
        const int i = index_of(&t, leaves[k]);
        const int64_t n = nn_tensor_numel(leaves[k]);
        CHECK(nn_tensor_read(nn_tensor_grad(leaves[k]), final_grad, sizeof(float) * (size_t)n) == NN_OK);
        for (int64_t j = 0; j < n && i >= 0; j++) CHECK(t.grad_then[i][j] == final_grad[j]);
    }
    /* Cleared: a later backward tells nobody. */
    CHECK(nn_ctx_set_grad_ready(ctx, NULL, NULL) == NN_OK);
    t.count = 0;
    loss = nn_sum(nn_linear(x, w1, b1));
    CHECK(nn_backward(loss) == NN_OK);
    CHECK(t.count == 0);
    nn_ctx_free(ctx);
}
