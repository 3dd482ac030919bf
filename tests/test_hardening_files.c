/* Issue 25, the files half: what a careless or hostile user can hand the
 * readers and the savers (FIFOs, links, folders, lying headers, truncated
 * gzip, 16-bit and gamma-tagged PNGs, class folders with odd entries). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#ifndef _WIN32
#include <sys/wait.h>
#endif

#include "data/image_internal.h"
#include "io/atomic_file.h"
#include "platform/files.h"
#include "nn_data.h"
#include "nn_engine.h"
#include "nn_loader.h"
#include "test.h"
#include "test_files.h"

#define CHECK_MESSAGE_HAS(text)                                                                  \
    CHECK_MSG(strstr(nn_last_error(), (text)) != NULL, "message lacks \"%s\": %s", (text),        \
              nn_last_error())

static nn_ctx *cpu_ctx(void) {
    nn_ctx_options o = {.device = "cpu", .threads = 1, .seed = 3};
    return nn_ctx_new(&o);
}

static int count_temp_files(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *entry; (entry = readdir(d)) != NULL;) n += strstr(entry->d_name, ".tmp.") != NULL;
    closedir(d);
    return n;
}

/* The POSIX-only cases (FIFOs, symbolic links, permission bits, fork) on
 * the Windows build: said by name with the reason, and the test returns. */
#ifdef _WIN32
#define SKIP_ON_WINDOWS(why)                                                   \
    do {                                                                       \
        printf("  skipped on Windows: %s: %s\n", __func__, (why));             \
        return;                                                                \
    } while (0)
#else
#define SKIP_ON_WINDOWS(why) ((void)0)
#endif

#ifndef _WIN32

/* Runs `body` in a child with a deadline: a reader that blocks on a FIFO
 * is a failure here instead of a test run that never ends. */
static void check_in_child_within(int seconds, void (*body)(const char *), const char *arg) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        alarm((unsigned)seconds);
        body(arg);
        _exit(nn_test_failures() ? 1 : 0);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "child %s (signal %d: 14 is the deadline, a reader blocked)",
              WIFEXITED(status) ? "failed its checks" : "was killed", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
#endif

#ifndef _WIN32
static void readers_refuse_fifo(const char *dir) {
    char fifo[256], labels[256];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    snprintf(labels, sizeof labels, "%s/labels", dir);
    uint8_t label = 1;
    CHECK(tf_write_idx(labels, 0x801, (uint32_t[]){1}, 1, &label, 1, 0));
    nn_ctx *ctx = cpu_ctx();
    nn_module *net = nn_lenet5(ctx, NN_INIT_KAIMING_UNIFORM);
    CHECK(nn_load_module(net, fifo) == NN_ERR_IO);
    CHECK_MESSAGE_HAS(fifo);
    CHECK_MESSAGE_HAS("FIFO");
    nn_tensor *params[64];
    int count = nn_module_param_count(net);
    for (int i = 0; i < count; i++) params[i] = nn_module_param(net, i);
    nn_optimizer *opt = nn_sgd_new(params, count, &(nn_sgd_options){.lr = 0.1f});
    nn_train_progress progress;
    CHECK(nn_load_train_state(fifo, net, opt, &progress) == NN_ERR_IO);
    CHECK_MESSAGE_HAS(fifo);
    CHECK_MESSAGE_HAS("FIFO");
    nn_dataset ds;
    CHECK(nn_dataset_load_idx(fifo, labels, &ds) == NN_ERR_IO);
    CHECK_MESSAGE_HAS(fifo);
    CHECK_MESSAGE_HAS("FIFO");
    nn_optimizer_free(opt);
    nn_module_free(net);
    nn_ctx_free(ctx);
}

#endif

TEST(hardening_readers_refuse_a_fifo_without_blocking) {
#ifdef _WIN32
    SKIP_ON_WINDOWS("Windows has no FIFOs in its file system");
#else
    char dir[64], fifo[128];
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    CHECK(mkfifo(fifo, 0600) == 0);
    check_in_child_within(10, readers_refuse_fifo, dir);
    tf_remove_tree(dir);
#endif
}

