/* PNG decoding with libpng's full API to 8-bit grey or RGB, the samples as
 * stored: no gamma curve. (libpng's simplified API, used before, treats
 * 16-bit data as linear light and gAMA-tagged images as needing correction,
 * and converts both to sRGB: a 16-bit grey ramp 0,32,64,128 read back as
 * 0,99,136,186.) 16-bit samples keep their high byte (v >> 8), as Pillow
 * does for 16-bit RGB; palettes, low bit depths and tRNS are expanded.
 * Errors become a reason string, as in image_decode.c. */
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/image_internal.h"

typedef struct png_reader {
    const uint8_t *data;
    size_t size, offset;
    char message[160]; /* libpng's error, for the reason */
    png_bytep *rows;   /* freed on every path, also after a longjmp */
    int header_read;   /* errors before it: "not a readable PNG", after: "damaged PNG" */
} png_reader;

static void read_from_memory(png_structp png, png_bytep out, png_size_t n) {
    png_reader *r = png_get_io_ptr(png);
    if (n > r->size - r->offset) png_error(png, "the data ends early");
    memcpy(out, r->data + r->offset, n);
    r->offset += n;
}

/* libpng's default handler prints and aborts; this one keeps the message. */
static void keep_error(png_structp png, png_const_charp message) {
    png_reader *r = png_get_error_ptr(png);
    snprintf(r->message, sizeof r->message, "%s", message);
    png_longjmp(png, 1);
}

static void quiet_warning(png_structp png, png_const_charp message) {
    (void)png, (void)message;
}

/* Reads the header, sets the transformations and checks the size: 0 with
 * the reason when the image is refused. */
static int read_header(png_structp png, png_infop info, int channels, char *why, size_t why_size) {
    png_read_info(png, info);
    png_uint_32 width = png_get_image_width(png, info), height = png_get_image_height(png, info);
    if ((int64_t)width * height > NN_IMAGE_MAX_PIXELS) {
        snprintf(why, why_size, "PNG of %ux%u pixels is too large (at most %lld pixels)", (unsigned)width,
                 (unsigned)height, (long long)NN_IMAGE_MAX_PIXELS);
        return 0;
    }
    int colour = (png_get_color_type(png, info) & PNG_COLOR_MASK_COLOR) != 0;
    png_set_expand(png);   /* palette to RGB, grey below 8 bits to 8, tRNS to alpha */
    png_set_strip_16(png); /* v >> 8 */
    /* Colour is read as RGB even when grey is asked and converted by the
     * caller with the luma weights JPEGs get. */
    if (channels == 3 && !colour) png_set_gray_to_rgb(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    return 1;
}

nn_status nn_decode_png(const uint8_t *data, size_t size, const nn_decode_request *request, nn_image *out,
                        nn_box *box, char *why, size_t why_size) {
    png_reader reader = {.data = data, .size = size};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &reader, keep_error, quiet_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        snprintf(why, why_size, "out of memory for a PNG decoder");
        return NN_ERR_MEMORY;
    }
    if (setjmp(png_jmpbuf(png))) {
        snprintf(why, why_size, "%s (%s)", reader.header_read ? "damaged PNG" : "not a readable PNG",
                 reader.message);
        free(reader.rows);
        png_destroy_read_struct(&png, &info, NULL);
        return NN_ERR_IO;
    }
    png_set_read_fn(png, &reader, read_from_memory);
    if (!read_header(png, info, request->channels, why, why_size)) {
        png_destroy_read_struct(&png, &info, NULL);
        return NN_ERR_IO;
    }
    reader.header_read = 1;
    int width = (int)png_get_image_width(png, info), height = (int)png_get_image_height(png, info);
    int stored = png_get_channels(png, info); /* 1 to 4: grey or RGB, maybe alpha */
    int has_alpha = (png_get_color_type(png, info) & PNG_COLOR_MASK_ALPHA) != 0;
    size_t row_bytes = png_get_rowbytes(png, info);
    size_t bytes = row_bytes * (size_t)height;
    reader.rows = nn_image_reserve(out, bytes) ? malloc((size_t)height * sizeof *reader.rows) : NULL;
    if (!reader.rows) {
        png_destroy_read_struct(&png, &info, NULL);
        snprintf(why, why_size, "out of memory for a %dx%d PNG", width, height);
        return NN_ERR_MEMORY;
    }
    for (int y = 0; y < height; y++) reader.rows[y] = out->pixels + (size_t)y * row_bytes;
    png_read_image(png, reader.rows);
    png_read_end(png, NULL);
    free(reader.rows);
    png_destroy_read_struct(&png, &info, NULL);

    int channels = request->channels;
    size_t pixels = (size_t)width * height;
    uint8_t *px = out->pixels;
    if (stored - has_alpha == 3 && channels == 1) {
        /* libjpeg's rgb_gray and Pillow's "L": 16-bit fixed-point weights.
         * Alpha is dropped, not composited (Pillow's convert). */
        for (size_t i = 0; i < pixels; i++) {
            const uint8_t *p = px + i * stored;
            px[i] = (uint8_t)((19595u * p[0] + 38470u * p[1] + 7471u * p[2] + 32768u) >> 16);
        }
    } else if (has_alpha) {
        for (size_t i = 0; i < pixels; i++)
            for (int c = 0; c < channels; c++) px[i * channels + c] = px[i * stored + c];
    }
    out->width = width;
    out->height = height;
    out->channels = channels;
    if (request->choose_box) request->choose_box(request->user, width, height, box);
    else *box = (nn_box){0, 0, width, height};
    return NN_OK;
}
