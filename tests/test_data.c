/* Dataset loaders: IDX (raw and gzip) and class folders (PNG, JPEG), every
 * bad-input case the command line must report, the validation split, the
 * shuffle and the batch gather, on small files written here. */
#include <stdlib.h>
#include <string.h>

#include "nn_data.h"
#include "nn_engine.h"
#include "reference.h"
#include "test.h"
#include "test_files.h"

#define CHECK_FAILS_WITH(expr, fragment)                                                     \
    do {                                                                                     \
        nn_status status_ = (expr);                                                          \
        CHECK_MSG(status_ != NN_OK, "%s succeeded, expected an error about \"%s\"", #expr,   \
                  fragment);                                                                 \
        CHECK_MSG(strstr(nn_last_error(), fragment) != NULL, "message \"%s\" lacks \"%s\"", \
                  nn_last_error(), fragment);                                                \
        nn_clear_error();                                                                    \
    } while (0)

static void random_bytes(uint64_t seed, uint8_t *out, size_t n) {
    ref_rng r = ref_rng_new(seed);
    for (size_t i = 0; i < n; i++) out[i] = (uint8_t)(ref_rng_uniform(&r, 0, 256));
}

/* IDX files of `count` images of rows x cols plus labels in [0, classes). */
static void write_idx_pair(const char *dir, const char *prefix, uint32_t count, uint32_t rows,
                           uint32_t cols, int classes, int gz, uint64_t seed, uint8_t *pixels,
                           uint8_t *labels) {
    random_bytes(seed, pixels, (size_t)count * rows * cols);
    for (uint32_t i = 0; i < count; i++) labels[i] = (uint8_t)((i * 7 + seed) % classes);
    char path[512];
    uint32_t image_dims[3] = {count, rows, cols}, label_dims[1] = {count};
    snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte%s", dir, prefix, gz ? ".gz" : "");
    CHECK(tf_write_idx(path, 0x803, image_dims, 3, pixels, (size_t)count * rows * cols, gz));
    snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte%s", dir, prefix, gz ? ".gz" : "");
    CHECK(tf_write_idx(path, 0x801, label_dims, 1, labels, count, gz));
}

TEST(data_idx_round_trip_raw_and_gzip) {
    for (int gz = 0; gz <= 1; gz++) {
        char dir[64], images[512], labels[512];
        CHECK(tf_make_temp_dir(dir, sizeof dir));
        enum { N = 13, ROWS = 7, COLS = 5 };
        uint8_t pixels[N * ROWS * COLS], label_bytes[N];
        write_idx_pair(dir, "train", N, ROWS, COLS, 3, gz, 11 + gz, pixels, label_bytes);
        snprintf(images, sizeof images, "%s/train-images-idx3-ubyte%s", dir, gz ? ".gz" : "");
        snprintf(labels, sizeof labels, "%s/train-labels-idx1-ubyte%s", dir, gz ? ".gz" : "");
        nn_dataset ds;
        CHECK(nn_dataset_load_idx(images, labels, &ds) == NN_OK);
        CHECK(ds.count == N && ds.channels == 1 && ds.height == ROWS && ds.width == COLS);
        CHECK(memcmp(ds.pixels, pixels, sizeof pixels) == 0);
        int max_label = 0;
        for (int i = 0; i < N; i++) {
            CHECK(ds.labels[i] == label_bytes[i]);
            if (label_bytes[i] > max_label) max_label = label_bytes[i];
        }
        CHECK(ds.classes == max_label + 1);
        CHECK(ds.class_names && strcmp(ds.class_names[1], "1") == 0);
        nn_dataset_free(&ds);
        tf_remove_tree(dir);
    }
}

