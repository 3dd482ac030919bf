/* Kernel variants chosen by measurement on Vulkan (vk_tune.c,
 * NN_ENGINE_VULKAN_TUNE): a channels-last convolution large enough for the
 * implicit GEMM, its gradients taken eagerly (the heuristic's tiles) and in
 * captured steps (the tiles measured, then read from the cache file): the
 * values agree with the eager ones whichever tile won; the first capture
 * writes one line per kernel to the cache file, the next reads them and
 * measures nothing; a cache file that does not parse is said, ignored and
 * rewritten. The test harness runs everything else with the tuner off
 * (test_main.c), so other tests see the heuristic's tiles only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_engine.h"
#include "test.h"
#include "test_files.h"
#include "vulkan_harness.h"

/* Sizes off every tile; NN_ENGINE_VULKAN_CONV=implicit keeps a layer this
 * small on the implicit GEMM. */
static const int64_t kX[4] = {2, 20, 17, 15}, kW[4] = {36, 20, 3, 3}, kY[4] = {2, 36, 17, 15};
#define X_COUNT (2 * 20 * 17 * 15)
#define W_COUNT (36 * 20 * 9)

typedef struct grads {
    float loss, dx[X_COUNT], dw[W_COUNT];
} grads;

/* loss = sum(conv(x, w) * r) and its gradients, eager or as a captured
 * step replayed once more. */
static bool run(bool capture, grads *out) {
    nn_ctx *ctx = vkt_open_device("vulkan");
    if (!ctx) return false;
    nn_ctx_set_memory_format(ctx, NN_MEMORY_FORMAT_CHANNELS_LAST);
    float *xs = vkt_randoms(X_COUNT, -1, 1, 31), *ws = vkt_randoms(W_COUNT, -0.2f, 0.2f, 32);
    float *rs = vkt_randoms(2 * 36 * 17 * 15, -1, 1, 33);
    nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 4, kX, xs), *w = nn_tensor_from_data(ctx, NN_F32, 4, kW, ws);
    nn_tensor *r = nn_tensor_from_data(ctx, NN_F32, 4, kY, rs);
    free(xs), free(ws), free(rs);
    nn_tensor_set_requires_grad(x, true);
    nn_tensor_set_requires_grad(w, true);
    if (capture) CHECK(nn_capture_begin(ctx) == NN_OK);
    nn_tensor *loss = nn_sum(nn_mul(nn_conv2d(x, w, NULL, 1, 1), r));
    bool ok = loss && nn_backward(loss) == NN_OK;
    CHECK_MSG(ok, "step: %s", nn_last_error());
    nn_capture *cap = NULL;
    if (ok && capture) {
        CHECK(nn_tensor_persist(loss) == NN_OK);
        CHECK(nn_ctx_step_end(ctx) == NN_OK);
        cap = nn_capture_end(ctx);
        ok = cap && nn_replay(cap, 1) == NN_OK; /* gradients are replaced, not added: one replay reads the same */
        CHECK_MSG(ok, "capture: %s", nn_last_error());
    }
    ok = ok && nn_tensor_read(loss, &out->loss, sizeof out->loss) == NN_OK &&
         nn_tensor_read(nn_tensor_grad(x), out->dx, sizeof out->dx) == NN_OK &&
         nn_tensor_read(nn_tensor_grad(w), out->dw, sizeof out->dw) == NN_OK;
    CHECK_MSG(ok, "reading the results: %s", nn_last_error());
    if (!capture) CHECK(nn_ctx_step_end(ctx) == NN_OK);
    nn_capture_free(cap);
    nn_ctx_free(ctx);
    return ok;
}

/* Lines of the cache file that are entries (not comments); -1 without the file. */
static int entries(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f))
        if (line[0] != '#') n++;
    fclose(f);
    return n;
}

static void agree(const grads *got, const grads *want, const char *what) {
    vkt_check_near_f32(&got->loss, &want->loss, 1, 1e-4, "%s: loss", what);
    vkt_check_near_f32(got->dx, want->dx, X_COUNT, 1e-4, "%s: input gradient", what);
    vkt_check_near_f32(got->dw, want->dw, W_COUNT, 1e-3, "%s: weight gradient", what);
}

TEST(vulkan_tune_measures_captured_convolutions_and_caches_them) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    char folder[512], path[600];
    CHECK(tf_make_temp_dir(folder, sizeof folder) == 1);
    snprintf(path, sizeof path, "%s/tiles.txt", folder);
    setenv("NN_ENGINE_VULKAN_TUNE", "capture", 1);
    setenv("NN_ENGINE_VULKAN_CONV", "implicit", 1);
    setenv("NN_ENGINE_VULKAN_TUNE_CACHE", path, 1);
    static grads eager, captured, again, rewritten;
    if (run(false, &eager)) {
        CHECK_MSG(entries(path) == -1, "an eager step wrote %s", path);
        CHECK(run(true, &captured));
        agree(&captured, &eager, "measured tiles");
        /* forward, data and weight gradient: one shape each */
        CHECK_MSG(entries(path) == 3, "%d entries in the cache file after the first capture, want 3", entries(path));
        CHECK(run(true, &again));
        agree(&again, &eager, "cached tiles");
        CHECK_MSG(entries(path) == 3, "%d entries after a capture that found them cached, want 3", entries(path));
        FILE *f = fopen(path, "w");
        CHECK(f != NULL);
        if (f) {
            fputs("not a tile cache\n", f);
            fclose(f);
        }
        CHECK(run(true, &rewritten));
        agree(&rewritten, &eager, "tiles measured after a bad cache file");
        CHECK_MSG(entries(path) == 3, "%d entries after rewriting a bad cache file, want 3", entries(path));
    }
    setenv("NN_ENGINE_VULKAN_TUNE", "off", 1);
    unsetenv("NN_ENGINE_VULKAN_TUNE_CACHE");
    unsetenv("NN_ENGINE_VULKAN_CONV");
    tf_remove_tree(folder);
}
