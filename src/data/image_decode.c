/* PNG (libpng's simplified API) and JPEG (libjpeg-turbo) decoding to 8-bit
 * grayscale. Both libraries report errors through callbacks; here they become
 * a reason string, so that one bad file in a folder of thousands is skipped
 * and counted rather than ending the run. */
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include "data/dataset_internal.h"

/* Images beyond this many pixels are refused before any allocation. */
#define MAX_IMAGE_PIXELS ((int64_t)1 << 28)

static nn_status decode_png(const uint8_t *data, size_t size, nn_gray_image *out, char *why,
                            size_t why_size) {
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&image, data, size)) {
        snprintf(why, why_size, "not a readable PNG (%s)", image.message);
        return NN_ERR_IO;
    }
    if ((int64_t)image.width * image.height > MAX_IMAGE_PIXELS) {
        png_image_free(&image);
        snprintf(why, why_size, "PNG of %ux%u pixels is too large", image.width, image.height);
        return NN_ERR_IO;
    }
    image.format = PNG_FORMAT_GRAY; /* libpng converts colour and palette images */
    out->width = (int)image.width;
    out->height = (int)image.height;
    out->pixels = malloc(PNG_IMAGE_SIZE(image));
    if (!out->pixels) {
        png_image_free(&image);
        snprintf(why, why_size, "out of memory for a %ux%u PNG", image.width, image.height);
        return NN_ERR_IO;
    }
    if (!png_image_finish_read(&image, NULL, out->pixels, 0, NULL)) {
        snprintf(why, why_size, "damaged PNG (%s)", image.message);
        png_image_free(&image);
        free(out->pixels);
        out->pixels = NULL;
        return NN_ERR_IO;
    }
    return NN_OK;
}

typedef struct jpeg_error_trap {
    struct jpeg_error_mgr manager;
    jmp_buf escape;
    char message[JMSG_LENGTH_MAX];
} jpeg_error_trap;

/* libjpeg's default handler exits the process; this one jumps back instead. */
static void jpeg_error_exit(j_common_ptr cinfo) {
    jpeg_error_trap *trap = (jpeg_error_trap *)cinfo->err;
    cinfo->err->format_message(cinfo, trap->message);
    longjmp(trap->escape, 1);
}

static void jpeg_quiet(j_common_ptr cinfo, int level) { (void)cinfo, (void)level; }

static nn_status decode_jpeg(const uint8_t *data, size_t size, nn_gray_image *out, char *why,
                             size_t why_size) {
    struct jpeg_decompress_struct cinfo;
    jpeg_error_trap trap;
    /* volatile: modified between setjmp and a possible longjmp. */
    uint8_t *volatile pixels = NULL;
    cinfo.err = jpeg_std_error(&trap.manager);
    trap.manager.error_exit = jpeg_error_exit;
    trap.manager.emit_message = jpeg_quiet; /* warnings about corrupt data are not fatal */
    if (setjmp(trap.escape)) {
        snprintf(why, why_size, "damaged JPEG (%s)", trap.message);
        jpeg_destroy_decompress(&cinfo);
        free(pixels);
        return NN_ERR_IO;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, data, (unsigned long)size);
    jpeg_read_header(&cinfo, TRUE);
    if ((int64_t)cinfo.image_width * cinfo.image_height > MAX_IMAGE_PIXELS) {
        snprintf(why, why_size, "JPEG of %ux%u pixels is too large", cinfo.image_width,
                 cinfo.image_height);
        jpeg_destroy_decompress(&cinfo);
        return NN_ERR_IO;
    }
    cinfo.out_color_space = JCS_GRAYSCALE; /* libjpeg converts YCbCr to luma */
    jpeg_start_decompress(&cinfo);
    int width = (int)cinfo.output_width, height = (int)cinfo.output_height;
    pixels = malloc((size_t)width * height);
    if (!pixels) {
        snprintf(why, why_size, "out of memory for a %dx%d JPEG", width, height);
        jpeg_destroy_decompress(&cinfo);
        return NN_ERR_IO;
    }
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW row = pixels + (size_t)cinfo.output_scanline * width;
        jpeg_read_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    out->width = width;
    out->height = height;
    out->pixels = pixels;
    return NN_OK;
}

nn_status nn_decode_gray(const uint8_t *data, size_t size, nn_gray_image *out, char *why,
                         size_t why_size) {
    static const uint8_t png_signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    memset(out, 0, sizeof *out);
    if (size >= 8 && memcmp(data, png_signature, 8) == 0)
        return decode_png(data, size, out, why, why_size);
    if (size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF)
        return decode_jpeg(data, size, out, why, why_size);
    snprintf(why, why_size, size == 0 ? "empty file" : "neither PNG nor JPEG");
    return NN_ERR_IO;
}
