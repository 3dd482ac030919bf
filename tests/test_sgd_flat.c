/* The flattened SGD (issue 6): parameters moved into one buffer keep their
 * values; one kernel updates them all; the learning rate is read on the
 * device from nn_sgd_lr_tensor, so writing it there (as a replayed step's
 * schedule would) changes the next update; a second optimizer over the same
 * parameters (which cannot move them again) still updates correctly; the
 * momentum buffers seen by checkpoints are the flat buffer's pieces. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "nn_engine.h"
#include "test.h"

static nn_tensor *param(nn_ctx *ctx, int n, float base) {
    float v[16];
    for (int i = 0; i < n; i++) v[i] = base + 0.25f * (float)i - 1.0f;
    int64_t shape[1] = {n};
    nn_tensor *t = nn_tensor_from_data(ctx, NN_F32, 1, shape, v);
    nn_tensor_set_requires_grad(t, true);
    return t;
}

/* loss = sum over params of sum(p * w_i) with w_i = i + 1 (exact gradients). */
static void backward_once(nn_ctx *ctx, nn_tensor **p, int count) {
    nn_tensor *loss = NULL;
    for (int i = 0; i < count; i++) {
        nn_tensor *term = nn_sum(nn_scale(p[i], (float)(i + 1)));
        loss = loss ? nn_add(loss, term) : term;
    }
    CHECK(nn_backward(loss) == NN_OK);
}

static const char *devices[] = {"cpu", "vulkan"};

TEST(sgd_flat_one_buffer_device_lr_and_second_optimizer) {
    for (int d = 0; d < 2; d++) {
        if (d == 1 && getenv("NN_ENGINE_TEST_VULKAN") && strcmp(getenv("NN_ENGINE_TEST_VULKAN"), "0") == 0) break;
        nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = devices[d], .threads = 1});
        CHECK_MSG(ctx != NULL, "%s: %s", devices[d], nn_last_error());
        if (!ctx) continue;
        nn_tensor *p[3] = {param(ctx, 5, 0.0f), param(ctx, 3, 1.0f), param(ctx, 7, 2.0f)};
        nn_optimizer *opt = nn_sgd_new(p, 3, &(nn_sgd_options){.lr = 0.5f, .momentum = 0.5f});
        CHECK(opt != NULL);
        /* One storage, in order, values unchanged. */
        CHECK(p[0]->storage == p[1]->storage && p[1]->storage == p[2]->storage);
        CHECK(p[1]->offset == p[0]->offset + 5 * sizeof(float));
        float got[7];
        CHECK(nn_tensor_read(p[2], got, sizeof got) == NN_OK);
        CHECK_CLOSE(got[6], 2.0f + 1.5f - 1.0f, 0);
        /* Step 1 at lr 0.5: v = g; p -= 0.5 g. Then lr 0.1 written straight
         * into the device tensor: v = 0.5 v + g = 1.5 g; p -= 0.1 * 1.5 g. */
        backward_once(ctx, p, 3);
        CHECK(nn_optimizer_step(opt) == NN_OK);
        CHECK(nn_ctx_step_end(ctx) == NN_OK);
        CHECK(nn_optimizer_zero_grad(opt) == NN_OK);
        CHECK(p[0]->grad->storage == p[2]->grad->storage); /* gradients joined one buffer */
        float lr = 0.1f;
        nn_tensor *lr_t = nn_optimizer_lr_tensor(opt);
        CHECK(lr_t && nn_tensor_numel(lr_t) == 1);
        CHECK(nn_tensor_write(lr_t, &lr, sizeof lr) == NN_OK);
        backward_once(ctx, p, 3);
        CHECK(nn_optimizer_step(opt) == NN_OK);
        CHECK(nn_ctx_step_end(ctx) == NN_OK);
        for (int i = 0; i < 3; i++) {
            int n = (int)nn_tensor_numel(p[i]);
            float v[16];
            CHECK(nn_tensor_read(p[i], v, (size_t)n * sizeof(float)) == NN_OK);
            for (int j = 0; j < n; j++) {
                double start = (double)(i == 0 ? 0.0f : i == 1 ? 1.0f : 2.0f) + 0.25 * j - 1.0, g = i + 1;
                CHECK_CLOSE(v[j], start - 0.5 * g - 0.1 * 1.5 * g, 1e-6);
            }
        }
        /* nn_sgd_set_lr writes the same buffer. */
        CHECK(nn_optimizer_set_lr(opt, 0.25f) == NN_OK);
        CHECK(nn_tensor_read(lr_t, &lr, sizeof lr) == NN_OK);
        CHECK(lr == 0.25f);
        CHECK(nn_optimizer_set_lr(opt, -1.0f) == NN_ERR_ARGUMENT);
        CHECK(nn_tensor_read(lr_t, &lr, sizeof lr) == NN_OK);
        CHECK(lr == 0.25f);

        /* A second optimizer over the same (already moved) parameters:
         * plain SGD, lr 1: p -= g, each parameter its own kernel. */
        float before[7], after[7];
        CHECK(nn_tensor_read(p[2], before, sizeof before) == NN_OK);
        nn_optimizer *second = nn_sgd_new(p, 3, &(nn_sgd_options){.lr = 1.0f});
        CHECK(second != NULL);
        CHECK(nn_optimizer_zero_grad(second) == NN_OK);
        backward_once(ctx, p, 3);
        CHECK(nn_optimizer_step(second) == NN_OK);
        CHECK(nn_tensor_read(p[2], after, sizeof after) == NN_OK);
        for (int j = 0; j < 7; j++) CHECK_CLOSE(after[j], before[j] - 3.0f, 1e-6);
        nn_optimizer_free(second);
        nn_optimizer_free(opt);
        for (int i = 0; i < 3; i++) nn_tensor_free(p[i]);
        nn_ctx_free(ctx);
    }
}

TEST(sgd_lr_tensor_rejects_null) {
    CHECK(nn_optimizer_lr_tensor(NULL) == NULL);
    CHECK(nn_last_status() == NN_ERR_ARGUMENT);
}
