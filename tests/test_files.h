/* Files for the loader tests: temporary folders, IDX files (raw or gzip),
 * PNG and JPEG images (tests/image_writers.c: written with the libraries the
 * Linux build reads with; tests/windows/image_writers.c: the Windows build's). */
#ifndef NN_TEST_FILES_H
#define NN_TEST_FILES_H

#include <stddef.h>
#include <stdint.h>

/* A fresh folder under /tmp (Windows: its temporary folder); path written to `out` (size >= 64). */
int tf_make_temp_dir(char *out, size_t size);
/* rm -rf */
void tf_remove_tree(const char *path);
/* mkdir -p of dir/name; path written to `out`. */
int tf_subdir(const char *dir, const char *name, char *out, size_t size);
int tf_write_bytes(const char *path, const void *data, size_t size);
/* An IDX file: big-endian magic and dims, then `bytes` of data; gzip when gz. */
int tf_write_idx(const char *path, uint32_t magic, const uint32_t *dims, int ndim,
                 const uint8_t *data, size_t bytes, int gz);
/* 8-bit PNG: grayscale (channels 1), gray + alpha (2), RGB (3), RGBA (4). */
int tf_write_png(const char *path, const uint8_t *pixels, int width, int height, int channels);
/* A PNG of `bits` 8 or 16 per sample (given as 16-bit values), grey
 * (channels 1) or RGB (3), with a gAMA chunk when gamma > 0. */
int tf_write_png_samples(const char *path, const uint16_t *samples, int width, int height, int channels,
                         int bits, double gamma);
/* Grayscale JPEG at the given quality. */
int tf_write_jpeg_gray(const char *path, const uint8_t *pixels, int width, int height, int quality);
/* Grayscale (channels 1) or RGB (channels 3, interleaved) JPEG. */
int tf_write_jpeg(const char *path, const uint8_t *pixels, int width, int height, int channels,
                  int quality);
/* The same, progressive (several scans); Linux only: WIC's JPEG encoder
 * writes baseline files alone (returns 0 on Windows). */
int tf_write_jpeg_progressive(const char *path, const uint8_t *pixels, int width, int height,
                              int channels, int quality);

#endif
