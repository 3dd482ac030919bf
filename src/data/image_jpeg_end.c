/* Does a JPEG's data reach its end marker? libjpeg (image_jpeg.c) finds a
 * cut file itself, but the Windows Imaging Component's decoder fills what
 * is missing with grey and reports success; image_wic.c asks this first.
 * It follows the markers from SOI: each segment by its length, each scan's
 * entropy-coded data byte by byte (0xFF 0x00 is a stuffed byte, 0xFF 0xD0
 * to 0xD7 a restart marker, any other 0xFF xx ends the scan), until EOI.
 * Stray bytes between segments are passed over, as libjpeg does. It cannot
 * see a scan whose data is too short for its blocks but still followed by
 * EOI: only a Huffman decode finds that. */
#include <stdio.h>

#include "data/image_internal.h"

enum { MARKER_SOS = 0xDA, MARKER_EOI = 0xD9, MARKER_TEM = 0x01 };

static int is_restart(uint8_t marker) { return marker >= 0xD0 && marker <= 0xD7; }

static int truncated(size_t offset, char *why, size_t why_size) {
    snprintf(why, why_size, "truncated: the data ends at byte %zu, before the end-of-image marker", offset);
    return 0;
}

int nn_jpeg_reaches_end(const uint8_t *data, size_t size, char *why, size_t why_size) {
    size_t at = 2; /* after SOI */
    for (;;) {
        while (at < size && data[at] != 0xFF) at++;     /* stray bytes */
        while (at + 1 < size && data[at + 1] == 0xFF) at++; /* fill bytes */
        if (at + 1 >= size) return truncated(size, why, why_size);
        uint8_t marker = data[at + 1];
        at += 2;
        if (marker == MARKER_EOI) return 1;
        if (marker == 0x00 || marker == MARKER_TEM || is_restart(marker)) continue; /* no length */
        if (at + 2 > size) return truncated(size, why, why_size);
        size_t length = (size_t)data[at] << 8 | data[at + 1];
        if (length < 2 || length > size - at) return truncated(size, why, why_size);
        at += length;
        if (marker != MARKER_SOS) continue;
        for (;;) { /* the scan's entropy-coded data */
            while (at < size && data[at] != 0xFF) at++;
            if (at + 1 >= size) return truncated(size, why, why_size);
            uint8_t next = data[at + 1];
            if (next == 0x00 || is_restart(next)) at += 2;
            else if (next == 0xFF) at += 1;
            else break; /* a marker: the scan is over */
        }
    }
}