TEST(hardening_saves_keep_mode_and_refuse_special_files) {
    char dir[64], path[128], fifo[128], link[128], target[128], fifo_link[128];
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/w.safetensors", dir);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    snprintf(link, sizeof link, "%s/link.safetensors", dir);
    snprintf(target, sizeof target, "%s/target.safetensors", dir);
    snprintf(fifo_link, sizeof fifo_link, "%s/fifo_link", dir);
    nn_ctx *ctx = cpu_ctx();
    nn_module *net = nn_lenet5(ctx, NN_INIT_KAIMING_UNIFORM);

    struct stat st;
    CHECK(tf_write_bytes(path, "old", 3));
#ifdef _WIN32
    /* Replaced whole (MoveFileExW); Windows files have no mode bits to keep. */
    CHECK_MSG(nn_save_module(net, path) == NN_OK, "%s", nn_last_error());
    CHECK(stat(path, &st) == 0 && st.st_size > 3);
    printf("  skipped on Windows: %s: the mode, FIFO and symbolic-link cases (POSIX file kinds)\n", __func__);
#else
    /* A 0600 file stays 0600 whatever the umask. */
    CHECK(chmod(path, 0600) == 0);
    CHECK_MSG(nn_save_module(net, path) == NN_OK, "%s", nn_last_error());
    CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600 && st.st_size > 3);

    /* A FIFO is refused and stays a FIFO. */
    CHECK(mkfifo(fifo, 0600) == 0);
    CHECK(nn_save_module(net, fifo) == NN_ERR_IO);
    CHECK_MESSAGE_HAS(fifo);
    CHECK_MESSAGE_HAS("FIFO");
    CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
    /* So is a link to one. */
    CHECK(symlink("fifo", fifo_link) == 0);
    CHECK(nn_save_module(net, fifo_link) == NN_ERR_IO);
    CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
    CHECK(lstat(fifo_link, &st) == 0 && S_ISLNK(st.st_mode));

    /* A link to a regular file is written through: the link stays, its
     * target gets the new content (as torch.save does). */
    CHECK(tf_write_bytes(target, "old", 3));
    CHECK(symlink("target.safetensors", link) == 0);
    CHECK_MSG(nn_save_module(net, link) == NN_OK, "%s", nn_last_error());
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(stat(target, &st) == 0 && st.st_size > 3);
#endif
    nn_module *back = nn_lenet5(ctx, NN_INIT_XAVIER_UNIFORM);
#ifndef _WIN32
    CHECK_MSG(nn_load_module(back, target) == NN_OK, "%s", nn_last_error());
#endif
    CHECK_MSG(nn_load_module(back, path) == NN_OK, "%s", nn_last_error());

    /* A folder is refused, naming it. */
    CHECK(nn_save_module(net, dir) == NN_ERR_IO);
    CHECK_MESSAGE_HAS(dir);

    /* A failed write leaves no temporary file. */
    nn_atomic_fail_after_bytes = 100;
    CHECK(nn_save_module(net, path) == NN_ERR_IO);
    nn_atomic_fail_after_bytes = -1;
    CHECK_MSG(count_temp_files(dir) == 0, "%d temporary files left", count_temp_files(dir));
    nn_module_free(back);
    nn_module_free(net);
    nn_ctx_free(ctx);
    tf_remove_tree(dir);
}

TEST(hardening_atomic_cleanup_all_removes_files_in_flight) {
    char dir[64], a[128], b[128];
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    snprintf(a, sizeof a, "%s/a.bin", dir);
    snprintf(b, sizeof b, "%s/b.bin", dir);
    CHECK(tf_write_bytes(a, "kept", 4));
    nn_atomic_file *fa = nn_atomic_open("test", a);
    nn_atomic_file *fb = nn_atomic_open("test", b);
    CHECK(fa && fb);
    CHECK(fa && nn_atomic_write(fa, "new", 3) == NN_OK);
    CHECK(count_temp_files(dir) == 2);
    /* What the Ctrl+C handler calls: only the temporary files go. */
    nn_atomic_cleanup_all();
#ifndef _WIN32 /* Windows lists a file deleted while open until its last handle closes (next test) */
    CHECK(count_temp_files(dir) == 0);
#endif
    struct stat st;
    CHECK(stat(a, &st) == 0 && st.st_size == 4);
    CHECK(stat(b, &st) != 0);
    nn_atomic_abort(fa);
    nn_atomic_abort(fb);
    CHECK(count_temp_files(dir) == 0);
    /* The table has room again afterwards. */
    nn_atomic_file *fc = nn_atomic_open("test", b);
    CHECK(fc && nn_atomic_write(fc, "x", 1) == NN_OK && nn_atomic_commit(fc) == NN_OK);
    CHECK(stat(b, &st) == 0 && st.st_size == 1);
    tf_remove_tree(dir);
}

/* The Ctrl+C handler deletes temporary files their saves still hold open:
 * on Windows only a file created with FILE_SHARE_DELETE allows it. */
