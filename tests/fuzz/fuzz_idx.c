/* libFuzzer target for the IDX reader (raw and gzip): the input is one
 * file. Its first byte chooses which: even, the rest is the image file and
 * the label file is made to match its header's count (so the label path
 * runs too); odd, the image file is a valid one of 3 images of 2x2 and the
 * rest is the label file. Built with `make fuzz-idx`; `make fuzz-regress`
 * replays tests/fuzz/corpus_idx/.
 *
 * Besides the sanitizers' checks, a load that succeeds must describe data
 * the file actually held; a failure must set a message naming the file. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nn_data.h"

static char images_path[64], labels_path[64];

static void require(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "IDX reader violates: %s\n", what);
        abort();
    }
}

static void write_file(const char *path, const uint8_t *data, size_t size) {
    FILE *f = fopen(path, "wb");
    require(f && fwrite(data, 1, size, f) == size && fclose(f) == 0, "the fuzzer can write its files");
}

static uint32_t big_endian(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A raw label file of `count` labels 0, 1, 2, ...; small counts only. */
static void write_labels(uint32_t count) {
    if (count > 1 << 16) count = 1;
    uint8_t *bytes = calloc(8 + (size_t)count, 1);
    bytes[3] = 0x01;
    for (int b = 0; b < 4; b++) bytes[4 + b] = (uint8_t)(count >> (24 - 8 * b));
    for (uint32_t i = 0; i < count; i++) bytes[8 + i] = (uint8_t)(i % 10);
    write_file(labels_path, bytes, 8 + (size_t)count);
    free(bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!images_path[0]) {
        snprintf(images_path, sizeof images_path, "/tmp/fuzz_idx_images.%ld", (long)getpid());
        snprintf(labels_path, sizeof labels_path, "/tmp/fuzz_idx_labels.%ld", (long)getpid());
    }
    if (size < 1) return 0;
    if (data[0] % 2 == 0) {
        write_file(images_path, data + 1, size - 1);
        write_labels(size >= 9 ? big_endian(data + 5) : 1);
    } else {
        const uint8_t images[16 + 12] = {0, 0, 8, 3, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
        write_file(images_path, images, sizeof images);
        write_file(labels_path, data + 1, size - 1);
    }
    nn_dataset ds;
    nn_status status = nn_dataset_load_idx(images_path, labels_path, &ds);
    if (status != NN_OK) {
        require(ds.pixels == NULL && ds.labels == NULL, "failure leaves the dataset empty");
        require(strstr(nn_last_error(), "/tmp/fuzz_idx_") != NULL, "failure names the file");
        return 0;
    }
    int64_t bytes = ds.count * ds.height * ds.width;
    require(ds.count > 0 && ds.height > 0 && ds.width > 0 && ds.channels == 1, "dimensions are positive");
    require(bytes <= (int64_t)size * 1032, "no more pixels than the input could hold");
    uint64_t sum = 0;
    for (int64_t i = 0; i < bytes; i++) sum += ds.pixels[i]; /* every byte readable (ASan) */
    for (int64_t i = 0; i < ds.count; i++) require(ds.labels[i] >= 0 && ds.labels[i] < ds.classes, "labels in range");
    (void)sum;
    nn_dataset_free(&ds);
    return 0;
}
