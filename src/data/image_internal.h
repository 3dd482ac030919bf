/* Shared by the image decoder, the resize, the augmentation and the loader. */
#ifndef NN_DATA_IMAGE_INTERNAL_H
#define NN_DATA_IMAGE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nn_loader.h"

/* A decoded image, 8 bits per sample, interleaved (height x width x
 * channels). `capacity` bytes are allocated at `pixels`: the decoder reuses
 * the buffer from one image to the next and grows it when needed. */
typedef struct nn_image {
    int width, height, channels;
    uint8_t *pixels;
    size_t capacity;
} nn_image;

/* A region of an image, in pixels; bounds may be fractional. */
typedef struct nn_box {
    double x0, y0, w, h;
} nn_box;

/* Called by the decoder once the header is read: the region wanted, in the
 * coordinates of the full-size image of width x height. */
typedef void (*nn_choose_box_fn)(void *user, int width, int height, nn_box *box);

typedef struct nn_decode_request {
    int channels;            /* 1 (luma) or 3 (RGB) */
    /* A JPEG is decoded at the smallest DCT scale n/8 at which the box
     * still measures at least min_width x min_height; 0, 0: full size. */
    int min_width, min_height;
    nn_choose_box_fn choose_box; /* NULL: the whole image */
    void *user;
    /* Decode all rows and columns of a JPEG even when the box needs fewer
     * (tests and the benchmark compare both ways). */
    bool whole_jpeg;
} nn_decode_request;

/* Decode a PNG or JPEG held in memory (recognised by its signature) into
 * `out` (its buffer reused or grown). *box receives the wanted region in the
 * coordinates of the decoded (possibly reduced) image. On failure returns
 * NN_ERR_IO with the reason (no path) in `why`, or NN_ERR_MEMORY; the
 * thread's nn_last_error() is not touched, since unreadable files are
 * skipped and counted by the callers. A truncated JPEG (libjpeg would fill
 * the rest with grey) is a failure. */
nn_status nn_decode_image(const uint8_t *data, size_t size, const nn_decode_request *request,
                          nn_image *out, nn_box *box, char *why, size_t why_size);

/* Room for `bytes` of pixels in out's buffer (kept or grown); 0 when out
 * of memory. The decoders' one way to size their output. */
int nn_image_reserve(nn_image *out, size_t bytes);

/* Images beyond this many pixels are refused from their header, before any
 * allocation: Pillow's limit (its DecompressionBombWarning), 0.25 GiB of
 * 24-bit pixels. */
#define NN_IMAGE_MAX_PIXELS ((int64_t)89478485)

/* nn_decode_image's PNG half (image_png.c): the samples as stored, no gamma
 * curve; 16-bit samples keep their high byte. */
nn_status nn_decode_png(const uint8_t *data, size_t size, const nn_decode_request *request, nn_image *out,
                        nn_box *box, char *why, size_t why_size);

/* nn_decode_image's JPEG half (image_jpeg.c: libjpeg-turbo; image_wic.c:
 * the Windows Imaging Component). */
nn_status nn_decode_jpeg(const uint8_t *data, size_t size, const nn_decode_request *request, nn_image *out,
                         nn_box *box, char *why, size_t why_size);

/* The scale n (of n/8) a JPEG is decoded at: the smallest of 1, 2, 4 at
 * which `box` scaled by n/8 still measures min_w x min_h, else 8. */
int nn_jpeg_choose_scale(const nn_box *box, int min_w, int min_h);

/* The rows (or columns) [first, last] of a decoded image of `size` that the
 * bilinear taps of [start, start + length) read. */
void nn_jpeg_tap_span(double start, double length, int size, int *first, int *last);

/* 1 when the JPEG's markers, followed from SOI over each segment and scan,
 * reach EOI within `size` bytes; else 0 with the reason in `why` (for a
 * decoder that, like WIC's, fills data missing at the end with grey). */
int nn_jpeg_reaches_end(const uint8_t *data, size_t size, char *why, size_t why_size);

/* NN_OK where this build decodes PNG and JPEG; else sets the error, naming
 * `who` and `dir`, and returns NN_ERR_IO (image_codecs_absent.c: a build
 * made with IMAGE_CODECS=0). */
nn_status nn_image_codecs_check(const char *who, const char *dir);

/* 1 when the first bytes (at least 8 of them, or the whole file) are a PNG
 * or JPEG signature; else writes the reason to `why`. */
int nn_image_signature_ok(const uint8_t *head, size_t size, char *why, size_t why_size);

/* The box of `mode` for an image of width x height and an output of
 * out_w x out_h; `random` gives uniform numbers in [0, 1). */
typedef double (*nn_uniform_fn)(void *state);
void nn_crop_box_for(nn_crop_mode mode, int width, int height, int out_w, int out_h,
                     nn_uniform_fn uniform, void *state, nn_box *box);

/* Per index image, 1 when it failed to decode in this loader (read once
 * no epoch is running). */
const uint8_t *nn_loader_failed_flags(const nn_loader *loader);

#endif
