/* The image pipeline's pixel steps: bilinear crop-resize against a
 * double-precision reference written the way PyTorch computes it (crop the
 * integer box, then interpolate with align_corners=False), normalisation,
 * crop boxes, and decoding (DCT-scaled JPEG against an analytic image,
 * truncated JPEG, PNG alpha, gray JPEG as RGB). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/dataset_internal.h"
#include "data/image_internal.h"
#include "nn_engine.h"
#include "nn_loader.h"
#include "reference.h"
#include "test.h"
#include "test_files.h"

/* PyTorch's upsample_bilinear2d (align_corners=False) on the crop
 * (x0, y0, w, h) of an interleaved image, channel c, output (ox, oy). */
static double torch_bilinear(const uint8_t *px, int width, int channels, int x0, int y0, int w,
                             int h, int out_w, int out_h, int c, int ox, int oy) {
    double sx = (double)w / out_w, sy = (double)h / out_h;
    double fx = sx * (ox + 0.5) - 0.5, fy = sy * (oy + 0.5) - 0.5;
    if (fx < 0) fx = 0;
    if (fy < 0) fy = 0;
    int ix = (int)fx, iy = (int)fy;
    int ix1 = ix + (ix < w - 1), iy1 = iy + (iy < h - 1);
    double lx = fx - ix, ly = fy - iy;
    if (ix > w - 1) ix = ix1 = w - 1, lx = 0;
    if (iy > h - 1) iy = iy1 = h - 1, ly = 0;
#define P(xx, yy) ((double)px[((size_t)(y0 + (yy)) * width + (x0 + (xx))) * channels + c])
    return (1 - ly) * ((1 - lx) * P(ix, iy) + lx * P(ix1, iy)) +
           ly * ((1 - lx) * P(ix, iy1) + lx * P(ix1, iy1));
#undef P
}

static void random_pixels(uint64_t seed, uint8_t *out, size_t n) {
    ref_rng r = ref_rng_new(seed);
    for (size_t i = 0; i < n; i++) out[i] = (uint8_t)ref_rng_below(&r, 256);
}

TEST(image_resize_matches_torch_reference) {
    enum { W = 13, H = 7 };
    uint8_t px[W * H * 3];
    random_pixels(11, px, sizeof px);
    const float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
    /* boxes (x0, y0, w, h) and output sizes: down, up, odd, 1x1, mixed */
    const int cases[][6] = {{0, 0, 13, 7, 5, 3},  {0, 0, 13, 7, 29, 17}, {2, 1, 9, 5, 4, 6},
                            {3, 2, 1, 1, 3, 2},   {0, 0, 13, 7, 1, 1},   {5, 0, 8, 7, 8, 7},
                            {1, 3, 11, 4, 20, 3}};
    for (int channels = 1; channels <= 3; channels += 2) {
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            const int *cs = cases[k];
            int out_w = cs[4], out_h = cs[5];
            for (int flip = 0; flip <= 1; flip++) {
                float out[3 * 29 * 17];
                CHECK(nn_image_resize_bilinear(px, W, H, channels, cs[0], cs[1], cs[2], cs[3], flip,
                                               mean, std, out, out_w, out_h) == NN_OK);
                double worst = 0;
                for (int c = 0; c < channels; c++)
                    for (int y = 0; y < out_h; y++)
                        for (int x = 0; x < out_w; x++) {
                            int sx = flip ? out_w - 1 - x : x;
                            double p = torch_bilinear(px, W, channels, cs[0], cs[1], cs[2], cs[3],
                                                      out_w, out_h, c, sx, y);
                            double want = (p / 255.0 - mean[c]) / std[c];
                            double got = out[(c * out_h + y) * out_w + x];
                            if (fabs(got - want) > worst) worst = fabs(got - want);
                        }
                /* float32 arithmetic on values of magnitude <= ~2.7 */
                CHECK_MSG(worst < 2e-5, "channels %d case %zu flip %d: worst error %g", channels, k,
                          flip, worst);
            }
        }
    }
}

