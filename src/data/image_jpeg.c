/* JPEG decoding with libjpeg-turbo to 8-bit grayscale or RGB. libjpeg
 * reports errors through callbacks; here they become a reason string, so
 * that one bad file in a folder of thousands is skipped and counted rather
 * than ending the run.
 *
 * A JPEG much larger than the model's input is decoded at a reduced DCT
 * scale (libjpeg's scale_num / 8): the IDCT then produces the smaller image
 * directly, which is both faster and a better low-pass filter than decoding
 * at full size and resizing bilinearly. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>

#include "data/image_internal.h"

static void whole_box(int width, int height, nn_box *box) {
    *box = (nn_box){0, 0, width, height};
}

typedef struct jpeg_error_trap {
    struct jpeg_error_mgr manager;
    jmp_buf escape;
    char message[JMSG_LENGTH_MAX + 16];
} jpeg_error_trap;

/* libjpeg's default handler exits the process; this one jumps back instead. */
static void jpeg_error_exit(j_common_ptr cinfo) {
    jpeg_error_trap *trap = (jpeg_error_trap *)cinfo->err;
    cinfo->err->format_message(cinfo, trap->message);
    longjmp(trap->escape, 1);
}

/* Warnings are quiet, except that missing data ends the decode: libjpeg
 * would fill the missing rows with grey and go on, which must not reach
 * training as if it were the photo, and its skip over the rest of a
 * truncated progressive file can loop for minutes (the fuzzer's input in
 * tests/fuzz/corpus_image/). Other warnings (extraneous bytes before a
 * marker, common in real photos) are harmless, as in Pillow. */
static void jpeg_warning(j_common_ptr cinfo, int level) {
    jpeg_error_trap *trap = (jpeg_error_trap *)cinfo->err;
    int code = cinfo->err->msg_code;
    if (level < 0 && (code == JWRN_JPEG_EOF || code == JWRN_HIT_MARKER)) {
        char text[JMSG_LENGTH_MAX];
        cinfo->err->format_message(cinfo, text);
        snprintf(trap->message, sizeof trap->message, "truncated: %s", text);
        longjmp(trap->escape, 1);
    }
}

/* A bound on the decoder's work (issue 40, item 7): a progressive file
 * may hold any number of scans, and a damaged one made libjpeg's skip loop
 * over them for minutes. Photos have a few dozen scans at most. libjpeg
 * calls the progress monitor per iMCU row of every input pass and per
 * output row; the decode ends past JPEG_MAX_SCANS scans, or past a number
 * of calls that such scans over this image cannot reach. */
#define JPEG_MAX_SCANS 500

typedef struct jpeg_budget {
    struct jpeg_progress_mgr manager;
    int64_t calls, limit;
} jpeg_budget;

static void jpeg_progress(j_common_ptr common) {
    j_decompress_ptr cinfo = (j_decompress_ptr)common;
    jpeg_budget *budget = (jpeg_budget *)common->progress;
    jpeg_error_trap *trap = (jpeg_error_trap *)common->err;
    if (cinfo->input_scan_number > JPEG_MAX_SCANS) {
        snprintf(trap->message, sizeof trap->message, "more than %d scans", JPEG_MAX_SCANS);
        longjmp(trap->escape, 1);
    }
    if (++budget->calls > budget->limit) {
        snprintf(trap->message, sizeof trap->message, "more decoding work than %d scans of a %ux%u image take",
                 JPEG_MAX_SCANS, cinfo->image_width, cinfo->image_height);
        longjmp(trap->escape, 1);
    }
}

