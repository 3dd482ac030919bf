/* The image decoders of a build without libpng and libjpeg (the Windows
 * build, until they are built for it): every image folder is refused when it
 * is opened, with what to use instead, rather than each image failing. */
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "data/dataset_internal.h"
#include "data/image_internal.h"

#define NO_CODECS "this build of nn-engine has no PNG or JPEG decoder (the Windows build: libpng and libjpeg " \
                  "are not built for it yet)"

nn_status nn_image_codecs_check(const char *who, const char *dir) {
    return nn_set_error(NN_ERR_IO, "%s: %s: cannot read image folders: %s; use a folder of IDX files "
                        "(train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], t10k-...)", who, dir,
                        NO_CODECS);
}

int nn_image_signature_ok(const uint8_t *head, size_t size, char *why, size_t why_size) {
    snprintf(why, why_size, "%s", NO_CODECS);
    return 0;
}

nn_status nn_decode_png(const uint8_t *data, size_t size, const nn_decode_request *request, nn_image *out,
                        nn_box *box, char *why, size_t why_size) {
    snprintf(why, why_size, "%s", NO_CODECS);
    return NN_ERR_IO;
}

nn_status nn_decode_image(const uint8_t *data, size_t size, const nn_decode_request *request, nn_image *out,
                          nn_box *box, char *why, size_t why_size) {
    snprintf(why, why_size, "%s", NO_CODECS);
    return NN_ERR_IO;
}

nn_status nn_decode_gray(const uint8_t *data, size_t size, nn_gray_image *out, char *why, size_t why_size) {
    memset(out, 0, sizeof *out);
    snprintf(why, why_size, "%s", NO_CODECS);
    return NN_ERR_IO;
}
