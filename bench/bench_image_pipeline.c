/* Images per second through the image loader (include/nn_loader.h): JPEG
 * photos decoded, resized to 224x224 RGB and normalised on N worker
 * threads, for a table of thread counts. Not a test: it prints figures for
 * bench/README.md.
 *
 * The photos are generated here (PetImages-like: 500x375 and nearby sizes,
 * RGB, libjpeg quality 90) with content that costs what photos cost to
 * decode: smooth gradients and shapes plus sensor-like noise, so the
 * entropy-coded data is not trivially small (about 24 KB a photo). They
 * are written once to --dir (default /tmp/nn_bench_images_v2) and reused.
 *
 *   build/bench/bench_image_pipeline [--threads 1,2,4,8,16] [--images 512]
 *       [--epoch-images 4096] [--size 224] [--batch 128] [--dir DIR] [--epochs 3]
 *
 * An epoch is --epoch-images images: the --images distinct photos over and
 * over (enough work for 16 threads to be measured; the files sit in the
 * page cache either way, as PetImages' do from a run's second epoch).
 *
 * Rows: "seed" = the whole photo stretched to 224x224 (the seed's resize,
 * NN_CROP_NONE, also the evaluation pass); "train" = RandomResizedCrop +
 * horizontal flip + shuffle (the AlexNet training recipe). Each row is the
 * best of --epochs epochs after one warm-up epoch. A single-thread
 * breakdown of one photo's cost follows the table. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <jpeglib.h>

#include "data/image_internal.h"
#include "nn_loader.h"

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rng_state = 0x853c49e6748fea9bull;
static uint32_t next_random(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

/* A photo-like picture: a lit gradient background, a few soft discs, and
 * triangular noise of up to 10 levels (noise is what makes real photos
 * expensive to entropy-decode). */
static void paint(uint8_t *px, int w, int h, int seed) {
    double cx[4], cy[4], r[4], col[4][3];
    for (int k = 0; k < 4; k++) {
        cx[k] = next_random() % w, cy[k] = next_random() % h, r[k] = 30 + next_random() % 120;
        for (int c = 0; c < 3; c++) col[k][c] = 40 + next_random() % 180;
    }
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            for (int c = 0; c < 3; c++) {
                double v = 60 + 100.0 * x / w + 50.0 * y / h * (c + 1) / 3 + 20 * sin((x + seed) / 17.0 + c);
                for (int k = 0; k < 4; k++) {
                    double d = hypot(x - cx[k], y - cy[k]) / r[k];
                    if (d < 1) v = v * d + col[k][c] * (1 - d);
                }
                double noise = ((int)(next_random() % 13) + (int)(next_random() % 13) - 12) * 0.8;
                v += noise;
                px[(y * w + x) * 3 + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
        }
}

static int write_jpeg(const char *path, const uint8_t *px, int w, int h) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    struct jpeg_compress_struct cinfo;
    struct jpeg_error_mgr err;
    cinfo.err = jpeg_std_error(&err);
    jpeg_create_compress(&cinfo);
    jpeg_stdio_dest(&cinfo, f);
    cinfo.image_width = (JDIMENSION)w;
    cinfo.image_height = (JDIMENSION)h;
    cinfo.input_components = 3;
    cinfo.in_color_space = JCS_RGB;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, 90, TRUE);
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW row = (JSAMPROW)(px + (size_t)cinfo.next_scanline * w * 3);
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    return fclose(f) == 0;
}

/* DIR/cat and DIR/dog with `count` photos in all, unless already there. */
static int make_photos(const char *dir, int count) {
    char path[4200];
    snprintf(path, sizeof path, "%s/dog/%05d.jpg", dir, count - 1);
    struct stat st;
    if (stat(path, &st) == 0) return 1;
    fprintf(stderr, "writing %d JPEG photos to %s ...\n", count, dir);
    mkdir(dir, 0755);
    for (int c = 0; c < 2; c++) {
        snprintf(path, sizeof path, "%s/%s", dir, c ? "dog" : "cat");
        if (mkdir(path, 0755) != 0 && errno != EEXIST) return 0;
    }
    uint8_t *px = malloc(500 * 500 * 3);
    for (int i = 0; i < count; i++) {
        /* PetImages' usual sizes: mostly 500 x 375-ish, some portrait. */
        int w = 500 - (int)(next_random() % 120), h = 375 - (int)(next_random() % 60);
        if (i % 5 == 4) { int t = w; w = h; h = t; }
        paint(px, w, h, i);
        snprintf(path, sizeof path, "%s/%s/%05d.jpg", dir, i % 2 ? "dog" : "cat", i);
        if (!write_jpeg(path, px, w, h)) {
            free(px);
            return 0;
        }
    }
    free(px);
    return 1;
}

