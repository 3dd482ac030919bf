/* What part of a JPEG a decode request needs: the DCT scale and the rows
 * and columns the resize's taps read. Shared by both JPEG decoders
 * (image_jpeg.c, image_wic.c), so that they return the same sizes and boxes. */
#include <math.h>

#include "data/image_internal.h"

/* The smallest n in 1, 2, 4 at which the box, scaled by n/8, still
 * measures at least min_w x min_h; else 8 (full size, also when no minimum
 * is asked). Only the power-of-two scales: libjpeg-turbo has SIMD inverse
 * DCTs for them, while 3/8, 5/8, 6/8 and 7/8 run plain-C IDCTs that are
 * slower than a full-size decode (bench/README.md). */
int nn_jpeg_choose_scale(const nn_box *box, int min_w, int min_h) {
    if (min_w <= 0 && min_h <= 0) return 8;
    for (int n = 1; n < 8; n *= 2)
        if (box->w * n / 8 >= min_w && box->h * n / 8 >= min_h) return n;
    return 8;
}

/* The rows (or columns) [first, last] of a decoded image of `size` that the
 * bilinear taps of the box span [start, start + length) read: the same
 * clamping as nn_image_resize_bilinear, plus the one neighbour after. */
void nn_jpeg_tap_span(double start, double length, int size, int *first, int *last) {
    double lo = start > 0 ? start : 0, hi = start + length - 1;
    if (hi > size - 1) hi = size - 1;
    if (hi < lo) hi = lo;
    *first = (int)floor(lo);
    *last = (int)floor(hi) + 1;
    if (*first > size - 1) *first = size - 1;
    if (*last > size - 1) *last = size - 1;
}
