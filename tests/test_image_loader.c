/* The image-folder index and the threaded loader, on small folders written
 * here: bad files (corrupt, empty, not an image), an empty class folder, the
 * validation split, values against a double-precision resize of the known
 * pixels, every image exactly once per epoch in nn_shuffle_indices order,
 * augmentation independent of threads and batching, early shutdown. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn_data.h"
#include "nn_engine.h"
#include "nn_loader.h"
#include "test.h"
#include "test_files.h"

/* Image `id` of a test folder: a w x h picture whose pixel (x, y, c) is
 * a function of id, so that any output pixel tells which image it came from. */
static uint8_t id_pixel(int id, int x, int y, int c) { return (uint8_t)((id * 37 + x * 5 + y * 3 + c * 50) % 256); }

static void write_id_png(const char *dir, const char *name, int id, int w, int h, int channels) {
    uint8_t *px = malloc((size_t)w * h * channels);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < channels; c++) px[(y * w + x) * channels + c] = id_pixel(id, x, y, c);
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    CHECK(tf_write_png(path, px, w, h, channels));
    free(px);
}

/* A folder of `n` PNG images id 0..n-1 in classes "a" (even ids) and "b" (odd),
 * of awkward sizes (the width varies with the id); returns the class of each. */
static void write_id_folder(const char *dir, int n, int channels) {
    char a[512], b[512], name[32];
    CHECK(tf_subdir(dir, "a", a, sizeof a));
    CHECK(tf_subdir(dir, "b", b, sizeof b));
    for (int id = 0; id < n; id++) {
        snprintf(name, sizeof name, "%03d.png", id);
        write_id_png(id % 2 ? b : a, name, id, 9 + id % 4, 7, channels);
    }
}

/* The id of the index image `i` of write_id_folder: its file name. */
static int index_id(const nn_image_index *index, int64_t i) {
    const char *slash = strrchr(index->paths[i], '/');
    return atoi(slash + 1);
}

