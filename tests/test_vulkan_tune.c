/* Kernel variants chosen by measurement on Vulkan (vk_tune.c,
 * NN_ENGINE_VULKAN_TUNE): a channels-last convolution large enough for the
 * implicit GEMM, its gradients taken eagerly (the heuristic's tiles) and in
 * captured steps (the tiles measured, then read from the cache file): the
 * values equal the eager ones bit for bit whichever tile won, and every
 * forced tile gives them too; the first capture
 * writes one line per kernel to the cache file, the next reads them and
 * measures nothing; a cache file that does not parse is said, ignored and
 * rewritten. The test harness runs everything else with the tuner off
 * (test_main.c), so other tests see the heuristic's tiles only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "io_test_util.h"
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

/* Bit for bit: every tile sums each output in the same order (the weight
 * gradient's splits do not depend on the tile), so whichever tile the
 * measurement picks, a captured step gives the eager step's values. */
static void agree(const grads *got, const grads *want, const char *what) {
    CHECK_MSG(got->loss == want->loss, "%s: loss %a, eager %a", what, got->loss, want->loss);
    CHECK_MSG(!memcmp(got->dx, want->dx, sizeof got->dx), "%s: input gradient differs from the eager step's", what);
    CHECK_MSG(!memcmp(got->dw, want->dw, sizeof got->dw), "%s: weight gradient differs from the eager step's", what);
}

/* The weight gradient of a layer whose sum over 16,900 pixels each tile
 * would split differently if it counted its own tiles. */
#define LONG_W (65 * 20 * 9)
static bool long_weight_gradient(const char *tile, float *dw) {
    if (tile) setenv("NN_ENGINE_VULKAN_CONV_TILES", tile, 1);
    nn_ctx *ctx = vkt_open_device("vulkan");
    bool ok = ctx != NULL;
    if (ctx) {
        nn_ctx_set_memory_format(ctx, NN_MEMORY_FORMAT_CHANNELS_LAST);
        const int64_t xs[4] = {4, 20, 65, 65}, ws[4] = {65, 20, 3, 3};
        float *xv = vkt_randoms(4 * 20 * 65 * 65, -1, 1, 41), *wv = vkt_randoms(LONG_W, -0.2f, 0.2f, 42);
        nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, 4, xs, xv), *w = nn_tensor_from_data(ctx, NN_F32, 4, ws, wv);
        free(xv), free(wv);
        nn_tensor_set_requires_grad(w, true);
        nn_tensor *loss = nn_sum(nn_conv2d(x, w, NULL, 1, 1));
        ok = loss && nn_backward(loss) == NN_OK && nn_tensor_read(nn_tensor_grad(w), dw, LONG_W * sizeof(float)) == NN_OK;
        CHECK_MSG(ok, "tile %s: %s", tile ? tile : "(heuristic)", nn_last_error());
        CHECK(nn_ctx_step_end(ctx) == NN_OK);
        nn_ctx_free(ctx);
    }
    unsetenv("NN_ENGINE_VULKAN_CONV_TILES");
    return ok;
}

TEST(vulkan_tune_every_tile_sums_in_the_same_order) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    setenv("NN_ENGINE_VULKAN_CONV", "implicit", 1);
    static float want[LONG_W], got[LONG_W];
    static const char *const tiles[] = {"128x64", "64x128", "64x64", "32x32"};
    if (long_weight_gradient(NULL, want))
        for (int t = 0; t < 4; t++)
            if (long_weight_gradient(tiles[t], got))
                CHECK_MSG(!memcmp(got, want, sizeof got), "tile %s: the weight gradient differs from the heuristic "
                          "tile's in its bits", tiles[t]);
    unsetenv("NN_ENGINE_VULKAN_CONV");
}

TEST(vulkan_tune_measures_captured_convolutions_and_caches_them) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    char folder[512], path[600];
    CHECK(tf_make_temp_dir(folder, sizeof folder) == 1);
    snprintf(path, sizeof path, "%s/not/yet/tiles.txt", folder); /* folders the tuner makes */
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

/* Profiling a capture whose tiles are measured (NN_ENGINE_VULKAN_PROFILE=1
 * times a captured step per stretch, vk_stretch_profile.c): the tuner's own
 * command buffer takes none of the plan's stamps, so each replay writes
 * every stamp it reads back (one left in the tuner's buffer was never
 * written by a replay: reading it waited forever on one driver, and on
 * another returned no sample, so no table), the stretch table reaches
 * stderr, and the values are the eager step's. */