TEST(hardening_temporary_file_deleted_while_open) {
    char dir[64], path[128];
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/w.safetensors.tmp.1.0", dir);
    int fd = nn_file_create_new(path, 0600);
    CHECK(fd >= 0 && write(fd, "abc", 3) == 3);
    CHECK_MSG(nn_file_remove(path) == 0, "removing %s while open: %s", path, strerror(errno));
    CHECK(fd >= 0 && close(fd) == 0);
    struct stat st;
    CHECK(stat(path, &st) != 0 && count_temp_files(dir) == 0);
    tf_remove_tree(dir);
}

TEST(hardening_check_writable_path) {
    char dir[64], file[128], fifo[128], missing[128];
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    snprintf(file, sizeof file, "%s/exists", dir);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    snprintf(missing, sizeof missing, "%s/no/such/folder/w.safetensors", dir);
    CHECK(tf_write_bytes(file, "x", 1));
#ifndef _WIN32
    CHECK(mkfifo(fifo, 0600) == 0);
#endif
    CHECK_MSG(nn_check_writable_path(file) == NN_OK, "%s", nn_last_error());
    char absent[128];
    snprintf(absent, sizeof absent, "%s/new.safetensors", dir);
    CHECK_MSG(nn_check_writable_path(absent) == NN_OK, "%s", nn_last_error());
    CHECK(access(absent, F_OK) != 0); /* the check creates nothing */
    CHECK(count_temp_files(dir) == 0);
    CHECK(nn_check_writable_path(dir) == NN_ERR_IO);
    CHECK_MESSAGE_HAS(dir);
    CHECK_MESSAGE_HAS("folder");
    CHECK(nn_check_writable_path(missing) == NN_ERR_IO);
    CHECK_MESSAGE_HAS(missing);
#ifdef _WIN32
    printf("  skipped on Windows: %s: the FIFO and /proc cases (POSIX file kinds)\n", __func__);
#else
    CHECK(nn_check_writable_path(fifo) == NN_ERR_IO);
    CHECK_MESSAGE_HAS("FIFO");
    /* Even root cannot create files in /proc. */
    CHECK(nn_check_writable_path("/proc/version") == NN_ERR_IO);
    CHECK_MESSAGE_HAS("/proc/version");
#endif
    CHECK(nn_check_writable_path(NULL) == NN_ERR_ARGUMENT);
    CHECK(nn_check_writable_path("") == NN_ERR_ARGUMENT);
    tf_remove_tree(dir);
}

TEST(hardening_onnx_export_error_message_is_not_garbled) {
    nn_ctx *ctx = cpu_ctx();
    nn_module *mlp = nn_mlp(ctx, 3, (int[]){4}, 1, 2, NN_INIT_KAIMING_UNIFORM);
    int64_t shape[7] = {1, 1, 1, 1, 1, 1, 3};
    CHECK(nn_onnx_export_module("/tmp/unused.onnx", mlp, shape, 7) != NN_OK);
    const char *message = nn_last_error();
    const char *prefix = "nn_onnx_export_module: input_shape: nn_tensor_new";
    CHECK_MSG(strncmp(message, prefix, strlen(prefix)) == 0, "garbled: %s", message);
    CHECK_MSG(strstr(message + 1, "nn_onnx_export_module") == NULL, "repeated: %s", message);
    nn_module_free(mlp);
    nn_ctx_free(ctx);
}

/* ---- IDX ---- */

static void write_idx_images_header(const char *path, uint32_t count, uint32_t rows, uint32_t cols,
                                    size_t data_bytes, int gz) {
    uint8_t *data = calloc(data_bytes + 1, 1);
    for (size_t i = 0; i < data_bytes; i++) data[i] = (uint8_t)(i * 7 + 3);
    CHECK(tf_write_idx(path, 0x803, (uint32_t[]){count, rows, cols}, 3, data, data_bytes, gz));
    free(data);
}