TEST(image_resize_normalisation_and_errors) {
    /* A constant image: every output is exactly (p / 255 - mean[c]) / std[c]. */
    uint8_t px[5 * 4 * 3];
    for (int i = 0; i < 5 * 4; i++) px[3 * i] = 10, px[3 * i + 1] = 128, px[3 * i + 2] = 250;
    const float mean[3] = {0.1f, 0.5f, 0.9f}, std[3] = {0.5f, 0.25f, 2.0f};
    float out[3 * 3 * 6];
    CHECK(nn_image_resize_bilinear(px, 5, 4, 3, 0.5, 0.25, 4.5, 3.5, false, mean, std, out, 3, 6) == NN_OK);
    const int values[3] = {10, 128, 250};
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < 18; i++)
            CHECK_CLOSE(out[c * 18 + i], (values[c] / 255.0 - mean[c]) / std[c], 1e-6);
    const float bad_std[3] = {0.5f, 0.0f, 1.0f};
    CHECK(nn_image_resize_bilinear(px, 5, 4, 3, 0, 0, 5, 4, false, mean, bad_std, out, 3, 6) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "std[1]") != NULL);
    CHECK(nn_image_resize_bilinear(px, 5, 4, 3, 1, 0, 5, 4, false, mean, std, out, 3, 6) == NN_ERR_ARGUMENT);
    CHECK(strstr(nn_last_error(), "outside the 5x4 image") != NULL);
    CHECK(nn_image_resize_bilinear(px, 5, 4, 2, 0, 0, 5, 4, false, mean, std, out, 3, 6) == NN_ERR_ARGUMENT);
    CHECK(nn_image_resize_bilinear(NULL, 5, 4, 3, 0, 0, 5, 4, false, mean, std, out, 3, 6) == NN_ERR_ARGUMENT);
    nn_clear_error();
}

static double ref_uniform(void *state) { return ref_rng_uniform(state, 0, 1); }

TEST(image_crop_boxes) {
    nn_box box;
    /* Centre crop of a 500x375 photo for 224x224: 375 * 224/256 square, centred. */
    nn_crop_box_for(NN_CROP_CENTER, 500, 375, 224, 224, NULL, NULL, &box);
    CHECK_CLOSE(box.w, 328.125, 1e-12);
    CHECK_CLOSE(box.h, 328.125, 1e-12);
    CHECK_CLOSE(box.x0, (500 - 328.125) / 2, 1e-12);
    CHECK_CLOSE(box.y0, (375 - 328.125) / 2, 1e-12);
    nn_crop_box_for(NN_CROP_NONE, 31, 17, 8, 8, NULL, NULL, &box);
    CHECK(box.x0 == 0 && box.y0 == 0 && box.w == 31 && box.h == 17);
    /* RandomResizedCrop: integer boxes inside the image, area 8%..100%,
     * ratio 3/4..4/3 up to rounding; the fallback for a thin image. */
    ref_rng r = ref_rng_new(5);
    int sizes[][2] = {{500, 375}, {37, 53}, {224, 224}, {9, 7}};
    for (int s = 0; s < 4; s++)
        for (int i = 0; i < 200; i++) {
            int W = sizes[s][0], H = sizes[s][1];
            nn_crop_box_for(NN_CROP_RANDOM_RESIZED, W, H, 224, 224, ref_uniform, &r, &box);
            CHECK(box.x0 == floor(box.x0) && box.w == floor(box.w) && box.w >= 1 && box.h >= 1);
            CHECK(box.x0 >= 0 && box.y0 >= 0 && box.x0 + box.w <= W && box.y0 + box.h <= H);
            if (W >= 100 && H >= 100) {
                double area = box.w * box.h / ((double)W * H), ratio = box.w / box.h;
                CHECK_MSG(area > 0.07 && area <= 1.0 && ratio > 0.74 && ratio < 1.35,
                          "%dx%d: box %gx%g area %.3f ratio %.3f", W, H, box.w, box.h, area, ratio);
            }
        }
    nn_crop_box_for(NN_CROP_RANDOM_RESIZED, 400, 20, 224, 224, ref_uniform, &r, &box);
    /* No box of ratio <= 4/3 and area >= 8% fits 400x20 often: either found or the fallback 27x20 */
    CHECK(box.h <= 20 && box.x0 + box.w <= 400);
}

/* A smooth test picture: gradients and long waves, so that a reduced-scale
 * decode and a full decode + resize should both approach the function. */
