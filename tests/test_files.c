#define _XOPEN_SOURCE 700
#include "test_files.h"

#include <ftw.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <jpeglib.h>

int tf_make_temp_dir(char *out, size_t size) {
    snprintf(out, size, "/tmp/nn_test_XXXXXX");
    return mkdtemp(out) != NULL;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

void tf_remove_tree(const char *path) { nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

int tf_subdir(const char *dir, const char *name, char *out, size_t size) {
    snprintf(out, size, "%s/%s", dir, name);
    return mkdir(out, 0755) == 0;
}

int tf_write_bytes(const char *path, const void *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(data, 1, size, f) == size;
    return fclose(f) == 0 && ok;
}

int tf_write_idx(const char *path, uint32_t magic, const uint32_t *dims, int ndim,
                 const uint8_t *data, size_t bytes, int gz) {
    size_t header = 4 + 4 * (size_t)ndim;
    uint8_t *all = malloc(header + bytes + 1);
    if (!all) return 0;
    uint32_t words[8] = {magic};
    for (int i = 0; i < ndim; i++) words[i + 1] = dims[i];
    for (int w = 0; w <= ndim; w++)
        for (int b = 0; b < 4; b++) all[w * 4 + b] = (uint8_t)(words[w] >> (24 - 8 * b));
    if (bytes) memcpy(all + header, data, bytes);
    int ok;
    if (gz) {
        gzFile f = gzopen(path, "wb");
        ok = f && gzwrite(f, all, (unsigned)(header + bytes)) == (int)(header + bytes);
        if (f) ok = gzclose(f) == Z_OK && ok;
    } else {
        ok = tf_write_bytes(path, all, header + bytes);
    }
    free(all);
    return ok;
}

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