TEST(hardening_idx_header_sizes_checked_against_the_file) {
    char dir[64], images[128], labels[128], gz[128];
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    snprintf(images, sizeof images, "%s/images", dir);
    snprintf(labels, sizeof labels, "%s/labels", dir);
    snprintf(gz, sizeof gz, "%s/images.gz", dir);
    uint8_t label_bytes[3] = {0, 1, 2};
    CHECK(tf_write_idx(labels, 0x801, (uint32_t[]){3}, 1, label_bytes, 3, 0));
    nn_dataset ds;
    /* 116 bytes that claim 65536 images of 512x512: 16 GiB. */
    write_idx_images_header(images, 65536, 512, 512, 100, 0);
    CHECK(nn_dataset_load_idx(images, labels, &ds) == NN_ERR_IO);
    CHECK_MESSAGE_HAS(images);
    CHECK_MESSAGE_HAS("17179869184 bytes of images");
    CHECK_MESSAGE_HAS("116 bytes");
    /* The same claim, gzip-compressed: more than deflate can expand to. */
    write_idx_images_header(gz, 65536, 512, 512, 100, 1);
    CHECK(nn_dataset_load_idx(gz, labels, &ds) == NN_ERR_IO);
    CHECK_MESSAGE_HAS(gz);
    CHECK_MESSAGE_HAS("17179869184 bytes of images");
    /* Labels: a count beyond the file. */
    write_idx_images_header(images, 3, 5, 7, 3 * 5 * 7, 0);
    CHECK(tf_write_idx(labels, 0x801, (uint32_t[]){3}, 1, label_bytes, 2, 0));
    CHECK(nn_dataset_load_idx(images, labels, &ds) == NN_ERR_IO);
    CHECK_MESSAGE_HAS(labels);
    /* And a good pair still loads, batch-1 size included. */
    CHECK(tf_write_idx(labels, 0x801, (uint32_t[]){3}, 1, label_bytes, 3, 0));
    CHECK_MSG(nn_dataset_load_idx(images, labels, &ds) == NN_OK, "%s", nn_last_error());
    CHECK(ds.count == 3 && ds.height == 5 && ds.width == 7 && ds.pixels[8] == (uint8_t)(8 * 7 + 3));
    nn_dataset_free(&ds);
    tf_remove_tree(dir);
}

static uint8_t *read_all(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    uint8_t *bytes = malloc(1 << 20);
    *size = f ? fread(bytes, 1, 1 << 20, f) : 0;
    if (f) fclose(f);
    return bytes;
}

TEST(hardening_idx_gzip_trailer_is_checked) {
    char dir[64], images[128], labels[128];
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    snprintf(images, sizeof images, "%s/images.gz", dir);
    snprintf(labels, sizeof labels, "%s/labels", dir);
    uint8_t label_bytes[3] = {0, 1, 2};
    CHECK(tf_write_idx(labels, 0x801, (uint32_t[]){3}, 1, label_bytes, 3, 0));
    write_idx_images_header(images, 3, 11, 13, 3 * 11 * 13, 1);
    size_t size;
    uint8_t *bytes = read_all(images, &size);
    nn_dataset ds;
    CHECK_MSG(nn_dataset_load_idx(images, labels, &ds) == NN_OK, "%s", nn_last_error());
    nn_dataset_free(&ds);
    /* Without its 8-byte trailer (CRC32, ISIZE), and with 1 to 7 of its bytes. */
    for (size_t cut = 1; cut <= 8; cut++) {
        CHECK(tf_write_bytes(images, bytes, size - cut));
        CHECK_MSG(nn_dataset_load_idx(images, labels, &ds) == NN_ERR_IO, "cut %zu accepted", cut);
        CHECK_MESSAGE_HAS(images);
    }
    /* A wrong CRC (a flipped pixel would give the same). */
    bytes[size - 8] ^= 0x5a;
    CHECK(tf_write_bytes(images, bytes, size));
    CHECK(nn_dataset_load_idx(images, labels, &ds) == NN_ERR_IO);
    CHECK_MESSAGE_HAS(images);
    free(bytes);
    /* Issue 40, item 5: a file larger than zlib's read-ahead, cut at its
     * trailer, ended without zlib's error (2,048 images of noise: about
     * 1.6 MB compressed), and trained. */
    enum { MANY = 2048, SIDE = 28 };
    uint8_t *noise = malloc((size_t)MANY * SIDE * SIDE), many_labels[MANY];
    uint32_t state = 12345;
    for (size_t i = 0; i < (size_t)MANY * SIDE * SIDE; i++) noise[i] = (uint8_t)((state = state * 1664525u + 1013904223u) >> 24);
    for (int i = 0; i < MANY; i++) many_labels[i] = (uint8_t)(i % 10);
    CHECK(tf_write_idx(labels, 0x801, (uint32_t[]){MANY}, 1, many_labels, MANY, 0));
    /* One deflate call over header and data, as Python's gzip module writes (gzwrite's output did not show it). */
    const size_t plain_size = 16 + (size_t)MANY * SIDE * SIDE;
    uint8_t *plain = malloc(plain_size);
    const uint32_t header[4] = {0x803, MANY, SIDE, SIDE};
    for (int i = 0; i < 16; i++) plain[i] = (uint8_t)(header[i / 4] >> (24 - 8 * (i % 4)));
    memcpy(plain + 16, noise, plain_size - 16);
    uLong packed_size = compressBound(plain_size) + 64;
    bytes = malloc(packed_size);
    z_stream z = {0};
    CHECK(deflateInit2(&z, 9, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) == Z_OK); /* 31: a gzip wrapper */
    z.next_in = plain, z.avail_in = (uInt)plain_size, z.next_out = bytes, z.avail_out = (uInt)packed_size;
    CHECK(deflate(&z, Z_FINISH) == Z_STREAM_END);
    size = z.total_out;
    deflateEnd(&z);
    CHECK(tf_write_bytes(images, bytes, size));
    CHECK_MSG(nn_dataset_load_idx(images, labels, &ds) == NN_OK, "%s", nn_last_error());
    nn_dataset_free(&ds);
    CHECK(tf_write_bytes(images, bytes, size - 8));
    free(plain);
    CHECK_MSG(nn_dataset_load_idx(images, labels, &ds) == NN_ERR_IO, "a large file without its trailer accepted");
    CHECK_MESSAGE_HAS("trailer");
    free(bytes);
    free(noise);
    tf_remove_tree(dir);
}