static double picture(int c, double x, double y) {
    return 128 + 60 * sin(x / 23.0 + c) * cos(y / 31.0 - c) + 0.12 * (x - 200) * (c == 1 ? -1 : 1);
}

TEST(image_jpeg_dct_scaled_decode) {
    enum { W = 401, H = 303, OW = 48, OH = 40 };
    uint8_t *px = malloc(W * H * 3);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int c = 0; c < 3; c++) {
                double v = picture(c, x, y);
                px[(y * W + x) * 3 + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : lround(v));
            }
    char dir[64], path[128];
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/photo.jpg", dir);
    CHECK(tf_write_jpeg(path, px, W, H, 3, 95));
    FILE *f = fopen(path, "rb");
    uint8_t *data = malloc(1 << 20);
    size_t size = fread(data, 1, 1 << 20, f);
    fclose(f);
    char why[256];
    nn_image scaled = {0}, full = {0};
    nn_box scaled_box, full_box;
    nn_decode_request ask_scaled = {.channels = 3, .min_width = OW, .min_height = OH};
    nn_decode_request ask_full = {.channels = 3};
    CHECK(nn_decode_image(data, size, &ask_scaled, &scaled, &scaled_box, why, sizeof why) == NN_OK);
    CHECK(nn_decode_image(data, size, &ask_full, &full, &full_box, why, sizeof why) == NN_OK);
    /* 401 x 1/8 = 50 >= 48 but 303 x 1/8 = 38 < 40: scale 2/8, ceil(401/4) x ceil(303/4) */
    CHECK_MSG(scaled.width == 101 && scaled.height == 76, "scaled decode %dx%d", scaled.width, scaled.height);
    CHECK(full.width == W && full.height == H);
    CHECK_CLOSE(scaled_box.w, 100.25, 1e-9);
    CHECK_CLOSE(scaled_box.h, 75.75, 1e-9);
    const float zero[3] = {0, 0, 0}, unit[3] = {1.0f / 255, 1.0f / 255, 1.0f / 255}; /* output = pixel value */
    float a[3 * OW * OH], b[3 * OW * OH];
    CHECK(nn_image_resize_bilinear(scaled.pixels, scaled.width, scaled.height, 3, 0, 0, scaled_box.w,
                                   scaled_box.h, false, zero, unit, a, OW, OH) == NN_OK);
    CHECK(nn_image_resize_bilinear(full.pixels, W, H, 3, 0, 0, W, H, false, zero, unit, b, OW, OH) == NN_OK);
    /* Against the picture at each output pixel's centre. The picture's
     * finest detail has a wavelength of 2*pi*23 = 144 source pixels (18
     * output pixels), so the DCT scaling's low-pass (a 4-pixel box here)
     * and the bilinear step move it by well under a level; JPEG q95 adds
     * about half a level. Measured: 0.41 (DCT-scaled) and 0.54 (full)
     * mean, 2.6 max apart. A box mapped with the decoded size's ratio
     * (101/401) instead of the exact scale (2/8) gives 1.8 mean and 9.2
     * max, which these bounds catch. */
    double err_a = 0, err_b = 0, max_ab = 0;
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < OH; y++)
            for (int x = 0; x < OW; x++) {
                double want = picture(c, (x + 0.5) * W / OW - 0.5, (y + 0.5) * H / OH - 0.5);
                int i = (c * OH + y) * OW + x;
                err_a += fabs(a[i] - want);
                err_b += fabs(b[i] - want);
                if (fabs(a[i] - b[i]) > max_ab) max_ab = fabs(a[i] - b[i]);
            }
    err_a /= 3 * OW * OH, err_b /= 3 * OW * OH;
    CHECK_MSG(err_a < 1.2 && err_b < 1.2, "mean abs error: DCT-scaled %.2f, full %.2f levels", err_a, err_b);
    CHECK_MSG(max_ab < 5, "DCT-scaled vs full decode: max difference %.2f levels", max_ab);
    /* Truncated: half the file. libjpeg would fill the rest with grey. */
    CHECK(nn_decode_image(data, size / 2, &ask_full, &full, &full_box, why, sizeof why) == NN_ERR_IO);
    CHECK_MSG(strstr(why, "truncated") != NULL, "reason: %s", why);
    /* The LeNet path (nn_decode_gray) refuses it too. */
    nn_gray_image cut;
    CHECK(nn_decode_gray(data, size / 2, &cut, why, sizeof why) == NN_ERR_IO && cut.pixels == NULL);
    {   /* Luma: the JPEG's own grayscale conversion. */
        nn_decode_request gray = {.channels = 1};
        CHECK(nn_decode_image(data, size, &gray, &full, &full_box, why, sizeof why) == NN_OK);
        CHECK(full.channels == 1 && full.width == W);
        /* luma of the picture at the centre, within JPEG error */
        int x = 200, y = 150;
        double luma = 0.299 * picture(0, x, y) + 0.587 * picture(1, x, y) + 0.114 * picture(2, x, y);
        CHECK_MSG(fabs(full.pixels[y * W + x] - luma) < 4, "luma %d want %.1f", full.pixels[y * W + x], luma);
    }
    free(scaled.pixels), free(full.pixels), free(data), free(px);
    tf_remove_tree(dir);
}