/* Best images/s over `epochs` epochs of `subset` (after a warm-up epoch). */
static double run_loader(const nn_image_index *index, const int64_t *subset, int64_t count,
                         nn_loader_options o, int epochs) {
    nn_loader *loader = nn_loader_new(index, subset, count, &o);
    if (!loader) {
        fprintf(stderr, "bench_image_pipeline: %s\n", nn_last_error());
        exit(1);
    }
    double best = 0;
    for (int e = 0; e <= epochs; e++) {
        double start = now_seconds();
        if (nn_loader_start_epoch(loader, e) != NN_OK) break;
        nn_batch b;
        int64_t seen = 0;
        volatile float sink = 0;
        while (nn_loader_next(loader, &b) == NN_OK && b.count > 0) {
            sink += b.images[0]; /* the consumer touches each batch, as a trainer would */
            seen += b.count;
        }
        double rate = seen / (now_seconds() - start);
        if (e > 0 && rate > best) best = rate; /* epoch 0 warms the page cache */
    }
    char first[600];
    if (nn_loader_failures(loader, first, sizeof first))
        fprintf(stderr, "bench_image_pipeline: decode failures, first %s\n", first);
    nn_loader_free(loader);
    return best;
}

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void fixed_box(void *user, int width, int height, nn_box *box) {
    (void)width, (void)height;
    *box = *(const nn_box *)user;
}

static double half_open_uniform(void *state) {
    (void)state;
    return next_random() / 2147483648.0;
}

/* One thread, one photo at a time: where an image's time goes, in thread
 * CPU time (so that other processes on a shared machine do not count). */
static void breakdown(const nn_image_index *index, int size, int n) {
    enum { READ, FULL, SCALED, BOX_WHOLE, BOX_PART, RESIZE, VERIFY, STEPS };
    static const char *names[STEPS] = {
        "read file", "decode whole photo, full size", "decode whole photo at the DCT scale for the target",
        "random-resized box: decode every row", "random-resized box: decode only its rows/columns",
        "bilinear resize + normalise to planar float",
        "nn_image_index_verify's check (grey, 1/8 scale)"};
    double t[STEPS] = {0};
    nn_image image = {0};
    float *out = malloc(sizeof(float) * 3 * size * size);
    const float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
    static uint8_t data[1 << 22];
    char why[256];
    int64_t scaled_pixels = 0, full_pixels = 0;
    n = n < index->count ? n : (int)index->count;
    for (int i = 0; i < n; i++) {
        double t0 = cpu_seconds();
        FILE *f = fopen(index->paths[i], "rb");
        size_t bytes = f ? fread(data, 1, sizeof data, f) : 0;
        if (f) fclose(f);
        double t1 = cpu_seconds();
        nn_box box, crop;
        nn_decode_request full = {.channels = 3}, scaled = {.channels = 3, .min_width = size, .min_height = size};
        nn_decode_image(data, bytes, &full, &image, &box, why, sizeof why);
        int width = image.width, height = image.height;
        full_pixels += (int64_t)width * height;
        double t2 = cpu_seconds();
        nn_decode_image(data, bytes, &scaled, &image, &box, why, sizeof why);
        scaled_pixels += (int64_t)image.width * image.height;
        double t3 = cpu_seconds();
        nn_crop_box_for(NN_CROP_RANDOM_RESIZED, width, height, size, size, half_open_uniform, NULL, &crop);
        nn_decode_request boxed = {.channels = 3, .min_width = size, .min_height = size,
                                   .choose_box = fixed_box, .user = &crop, .whole_jpeg = true};
        nn_decode_image(data, bytes, &boxed, &image, &box, why, sizeof why);
        double t4 = cpu_seconds();
        boxed.whole_jpeg = false;
        nn_decode_image(data, bytes, &boxed, &image, &box, why, sizeof why);
        double t5 = cpu_seconds();
        nn_image_resize_bilinear(image.pixels, image.width, image.height, 3, box.x0, box.y0, box.w,
                                 box.h, false, mean, std, out, size, size);
        double t6 = cpu_seconds();
        nn_decode_request check = {.channels = 1, .min_width = 8, .min_height = 8};
        nn_decode_image(data, bytes, &check, &image, &box, why, sizeof why);
        double t7 = cpu_seconds();
        t[READ] += t1 - t0, t[FULL] += t2 - t1, t[SCALED] += t3 - t2;
        t[BOX_WHOLE] += t4 - t3, t[BOX_PART] += t5 - t4, t[RESIZE] += t6 - t5, t[VERIFY] += t7 - t6;
    }
    printf("\nOne thread, per photo (mean of %d, thread CPU time):\n", n);
    for (int k = 0; k < STEPS; k++) printf("  %-55s %.3f ms\n", names[k], 1e3 * t[k] / n);
    printf("  (at the DCT scale for %dx%d the photos kept %.0f%% of their pixels)\n", size, size,
           100.0 * scaled_pixels / full_pixels);
    free(out);
    free(image.pixels);
}