/* ---- PNG: no gamma, 16 bits scaled by >> 8 ---- */

static int decode_file(const char *path, int channels, nn_image *out) {
    size_t size;
    uint8_t *bytes = read_all(path, &size);
    nn_decode_request request = {.channels = channels};
    nn_box box;
    char why[256] = "";
    nn_status s = nn_decode_image(bytes, size, &request, out, &box, why, sizeof why);
    CHECK_MSG(s == NN_OK, "%s: %s", path, why);
    free(bytes);
    return s == NN_OK;
}

TEST(hardening_png_16_bit_and_gamma_decoded_without_a_curve) {
    char dir[64], path[128];
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/ramp.png", dir);
    /* The ramp, as 16-bit v*257, and odd 16-bit values whose high
     * byte is the answer (>> 8, what Pillow gives for 16-bit RGB). */
    const int width = 9;
    uint16_t grey[9] = {0, 32 * 257, 64 * 257, 128 * 257, 192 * 257, 255 * 257, 0x80ff, 0x807f, 0x0101};
    uint8_t want[9] = {0, 32, 64, 128, 192, 255, 0x80, 0x80, 0x01};
    nn_image image = {0};
    for (int channels = 1; channels <= 3; channels += 2) { /* the grey and the photo paths */
        CHECK(tf_write_png_samples(path, grey, width, 1, 1, 16, 0));
        if (decode_file(path, channels, &image))
            for (int i = 0; i < width; i++)
                for (int c = 0; c < channels; c++)
                    CHECK_MSG(image.pixels[i * channels + c] == want[i], "16-bit grey, %d channels: pixel %d = %d, want %d",
                              channels, i, image.pixels[i * channels + c], want[i]);
        /* RGB 16-bit, each channel its own ramp. */
        uint16_t rgb[27];
        for (int i = 0; i < width; i++)
            for (int c = 0; c < 3; c++) rgb[i * 3 + c] = grey[(i + c * 4) % width];
        CHECK(tf_write_png_samples(path, rgb, width, 1, 3, 16, 0));
        if (decode_file(path, 3, &image))
            for (int i = 0; i < width * 3; i++)
                CHECK_MSG(image.pixels[i] == want[(i / 3 + (i % 3) * 4) % width], "16-bit RGB sample %d = %d", i,
                          image.pixels[i]);
        /* 8-bit with a gAMA chunk (1/2.2 and linear): the samples as stored. */
        uint16_t eight[9] = {0, 32, 64, 128, 192, 255, 7, 99, 200};
        for (int g = 0; g < 2; g++) {
            CHECK(tf_write_png_samples(path, eight, width, 1, 1, 8, g ? 1.0 : 1 / 2.2));
            if (decode_file(path, channels, &image))
                for (int i = 0; i < width; i++)
                    CHECK_MSG(image.pixels[i * channels] == eight[i], "gAMA %d: pixel %d = %d, want %d", g, i,
                              image.pixels[i * channels], eight[i]);
        }
    }
    free(image.pixels);
    tf_remove_tree(dir);
}