static void fixed_box(void *user, int width, int height, nn_box *box) {
    (void)width, (void)height;
    *box = *(const nn_box *)user;
}

TEST(image_jpeg_partial_decode_matches_full) {
    /* A box (random-resized-crop style) decodes only its rows and
     * columns; the resized result must equal the one from a full decode,
     * at full scale and at a DCT scale. */
    enum { W = 401, H = 303 };
    uint8_t *px = malloc(W * H * 3);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int c = 0; c < 3; c++) {
                double v = picture(c, x, y) + 20 * sin(x * 1.7 + y * 0.9 + c); /* some fine detail */
                px[(y * W + x) * 3 + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : lround(v));
            }
    char dir[64], path[128], why[256];
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    uint8_t *data = malloc(1 << 20);
#ifdef _WIN32
    printf("  skipped on Windows: %s: the progressive JPEG (WIC's encoder writes baseline files alone)\n", __func__);
    const int last_kind = 0;
#else
    const int last_kind = 1;
#endif
    for (int progressive = 0; progressive <= last_kind; progressive++) {
        snprintf(path, sizeof path, "%s/photo.jpg", dir);
        CHECK(progressive ? tf_write_jpeg_progressive(path, px, W, H, 3, 90) : tf_write_jpeg(path, px, W, H, 3, 90));
        FILE *f = fopen(path, "rb");
        size_t size = fread(data, 1, 1 << 20, f);
        fclose(f);
        const nn_box boxes[] = {{37, 51, 190, 120}, {0, 0, 13, 9}, {388, 290, 13, 13}, {101, 0, 300, 303},
                                {0, 202, 401, 101}};
        const float zero[3] = {0, 0, 0}, unit[3] = {1.0f / 255, 1.0f / 255, 1.0f / 255}; /* output = level */
        for (size_t k = 0; k < sizeof boxes / sizeof boxes[0]; k++)
            for (int min = 0; min <= 12; min += 12) {
                /* min 12: a small target, so that a DCT scale is used (both ways) */
                nn_box want = boxes[k], part_box, whole_box;
                nn_decode_request part = {.channels = 3, .min_width = min, .min_height = min,
                                          .choose_box = fixed_box, .user = &want};
                nn_decode_request whole = part;
                whole.whole_jpeg = true;
                nn_image a = {0}, b = {0};
                CHECK(nn_decode_image(data, size, &part, &a, &part_box, why, sizeof why) == NN_OK);
                CHECK(nn_decode_image(data, size, &whole, &b, &whole_box, why, sizeof why) == NN_OK);
                CHECK_MSG(a.width * a.height < b.width * b.height || k == 3,
                          "box %zu: decoded %dx%d of %dx%d", k, a.width, a.height, b.width, b.height);
                float ra[3 * 20 * 16], rb[3 * 20 * 16];
                CHECK(nn_image_resize_bilinear(a.pixels, a.width, a.height, 3, part_box.x0, part_box.y0,
                                               part_box.w, part_box.h, false, zero, unit, ra, 20, 16) == NN_OK);
                CHECK(nn_image_resize_bilinear(b.pixels, b.width, b.height, 3, whole_box.x0, whole_box.y0,
                                               whole_box.w, whole_box.h, false, zero, unit, rb, 20, 16) == NN_OK);
                double worst = 0;
                for (int i = 0; i < 3 * 20 * 16; i++)
                    if (fabs(ra[i] - rb[i]) > worst) worst = fabs(ra[i] - rb[i]);
                /* libjpeg-turbo crops and skips without changing a pixel; the
                 * float arithmetic is the same up to the box's offset. */
                CHECK_MSG(worst <= 1e-3, "progressive %d box %zu min %d: worst difference %g levels (%dx%d of %dx%d decoded)",
                          progressive, k, min, worst, a.width, a.height, b.width, b.height);
                free(a.pixels), free(b.pixels);
            }
        /* A box at the top of a truncated file: the missing rows are skipped,
         * yet the damage is still found. */
        nn_box top = {0, 0, 50, 40};
        nn_decode_request part = {.channels = 3, .choose_box = fixed_box, .user = &top};
        nn_image a = {0};
        nn_box got_box;
        CHECK(nn_decode_image(data, size * 2 / 3, &part, &a, &got_box, why, sizeof why) == NN_ERR_IO);
        CHECK_MSG(strstr(why, "truncated") != NULL, "progressive %d: reason: %s", progressive, why);
        free(a.pixels);
    }
    free(data), free(px);
    tf_remove_tree(dir);
}