nn_status nn_decode_jpeg(const uint8_t *data, size_t size, const nn_decode_request *request, nn_image *out,
                         nn_box *box, char *why, size_t why_size) {
    struct jpeg_decompress_struct cinfo;
    jpeg_error_trap trap;
    cinfo.err = jpeg_std_error(&trap.manager);
    trap.manager.error_exit = jpeg_error_exit;
    trap.manager.emit_message = jpeg_warning;
    if (setjmp(trap.escape)) {
        snprintf(why, why_size, "damaged JPEG (%s)", trap.message);
        jpeg_destroy_decompress(&cinfo);
        return NN_ERR_IO;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, data, (unsigned long)size);
    jpeg_read_header(&cinfo, TRUE);
    int full_w = (int)cinfo.image_width, full_h = (int)cinfo.image_height;
    jpeg_budget budget = {.manager = {.progress_monitor = jpeg_progress},
                          .limit = (JPEG_MAX_SCANS + 2) * ((int64_t)full_h / 8 + 2) + 4 * (int64_t)full_h + 1024};
    cinfo.progress = &budget.manager;
    if ((int64_t)full_w * full_h > NN_IMAGE_MAX_PIXELS) {
        snprintf(why, why_size, "JPEG of %dx%d pixels is too large (at most %lld pixels)", full_w, full_h,
                 (long long)NN_IMAGE_MAX_PIXELS);
        jpeg_destroy_decompress(&cinfo);
        return NN_ERR_IO;
    }
    if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
        snprintf(why, why_size, "CMYK JPEG (not supported)");
        jpeg_destroy_decompress(&cinfo);
        return NN_ERR_IO;
    }
    nn_box full;
    if (request->choose_box) request->choose_box(request->user, full_w, full_h, &full);
    else whole_box(full_w, full_h, &full);
    /* libjpeg converts YCbCr to luma or RGB, and grayscale to RGB. */
    cinfo.out_color_space = request->channels == 3 ? JCS_RGB : JCS_GRAYSCALE;
    cinfo.scale_num = (unsigned)nn_jpeg_choose_scale(&full, request->min_width, request->min_height);
    cinfo.scale_denom = 8;
    jpeg_start_decompress(&cinfo);
    /* The box at this scale: each decoded pixel covers 8/n source pixels
     * (the last one partly padding: the size is ceil(full * n / 8)), so
     * coordinates scale by exactly n/8. */
    double s = cinfo.scale_num / 8.0;
    nn_box scaled = {full.x0 * s, full.y0 * s, full.w * s, full.h * s};
    /* Only the rows and columns the resize's taps reach are decoded: rows
     * above and below are skipped (still entropy-decoded, so damage there
     * is still found, but no IDCT, upsampling or colour conversion), and
     * columns are cropped to whole iMCUs. A random-resized crop keeps about
     * half of a photo, and decodes faster this way (bench/README.md). */
    int row_first = 0, row_last = (int)cinfo.output_height - 1;
    int col_first = 0, col_last = (int)cinfo.output_width - 1;
    if (!request->whole_jpeg) {
        nn_jpeg_tap_span(scaled.y0, scaled.h, (int)cinfo.output_height, &row_first, &row_last);
        nn_jpeg_tap_span(scaled.x0, scaled.w, (int)cinfo.output_width, &col_first, &col_last);
    }
    JDIMENSION x_offset = 0, crop_width = cinfo.output_width;
    if (col_first > 0 || col_last < (int)cinfo.output_width - 1) {
        x_offset = (JDIMENSION)col_first;
        crop_width = (JDIMENSION)(col_last - col_first + 1);
        jpeg_crop_scanline(&cinfo, &x_offset, &crop_width); /* widened to iMCU bounds */
    }
    int channels = request->channels;
    int width = (int)cinfo.output_width, height = row_last - row_first + 1;
    size_t row_bytes = (size_t)width * channels;
    if (!nn_image_reserve(out, row_bytes * (height + 1))) { /* + a scratch row */
        snprintf(why, why_size, "out of memory for a %dx%d JPEG", width, height);
        jpeg_destroy_decompress(&cinfo);
        return NN_ERR_MEMORY;
    }
    if (row_first > 0) jpeg_skip_scanlines(&cinfo, (JDIMENSION)row_first);
    while ((int)cinfo.output_scanline <= row_last) {
        JSAMPROW rows[4];
        int y = (int)cinfo.output_scanline - row_first, n = row_last + 1 - (int)cinfo.output_scanline;
        if (n > 4) n = 4;
        for (int r = 0; r < n; r++) rows[r] = out->pixels + (size_t)(y + r) * row_bytes;
        jpeg_read_scanlines(&cinfo, rows, (JDIMENSION)n);
    }
    /* Skip to the last row and decode it: libjpeg's skip to the very end
     * returns without reading the data, which would let a truncated file
     * through. */
    if ((int)cinfo.output_scanline < (int)cinfo.output_height - 1)
        jpeg_skip_scanlines(&cinfo, cinfo.output_height - 1 - cinfo.output_scanline);
    if (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW scratch = out->pixels + (size_t)height * row_bytes;
        jpeg_read_scanlines(&cinfo, &scratch, 1);
    }
    boolean finished = jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    if (!finished) {
        snprintf(why, why_size, "JPEG data ends before its end marker");
        return NN_ERR_IO;
    }
    out->width = width;
    out->height = height;
    out->channels = channels;
    *box = (nn_box){scaled.x0 - x_offset, scaled.y0 - row_first, scaled.w, scaled.h};
    return NN_OK;
}