/* A PNG whose header claims width x height, with an IDAT of two bytes. */
static int write_png_header_only(const char *path, uint32_t width, uint32_t height) {
    uint8_t png[96] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    size_t n = 8;
    uint8_t ihdr[17] = {'I', 'H', 'D', 'R'};
    for (int b = 0; b < 4; b++) ihdr[4 + b] = (uint8_t)(width >> (24 - 8 * b));
    for (int b = 0; b < 4; b++) ihdr[8 + b] = (uint8_t)(height >> (24 - 8 * b));
    ihdr[12] = 8; /* bits, grey, deflate, no filter, no interlace */
    uint32_t crc = (uint32_t)crc32(0, ihdr, 17);
    png[n++] = 0, png[n++] = 0, png[n++] = 0, png[n++] = 13;
    memcpy(png + n, ihdr, 17), n += 17;
    for (int b = 0; b < 4; b++) png[n++] = (uint8_t)(crc >> (24 - 8 * b));
    const uint8_t idat[] = {0, 0, 0, 2, 'I', 'D', 'A', 'T', 0x78, 0x9c};
    memcpy(png + n, idat, sizeof idat), n += sizeof idat;
    crc = (uint32_t)crc32(0, idat + 4, 6);
    for (int b = 0; b < 4; b++) png[n++] = (uint8_t)(crc >> (24 - 8 * b));
    return tf_write_bytes(path, png, n);
}

TEST(hardening_image_dimensions_refused_before_allocating) {
    char dir[64], cls[128], path[192];
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    CHECK(tf_subdir(dir, "a", cls, sizeof cls));
    snprintf(path, sizeof path, "%s/huge.png", cls);
    CHECK(write_png_header_only(path, 16384, 16384));
    size_t size;
    uint8_t *bytes = read_all(path, &size);
    nn_image image = {0};
    nn_decode_request request = {.channels = 3};
    nn_box box;
    char why[256] = "";
    CHECK(nn_decode_image(bytes, size, &request, &image, &box, why, sizeof why) == NN_ERR_IO);
    CHECK_MSG(strstr(why, "16384x16384") && strstr(why, "89478485"), "%s", why);
    CHECK(image.capacity == 0);
    free(bytes);
    /* In a class folder: skipped with that reason. */
    uint8_t px[15] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    snprintf(path, sizeof path, "%s/small.png", cls);
    CHECK(tf_write_png(path, px, 5, 3, 1));
    nn_dataset ds;
    CHECK_MSG(nn_dataset_load_folders(dir, &ds) == NN_OK, "%s", nn_last_error());
    CHECK(ds.count == 1 && ds.skipped == 1 && strstr(ds.first_skipped, "huge.png") &&
          strstr(ds.first_skipped, "too large"));
    nn_dataset_free(&ds);
    tf_remove_tree(dir);
}

/* Found by `make fuzz-image` (tests/fuzz/corpus_image/289989...): a
 * 231-byte progressive JPEG of 2048x115 whose data ends early. libjpeg
 * warns, fills in grey and goes on; decoded at 2/8 scale with the centre
 * half cropped, its skip over the last rows then looped for minutes. The
 * decode now stops at the warning. */
#ifndef _WIN32
static const uint8_t kTruncatedProgressiveJpeg[231] = {
    0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x4a, 0x46, 0x01, 0x00, 0x00, 0x00,
    0xf1, 0x00, 0x2c, 0x20, 0x23, 0x26, 0x27, 0x21, 0x2a, 0x29, 0xd9, 0xd9,
    0xd9, 0xd9, 0x19, 0x1f, 0x2d, 0x35, 0x2d, 0x28, 0x30, 0x25, 0x28, 0x29,
    0x28, 0xff, 0xdb, 0x00, 0x43, 0x01, 0x07, 0x07, 0x07, 0x0a, 0x08, 0xd8,
    0xd0, 0xd8, 0xd8, 0xd8, 0xd8, 0xd8, 0x0a, 0x13, 0x0a, 0x0a, 0x13, 0x7a,
    0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a,
    0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x00, 0x73,
    0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a,
    0x7a, 0x7a, 0x7a, 0x7a, 0x2e, 0x7a, 0x7a, 0x28, 0x2e, 0x28, 0x28, 0x28,
    0x28, 0x28, 0x28, 0x28, 0x28, 0x28, 0x28, 0x28, 0x28, 0x28, 0xff, 0xc2,
    0x00, 0x11, 0x08, 0x00, 0x73, 0x08, 0x00, 0x03, 0x01, 0x22, 0x00, 0x02,
    0x11, 0x01, 0x03, 0x14, 0x00, 0xcd, 0x34, 0xa9, 0x3d, 0xc0, 0xd3, 0x96,
    0xf4, 0xba, 0x61, 0x23, 0x4d, 0xcf, 0x5f, 0xff, 0xc4, 0x00, 0x23, 0x11,
    0x00, 0x02, 0x01, 0x04, 0x01, 0x03, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x11, 0x12, 0x03, 0x31, 0x21,
    0xf0, 0x41, 0xc1, 0x23, 0x51, 0x71, 0x91, 0xb1, 0xff, 0xda, 0x00, 0x08,
    0x01, 0x02, 0x01, 0x01, 0x3f, 0x01, 0x51, 0x4c, 0x8a, 0x89, 0x11, 0x02,
    0x86, 0x91, 0x7e, 0x90, 0x52, 0xa4, 0x20, 0x38, 0x8a, 0x49, 0x46, 0x23,
    0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x2c, 0x53,
    0x8f, 0xff, 0xd9
};