TEST(image_index_bad_files_and_loader_skips_corrupt) {
    char dir[64], cls[512], path[600];
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    CHECK(tf_subdir(dir, "Dog", cls, sizeof cls));
    write_id_png(cls, "1.png", 1, 10, 6, 3);
    uint8_t rgb[11 * 5 * 3];
    for (int i = 0; i < 11 * 5 * 3; i++) rgb[i] = (uint8_t)(i * 7);
    snprintf(path, sizeof path, "%s/2.jpg", cls);
    CHECK(tf_write_jpeg(path, rgb, 11, 5, 3, 90));
    CHECK(tf_subdir(dir, "Cat", cls, sizeof cls));
    write_id_png(cls, "1.png", 3, 7, 9, 1); /* a grayscale PNG in an RGB set */
    snprintf(path, sizeof path, "%s/0-corrupt.jpg", cls); /* a JPEG signature, then junk */
    static const char corrupt[] = "\xFF\xD8\xFF\xE0 this is not a JPEG body at all";
    CHECK(tf_write_bytes(path, corrupt, sizeof corrupt - 1));
    snprintf(path, sizeof path, "%s/5-empty.jpg", cls);
    CHECK(tf_write_bytes(path, "", 0));
    snprintf(path, sizeof path, "%s/4-notes.txt", cls);
    CHECK(tf_write_bytes(path, "hello\n", 6));

    nn_image_index index;
    CHECK(nn_image_index_load(dir, &index) == NN_OK);
    CHECK(index.classes == 2 && strcmp(index.class_names[0], "Cat") == 0 &&
          strcmp(index.class_names[1], "Dog") == 0);
    CHECK(index.count == 4); /* Cat: 0-corrupt.jpg, 1.png; Dog: 1.png, 2.jpg */
    CHECK(index.labels[0] == 0 && index.labels[1] == 0 && index.labels[2] == 1 && index.labels[3] == 1);
    CHECK(index.skipped == 2);
    CHECK_MSG(strstr(index.first_skipped, "4-notes.txt: neither PNG nor JPEG") != NULL, "%s", index.first_skipped);

    /* Verified: the corrupt JPEG leaves the index; the first skipped file stays the first one found. */
    nn_image_index verified;
    CHECK(nn_image_index_load(dir, &verified) == NN_OK);
    CHECK(nn_image_index_verify(&verified, 3) == NN_OK);
    CHECK(verified.count == 3 && verified.skipped == 3 && strstr(verified.first_skipped, "4-notes.txt"));
    CHECK(strstr(verified.paths[0], "Cat/1.png") && verified.labels[0] == 0 && verified.labels[2] == 1);
    nn_image_index_free(&verified);

    nn_loader_options o = nn_loader_defaults();
    o.height = 6, o.width = 5, o.batch = 3, o.threads = 2, o.prefetch = 1;
    nn_loader *loader = nn_loader_new(&index, NULL, index.count, &o);
    CHECK(loader != NULL);
    CHECK(nn_loader_batches(loader) == 2);
    for (int epoch = 0; epoch < 2; epoch++) {
        CHECK(nn_loader_start_epoch(loader, epoch) == NN_OK);
        nn_batch batch;
        int64_t seen = 0;
        int32_t labels[4];
        while (nn_loader_next(loader, &batch) == NN_OK && batch.count > 0) {
            for (int64_t i = 0; i < batch.count; i++) {
                labels[seen + i] = batch.labels[i];
                for (int64_t k = 0; k < 3 * 6 * 5; k++) CHECK(isfinite(batch.images[i * 90 + k]));
            }
            seen += batch.count;
        }
        /* batch 0 = corrupt, Cat/1, Dog/1 -> 2 images; batch 1 = Dog/2 */
        CHECK(seen == 3 && labels[0] == 0 && labels[1] == 1 && labels[2] == 1);
    }
    char first[512];
    CHECK(nn_loader_failures(loader, first, sizeof first) == 1); /* counted once over 2 epochs */
    CHECK_MSG(strstr(first, "0-corrupt.jpg: damaged JPEG") != NULL, "%s", first);
    nn_loader_free(loader);
    /* An epoch of nothing but bad files is an error, not an empty epoch. */
    const int64_t only_corrupt[1] = {0};
    loader = nn_loader_new(&index, only_corrupt, 1, &o);
    nn_batch batch;
    CHECK(loader && nn_loader_start_epoch(loader, 0) == NN_OK);
    CHECK(nn_loader_next(loader, &batch) == NN_ERR_IO && batch.count == 0);
    CHECK_MSG(strstr(nn_last_error(), "none of the epoch's 1 files could be decoded (first: ") &&
                  strstr(nn_last_error(), "0-corrupt.jpg"),
              "%s", nn_last_error());
    nn_loader_free(loader);
    nn_image_index_free(&index);

    /* A class whose only files fail to decode: verify names its folder. */
    CHECK(tf_subdir(dir, "Broken", cls, sizeof cls));
    snprintf(path, sizeof path, "%s/only.jpg", cls);
    CHECK(tf_write_bytes(path, corrupt, sizeof corrupt - 1));
    CHECK(nn_image_index_load(dir, &index) == NN_OK && index.count == 5 && index.classes == 3);
    CHECK(nn_image_index_verify(&index, 2) == NN_ERR_IO);
    CHECK_MSG(strstr(nn_last_error(), "/Broken: class folder has no readable PNG or JPEG image (first: ") &&
                  strstr(nn_last_error(), "only.jpg: damaged JPEG"),
              "%s", nn_last_error());
    nn_image_index_free(&index);
    tf_remove_tree(cls);

    /* An empty class folder (or one with only bad files) is an error naming it. */
    CHECK(tf_subdir(dir, "Empty", cls, sizeof cls));
    CHECK(nn_image_index_load(dir, &index) == NN_ERR_IO);
    CHECK_MSG(strstr(nn_last_error(), "/Empty: class folder has no PNG or JPEG image") != NULL, "%s",
              nn_last_error());
    snprintf(path, sizeof path, "%s/x.bmp", cls);
    CHECK(tf_write_bytes(path, "BM....", 6));
    CHECK(nn_image_index_load(dir, &index) == NN_ERR_IO && strstr(nn_last_error(), "/Empty") != NULL);
    tf_remove_tree(dir);
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    CHECK(nn_image_index_load(dir, &index) == NN_ERR_IO && strstr(nn_last_error(), "no class folders"));
    tf_remove_tree(dir);
    CHECK(nn_image_index_load(dir, &index) == NN_ERR_IO && strstr(nn_last_error(), "no such folder"));
    nn_clear_error();
}