TEST(data_idx_bad_files) {
    char dir[64], images[512], labels[512], path[512];
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    uint8_t pixels[6 * 4 * 4], label_bytes[6];
    write_idx_pair(dir, "train", 6, 4, 4, 2, 0, 5, pixels, label_bytes);
    snprintf(images, sizeof images, "%s/train-images-idx3-ubyte", dir);
    snprintf(labels, sizeof labels, "%s/train-labels-idx1-ubyte", dir);
    nn_dataset ds;

    snprintf(path, sizeof path, "%s/missing", dir);
    CHECK_FAILS_WITH(nn_dataset_load_idx(path, labels, &ds), "cannot open");

    uint32_t dims[3] = {6, 4, 4};
    snprintf(path, sizeof path, "%s/bad-magic", dir);
    CHECK(tf_write_idx(path, 0x802, dims, 3, pixels, sizeof pixels, 0));
    CHECK_FAILS_WITH(nn_dataset_load_idx(path, labels, &ds), "magic number 0x00000802");
    /* labels given as images */
    CHECK_FAILS_WITH(nn_dataset_load_idx(labels, labels, &ds), "magic");

    /* truncated data, raw and gzip */
    for (int gz = 0; gz <= 1; gz++) {
        snprintf(path, sizeof path, "%s/short%d", dir, gz);
        CHECK(tf_write_idx(path, 0x803, dims, 3, pixels, sizeof pixels - 3, gz));
        CHECK_FAILS_WITH(nn_dataset_load_idx(path, labels, &ds), "truncated");
    }
    /* truncated header */
    snprintf(path, sizeof path, "%s/header", dir);
    CHECK(tf_write_bytes(path, "\0\0\x08\x03\0\0", 6));
    CHECK_FAILS_WITH(nn_dataset_load_idx(path, labels, &ds), "truncated");
    /* too much data */
    uint32_t fewer[3] = {5, 4, 4};
    snprintf(path, sizeof path, "%s/long", dir);
    CHECK(tf_write_idx(path, 0x803, fewer, 3, pixels, sizeof pixels, 0));
    CHECK_FAILS_WITH(nn_dataset_load_idx(path, labels, &ds), "more data");
    /* a header promising absurd sizes */
    uint32_t huge[3] = {0xFFFFFFFFu, 0xFFFFu, 0xFFFFu};
    snprintf(path, sizeof path, "%s/huge", dir);
    CHECK(tf_write_idx(path, 0x803, huge, 3, pixels, 16, 0));
    CHECK_FAILS_WITH(nn_dataset_load_idx(path, labels, &ds), "implausible");
    /* label count differs from image count */
    uint32_t five[1] = {5};
    snprintf(path, sizeof path, "%s/five-labels", dir);
    CHECK(tf_write_idx(path, 0x801, five, 1, label_bytes, 5, 0));
    CHECK_FAILS_WITH(nn_dataset_load_idx(images, path, &ds), "5 labels, but the image file has 6");
    /* corrupt gzip stream */
    snprintf(path, sizeof path, "%s/corrupt.gz", dir);
    CHECK(tf_write_idx(path, 0x803, dims, 3, pixels, sizeof pixels, 1));
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    if (f) {
        fseek(f, 20, SEEK_SET);
        fputs("garbage!garbage!", f);
        fclose(f);
    }
    CHECK(nn_dataset_load_idx(path, labels, &ds) != NN_OK);
    CHECK(strstr(nn_last_error(), "corrupt") || strstr(nn_last_error(), "truncated") ||
          strstr(nn_last_error(), "error"));
    nn_clear_error();
    CHECK(ds.pixels == NULL && ds.labels == NULL); /* nothing half-loaded */
    tf_remove_tree(dir);
}