static void centre_half_box(void *user, int width, int height, nn_box *box) {
    (void)user;
    *box = (nn_box){width / 4.0, height / 4.0, width / 2.0, height / 2.0};
}

static void truncated_progressive_jpeg_refused(const char *unused) {
    (void)unused;
    nn_image image = {0};
    nn_box box;
    const nn_decode_request requests[2] = {
        {.channels = 1},
        {.channels = 3, .min_width = 8, .min_height = 8, .choose_box = centre_half_box}};
    for (int r = 0; r < 2; r++) {
        char why[256] = "";
        CHECK(nn_decode_image(kTruncatedProgressiveJpeg, sizeof kTruncatedProgressiveJpeg, &requests[r], &image,
                              &box, why, sizeof why) == NN_ERR_IO);
        CHECK_MSG(strstr(why, "damaged JPEG (truncated: Corrupt JPEG data: premature end of data segment)"), "request %d: %s",
                  r, why);
    }
    free(image.pixels);
}

#endif

/* A progressive JPEG whose last scan is repeated 600 times (libjpeg warns
 * of a bogus progression and goes on: any number of scans decodes): the
 * decoder's work is bounded (issue 40, item 7), so it is refused by its
 * scan count, at once, where the file as written decodes. */
#ifndef _WIN32
static void many_scans_refused(const char *dir) {
    enum { W = 64, H = 48, COPIES = 600 };
    uint8_t pixels[W * H];
    for (int i = 0; i < W * H; i++) pixels[i] = (uint8_t)(i * 37 % 251);
    char path[160];
    snprintf(path, sizeof path, "%s/progressive.jpg", dir);
    CHECK(tf_write_jpeg_progressive(path, pixels, W, H, 1, 90));
    size_t size;
    uint8_t *bytes = read_all(path, &size);
    size_t last_scan = 0;
    for (size_t i = 2; i + 1 < size; i++)
        if (bytes[i] == 0xff && bytes[i + 1] == 0xda) last_scan = i;
    CHECK(last_scan > 0 && bytes[size - 2] == 0xff && bytes[size - 1] == 0xd9);
    const size_t scan = size - 2 - last_scan, grown_size = size + COPIES * scan;
    uint8_t *grown = malloc(grown_size);
    memcpy(grown, bytes, size - 2);
    for (int c = 0; c < COPIES; c++) memcpy(grown + size - 2 + (size_t)c * scan, bytes + last_scan, scan);
    memcpy(grown + grown_size - 2, bytes + size - 2, 2);
    nn_image image = {0};
    nn_box box;
    const nn_decode_request request = {.channels = 1};
    char why[256] = "";
    CHECK_MSG(nn_decode_image(bytes, size, &request, &image, &box, why, sizeof why) == NN_OK, "as written: %s", why);
    CHECK(nn_decode_image(grown, grown_size, &request, &image, &box, why, sizeof why) == NN_ERR_IO);
    CHECK_MSG(strstr(why, "more than 500 scans"), "%s", why);
    free(image.pixels);
    free(grown);
    free(bytes);
}
#endif

/* A class folder whose name holds a control character (an escape sequence
 * would reach terminals through the saved and printed class names):
 * refused by name, before any image is read (issue 40, item 15). */