/* Bilinear (align_corners=False) of id_pixel over a whole w x h image. */
static double reference_value(int id, int w, int h, int src_channels, int c, int out_w, int out_h,
                              int x, int y) {
    double fx = (x + 0.5) * w / out_w - 0.5, fy = (y + 0.5) * h / out_h - 0.5;
    fx = fx < 0 ? 0 : fx > w - 1 ? w - 1 : fx;
    fy = fy < 0 ? 0 : fy > h - 1 ? h - 1 : fy;
    int x0 = (int)fx, y0 = (int)fy, x1 = x0 + 1 < w ? x0 + 1 : x0, y1 = y0 + 1 < h ? y0 + 1 : y0;
    double lx = fx - x0, ly = fy - y0;
    int sc = src_channels == 1 ? 0 : c;
    return (1 - ly) * ((1 - lx) * id_pixel(id, x0, y0, sc) + lx * id_pixel(id, x1, y0, sc)) +
           ly * ((1 - lx) * id_pixel(id, x0, y1, sc) + lx * id_pixel(id, x1, y1, sc));
}

TEST(image_loader_values_against_reference) {
    /* PNG is lossless: the loader's output is the reference resize of the
     * written pixels, normalised. RGB and grayscale sets, odd sizes. */
    for (int channels = 1; channels <= 3; channels += 2) {
        char dir[64];
        CHECK(tf_make_temp_dir(dir, sizeof dir));
        write_id_folder(dir, 7, channels);
        nn_image_index index;
        CHECK(nn_image_index_load(dir, &index) == NN_OK);
        nn_loader_options o = nn_loader_defaults();
        o.channels = channels, o.width = 5, o.height = 4, o.batch = 4, o.threads = 2;
        o.mean[0] = 0.3f, o.std[0] = 0.7f;
        nn_loader *loader = nn_loader_new(&index, NULL, index.count, &o);
        CHECK(loader && nn_loader_start_epoch(loader, 0) == NN_OK);
        nn_batch batch;
        double worst = 0;
        while (nn_loader_next(loader, &batch) == NN_OK && batch.count > 0)
            for (int64_t i = 0; i < batch.count; i++) {
                int64_t at = batch.first + i;
                int id = index_id(&index, at);
                CHECK(batch.labels[i] == id % 2);
                for (int c = 0; c < channels; c++)
                    for (int y = 0; y < 4; y++)
                        for (int x = 0; x < 5; x++) {
                            double p = reference_value(id, 9 + id % 4, 7, channels, c, 5, 4, x, y);
                            double want = (p / 255 - o.mean[c]) / o.std[c];
                            double got = batch.images[((i * channels + c) * 4 + y) * 5 + x];
                            if (fabs(got - want) > worst) worst = fabs(got - want);
                        }
            }
        CHECK_MSG(worst < 1e-5, "channels %d: worst error %g", channels, worst);
        nn_loader_free(loader);
        nn_image_index_free(&index);
        tf_remove_tree(dir);
    }
}

/* One epoch's images, concatenated in delivery order (count x floats), and
 * the index image of each; returns the number delivered. */
static int64_t run_epoch(nn_loader *loader, int64_t epoch, size_t floats, float *images,
                         int32_t *labels) {
    CHECK(nn_loader_start_epoch(loader, epoch) == NN_OK);
    nn_batch batch;
    int64_t seen = 0;
    while (nn_loader_next(loader, &batch) == NN_OK && batch.count > 0) {
        CHECK(batch.first == seen);
        memcpy(images + seen * floats, batch.images, (size_t)batch.count * floats * sizeof(float));
        memcpy(labels + seen, batch.labels, (size_t)batch.count * sizeof *labels);
        seen += batch.count;
    }
    return seen;
}