static size_t read_all(const char *path, uint8_t *data, size_t capacity) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(data, 1, capacity, f);
    fclose(f);
    return n;
}

TEST(image_png_alpha_dropped_and_gray_jpeg_as_rgb) {
    char dir[64], path[128], why[256];
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    enum { W = 5, H = 3 };
    /* RGBA with alpha 0, 7 and 255: the colour is kept as stored (Pillow's
     * convert("RGB")), never composited onto whatever the buffer held. */
    uint8_t rgba[W * H * 4];
    random_pixels(3, rgba, sizeof rgba);
    for (int i = 0; i < W * H; i++) rgba[4 * i + 3] = (uint8_t)(i % 3 == 0 ? 0 : i % 3 == 1 ? 7 : 255);
    snprintf(path, sizeof path, "%s/a.png", dir);
    CHECK(tf_write_png(path, rgba, W, H, 4));
    uint8_t data[4096];
    size_t size = read_all(path, data, sizeof data);
    nn_image im = {0};
    nn_box box;
    nn_decode_request rgb = {.channels = 3};
    memset(&im, 0, sizeof im);
    im.pixels = malloc(1000), im.capacity = 1000;
    memset(im.pixels, 0xAB, 1000); /* a reused buffer's old contents */
    CHECK(nn_decode_image(data, size, &rgb, &im, &box, why, sizeof why) == NN_OK);
    CHECK(im.width == W && im.height == H && im.channels == 3);
    for (int i = 0; i < W * H; i++)
        for (int c = 0; c < 3; c++) CHECK(im.pixels[3 * i + c] == rgba[4 * i + c]);
    /* The same PNG asked as grey: luma 0.299 R + 0.587 G + 0.114 B of the
     * stored colour (as libjpeg and Pillow compute it), alpha ignored. */
    nn_decode_request luma = {.channels = 1};
    CHECK(nn_decode_image(data, size, &luma, &im, &box, why, sizeof why) == NN_OK);
    CHECK(im.channels == 1 && im.width == W && im.height == H);
    for (int i = 0; i < W * H; i++) {
        double want = 0.299 * rgba[4 * i] + 0.587 * rgba[4 * i + 1] + 0.114 * rgba[4 * i + 2];
        CHECK_MSG(fabs(im.pixels[i] - want) <= 0.51, "pixel %d: %d, want %.2f", i, im.pixels[i], want);
    }
    /* A grayscale JPEG asked as RGB: three equal channels. */
    uint8_t gray[W * H];
    random_pixels(4, gray, sizeof gray);
    snprintf(path, sizeof path, "%s/g.jpg", dir);
    CHECK(tf_write_jpeg(path, gray, W, H, 1, 90));
    size = read_all(path, data, sizeof data);
    CHECK(nn_decode_image(data, size, &rgb, &im, &box, why, sizeof why) == NN_OK);
    CHECK(im.channels == 3 && im.width == W);
    for (int i = 0; i < W * H; i++)
        CHECK(im.pixels[3 * i] == im.pixels[3 * i + 1] && im.pixels[3 * i] == im.pixels[3 * i + 2]);
    /* Not an image, empty. */
    CHECK(nn_decode_image((const uint8_t *)"GIF89a..", 8, &rgb, &im, &box, why, sizeof why) == NN_ERR_IO);
    CHECK(strstr(why, "neither PNG nor JPEG") != NULL);
    CHECK(nn_decode_image(data, 0, &rgb, &im, &box, why, sizeof why) == NN_ERR_IO);
    CHECK(strstr(why, "empty") != NULL);
    free(im.pixels);
    tf_remove_tree(dir);
}