TEST(hardening_class_folder_names_without_control_characters) {
    SKIP_ON_WINDOWS("Windows folder names cannot hold control characters");
#ifndef _WIN32
    char dir[64], folder[160], image[200];
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    const char *classes[2] = {"cat", "dog\x1b[31m"};
    const uint8_t pixels[4] = {0, 64, 128, 255};
    for (int c = 0; c < 2; c++) {
        snprintf(folder, sizeof folder, "%s/%s", dir, classes[c]);
        CHECK(mkdir(folder, 0755) == 0);
        snprintf(image, sizeof image, "%s/a.png", folder);
        CHECK(tf_write_png(image, pixels, 2, 2, 1));
    }
    nn_image_index index;
    CHECK(nn_image_index_load(dir, &index) == NN_ERR_IO);
    CHECK_MSG(strstr(nn_last_error(), "class folder 1's name holds a control character (byte 0x1b"), "%s",
              nn_last_error());
    tf_remove_tree(dir);
#endif
}

TEST(hardening_jpeg_scans_bounded) {
    SKIP_ON_WINDOWS("WIC decodes JPEG there; the bound is libjpeg's progress monitor");
#ifndef _WIN32
    char dir[64];
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    check_in_child_within(20, many_scans_refused, dir);
    tf_remove_tree(dir);
#endif
}

TEST(hardening_truncated_progressive_jpeg_refused_at_once) {
    SKIP_ON_WINDOWS("its scan is too short for its blocks yet ends in EOI: WIC fills the rest with grey and "
                    "only a Huffman decode finds it (cut files are refused, tests image_jpeg_*)");
#ifndef _WIN32
    check_in_child_within(10, truncated_progressive_jpeg_refused, NULL);
#endif
}

/* ---- class folders ---- */

TEST(hardening_class_folders_count_odd_entries_and_loops) {
    SKIP_ON_WINDOWS("dangling links, link loops and FIFOs are POSIX file kinds");
#ifndef _WIN32
    char dir[64], a[128], b[128], path[192];
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    CHECK(tf_subdir(dir, "a", a, sizeof a));
    CHECK(tf_subdir(dir, "b", b, sizeof b));
    uint8_t px[6] = {10, 20, 30, 40, 50, 60};
    snprintf(path, sizeof path, "%s/1.png", a);
    CHECK(tf_write_png(path, px, 3, 2, 1));
    snprintf(path, sizeof path, "%s/1.png", b);
    CHECK(tf_write_png(path, px, 3, 2, 1));
    snprintf(path, sizeof path, "%s/dangling.png", a);
    CHECK(symlink("nowhere.png", path) == 0);
    snprintf(path, sizeof path, "%s/dangling2.png", b);
    CHECK(symlink("nowhere.png", path) == 0);
    snprintf(path, sizeof path, "%s/fifo.png", a);
    CHECK(mkfifo(path, 0600) == 0);
    snprintf(path, sizeof path, "%s/loop.png", b);
    CHECK(symlink("loop.png", path) == 0);
    /* A class folder that is a link back to DIR: a loop, not a class. */
    snprintf(path, sizeof path, "%s/c", dir);
    CHECK(symlink(".", path) == 0);
    nn_dataset ds;
    CHECK_MSG(nn_dataset_load_folders(dir, &ds) == NN_OK, "%s", nn_last_error());
    CHECK(ds.count == 2 && ds.classes == 2);
    char want[256];
    snprintf(want, sizeof want, "skipped 5 entries in %s: 2 dangling links, 1 link loop, 1 FIFO, 1 folder loop", dir);
    CHECK_MSG(strcmp(ds.skipped_entries, want) == 0, "got \"%s\"\nwant \"%s\"", ds.skipped_entries, want);
    nn_dataset_free(&ds);
    /* The photo index says the same. */
    nn_image_index index;
    CHECK_MSG(nn_image_index_load(dir, &index) == NN_OK, "%s", nn_last_error());
    CHECK_MSG(strcmp(index.skipped_entries, want) == 0, "index: \"%s\"", index.skipped_entries);
    nn_image_index_free(&index);
    tf_remove_tree(dir);
#endif
}

TEST(hardening_idx_folder_given_as_class_folders_is_named) {
    char dir[64], sub[128], path[192];
    CHECK(tf_make_temp_dir(dir, sizeof dir));
    CHECK(tf_subdir(dir, "fashion", sub, sizeof sub));
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", sub);
    write_idx_images_header(path, 1, 2, 2, 4, 1);
    nn_dataset ds;
    CHECK(nn_dataset_load_folders(dir, &ds) == NN_ERR_IO);
    CHECK_MESSAGE_HAS(sub);
    CHECK_MESSAGE_HAS("holds IDX files");
    CHECK(nn_dataset_load_dir(dir, 0.1, 1, &ds, NULL, NULL) == NN_ERR_IO);
    CHECK_MESSAGE_HAS("holds IDX files");
    tf_remove_tree(dir);
}