TEST(image_loader_every_image_once_in_shuffle_order) {
    char dir[64];
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    enum { N = 23 };
    write_id_folder(dir, N, 1);
    nn_image_index index;
    CHECK(nn_image_index_load(dir, &index) == NN_OK);
    /* A subset (every image but index 4, 10) in a given order. */
    int64_t subset[N], n = 0;
    for (int64_t i = N - 1; i >= 0; i--)
        if (i != 4 && i != 10) subset[n++] = i;
    nn_loader_options o = nn_loader_defaults();
    o.channels = 1, o.width = 3, o.height = 2, o.batch = 5, o.threads = 3, o.prefetch = 2;
    o.shuffle = true, o.seed = 42;
    o.mean[0] = 0, o.std[0] = 1.0f / 255; /* output = pixel value */
    nn_loader *loader = nn_loader_new(&index, subset, n, &o);
    CHECK(loader && nn_loader_batches(loader) == 5);
    float images[N * 6];
    int32_t labels[N];
    int64_t order[N];
    for (int epoch = 0; epoch < 3; epoch++) {
        CHECK(run_epoch(loader, epoch, 6, images, labels) == n);
        CHECK(nn_shuffle_indices(order, n, 42, (uint64_t)epoch) == NN_OK);
        for (int64_t k = 0; k < n; k++) {
            int64_t image = subset[order[k]];
            int id = index_id(&index, image);
            /* pixel (0, 0) of a 1-channel image of width 9 + id % 4, height 7 resized to 3x2 */
            double want = reference_value(id, 9 + id % 4, 7, 1, 0, 3, 2, 0, 0);
            CHECK_MSG(fabs(images[k * 6] - want) < 1e-3, "epoch %d position %lld: %g, want image %d (%g)",
                      epoch, (long long)k, images[k * 6], id, want);
            CHECK(labels[k] == index.labels[image]);
        }
    }
    /* Without shuffle: the subset's order. */
    nn_loader_free(loader);
    o.shuffle = false, o.threads = 1;
    loader = nn_loader_new(&index, subset, n, &o);
    CHECK(run_epoch(loader, 7, 6, images, labels) == n);
    for (int64_t k = 0; k < n; k++)
        CHECK(fabs(images[k * 6] - reference_value(index_id(&index, subset[k]), 9 + index_id(&index, subset[k]) % 4,
                                                   7, 1, 0, 3, 2, 0, 0)) < 1e-3);
    nn_batch batch;
    CHECK(nn_loader_next(loader, &batch) == NN_OK && batch.count == 0); /* stays at the end */
    nn_loader_free(loader);
    nn_image_index_free(&index);
    tf_remove_tree(dir);
}

TEST(image_loader_augmentation_reproducible_and_thread_independent) {
    char dir[64];
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    enum { N = 13, FLOATS = 3 * 6 * 7 };
    write_id_folder(dir, N, 3);
    nn_image_index index;
    CHECK(nn_image_index_load(dir, &index) == NN_OK);
    static float first[N * FLOATS], other[N * FLOATS], next_epoch[N * FLOATS];
    int32_t labels[N], other_labels[N];
    const int setups[][3] = {{1, 4, 1}, {3, 7, 2}, {4, 1, 5}, {2, 13, 1}}; /* threads, batch, prefetch */
    for (int s = 0; s < 4; s++) {
        nn_loader_options o = nn_loader_defaults();
        o.width = 7, o.height = 6, o.threads = setups[s][0], o.batch = setups[s][1];
        o.prefetch = setups[s][2], o.seed = 9, o.shuffle = true, o.flip = true;
        o.crop = NN_CROP_RANDOM_RESIZED;
        nn_loader *loader = nn_loader_new(&index, NULL, N, &o);
        CHECK(loader != NULL);
        float *out = s == 0 ? first : other;
        CHECK(run_epoch(loader, 2, FLOATS, out, s == 0 ? labels : other_labels) == N);
        if (s > 0) {
            CHECK_MSG(memcmp(first, other, sizeof first) == 0, "setup %d differs from setup 0", s);
            CHECK(memcmp(labels, other_labels, sizeof labels) == 0);
        } else {
            /* Another epoch: another order and other crops and flips. */
            CHECK(run_epoch(loader, 3, FLOATS, next_epoch, other_labels) == N);
            CHECK(memcmp(first, next_epoch, sizeof first) != 0);
            /* The same epoch again: identical. */
            CHECK(run_epoch(loader, 2, FLOATS, other, other_labels) == N);
            CHECK(memcmp(first, other, sizeof first) == 0);
        }
        nn_loader_free(loader);
    }
    /* Flip alone (no crop, no shuffle): each image is either the plain
     * resize or its mirror, and both occur. */
    nn_loader_options o = nn_loader_defaults();
    o.width = 7, o.height = 6, o.threads = 2, o.batch = 4, o.seed = 3, o.flip = true;
    nn_loader *loader = nn_loader_new(&index, NULL, N, &o);
    CHECK(run_epoch(loader, 0, FLOATS, first, labels) == N);
    nn_loader_free(loader);
    o.flip = false;
    loader = nn_loader_new(&index, NULL, N, &o);
    CHECK(run_epoch(loader, 0, FLOATS, other, labels) == N);
    nn_loader_free(loader);
    int flipped = 0, plain = 0;
    for (int i = 0; i < N; i++) {
        int same = 1, mirrored = 1;
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < 6; y++)
                for (int x = 0; x < 7; x++) {
                    float a = first[i * FLOATS + (c * 6 + y) * 7 + x];
                    same &= a == other[i * FLOATS + (c * 6 + y) * 7 + x];
                    mirrored &= a == other[i * FLOATS + (c * 6 + y) * 7 + (6 - x)];
                }
        CHECK(same || mirrored);
        flipped += mirrored && !same, plain += same;
    }
    CHECK_MSG(flipped >= 2 && plain >= 2, "flipped %d, plain %d of %d", flipped, plain, N);
    nn_image_index_free(&index);
    tf_remove_tree(dir);
}