TEST(data_load_dir_idx_and_missing) {
    char dir[64];
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    nn_dataset train, test;
    bool is_validation = true;
    CHECK_FAILS_WITH(nn_dataset_load_dir("/nonexistent/nn-data", 0.1, 1, &train, &test, NULL),
                     "no such folder");
    CHECK_FAILS_WITH(nn_dataset_load_dir(dir, 0.1, 1, &train, &test, NULL), "neither IDX");

    uint8_t pixels[9 * 28 * 28], labels[9], test_pixels[4 * 28 * 28], test_labels[4];
    write_idx_pair(dir, "train", 9, 28, 28, 3, 1, 21, pixels, labels);
    write_idx_pair(dir, "t10k", 4, 28, 28, 3, 0, 22, test_pixels, test_labels);
    CHECK(nn_dataset_load_dir(dir, 0.1, 1, &train, &test, &is_validation) == NN_OK);
    CHECK(!is_validation);
    CHECK(train.count == 9 && test.count == 4);
    CHECK(memcmp(test.pixels, test_pixels, sizeof test_pixels) == 0);
    nn_dataset_free(&train);
    nn_dataset_free(&test);

    /* test images of another size than the training images */
    write_idx_pair(dir, "t10k", 4, 28, 27, 3, 0, 22, test_pixels, test_labels);
    CHECK_FAILS_WITH(nn_dataset_load_dir(dir, 0.1, 1, &train, &test, NULL), "test images are 1x28x27");
    tf_remove_tree(dir);
}

/* A smooth test picture, so that JPEG's loss stays small. */
static void gradient_image(uint8_t *pixels, int width, int height, int phase) {
    for (int y = 0; y < height; y++)
        for (int x = 0; x < width; x++)
            pixels[y * width + x] = (uint8_t)((x * 9 + y * 5 + phase * 17) % 200 + 20);
}

TEST(data_folders_png_jpeg_and_skipped_files) {
    char dir[64], cls[512], path[600];
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    enum { W = 11, H = 9 };
    uint8_t gray[W * H], rgb[W * H * 3];
    /* class "a": two grayscale PNGs; class "b": a JPEG, an RGB PNG, junk. */
    CHECK(tf_subdir(dir, "a", cls, sizeof cls));
    gradient_image(gray, W, H, 0);
    snprintf(path, sizeof path, "%s/0.png", cls);
    CHECK(tf_write_png(path, gray, W, H, 1));
    uint8_t second[W * H];
    random_bytes(3, second, sizeof second);
    snprintf(path, sizeof path, "%s/1.png", cls);
    CHECK(tf_write_png(path, second, W, H, 1));
    CHECK(tf_subdir(dir, "b", cls, sizeof cls));
    uint8_t smooth[W * H];
    gradient_image(smooth, W, H, 2);
    snprintf(path, sizeof path, "%s/photo.jpg", cls);
    CHECK(tf_write_jpeg_gray(path, smooth, W, H, 95));
    for (int i = 0; i < W * H; i++) rgb[3 * i] = 200, rgb[3 * i + 1] = 100, rgb[3 * i + 2] = 50;
    snprintf(path, sizeof path, "%s/rgb.png", cls);
    CHECK(tf_write_png(path, rgb, W, H, 3));
    snprintf(path, sizeof path, "%s/empty.png", cls);
    CHECK(tf_write_bytes(path, "", 0));
    snprintf(path, sizeof path, "%s/notes.txt", cls);
    CHECK(tf_write_bytes(path, "not an image\n", 13));
    snprintf(path, sizeof path, "%s/broken.jpg", cls);
    CHECK(tf_write_bytes(path, "\xFF\xD8\xFF\xE0 cut short", 14));

    nn_dataset ds;
    CHECK(nn_dataset_load_folders(dir, &ds) == NN_OK);
    CHECK(ds.count == 4 && ds.classes == 2 && ds.width == W && ds.height == H && ds.channels == 1);
    CHECK(ds.skipped == 3);
    CHECK(strstr(ds.first_skipped, "broken.jpg") != NULL); /* sorted order: broken, empty, notes */
    CHECK(strcmp(ds.class_names[0], "a") == 0 && strcmp(ds.class_names[1], "b") == 0);
    CHECK(ds.labels[0] == 0 && ds.labels[1] == 0 && ds.labels[2] == 1 && ds.labels[3] == 1);
    CHECK(memcmp(ds.pixels, gray, sizeof gray) == 0); /* PNG is lossless */
    CHECK(memcmp(ds.pixels + W * H, second, sizeof second) == 0);
    double jpeg_error = 0;
    for (int i = 0; i < W * H; i++) jpeg_error += abs((int)ds.pixels[2 * W * H + i] - smooth[i]);
    CHECK_MSG(jpeg_error / (W * H) < 4.0, "JPEG mean abs error %.2f", jpeg_error / (W * H));
    /* rgb.png sorts after photo.jpg: luma of (200, 100, 50) is about 124 */
    for (int i = 0; i < W * H; i++) CHECK(abs((int)ds.pixels[3 * W * H + i] - 124) <= 4);
    nn_dataset_free(&ds);
    tf_remove_tree(dir);
}

