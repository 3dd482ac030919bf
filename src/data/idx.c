/* IDX files (LeCun's MNIST format, also Fashion-MNIST's): a big-endian magic
 * word whose low byte is the number of dimensions and whose second byte is
 * the element type (0x08 = uint8), the dimensions as big-endian uint32, then
 * the data. zlib's gz reader reads gzip-compressed and raw files alike.
 * Sizes in a header are checked against the file's own size before
 * anything is allocated, and a gzip stream must end with its trailer (CRC32
 * and length), so a truncated or corrupted download is refused. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "base/error.h"
#include "data/dataset_internal.h"
#include "io/file_read.h"

#define IDX_IMAGES_MAGIC 0x00000803u /* uint8, 3 dimensions */
#define IDX_LABELS_MAGIC 0x00000801u /* uint8, 1 dimension */
/* Bounds that no real IDX file exceeds; a header beyond them is corrupt. */
#define IDX_MAX_SIDE 65536u
#define IDX_MAX_BYTES ((int64_t)1 << 36)
/* Deflate's largest expansion: 258 bytes from 2 bits, so about 1032 to 1. */
#define DEFLATE_MAX_RATIO 1032

typedef struct idx_file {
    gzFile gz;
    const char *path;
    int64_t file_size;
    bool compressed;
    /* gzip: the file's last 8 bytes (the trailer: CRC32 and length of the
     * data, little-endian), and the same of what was read, compared at the
     * end. zlib's gzread ends without an error when a file is cut exactly
     * at its trailer and the whole file had been read ahead, so the check
     * is ours. */
    uint32_t trailer_crc, trailer_length, crc, length;
} idx_file;

static nn_status idx_open(idx_file *f, const char *path) {
    f->path = path;
    char why[128];
    int fd = nn_open_regular_fd(path, &f->file_size, why, sizeof why);
    if (fd < 0) return nn_set_error(NN_ERR_IO, "%s: %s", path, why);
    uint8_t magic[2] = {0, 0};
    /* read and seek back rather than pread, which Windows lacks */
    f->compressed = read(fd, magic, 2) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    f->crc = (uint32_t)crc32(0L, Z_NULL, 0), f->length = 0, f->trailer_crc = 0, f->trailer_length = 0;
    uint8_t trailer[8];
    if (f->compressed && f->file_size >= 18 && lseek(fd, -8, SEEK_END) >= 0 && read(fd, trailer, 8) == 8) {
        f->trailer_crc = (uint32_t)trailer[0] | (uint32_t)trailer[1] << 8 | (uint32_t)trailer[2] << 16 |
                         (uint32_t)trailer[3] << 24;
        f->trailer_length = (uint32_t)trailer[4] | (uint32_t)trailer[5] << 8 | (uint32_t)trailer[6] << 16 |
                            (uint32_t)trailer[7] << 24;
    }
    if (lseek(fd, 0, SEEK_SET) != 0) {
        close(fd);
        return nn_set_error(NN_ERR_IO, "%s: cannot read (it does not seek)", path);
    }
    f->gz = gzdopen(fd, "rb");
    if (!f->gz) {
        close(fd);
        return nn_set_error(NN_ERR_IO, "%s: cannot read (out of host memory)", path);
    }
    return NN_OK;
}

/* The most data bytes the file can hold after a header of `header` bytes:
 * exactly what follows it in a raw file; for gzip, what deflate can expand
 * the compressed bytes to. A header asking for more is refused before the
 * allocation it would cause. */
static nn_status idx_check_size(const idx_file *f, int64_t header, int64_t wanted, const char *what) {
    int64_t most = f->compressed ? f->file_size * DEFLATE_MAX_RATIO : f->file_size - header;
    if (wanted <= most) return NN_OK;
    return nn_set_error(NN_ERR_IO, "%s: the header asks for %lld bytes of %s, but the file has %lld bytes%s",
                        f->path, (long long)wanted, what, (long long)f->file_size,
                        f->compressed ? " (truncated or corrupt: gzip expands at most 1032-fold)" : " (truncated, or a corrupt header)");
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
        if (f->compressed) f->crc = (uint32_t)crc32(f->crc, out + done, (uInt)got);
        f->length += (uint32_t)got; /* modulo 2^32, as the trailer's */
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
    /* Reading past the data is what checks a gzip trailer: a missing or
     * short one is Z_BUF_ERROR ("unexpected end of file"), a wrong CRC32 or
     * length Z_DATA_ERROR. */
    int code;
    const char *message = gzerror(f->gz, &code);
    if (code == Z_BUF_ERROR)
        return nn_set_error(NN_ERR_IO, "%s: truncated gzip stream: its trailer (CRC32 and length) is missing (%s)",
                            f->path, message);
    if (code != Z_OK)
        return nn_set_error(NN_ERR_IO, "%s: corrupt gzip stream (%s)", f->path, message);
    if (f->compressed && (f->crc != f->trailer_crc || f->length != f->trailer_length))
        return nn_set_error(NN_ERR_IO, "%s: truncated or corrupt gzip stream: its last 8 bytes (CRC32 %08x, length "
                            "%u) are not the trailer of the data read (CRC32 %08x, length %u); a file of several "
                            "gzip members is not read either", f->path, f->trailer_crc, f->trailer_length, f->crc,
                            f->length);
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
    if (status == NN_OK) status = idx_check_size(&f, 16, (int64_t)count * rows * cols, "images");
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
    if (status == NN_OK) status = idx_check_size(&f, 8, count, "labels");
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