int main(int argc, char **argv) {
    const char *threads_list = "1,2,4,8,16", *dir = "/tmp/nn_bench_images_v2";
    int images = 512, epoch_images = 4096, size = 224, batch = 128, epochs = 3;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--threads") == 0) threads_list = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--images") == 0) images = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--epoch-images") == 0) epoch_images = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--size") == 0) size = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--batch") == 0) batch = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--epochs") == 0) epochs = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--dir") == 0) dir = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--threads 1,2,4,8,16] [--images N] [--epoch-images M] "
                            "[--size S] [--batch B] [--epochs E] [--dir DIR]\n", argv[0]);
            return 2;
        }
    }
    if (images < 2 || epoch_images < 1 || size < 8 || batch < 1 || epochs < 1) {
        fprintf(stderr, "bench_image_pipeline: need images >= 2, epoch-images >= 1, size >= 8, "
                        "batch >= 1, epochs >= 1\n");
        return 2;
    }
    if (!make_photos(dir, images)) {
        fprintf(stderr, "bench_image_pipeline: cannot write photos to %s (%s)\n", dir, strerror(errno));
        return 1;
    }
    nn_image_index index;
    if (nn_image_index_load(dir, &index) != NN_OK) {
        fprintf(stderr, "bench_image_pipeline: %s\n", nn_last_error());
        return 1;
    }
    /* An epoch of epoch_images: the photos over and over (a subset may repeat). */
    int64_t *subset = malloc(sizeof(int64_t) * (size_t)epoch_images);
    for (int i = 0; i < epoch_images; i++) subset[i] = i % index.count;
    printf("%lld JPEG photos (q90, ~500x375) in %s, epochs of %d -> %dx%d RGB float, batch %d, "
           "prefetch 3\n", (long long)index.count, dir, epoch_images, size, size, batch);
    printf("| threads | seed resize: images/s | per thread | train (random-resized crop + flip): images/s | per thread |\n");
    printf("|---:|---:|---:|---:|---:|\n");
    const char *p = threads_list;
    while (*p) {
        int threads = atoi(p);
        if (threads >= 1) {
            nn_loader_options o = nn_loader_defaults();
            o.height = o.width = size, o.batch = batch, o.threads = threads;
            double seed_rate = run_loader(&index, subset, epoch_images, o, epochs);
            o.shuffle = true, o.flip = true, o.crop = NN_CROP_RANDOM_RESIZED;
            double train_rate = run_loader(&index, subset, epoch_images, o, epochs);
            printf("| %d | %.0f | %.0f | %.0f | %.0f |\n", threads, seed_rate, seed_rate / threads,
                   train_rate, train_rate / threads);
            fflush(stdout);
        }
        const char *comma = strchr(p, ',');
        if (!comma) break;
        p = comma + 1;
    }
    breakdown(&index, size, 200);
    free(subset);
    nn_image_index_free(&index);
    return 0;
}
