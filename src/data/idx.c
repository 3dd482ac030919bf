/* IDX files (LeCun's MNIST format, also Fashion-MNIST's): a big-endian magic
 * word whose low byte is the number of dimensions and whose second byte is
 * the element type (0x08 = uint8), the dimensions as big-endian uint32, then
 * the data. zlib's gz reader reads gzip-compressed and raw files alike. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/error.h"
#include "data/dataset_internal.h"

#define IDX_IMAGES_MAGIC 0x00000803u /* uint8, 3 dimensions */
#define IDX_LABELS_MAGIC 0x00000801u /* uint8, 1 dimension */
/* Bounds that no real IDX file exceeds; a header beyond them is corrupt. */
#define IDX_MAX_SIDE 65536u
#define IDX_MAX_BYTES ((int64_t)1 << 36)

typedef struct idx_file {
    gzFile gz;
    const char *path;
} idx_file;

static nn_status idx_open(idx_file *f, const char *path) {
    f->path = path;
    errno = 0;
    f->gz = gzopen(path, "rb");
    if (!f->gz)
        return nn_set_error(NN_ERR_IO, "%s: cannot open (%s)", path,
                            errno ? strerror(errno) : "out of memory");
    return NN_OK;
}

/* Reads exactly `size` bytes; `what` names them for the error message. */
static nn_status idx_read(idx_file *f, void *dst, int64_t size, const char *what) {
    uint8_t *out = dst;
    int64_t done = 0;
    while (done < size) {
        int64_t want = size - done;
        if (want > (1 << 30)) want = 1 << 30;
        int got = gzread(f->gz, out + done, (unsigned)want);
        if (got < 0) {
            int code;
            const char *message = gzerror(f->gz, &code);
            return nn_set_error(NN_ERR_IO, "%s: read error in %s (%s)", f->path, what, message);
        }
        if (got == 0) {
            /* gzread reports a damaged gzip stream as a short read plus an error. */
            int code;
            const char *message = gzerror(f->gz, &code);
            if (code != Z_OK && code != Z_BUF_ERROR)
                return nn_set_error(NN_ERR_IO, "%s: corrupt gzip data in %s (%s)", f->path, what, message);
            return nn_set_error(NN_ERR_IO,
                                "%s: truncated: the file ends after %lld of the %lld bytes of %s",
                                f->path, (long long)done, (long long)size, what);
        }
        done += got;
    }
    return NN_OK;
}

static nn_status idx_read_u32(idx_file *f, uint32_t *value, const char *what) {
    uint8_t b[4];
    NN_TRY(idx_read(f, b, 4, what));
    *value = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
    return NN_OK;
}

static nn_status idx_check_magic(idx_file *f, uint32_t expected, const char *kind) {
    uint32_t magic;
    NN_TRY(idx_read_u32(f, &magic, "the header"));
    if (magic != expected)
        return nn_set_error(NN_ERR_IO,
                            "%s: not an IDX %s file: magic number 0x%08x, expected 0x%08x", f->path,
                            kind, magic, expected);
    return NN_OK;
}

/* Nothing may follow the data: trailing bytes mean the header's counts are wrong. */
static nn_status idx_check_end(idx_file *f) {
    uint8_t extra;
    int got = gzread(f->gz, &extra, 1);
    if (got == 1)
        return nn_set_error(NN_ERR_IO, "%s: more data than the header's dimensions say", f->path);
    return NN_OK;
}

static nn_status load_images(const char *path, nn_dataset *out) {
    idx_file f;
    NN_TRY(idx_open(&f, path));
    uint32_t count = 0, rows = 0, cols = 0;
    nn_status status = idx_check_magic(&f, IDX_IMAGES_MAGIC, "image (uint8, 3-D)");
    if (status == NN_OK) status = idx_read_u32(&f, &count, "the header");
    if (status == NN_OK) status = idx_read_u32(&f, &rows, "the header");
    if (status == NN_OK) status = idx_read_u32(&f, &cols, "the header");
    if (status == NN_OK && (count == 0 || rows == 0 || cols == 0 || rows > IDX_MAX_SIDE ||
                            cols > IDX_MAX_SIDE ||
                            (int64_t)count > IDX_MAX_BYTES / ((int64_t)rows * cols)))
        status = nn_set_error(NN_ERR_IO, "%s: implausible dimensions %u x %u x %u in the header",
                              path, count, rows, cols);
    if (status == NN_OK) {
        int64_t bytes = (int64_t)count * rows * cols;
        out->pixels = malloc((size_t)bytes);
        if (!out->pixels)
            status = nn_set_error(NN_ERR_MEMORY, "%s: out of memory for %u images of %ux%u", path,
                                  count, rows, cols);
        else
            status = idx_read(&f, out->pixels, bytes, "the images");
    }
    if (status == NN_OK) status = idx_check_end(&f);
    gzclose(f.gz);
    if (status != NN_OK) return status;
    out->count = count;
    out->channels = 1;
    out->height = (int)rows;
    out->width = (int)cols;
    return NN_OK;
}

static nn_status load_labels(const char *path, int64_t expected_count, nn_dataset *out) {
    idx_file f;
    NN_TRY(idx_open(&f, path));
    uint32_t count = 0;
    uint8_t *raw = NULL;
    nn_status status = idx_check_magic(&f, IDX_LABELS_MAGIC, "label (uint8, 1-D)");
    if (status == NN_OK) status = idx_read_u32(&f, &count, "the header");
    if (status == NN_OK && (int64_t)count != expected_count)
        status = nn_set_error(NN_ERR_IO, "%s: %u labels, but the image file has %lld images", path,
                              count, (long long)expected_count);
    if (status == NN_OK) {
        raw = malloc(count);
        out->labels = malloc(count * sizeof *out->labels);
        if (!raw || !out->labels)
            status = nn_set_error(NN_ERR_MEMORY, "%s: out of memory for %u labels", path, count);
        else
            status = idx_read(&f, raw, count, "the labels");
    }
    if (status == NN_OK) status = idx_check_end(&f);
    gzclose(f.gz);
    int max_label = -1;
    for (uint32_t i = 0; status == NN_OK && i < count; i++) {
        out->labels[i] = raw[i];
        if (raw[i] > max_label) max_label = raw[i];
    }
    free(raw);
    if (status != NN_OK) return status;
    out->classes = max_label + 1;
    return NN_OK;
}

nn_status nn_dataset_load_idx(const char *images_path, const char *labels_path, nn_dataset *out) {
    if (!images_path || !labels_path || !out)
        return nn_set_error(NN_ERR_ARGUMENT, "nn_dataset_load_idx: NULL argument");
    memset(out, 0, sizeof *out);
    nn_status status = load_images(images_path, out);
    if (status == NN_OK) status = load_labels(labels_path, out->count, out);
    if (status == NN_OK) status = nn_dataset_name_classes_by_number(out);
    if (status != NN_OK) nn_dataset_free(out);
    return status;
}