/* A box given as fractions of whatever size the header declares. */
static void fraction_box(void *user, int width, int height, nn_box *box) {
    const double *f = user; /* x0, y0, w, h in [0, 1], x0 + w <= 1, y0 + h <= 1 */
    *box = (nn_box){f[0] * width, f[1] * height, f[2] * width, f[3] * height};
}

TEST(image_decode_survives_damaged_files) {
    /* Random byte damage, truncation and random boxes on a small JPEG and
     * PNG: every outcome is NN_OK or NN_ERR_IO with a reason, and a
     * success yields a box inside the decoded image (ASan watches the rest). */
    enum { W = 37, H = 23 };
    uint8_t px[W * H * 3];
    random_pixels(8, px, sizeof px);
    char dir[64], path[128], why[256];
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    static uint8_t files[2][8192];
    size_t sizes[2];
    snprintf(path, sizeof path, "%s/a.jpg", dir);
    CHECK(tf_write_jpeg(path, px, W, H, 3, 80));
    sizes[0] = read_all(path, files[0], sizeof files[0]);
    snprintf(path, sizeof path, "%s/a.png", dir);
    CHECK(tf_write_png(path, px, W, H, 3));
    sizes[1] = read_all(path, files[1], sizeof files[1]);
    ref_rng r = ref_rng_new(99);
    nn_image im = {0};
    static uint8_t damaged[8192];
    int ok = 0, refused = 0;
    for (int trial = 0; trial < 400; trial++) {
        int which = trial % 2;
        size_t size = sizes[which];
        memcpy(damaged, files[which], size);
        int hits = 1 + (int)ref_rng_below(&r, 4);
        for (int h = 0; h < hits; h++) damaged[ref_rng_below(&r, (int64_t)size)] = (uint8_t)ref_rng_below(&r, 256);
        if (trial % 5 == 0) size = (size_t)ref_rng_below(&r, (int64_t)size);
        double fx = ref_rng_uniform(&r, 0, 0.5), fy = ref_rng_uniform(&r, 0, 0.5);
        double fractions[4] = {fx, fy, ref_rng_uniform(&r, 0.01, 1 - fx), ref_rng_uniform(&r, 0.01, 1 - fy)};
        nn_decode_request request = {.channels = trial % 3 ? 3 : 1, .min_width = (int)ref_rng_below(&r, 20),
                                     .min_height = (int)ref_rng_below(&r, 20), .choose_box = fraction_box,
                                     .user = fractions};
        nn_box box;
        why[0] = '\0';
        nn_status status = nn_decode_image(damaged, size, &request, &im, &box, why, sizeof why);
        CHECK_MSG(status == NN_OK || (status == NN_ERR_IO && why[0]), "trial %d: status %d, why '%s'", trial, status, why);
        if (status == NN_OK) {
            ok++;
            CHECK_MSG(box.x0 >= 0 && box.y0 >= 0 && box.x0 + box.w <= im.width + 1e-9 &&
                          box.y0 + box.h <= im.height + 1e-9,
                      "trial %d: box (%g, %g, %g, %g) outside the decoded %dx%d", trial, box.x0, box.y0,
                      box.w, box.h, im.width, im.height);
            float out[3 * 4 * 3];
            const float zero[3] = {0, 0, 0}, one[3] = {1, 1, 1};
            CHECK(nn_image_resize_bilinear(im.pixels, im.width, im.height, im.channels, box.x0, box.y0,
                                           box.w, box.h, false, zero, one, out, 4, 3) == NN_OK);
        } else {
            refused++;
        }
    }
    CHECK_MSG(ok > 10 && refused > 10, "decoded %d, refused %d", ok, refused);
    free(im.pixels);
    tf_remove_tree(dir);
}