TEST(data_folders_errors) {
    char dir[64], cls[512], path[600];
    uint8_t gray[8 * 8];
    gradient_image(gray, 8, 8, 1);
    nn_dataset ds;
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    CHECK_FAILS_WITH(nn_dataset_load_folders(dir, &ds), "no class folders");
    /* an image of another size names the file */
    CHECK(tf_subdir(dir, "0", cls, sizeof cls));
    snprintf(path, sizeof path, "%s/a.png", cls);
    CHECK(tf_write_png(path, gray, 8, 8, 1));
    snprintf(path, sizeof path, "%s/b.png", cls);
    CHECK(tf_write_png(path, gray, 4, 8, 1));
    CHECK_FAILS_WITH(nn_dataset_load_folders(dir, &ds), "b.png: image is 4x8, but the dataset's images are 8x8");
    CHECK(remove(path) == 0);
    /* a class folder with nothing readable names the folder */
    CHECK(tf_subdir(dir, "1", cls, sizeof cls));
    snprintf(path, sizeof path, "%s/readme.txt", cls);
    CHECK(tf_write_bytes(path, "hello", 5));
    CHECK_FAILS_WITH(nn_dataset_load_folders(dir, &ds), "/1: class folder has no readable");
    CHECK(ds.pixels == NULL);
    tf_remove_tree(dir);
}

TEST(data_validation_split_is_a_seeded_partition) {
    char dir[64], cls[512], path[600];
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    enum { PER_CLASS = 10 };
    for (int c = 0; c < 2; c++) {
        char name[8];
        snprintf(name, sizeof name, "c%d", c);
        CHECK(tf_subdir(dir, name, cls, sizeof cls));
        for (int i = 0; i < PER_CLASS; i++) {
            uint8_t px[3 * 2];
            memset(px, c * PER_CLASS + i, sizeof px); /* the image's id in every pixel */
            snprintf(path, sizeof path, "%s/%02d.png", cls, i);
            CHECK(tf_write_png(path, px, 3, 2, 1));
        }
    }
    nn_dataset train, val, train2, val2;
    bool is_validation = false;
    CHECK(nn_dataset_load_dir(dir, 0.25, 7, &train, &val, &is_validation) == NN_OK);
    CHECK(is_validation && train.count == 15 && val.count == 5);
    int seen[2 * PER_CLASS] = {0};
    for (int64_t i = 0; i < train.count; i++) {
        seen[train.pixels[i * 6]]++;
        CHECK(train.labels[i] == train.pixels[i * 6] / PER_CLASS);
    }
    for (int64_t i = 0; i < val.count; i++) {
        seen[val.pixels[i * 6]]++;
        CHECK(val.labels[i] == val.pixels[i * 6] / PER_CLASS);
    }
    for (int i = 0; i < 2 * PER_CLASS; i++) CHECK(seen[i] == 1);
    /* same seed, same split; another seed, another split */
    CHECK(nn_dataset_load_dir(dir, 0.25, 7, &train2, &val2, NULL) == NN_OK);
    CHECK(memcmp(val.pixels, val2.pixels, 5 * 6) == 0);
    nn_dataset_free(&train2), nn_dataset_free(&val2);
    int differs = 0;
    for (uint64_t seed = 8; seed < 12 && !differs; seed++) {
        CHECK(nn_dataset_load_dir(dir, 0.25, seed, &train2, &val2, NULL) == NN_OK);
        differs = memcmp(val.pixels, val2.pixels, 5 * 6) != 0;
        nn_dataset_free(&train2), nn_dataset_free(&val2);
    }
    CHECK(differs);
    CHECK_FAILS_WITH(nn_dataset_load_dir(dir, 0.0, 7, &train2, &val2, NULL), "validation fraction");
    nn_dataset_free(&train), nn_dataset_free(&val);

    /* DIR/train and DIR/test: no split */
    char split[512];
    CHECK(tf_subdir(dir, "train", split, sizeof split));
    CHECK(tf_subdir(split, "x", cls, sizeof cls));
    uint8_t px[6] = {1, 2, 3, 4, 5, 6};
    snprintf(path, sizeof path, "%s/a.png", cls);
    CHECK(tf_write_png(path, px, 3, 2, 1));
    CHECK(tf_subdir(dir, "test", split, sizeof split));
    CHECK(tf_subdir(split, "x", cls, sizeof cls));
    snprintf(path, sizeof path, "%s/b.png", cls);
    CHECK(tf_write_png(path, px, 3, 2, 1));
    CHECK(nn_dataset_load_dir(dir, 0.25, 7, &train, &val, &is_validation) == NN_OK);
    CHECK(!is_validation && train.count == 1 && val.count == 1);
    nn_dataset_free(&train), nn_dataset_free(&val);
    tf_remove_tree(dir);
}

