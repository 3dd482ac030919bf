/* Which decoder an image goes to (its signature), and the grayscale path
 * LeNet's class folders use. The decoders themselves: image_png.c and
 * image_jpeg.c (libpng, libjpeg-turbo) on Linux, image_wic.c (the Windows
 * Imaging Component) on Windows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/dataset_internal.h"
#include "data/image_internal.h"

static const uint8_t png_signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

static int is_png(const uint8_t *data, size_t size) {
    return size >= 8 && memcmp(data, png_signature, 8) == 0;
}

static int is_jpeg(const uint8_t *data, size_t size) {
    return size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF;
}

int nn_image_signature_ok(const uint8_t *head, size_t size, char *why, size_t why_size) {
    if (is_png(head, size) || is_jpeg(head, size)) return 1;
    snprintf(why, why_size, size == 0 ? "empty file" : "neither PNG nor JPEG");
    return 0;
}

nn_status nn_image_codecs_check(const char *who, const char *dir) { return NN_OK; }

nn_status nn_decode_image(const uint8_t *data, size_t size, const nn_decode_request *request,
                          nn_image *out, nn_box *box, char *why, size_t why_size) {
    if (is_png(data, size)) return nn_decode_png(data, size, request, out, box, why, why_size);
    if (is_jpeg(data, size)) return nn_decode_jpeg(data, size, request, out, box, why, why_size);
    nn_image_signature_ok(data, size, why, why_size);
    return NN_ERR_IO;
}

int nn_image_reserve(nn_image *out, size_t bytes) {
    if (bytes <= out->capacity) return 1;
    uint8_t *grown = realloc(out->pixels, bytes);
    if (!grown) return 0;
    out->pixels = grown;
    out->capacity = bytes;
    return 1;
}

nn_status nn_decode_gray(const uint8_t *data, size_t size, nn_gray_image *out, char *why,
                         size_t why_size) {
    memset(out, 0, sizeof *out);
    nn_decode_request request = {.channels = 1};
    nn_image image = {0};
    nn_box box;
    nn_status status = nn_decode_image(data, size, &request, &image, &box, why, why_size);
    if (status != NN_OK) {
        free(image.pixels);
        return status == NN_ERR_MEMORY ? NN_ERR_IO : status;
    }
    out->width = image.width;
    out->height = image.height;
    out->pixels = image.pixels;
    return NN_OK;
}