TEST(image_loader_early_shutdown_restart_and_errors) {
    char dir[64];
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    enum { N = 17 };
    write_id_folder(dir, N, 3);
    nn_image_index index;
    CHECK(nn_image_index_load(dir, &index) == NN_OK);
    nn_loader_options o = nn_loader_defaults();
    o.width = 8, o.height = 8, o.batch = 2, o.threads = 4, o.prefetch = 3, o.shuffle = true;
    /* Freed without an epoch; freed mid-epoch with batches queued. */
    nn_loader *loader = nn_loader_new(&index, NULL, N, &o);
    CHECK(loader != NULL);
    nn_loader_free(loader);
    loader = nn_loader_new(&index, NULL, N, &o);
    nn_batch batch;
    CHECK(nn_loader_next(loader, &batch) == NN_ERR_STATE);
    CHECK(strstr(nn_last_error(), "nn_loader_start_epoch") != NULL);
    CHECK(nn_loader_start_epoch(loader, 0) == NN_OK);
    CHECK(nn_loader_next(loader, &batch) == NN_OK && batch.count == 2);
    nn_loader_free(loader);
    /* An epoch abandoned half-way, then a full one: every image once. */
    loader = nn_loader_new(&index, NULL, N, &o);
    CHECK(nn_loader_start_epoch(loader, 0) == NN_OK);
    for (int i = 0; i < 3; i++) CHECK(nn_loader_next(loader, &batch) == NN_OK && batch.count == 2);
    static float images[N * 3 * 64];
    int32_t labels[N];
    CHECK(run_epoch(loader, 1, 3 * 64, images, labels) == N);
    int per_class[2] = {0, 0};
    for (int i = 0; i < N; i++) per_class[labels[i]]++;
    CHECK(per_class[0] == 9 && per_class[1] == 8);
    CHECK(nn_loader_start_epoch(loader, -1) == NN_ERR_ARGUMENT);
    nn_loader_free(loader);
    /* Bad options and subsets name the problem. */
    const char *fragments[] = {"channels must be 1 or 3", "batch 0", "threads 0", "count 18", "subset[1] = 17",
                               "std 0", "unknown crop mode"};
    for (int k = 0; k < 7; k++) {
        nn_loader_options bad = o;
        int64_t subset[2] = {0, 17}, count = N;
        const int64_t *sub = NULL;
        if (k == 0) bad.channels = 2;
        if (k == 1) bad.batch = 0;
        if (k == 2) bad.threads = 0;
        if (k == 3) count = N + 1;
        if (k == 4) sub = subset, count = 2;
        if (k == 5) bad.std[2] = 0;
        if (k == 6) bad.crop = (nn_crop_mode)7;
        CHECK(nn_loader_new(&index, sub, count, &bad) == NULL);
        CHECK_MSG(nn_last_status() == NN_ERR_ARGUMENT && strstr(nn_last_error(), fragments[k]) != NULL,
                  "case %d: %s", k, nn_last_error());
    }
    nn_clear_error();
    nn_image_index_free(&index);
    tf_remove_tree(dir);
}