TEST(vulkan_tune_measures_tiles_while_a_capture_is_profiled) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    char folder[512], path[600], log[600];
    CHECK(tf_make_temp_dir(folder, sizeof folder) == 1);
    snprintf(path, sizeof path, "%s/tiles.txt", folder);
    snprintf(log, sizeof log, "%s/stderr.txt", folder);
    setenv("NN_ENGINE_VULKAN_CONV", "implicit", 1);
    static grads eager, captured;
    if (run(false, &eager)) {
        setenv("NN_ENGINE_VULKAN_TUNE", "capture", 1);
        setenv("NN_ENGINE_VULKAN_TUNE_CACHE", path, 1);
        setenv("NN_ENGINE_VULKAN_PROFILE", "1", 1);
        fflush(stderr);
        const int saved = dup(2), into = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        CHECK(saved >= 0 && into >= 0);
        if (saved >= 0 && into >= 0) {
            dup2(into, 2);
            const bool ok = run(true, &captured);
            fflush(stderr);
            dup2(saved, 2);
            CHECK(ok);
        }
        if (into >= 0) close(into);
        if (saved >= 0) close(saved);
        unsetenv("NN_ENGINE_VULKAN_PROFILE");
        agree(&captured, &eager, "tiles measured in a profiled capture");
        CHECK_MSG(entries(path) == 3, "%d entries in the cache file after a profiled capture, want 3", entries(path));
        size_t size = 0;
        char *text = (char *)io_test_read_bytes(log, &size);
        if (text) text[size] = '\0'; /* it holds size + 1 bytes */
        CHECK_MSG(text && strstr(text, "a captured step,") && strstr(text, "stretch  1"),
                  "the profiled replay printed no stretch table; stderr was:\n%s", text ? text : "(unreadable)");
        free(text);
    }
    setenv("NN_ENGINE_VULKAN_TUNE", "off", 1);
    unsetenv("NN_ENGINE_VULKAN_TUNE_CACHE");
    unsetenv("NN_ENGINE_VULKAN_CONV");
    tf_remove_tree(folder);
}

/* A batched product large enough for the tiled GEMM's tuner (36 products
 * of 243 x 130 by 130 x 125, as Winograd's): each tile forced, and the
 * tile measured in a capture, give the heuristic's values bit for bit
 * (every tile sums each output over k in the same order); the capture
 * writes one line to the cache file. */
#define PRODUCTS 36
#define PM 243
#define PK 130
#define PN 125
static bool batched_product(bool capture, const char *tile, float *y) {
    if (tile) setenv("NN_ENGINE_VULKAN_GEMM_TILES", tile, 1);
    nn_ctx *ctx = vkt_open_device("vulkan");
    bool ok = ctx != NULL;
    if (ctx) {
        const int64_t as[3] = {PRODUCTS, PM, PK}, bs[3] = {PRODUCTS, PK, PN};
        float *av = vkt_randoms(PRODUCTS * PM * PK, -1, 1, 51), *bv = vkt_randoms(PRODUCTS * PK * PN, -1, 1, 52);
        nn_tensor *a = nn_tensor_from_data(ctx, NN_F32, 3, as, av), *b = nn_tensor_from_data(ctx, NN_F32, 3, bs, bv);
        free(av), free(bv);
        if (capture) CHECK(nn_capture_begin(ctx) == NN_OK);
        nn_tensor *out = nn_matmul_batched(a, b);
        nn_capture *cap = NULL;
        ok = out && nn_tensor_persist(out) == NN_OK;
        if (ok && capture) {
            CHECK(nn_ctx_step_end(ctx) == NN_OK);
            cap = nn_capture_end(ctx);
            ok = cap && nn_replay(cap, 1) == NN_OK;
        }
        ok = ok && nn_tensor_read(out, y, sizeof(float) * PRODUCTS * PM * PN) == NN_OK;
        CHECK_MSG(ok, "tile %s%s: %s", tile ? tile : "(heuristic)", capture ? ", captured" : "", nn_last_error());
        if (!capture) CHECK(nn_ctx_step_end(ctx) == NN_OK);
        nn_capture_free(cap);
        nn_ctx_free(ctx);
    }
    unsetenv("NN_ENGINE_VULKAN_GEMM_TILES");
    return ok;
}

TEST(vulkan_tune_measures_large_products_and_every_tile_agrees) {
    if (vkt_skipped() || !vkt_vulkan()) return;
    static float want[PRODUCTS * PM * PN], got[PRODUCTS * PM * PN];
    static const char *const tiles[] = {"large", "large16", "large-db", "128x64", "64x128", "medium",
                                        "small"};
    if (!batched_product(false, NULL, want)) return;
    for (int t = 0; t < (int)(sizeof tiles / sizeof tiles[0]); t++)
        if (batched_product(false, tiles[t], got))
            CHECK_MSG(!memcmp(got, want, sizeof got), "tile %s: the product differs from the heuristic tile's in its bits",
                      tiles[t]);
    char folder[512], path[600];
    CHECK(tf_make_temp_dir(folder, sizeof folder) == 1);
    snprintf(path, sizeof path, "%s/tiles.txt", folder);
    setenv("NN_ENGINE_VULKAN_TUNE", "capture", 1);
    setenv("NN_ENGINE_VULKAN_TUNE_CACHE", path, 1);
    if (batched_product(true, NULL, got)) {
        CHECK_MSG(!memcmp(got, want, sizeof got), "the measured tile's product differs from the heuristic's");
        CHECK_MSG(entries(path) == 1, "%d entries in the cache file after capturing one product, want 1", entries(path));
    }
    setenv("NN_ENGINE_VULKAN_TUNE", "off", 1);
    unsetenv("NN_ENGINE_VULKAN_TUNE_CACHE");
    tf_remove_tree(folder);
}
