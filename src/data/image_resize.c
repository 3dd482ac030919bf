/* Bilinear resize of a box of an 8-bit image into normalised planar floats,
 * with the half-pixel convention of PyTorch's interpolate(align_corners=
 * False, antialias=False) and torchvision's tensor Resize(antialias=False).
 * No antialiasing filter: the loader first decodes JPEGs at the DCT scale
 * closest above the output size, so the bilinear step never shrinks by
 * 2x or more for them (PNGs are decoded at full size). */
#include <math.h>
#include <stdlib.h>

#include "base/error.h"
#include "data/image_internal.h"

/* For each output coordinate: the two source indices and the weight of the
 * second. Source = x0 + (i + 0.5) * w / n - 0.5, clamped to the box (and
 * the image), as PyTorch clamps to the cropped tensor's edges. */
static void axis_taps(double x0, double w, int n, int size, int *lo, int *hi, float *frac) {
    double first = x0 > 0 ? x0 : 0, last = x0 + w - 1;
    if (last > size - 1) last = size - 1;
    if (last < first) last = first;
    double step = w / n;
    for (int i = 0; i < n; i++) {
        double s = x0 + (i + 0.5) * step - 0.5;
        if (s < first) s = first;
        if (s > last) s = last;
        int a = (int)floor(s);
        if (a > size - 1) a = size - 1;
        lo[i] = a;
        hi[i] = a + 1 < size ? a + 1 : a;
        frac[i] = (float)(s - a);
    }
}

nn_status nn_image_resize_bilinear(const uint8_t *pixels, int width, int height, int channels,
                                   double x0, double y0, double w, double h, bool flip,
                                   const float *mean, const float *std, float *out, int out_w,
                                   int out_h) {
    if (!pixels || !out || !mean || !std)
        return nn_set_error(NN_ERR_ARGUMENT, "nn_image_resize_bilinear: NULL argument");
    if (width < 1 || height < 1 || out_w < 1 || out_h < 1 || (channels != 1 && channels != 3))
        return nn_set_error(NN_ERR_ARGUMENT,
                            "nn_image_resize_bilinear: bad sizes %dx%dx%d -> %dx%d", width, height,
                            channels, out_w, out_h);
    if (!(w > 0 && h > 0 && x0 >= 0 && y0 >= 0 && x0 + w <= width + 1e-9 && y0 + h <= height + 1e-9))
        return nn_set_error(NN_ERR_ARGUMENT,
                            "nn_image_resize_bilinear: box (%g, %g, %g, %g) outside the %dx%d image",
                            x0, y0, w, h, width, height);
    for (int c = 0; c < channels; c++)
        if (!(std[c] > 0))
            return nn_set_error(NN_ERR_ARGUMENT, "nn_image_resize_bilinear: std[%d] = %g is not > 0",
                                c, std[c]);
    int *taps = malloc(sizeof(int) * 2 * (size_t)(out_w + out_h));
    float *fracs = malloc(sizeof(float) * (size_t)(out_w + out_h));
    float *row = malloc(sizeof(float) * (size_t)width * channels);
    if (!taps || !fracs || !row) {
        free(taps), free(fracs), free(row);
        return nn_set_error(NN_ERR_MEMORY, "nn_image_resize_bilinear: out of memory");
    }
    int *x_lo = taps, *x_hi = taps + out_w, *y_lo = taps + 2 * out_w, *y_hi = y_lo + out_h;
    float *x_frac = fracs, *y_frac = fracs + out_w;
    axis_taps(x0, w, out_w, width, x_lo, x_hi, x_frac);
    axis_taps(y0, h, out_h, height, y_lo, y_hi, y_frac);
    /* Only the source columns the taps reach are blended. */
    int col_first = x_lo[0] * channels, col_end = (x_hi[out_w - 1] + 1) * channels;
    /* Taps as offsets into an interleaved row; a flip mirrors the output,
     * i.e. output column x takes the taps of column out_w-1-x. */
    for (int x = 0; x < out_w; x++) x_lo[x] *= channels, x_hi[x] *= channels;
    if (flip)
        for (int x = 0, m = out_w - 1; x < m; x++, m--) {
            int t = x_lo[x]; x_lo[x] = x_lo[m]; x_lo[m] = t;
            t = x_hi[x]; x_hi[x] = x_hi[m]; x_hi[m] = t;
            float f = x_frac[x]; x_frac[x] = x_frac[m]; x_frac[m] = f;
        }
    float scale[3] = {0}, shift[3] = {0};
    for (int c = 0; c < channels; c++) { /* (p / 255 - mean) / std = p * scale + shift */
        scale[c] = 1.0f / (255.0f * std[c]);
        shift[c] = -mean[c] / std[c];
    }
    size_t plane = (size_t)out_w * out_h, stride = (size_t)width * channels;
    for (int y = 0; y < out_h; y++) {
        /* Vertical step first, on whole interleaved rows (contiguous, so
         * the compiler vectorises it), then the horizontal gather. The
         * result is the same bilinear value, summed in another order. */
        const uint8_t *r0 = pixels + (size_t)y_lo[y] * stride, *r1 = pixels + (size_t)y_hi[y] * stride;
        float fy = y_frac[y];
        for (int i = col_first; i < col_end; i++) row[i] = r0[i] + fy * (float)(r1[i] - r0[i]);
        float *d0 = out + (size_t)y * out_w;
        if (channels == 3) {
            float *d1 = d0 + plane, *d2 = d1 + plane;
            for (int x = 0; x < out_w; x++) {
                const float *a = row + x_lo[x], *b = row + x_hi[x];
                float f = x_frac[x];
                d0[x] = (a[0] + f * (b[0] - a[0])) * scale[0] + shift[0];
                d1[x] = (a[1] + f * (b[1] - a[1])) * scale[1] + shift[1];
                d2[x] = (a[2] + f * (b[2] - a[2])) * scale[2] + shift[2];
            }
        } else {
            for (int x = 0; x < out_w; x++) {
                float a = row[x_lo[x]], b = row[x_hi[x]];
                d0[x] = (a + x_frac[x] * (b - a)) * scale[0] + shift[0];
            }
        }
    }
    free(row);
    free(taps);
    free(fracs);
    return NN_OK;
}