TEST(data_shuffle_gather_stats) {
    enum { N = 37 };
    int64_t a[N], b[N], c[N];
    CHECK(nn_shuffle_indices(a, N, 5, 0) == NN_OK);
    CHECK(nn_shuffle_indices(b, N, 5, 0) == NN_OK);
    CHECK(nn_shuffle_indices(c, N, 5, 1) == NN_OK);
    CHECK(memcmp(a, b, sizeof a) == 0);
    CHECK(memcmp(a, c, sizeof a) != 0);
    int seen[N] = {0}, moved = 0;
    for (int i = 0; i < N; i++) {
        CHECK(a[i] >= 0 && a[i] < N);
        if (a[i] >= 0 && a[i] < N) seen[a[i]]++;
        moved += a[i] != i;
    }
    for (int i = 0; i < N; i++) CHECK(seen[i] == 1);
    CHECK(moved > N / 2);

    /* gather and stats against double-precision loops */
    nn_dataset ds = {.count = N, .channels = 1, .height = 3, .width = 5, .classes = 4};
    uint8_t pixels[N * 15];
    int32_t labels[N];
    random_bytes(9, pixels, sizeof pixels);
    for (int i = 0; i < N; i++) labels[i] = i % 4;
    ds.pixels = pixels;
    ds.labels = labels;
    double mean, std, sum = 0, sum_sq = 0;
    nn_dataset_pixel_stats(&ds, &mean, &std);
    for (int i = 0; i < N * 15; i++) sum += pixels[i] / 255.0;
    for (int i = 0; i < N * 15; i++) sum_sq += (pixels[i] / 255.0 - sum / (N * 15)) * (pixels[i] / 255.0 - sum / (N * 15));
    CHECK_CLOSE(mean, sum / (N * 15), 1e-12);
    CHECK_CLOSE(std, sqrt(sum_sq / (N * 15)), 1e-9);
    float x[7 * 15];
    int32_t y[7];
    int64_t pick[7] = {36, 0, 5, 5, 17, 2, 30};
    CHECK(nn_dataset_gather(&ds, pick, 7, 0.3f, 0.7f, x, y) == NN_OK);
    for (int i = 0; i < 7; i++) {
        CHECK(y[i] == labels[pick[i]]);
        for (int k = 0; k < 15; k++)
            CHECK_CLOSE(x[i * 15 + k], (pixels[pick[i] * 15 + k] / 255.0 - 0.3) / 0.7, 1e-6);
    }
    int64_t bad[1] = {N};
    CHECK_FAILS_WITH(nn_dataset_gather(&ds, bad, 1, 0, 1, x, y), "outside");
    CHECK_FAILS_WITH(nn_dataset_gather(&ds, pick, 1, 0, 0, x, y), "std must be > 0");
}
