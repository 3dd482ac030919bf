/* The device dataset's augmentation (nn_device_dataset_set_augment): every
 * gathered image is the stored one shifted by at most crop_pad pixels each
 * way, with black coming in, and mirrored or not, as torchvision's
 * RandomCrop(padding) and RandomHorizontalFlip give; the shifts and mirrors
 * vary over samples and steps, cover the whole range, and repeat for the
 * same seed. Checked on the CPU and on Vulkan by finding, for each output,
 * the transform of its stored image that gives it exactly. A rank's share
 * of each global batch (nn_device_dataset_set_shard) augments its samples
 * as the whole batch in one process does. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn_engine.h"
#include "test.h"
#include "vulkan_harness.h"

#define COUNT 6
#define C 2
#define H 5
#define W 7
#define PAD 2
#define BATCH 3

/* Pixel values 1..255, distinct within an image: a shift or mirror of one
 * image never equals another transform of it by accident. */
static uint8_t pixel(int image, int c, int y, int x) { return (uint8_t)(1 + (image * 37 + c * 35 + y * W + x) % 250); }

/* Which transform (dy, dx, mirrored) makes `got` (normalised as pixel / 255)
 * from image `image`, or false for none. */
static bool find_transform(const float *got, int image, int *dy, int *dx, int *mirrored) {
    for (int f = 0; f < 2; f++)
        for (int sy = -PAD; sy <= PAD; sy++)
            for (int sx = -PAD; sx <= PAD; sx++) {
                bool same = true;
                for (int c = 0; c < C && same; c++)
                    for (int y = 0; y < H && same; y++)
                        for (int x = 0; x < W && same; x++) {
                            const int yy = y + sy, xx = (f ? W - 1 - x : x) + sx;
                            const int v = yy >= 0 && yy < H && xx >= 0 && xx < W ? pixel(image, c, yy, xx) : 0;
                            same = fabsf(got[(c * H + y) * W + x] - (float)v / 255.0f) < 1e-6f;
                        }
                if (same) {
                    *dy = sy, *dx = sx, *mirrored = f;
                    return true;
                }
            }
    return false;
}

/* COUNT images of pixel(), labelled by their index, held on ctx's device. */
static nn_device_dataset *test_dataset(nn_ctx *ctx) {
    static uint8_t pixels[COUNT * C * H * W];
    static int32_t labels[COUNT];
    for (int i = 0; i < COUNT; i++)
        for (int c = 0; c < C; c++)
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) pixels[((i * C + c) * H + y) * W + x] = pixel(i, c, y, x);
    for (int i = 0; i < COUNT; i++) labels[i] = i;
    nn_dataset data = {.count = COUNT, .channels = C, .height = H, .width = W, .classes = COUNT,
                       .pixels = pixels, .labels = labels};
    const float mean[C] = {0, 0}, std[C] = {1, 1};
    return nn_device_dataset_new(ctx, &data, mean, std);
}

