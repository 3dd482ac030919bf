/* libFuzzer target for the image decoders (PNG and JPEG) on both paths the
 * engine takes: grey whole images (class folders for LeNet-style models)
 * and the photo path (RGB, a crop box chosen from the header, JPEGs
 * decoded at a reduced DCT scale and only over the box's rows and
 * columns). Built with `make fuzz-image`; `make fuzz-regress` replays
 * tests/fuzz/corpus_image/.
 *
 * Besides the sanitizers' checks: an accepted image has positive
 * dimensions within the limit, its pixels are all readable, and a refusal
 * gives a reason. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/image_internal.h"

static void require(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "image decoder violates: %s\n", what);
        abort();
    }
}

/* The photo path's box: the centre half, as a random-resized crop might pick. */
static void centre_half(void *user, int width, int height, nn_box *box) {
    (void)user;
    *box = (nn_box){width / 4.0, height / 4.0, width / 2.0, height / 2.0};
}

static void decode(const uint8_t *data, size_t size, const nn_decode_request *request, nn_image *image) {
    nn_box box;
    char why[256] = "";
    nn_status status = nn_decode_image(data, size, request, image, &box, why, sizeof why);
    if (status != NN_OK) {
        require(why[0] != '\0', "a refusal gives a reason");
        return;
    }
    require(image->width > 0 && image->height > 0, "dimensions are positive");
    require((int64_t)image->width * image->height <= NN_IMAGE_MAX_PIXELS, "within the pixel limit");
    require(image->channels == request->channels, "the channels asked for");
    size_t bytes = (size_t)image->width * image->height * image->channels;
    require(bytes <= image->capacity, "the pixels fit the buffer");
    unsigned sum = 0;
    for (size_t i = 0; i < bytes; i++) sum += image->pixels[i];
    (void)sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    nn_image image = {0};
    decode(data, size, &(nn_decode_request){.channels = 1}, &image);
    decode(data, size,
           &(nn_decode_request){.channels = 3, .min_width = 8, .min_height = 8, .choose_box = centre_half},
           &image); /* the buffer reused, as a loader worker does */
    free(image.pixels);
    return 0;
}