TEST(image_index_split_matches_dataset_split) {
    /* Same-size grayscale PNGs whose constant value is their id: the
     * dataset loader (LeNet's path) and the index must hold out the same
     * images for a seed. */
    char dir[64], cls[512], name[32];
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    enum { N = 20 };
    for (int id = 0; id < N; id++) {
        if (id == 0) CHECK(tf_subdir(dir, "x", cls, sizeof cls));
        if (id == 11) CHECK(tf_subdir(dir, "y", cls, sizeof cls));
        uint8_t px[6];
        memset(px, id * 10, sizeof px);
        snprintf(name, sizeof name, "%02d.png", id);
        char path[600];
        snprintf(path, sizeof path, "%s/%s", cls, name);
        CHECK(tf_write_png(path, px, 3, 2, 1));
        if (id == 5) { /* a PNG signature, then junk: found only by decoding */
            snprintf(path, sizeof path, "%s/05b.png", cls);
            CHECK(tf_write_bytes(path, "\x89PNG\r\n\x1a\n and nothing else", 25));
        }
    }
    nn_dataset train, test;
    bool is_val;
    CHECK(nn_dataset_load_dir(dir, 0.3, 77, &train, &test, &is_val) == NN_OK && is_val);
    CHECK(train.skipped == 1);
    nn_image_index itrain, itest;
    bool index_is_val = false;
    /* Verified before the split: the same 20 images, the same held-out 6. */
    CHECK(nn_image_index_load_dir(dir, 0.3, 77, 2, &itrain, &itest, &index_is_val) == NN_OK && index_is_val);
    CHECK(itest.count == 6 && itrain.count == 14 && test.count == 6);
    CHECK_MSG(itrain.skipped == 1 && strstr(itrain.first_skipped, "05b.png: not a readable PNG"),
              "%lld: %s", (long long)itrain.skipped, itrain.first_skipped);
    for (int64_t i = 0; i < itest.count && i < test.count; i++) {
        CHECK(index_id(&itest, i) * 10 == test.pixels[i * 6]);
        CHECK(itest.labels[i] == test.labels[i]);
    }
    for (int64_t i = 0; i < itrain.count && i < train.count; i++) CHECK(index_id(&itrain, i) * 10 == train.pixels[i * 6]);
    CHECK(itest.classes == 2 && strcmp(itest.class_names[1], "y") == 0);
    nn_image_index_free(&itrain), nn_image_index_free(&itest);
    nn_dataset_free(&train), nn_dataset_free(&test);
    CHECK(nn_image_index_load_dir(dir, 1.5, 77, 0, &itrain, &itest, NULL) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "validation fraction 1.5") != NULL);
    /* DIR/train + DIR/test: no split. */
    tf_remove_tree(dir);
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    char part[512];
    CHECK(tf_subdir(dir, "train", part, sizeof part));
    write_id_folder(part, 5, 3);
    CHECK(tf_subdir(dir, "test", part, sizeof part));
    write_id_folder(part, 3, 3);
    CHECK(nn_image_index_load_dir(dir, 0.3, 77, 0, &itrain, &itest, &index_is_val) == NN_OK && !index_is_val);
    CHECK(itrain.count == 5 && itest.count == 3 && itest.classes == 2);
    nn_image_index_free(&itrain), nn_image_index_free(&itest);
    nn_clear_error();
    tf_remove_tree(dir);
}

/* nn_loader_shard: N ranks at batch B decode, step by step, exactly the
 * images (pixels after random crops and flips included) one loader at batch
 * N x B gives, each once; the last global batch's left-over images are
 * skipped as nn_shard_indices says; misuse is refused. */