/* The transforms of every sample of `steps` batches, as a histogram. */
static void gather_transforms(const char *device, uint64_t seed, int steps, int counts[2][2 * PAD + 1][2 * PAD + 1]) {
    nn_ctx *ctx = vkt_open_device(device);
    if (!ctx) return;
    nn_device_dataset *d = test_dataset(ctx);
    CHECK(d && nn_device_dataset_set_augment(d, PAD, true, seed) == NN_OK);
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 4, (int64_t[]){BATCH, C, H, W});
    nn_tensor *y = nn_tensor_new(ctx, NN_I32, 1, (int64_t[]){BATCH});
    nn_tensor *counter = nn_tensor_new(ctx, NN_I32, 1, (int64_t[]){1});
    for (int step = 0; d && step < steps; step++) {
        const int64_t order[COUNT] = {(step + 1) % COUNT, (step + 3) % COUNT, (step + 4) % COUNT, 5, 0, 2};
        if (step % 2 == 0) CHECK(nn_device_dataset_set_order(d, order, COUNT) == NN_OK);
        CHECK(nn_device_dataset_gather(d, counter, 0, x, y) == NN_OK);
        CHECK(nn_counter_add(counter, 1) == NN_OK);
        if (nn_tensor_dim(counter, 0) && (step + 1) % 2 == 0) {
            const int32_t zero = 0; /* two batches per "epoch" */
            CHECK(nn_tensor_write(counter, &zero, sizeof zero) == NN_OK);
        }
        float got[BATCH * C * H * W];
        int32_t which[BATCH];
        CHECK(nn_tensor_read(x, got, sizeof got) == NN_OK && nn_tensor_read(y, which, sizeof which) == NN_OK);
        for (int i = 0; i < BATCH; i++) {
            int dy, dx, mirrored;
            const bool found = find_transform(got + i * C * H * W, which[i], &dy, &dx, &mirrored);
            CHECK_MSG(found, "%s step %d sample %d (image %d) is no shift or mirror of its image", device, step, i,
                      which[i]);
            if (found) counts[mirrored][dy + PAD][dx + PAD]++;
        }
        CHECK(nn_ctx_step_end(ctx) == NN_OK);
    }
    CHECK(nn_device_dataset_set_augment(d, H, false, seed) != NN_OK && strstr(nn_last_error(), "crop_pad 5"));
    nn_tensor_free(x);
    nn_tensor_free(y);
    nn_tensor_free(counter);
    nn_device_dataset_free(d);
    nn_ctx_free(ctx);
}

static void check_device(const char *device) {
    if (strcmp(device, "vulkan") == 0 && vkt_skipped()) return;
    static int counts[2][2 * PAD + 1][2 * PAD + 1], again[2][2 * PAD + 1][2 * PAD + 1];
    memset(counts, 0, sizeof counts);
    memset(again, 0, sizeof again);
    gather_transforms(device, 42, 80, counts);
    gather_transforms(device, 42, 80, again);
    CHECK_MSG(memcmp(counts, again, sizeof counts) == 0, "%s: the same seed drew other transforms", device);
    int mirrored = 0, total = 0, shifts_seen = 0;
    for (int f = 0; f < 2; f++)
        for (int i = 0; i < 2 * PAD + 1; i++)
            for (int j = 0; j < 2 * PAD + 1; j++) {
                total += counts[f][i][j];
                if (f) mirrored += counts[f][i][j];
            }
    for (int i = 0; i < 2 * PAD + 1; i++)
        for (int j = 0; j < 2 * PAD + 1; j++) shifts_seen += counts[0][i][j] + counts[1][i][j] > 0;
    CHECK_MSG(total == 80 * BATCH, "%s: %d samples found", device, total);
    /* 240 draws: every one of the 25 shifts appears, mirrors near half */
    CHECK_MSG(shifts_seen == (2 * PAD + 1) * (2 * PAD + 1), "%s: %d of 25 shifts seen", device, shifts_seen);
    CHECK_MSG(mirrored > total / 4 && mirrored < 3 * total / 4, "%s: %d of %d mirrored", device, mirrored, total);
}

TEST(augment_shifts_and_mirrors_cpu) { check_device("cpu"); }
TEST(augment_shifts_and_mirrors_vulkan) { check_device("vulkan"); }

/* ---- data parallel: a rank's share of each global batch (nn_device_dataset_set_shard) ---- */

/* The images of `order` gathered at batch `batch`, augmented with the draw
 * counter at `draw`, as rank `rank` of `ranks` (ranks 0: no shard set). */
static bool gather_shard(nn_ctx *ctx, const int64_t *order, int64_t batch, int rank, int ranks, int32_t draw,
                         float *out) {
    nn_device_dataset *d = test_dataset(ctx);
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 4, (int64_t[]){batch, C, H, W});
    nn_tensor *y = nn_tensor_new(ctx, NN_I32, 1, (int64_t[]){batch});
    bool ok = d && x && y && nn_device_dataset_set_augment(d, PAD, true, 7) == NN_OK &&
              nn_device_dataset_set_order(d, order, batch) == NN_OK && nn_device_dataset_set_draw(d, draw) == NN_OK &&
              (ranks == 0 || nn_device_dataset_set_shard(d, rank, ranks) == NN_OK) &&
              nn_device_dataset_gather(d, NULL, 0, x, y) == NN_OK &&
              nn_tensor_read(x, out, sizeof(float) * (size_t)(batch * C * H * W)) == NN_OK;
    CHECK_MSG(ok, "gathering rank %d of %d at batch %lld: %s", rank, ranks, (long long)batch, nn_last_error());
    nn_tensor_free(x);
    nn_tensor_free(y);
    nn_device_dataset_free(d);
    return ok;
}

