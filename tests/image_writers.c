/* The test images written with libpng and libjpeg, the libraries the Linux
 * build reads with (tests/windows/image_writers.c: the Windows build's). */
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include "test_files.h"

int tf_write_png(const char *path, const uint8_t *pixels, int width, int height, int channels) {
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    image.width = (png_uint_32)width;
    image.height = (png_uint_32)height;
    image.format = channels == 4 ? PNG_FORMAT_RGBA
                   : channels == 3 ? PNG_FORMAT_RGB
                   : channels == 2 ? PNG_FORMAT_GA
                                   : PNG_FORMAT_GRAY;
    return png_image_write_to_file(&image, path, 0, pixels, 0, NULL) != 0;
}

int tf_write_jpeg_gray(const char *path, const uint8_t *pixels, int width, int height, int quality) {
    return tf_write_jpeg(path, pixels, width, height, 1, quality);
}

static int write_jpeg(const char *path, const uint8_t *pixels, int width, int height,
                      int channels, int quality, int progressive);

int tf_write_jpeg(const char *path, const uint8_t *pixels, int width, int height, int channels,
                  int quality) {
    return write_jpeg(path, pixels, width, height, channels, quality, 0);
}

int tf_write_jpeg_progressive(const char *path, const uint8_t *pixels, int width, int height,
                              int channels, int quality) {
    return write_jpeg(path, pixels, width, height, channels, quality, 1);
}

static int write_jpeg(const char *path, const uint8_t *pixels, int width, int height,
                      int channels, int quality, int progressive) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    struct jpeg_compress_struct cinfo;
    struct jpeg_error_mgr err;
    cinfo.err = jpeg_std_error(&err);
    jpeg_create_compress(&cinfo);
    jpeg_stdio_dest(&cinfo, f);
    cinfo.image_width = (JDIMENSION)width;
    cinfo.image_height = (JDIMENSION)height;
    cinfo.input_components = channels;
    cinfo.in_color_space = channels == 3 ? JCS_RGB : JCS_GRAYSCALE;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, quality, TRUE);
    if (progressive) jpeg_simple_progression(&cinfo);
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW row = (JSAMPROW)(pixels + (size_t)cinfo.next_scanline * width * channels);
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    return fclose(f) == 0;
}

/* libpng's full API: it alone writes 16-bit samples and a gAMA chunk. */
int tf_write_png_samples(const char *path, const uint16_t *samples, int width, int height,
                          int channels, int bits, double gamma) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        fclose(f);
        return 0;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, bits,
                 channels == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (gamma > 0) png_set_gAMA(png, info, gamma);
    png_write_info(png, info);
    int bytes = bits / 8;
    uint8_t *row = malloc((size_t)width * channels * bytes);
    for (int y = 0; y < height; y++) {
        for (int i = 0; i < width * channels; i++) {
            uint16_t v = samples[(size_t)y * width * channels + i];
            if (bytes == 2) {
                row[2 * i] = (uint8_t)(v >> 8);
                row[2 * i + 1] = (uint8_t)v;
            } else {
                row[i] = (uint8_t)v;
            }
        }
        png_write_row(png, row);
    }
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    free(row);
    return fclose(f) == 0;
}