TEST(image_loader_shards_follow_one_loader_of_the_global_batch) {
    char dir[64];
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    enum { N = 23, B = 3, FLOATS = 3 * 5 * 6 };
    write_id_folder(dir, N, 3);
    nn_image_index index;
    CHECK(nn_image_index_load(dir, &index) == NN_OK);
    nn_loader_options o = nn_loader_defaults();
    o.width = 6, o.height = 5, o.threads = 2, o.prefetch = 2, o.seed = 5, o.shuffle = true, o.flip = true;
    o.crop = NN_CROP_RANDOM_RESIZED;
    static float whole[N * FLOATS], part[N * FLOATS];
    int32_t whole_labels[N], part_labels[N];
    for (int ranks = 1; ranks <= 3; ranks++) {
        nn_loader_options global = o;
        global.batch = (int64_t)ranks * B;
        nn_loader *one = nn_loader_new(&index, NULL, N, &global);
        nn_loader *shards[3];
        for (int r = 0; r < ranks; r++) {
            nn_loader_options per_rank = o;
            per_rank.batch = B;
            shards[r] = nn_loader_new(&index, NULL, N, &per_rank);
            CHECK(shards[r] && nn_loader_shard(shards[r], r, ranks) == NN_OK);
        }
        const int64_t share = nn_shard_count(N, B, ranks), steps = (share + B - 1) / B;
        CHECK(nn_loader_batches(shards[0]) == steps);
        for (int epoch = 1; epoch <= 2; epoch++) {
            CHECK(run_epoch(one, epoch, FLOATS, whole, whole_labels) == N);
            for (int r = 0; r < ranks; r++) CHECK(nn_loader_start_epoch(shards[r], epoch) == NN_OK);
            /* Step s of every rank, in rank order, is the front of global batch s. */
            int64_t at = 0;
            for (int64_t s = 0; s < steps; s++) {
                int64_t step_images = 0;
                for (int r = 0; r < ranks; r++) {
                    nn_batch b;
                    CHECK(nn_loader_next(shards[r], &b) == NN_OK && b.count > 0);
                    CHECK(b.count == (s < N / (ranks * B) ? B : share - s * B));
                    memcpy(part + (at + step_images) * FLOATS, b.images, sizeof(float) * FLOATS * (size_t)b.count);
                    memcpy(part_labels + at + step_images, b.labels, sizeof(int32_t) * (size_t)b.count);
                    step_images += b.count;
                }
                CHECK_MSG(memcmp(part + at * FLOATS, whole + s * ranks * B * FLOATS,
                                 sizeof(float) * FLOATS * (size_t)step_images) == 0,
                          "%d ranks, epoch %d, step %lld: the ranks' images differ from the global batch's", ranks,
                          epoch, (long long)s);
                CHECK(memcmp(part_labels + at, whole_labels + s * ranks * B, sizeof(int32_t) * (size_t)step_images) == 0);
                at += step_images;
            }
            for (int r = 0; r < ranks; r++) {
                nn_batch b;
                CHECK(nn_loader_next(shards[r], &b) == NN_OK && b.count == 0);
            }
            /* Every image but the left-over ones, once: 23 at 1 rank, 22 at 2 (global 6, tail 5), 21 at 3 (tail 5). */
            CHECK_MSG(at == N - N % (ranks * B) % ranks, "%d ranks: %lld images", ranks, (long long)at);
        }
        nn_loader_free(one);
        for (int r = 0; r < ranks; r++) nn_loader_free(shards[r]);
    }
    /* Misuse: a rank outside the job, ranks with no image, sharding a started loader. */
    nn_loader_options small = o;
    small.batch = 4;
    nn_loader *loader = nn_loader_new(&index, NULL, 2, &small);
    CHECK(nn_loader_shard(loader, 2, 2) == NN_ERR_ARGUMENT && strstr(nn_last_error(), "rank 2 of 2"));
    CHECK(nn_loader_shard(loader, 0, 3) == NN_ERR_ARGUMENT && strstr(nn_last_error(), "2 images at batch 4"));
    CHECK(nn_loader_shard(loader, 0, 2) == NN_OK && nn_loader_batches(loader) == 1);
    CHECK(nn_loader_start_epoch(loader, 0) == NN_OK);
    CHECK(nn_loader_shard(loader, 1, 2) == NN_ERR_STATE && strstr(nn_last_error(), "before its first"));
    nn_batch b;
    CHECK(nn_loader_next(loader, &b) == NN_OK && b.count == 1);
    CHECK(nn_loader_shard(NULL, 0, 1) == NN_ERR_ARGUMENT);
    nn_loader_free(loader);
    nn_clear_error();
    nn_image_index_free(&index);
    tf_remove_tree(dir);
}