/* N ranks at batch B, each given its slice of the global order, gather every
 * sample augmented exactly (same bits) as one process at batch N * B does;
 * a rank that does not say where it sits draws other augmentations. */
static void check_shards(const char *device) {
    if (strcmp(device, "vulkan") == 0 && vkt_skipped()) return;
    nn_ctx *ctx = vkt_open_device(device);
    if (!ctx) return;
    const int64_t order[COUNT] = {4, 1, 5, 0, 3, 2};
    enum { IMAGE = C * H * W };
    static float whole[COUNT * IMAGE], share[COUNT * IMAGE];
    int unsharded_differ = 0;
    for (int32_t draw = 0; draw < 12; draw += 5)
        for (int ranks = 2; ranks <= 3; ranks++) {
            const int64_t batch = COUNT / ranks;
            if (!gather_shard(ctx, order, COUNT, 0, 0, draw, whole)) break;
            for (int rank = 0; rank < ranks; rank++) {
                if (!gather_shard(ctx, order + rank * batch, batch, rank, ranks, draw, share)) break;
                CHECK_MSG(memcmp(share, whole + rank * batch * IMAGE, sizeof(float) * (size_t)(batch * IMAGE)) == 0,
                          "%s: rank %d of %d (batch %lld, draw %d) augments its samples unlike the global batch",
                          device, rank, ranks, (long long)batch, draw);
                if (rank > 0 && gather_shard(ctx, order + rank * batch, batch, 0, 0, draw, share))
                    unsharded_differ +=
                        memcmp(share, whole + rank * batch * IMAGE, sizeof(float) * (size_t)(batch * IMAGE)) != 0;
            }
        }
    /* 9 rank slices past the first: the rows' own draws are another stream */
    CHECK_MSG(unsharded_differ >= 8, "%s: only %d of 9 unsharded slices drew differently: the check proves nothing",
              device, unsharded_differ);
    nn_device_dataset *d = NULL;
    CHECK(nn_device_dataset_set_shard(d, 0, 1) == NN_ERR_ARGUMENT && strstr(nn_last_error(), "dataset is NULL"));
    nn_ctx_free(ctx);
}

TEST(augment_rank_shards_draw_as_the_global_batch_cpu) { check_shards("cpu"); }
TEST(augment_rank_shards_draw_as_the_global_batch_vulkan) { check_shards("vulkan"); }

TEST(augment_shard_arguments_are_refused_by_name) {
    nn_ctx *ctx = vkt_open_device("cpu");
    static uint8_t pixels[2 * H * W];
    static int32_t labels[2];
    nn_dataset data = {.count = 2, .channels = 1, .height = H, .width = W, .classes = 2, .pixels = pixels,
                       .labels = labels};
    const float mean[1] = {0}, std[1] = {1};
    nn_device_dataset *d = ctx ? nn_device_dataset_new(ctx, &data, mean, std) : NULL;
    CHECK(d != NULL);
    CHECK(nn_device_dataset_set_shard(d, 2, 2) == NN_ERR_ARGUMENT &&
          strstr(nn_last_error(), "nn_device_dataset_set_shard: rank 2 of 2 ranks"));
    CHECK(nn_device_dataset_set_shard(d, -1, 4) == NN_ERR_ARGUMENT && strstr(nn_last_error(), "rank -1 of 4"));
    CHECK(nn_device_dataset_set_shard(d, 0, 0) == NN_ERR_ARGUMENT && strstr(nn_last_error(), "rank 0 of 0"));
    CHECK(nn_device_dataset_set_shard(d, 1, 2) == NN_OK);
    nn_device_dataset_free(d);
    nn_ctx_free(ctx);
}
