/* PNG and JPEG decoding on Windows with the Windows Imaging Component (WIC,
 * windowscodecs.dll, part of every Windows since Vista; Wine has it too), to
 * the same 8-bit grey or RGB, sizes and boxes as libpng and libjpeg give on
 * Linux (image_png.c, image_jpeg.c), with no DLL to ship:
 *  - PNG samples as stored: 16-bit sources are read in their own format and
 *    keep their high byte, 8-bit ones are converted to BGRA (palettes, low
 *    bit depths, tRNS expanded, exactly), alpha dropped, and grey from colour
 *    is the same fixed-point luma. So PNG pixels equal Linux's.
 *  - JPEG: WIC's IDCT and colour conversion are its own, so pixels differ
 *    from libjpeg-turbo's by a few levels (JPEG's own error is larger). The
 *    reduced DCT scales are matched in size and box by averaging each
 *    (8/n)x(8/n) block of the full decode, the low-pass a scaled IDCT is; the
 *    rows and columns outside the request's box are not copied out. A file
 *    cut before its end marker is refused (image_jpeg_end.c), since WIC
 *    fills the missing rows with grey.
 * COM is initialised per call on the calling thread (the loader's workers
 * are plain threads), and released again when this call initialised it. */
#define COBJMACROS
#include <windows.h>
#include <wincodec.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/image_internal.h"

typedef enum image_kind { KIND_PNG, KIND_JPEG } image_kind;

/* The COM objects of one decode; every one is released on every path. */
typedef struct wic_decode {
    int com_initialised;
    IWICImagingFactory *factory;
    IWICStream *stream;
    IWICBitmapDecoder *decoder;
    IWICBitmapFrameDecode *frame;
    IWICFormatConverter *converter;
    uint8_t *scratch; /* pixels as WIC gives them, before the conversion to `out` */
} wic_decode;

static void wic_release(wic_decode *w) {
    if (w->converter) IWICFormatConverter_Release(w->converter);
    if (w->frame) IWICBitmapFrameDecode_Release(w->frame);
    if (w->decoder) IWICBitmapDecoder_Release(w->decoder);
    if (w->stream) IWICStream_Release(w->stream);
    if (w->factory) IWICImagingFactory_Release(w->factory);
    if (w->com_initialised) CoUninitialize();
    free(w->scratch);
}

static const char *kind_name(image_kind kind) { return kind == KIND_PNG ? "PNG" : "JPEG"; }

/* Before the header is read the file is "not a readable" image, after it
 * "damaged", as image_png.c and image_jpeg.c say. */
static nn_status refuse(image_kind kind, int header_read, const char *step, HRESULT hr, char *why,
                        size_t why_size) {
    if (kind == KIND_PNG)
        snprintf(why, why_size, "%s PNG (WIC %s: error 0x%08lx)", header_read ? "damaged" : "not a readable", step,
                 (unsigned long)hr);
    else
        snprintf(why, why_size, "damaged JPEG (WIC %s: error 0x%08lx)", step, (unsigned long)hr);
    return NN_ERR_IO;
}

/* Opens the decoder and its first frame on the bytes in memory. */
static nn_status wic_open(wic_decode *w, image_kind kind, const uint8_t *data, size_t size, char *why,
                          size_t why_size) {
    if (size > 0xFFFFFFFFu) {
        snprintf(why, why_size, "%s file of %zu bytes is too large (at most 4 GiB)", kind_name(kind), size);
        return NN_ERR_IO;
    }
    HRESULT hr = CoInitializeEx(NULL, COINIT_MULTITHREADED);
    w->com_initialised = SUCCEEDED(hr); /* S_FALSE too; RPC_E_CHANGED_MODE: the caller's apartment serves */
    hr = CoCreateInstance(&CLSID_WICImagingFactory, NULL, CLSCTX_INPROC_SERVER, &IID_IWICImagingFactory,
                          (void **)&w->factory);
    if (FAILED(hr)) {
        snprintf(why, why_size, "cannot decode %s: the Windows Imaging Component is missing (error 0x%08lx)",
                 kind_name(kind), (unsigned long)hr);
        return NN_ERR_IO;
    }
    hr = IWICImagingFactory_CreateStream(w->factory, &w->stream);
    if (SUCCEEDED(hr)) hr = IWICStream_InitializeFromMemory(w->stream, (BYTE *)data, (DWORD)size);
    if (FAILED(hr)) return refuse(kind, 0, "stream", hr, why, why_size);
    hr = IWICImagingFactory_CreateDecoderFromStream(w->factory, (IStream *)w->stream, NULL,
                                                    WICDecodeMetadataCacheOnDemand, &w->decoder);
    if (FAILED(hr)) return refuse(kind, 0, "decoder", hr, why, why_size);
    hr = IWICBitmapDecoder_GetFrame(w->decoder, 0, &w->frame);
    if (FAILED(hr)) return refuse(kind, 0, "frame", hr, why, why_size);
    return NN_OK;
}

/* How the pixels are copied out of WIC: in the frame's own 16-bit format,
 * or converted to 8-bit grey or BGRA. */
typedef struct pixel_layout {
    const GUID *format;
    int channels;        /* samples per pixel as copied */
    int bytes_per_sample; /* 1, or 2 (little-endian, the high byte kept) */
    int bgr;             /* colour stored as B, G, R */
} pixel_layout;

static int same_guid(const GUID *a, const GUID *b) { return memcmp(a, b, sizeof *a) == 0; }

static pixel_layout choose_layout(const GUID *source, int channels) {
    if (same_guid(source, &GUID_WICPixelFormat16bppGray)) return (pixel_layout){source, 1, 2, 0};
    if (same_guid(source, &GUID_WICPixelFormat48bppRGB)) return (pixel_layout){source, 3, 2, 0};
    if (same_guid(source, &GUID_WICPixelFormat48bppBGR)) return (pixel_layout){source, 3, 2, 1};
    if (same_guid(source, &GUID_WICPixelFormat64bppRGBA)) return (pixel_layout){source, 4, 2, 0};
    if (same_guid(source, &GUID_WICPixelFormat64bppBGRA)) return (pixel_layout){source, 4, 2, 1};
    int grey = same_guid(source, &GUID_WICPixelFormat8bppGray) || same_guid(source, &GUID_WICPixelFormat4bppGray) ||
               same_guid(source, &GUID_WICPixelFormat2bppGray) ||
               same_guid(source, &GUID_WICPixelFormatBlackWhite);
    if (grey && channels == 1) return (pixel_layout){&GUID_WICPixelFormat8bppGray, 1, 1, 0};
    return (pixel_layout){&GUID_WICPixelFormat32bppBGRA, 4, 1, 1};
}

/* The sample `c` (R, G, B order; grey repeats) of the pixel at `p`. */
static unsigned sample(const pixel_layout *layout, const uint8_t *p, int c) {
    if (layout->channels == 1) c = 0;
    else if (layout->bgr) c = 2 - c;
    return layout->bytes_per_sample == 2 ? p[2 * c + 1] : p[c];
}

/* Copied pixels to `channels` 8-bit samples, in place-safe order: grey from
 * colour with libjpeg's rgb_gray and Pillow's "L" weights (image_png.c). */
static void to_output(const pixel_layout *layout, const uint8_t *from, size_t pixels, int channels, uint8_t *to) {
    size_t stride = (size_t)layout->channels * layout->bytes_per_sample;
    for (size_t i = 0; i < pixels; i++) {
        const uint8_t *p = from + i * stride;
        if (channels == 3)
            for (int c = 0; c < 3; c++) to[3 * i + c] = (uint8_t)sample(layout, p, c);
        else if (layout->channels == 1)
            to[i] = (uint8_t)sample(layout, p, 0);
        else
            to[i] = (uint8_t)((19595u * sample(layout, p, 0) + 38470u * sample(layout, p, 1) +
                               7471u * sample(layout, p, 2) + 32768u) >> 16);
    }
}

/* The region of the frame to copy, in full-size pixels, and how it maps to
 * the output: `factor` (8/n) source pixels per output pixel. */
typedef struct copy_region {
    int x, y, width, height; /* source rectangle */
    int out_width, out_height;
    int factor;
} copy_region;

/* Averages each factor x factor block (the last row and column of blocks
 * may be partial) of the `channels`-sample region at `src` into `dst`. */
static void average_blocks(const uint8_t *src, const copy_region *r, int channels, uint8_t *dst) {
    int f = r->factor;
    for (int oy = 0; oy < r->out_height; oy++) {
        int y0 = oy * f, y1 = y0 + f < r->height ? y0 + f : r->height;
        for (int ox = 0; ox < r->out_width; ox++) {
            int x0 = ox * f, x1 = x0 + f < r->width ? x0 + f : r->width;
            unsigned count = (unsigned)((y1 - y0) * (x1 - x0));
            for (int c = 0; c < channels; c++) {
                unsigned sum = 0;
                for (int y = y0; y < y1; y++)
                    for (int x = x0; x < x1; x++) sum += src[((size_t)y * r->width + x) * channels + c];
                dst[((size_t)oy * r->out_width + ox) * channels + c] = (uint8_t)((sum + count / 2) / count);
            }
        }
    }
}

static uint32_t big_endian_u32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A PNG's size from its IHDR, refused before WIC sees it: WIC's decoder
 * (Wine's at least) allocates the whole image when it opens the file. */
static int png_size_acceptable(const uint8_t *data, size_t size, char *why, size_t why_size) {
    if (size < 24 || memcmp(data + 12, "IHDR", 4) != 0) return 1; /* WIC says what is wrong */
    uint32_t width = big_endian_u32(data + 16), height = big_endian_u32(data + 20);
    if ((int64_t)width * height <= NN_IMAGE_MAX_PIXELS) return 1;
    snprintf(why, why_size, "PNG of %ux%u pixels is too large (at most %lld pixels)", (unsigned)width,
             (unsigned)height, (long long)NN_IMAGE_MAX_PIXELS);
    return 0;
}

static nn_status decode(image_kind kind, const uint8_t *data, size_t size, const nn_decode_request *request,
                        nn_image *out, nn_box *box, char *why, size_t why_size) {
    char cut[160];
    if (kind == KIND_JPEG && !nn_jpeg_reaches_end(data, size, cut, sizeof cut)) {
        snprintf(why, why_size, "damaged JPEG (%s)", cut);
        return NN_ERR_IO;
    }
    if (kind == KIND_PNG && !png_size_acceptable(data, size, why, why_size)) return NN_ERR_IO;
    wic_decode w = {0};
    nn_status status = wic_open(&w, kind, data, size, why, why_size);
    UINT width = 0, height = 0;
    GUID source;
    HRESULT hr = S_OK;
    if (status == NN_OK) {
        hr = IWICBitmapFrameDecode_GetSize(w.frame, &width, &height);
        if (SUCCEEDED(hr)) hr = IWICBitmapFrameDecode_GetPixelFormat(w.frame, &source);
        if (FAILED(hr)) status = refuse(kind, 0, "header", hr, why, why_size);
    }
    if (status == NN_OK && (width == 0 || height == 0)) {
        snprintf(why, why_size, "%s of %ux%u pixels has none", kind_name(kind), (unsigned)width, (unsigned)height);
        status = NN_ERR_IO;
    }
    if (status == NN_OK && (int64_t)width * height > NN_IMAGE_MAX_PIXELS) {
        snprintf(why, why_size, "%s of %ux%u pixels is too large (at most %lld pixels)", kind_name(kind),
                 (unsigned)width, (unsigned)height, (long long)NN_IMAGE_MAX_PIXELS);
        status = NN_ERR_IO;
    }
    if (status == NN_OK && kind == KIND_JPEG && same_guid(&source, &GUID_WICPixelFormat32bppCMYK)) {
        snprintf(why, why_size, "CMYK JPEG (not supported)");
        status = NN_ERR_IO;
    }
    if (status != NN_OK) {
        wic_release(&w);
        return status;
    }
    int full_w = (int)width, full_h = (int)height, channels = request->channels;
    nn_box full;
    if (request->choose_box) request->choose_box(request->user, full_w, full_h, &full);
    else full = (nn_box){0, 0, full_w, full_h};
    /* PNG: always the whole image (as libpng); JPEG: the scale and the
     * rows and columns libjpeg would give. */
    int n = kind == KIND_JPEG ? nn_jpeg_choose_scale(&full, request->min_width, request->min_height) : 8;
    int scaled_w = (full_w * n + 7) / 8, scaled_h = (full_h * n + 7) / 8;
    double s = n / 8.0;
    nn_box scaled = {full.x0 * s, full.y0 * s, full.w * s, full.h * s};
    int row_first = 0, row_last = scaled_h - 1, col_first = 0, col_last = scaled_w - 1;
    if (kind == KIND_JPEG && !request->whole_jpeg) {
        nn_jpeg_tap_span(scaled.y0, scaled.h, scaled_h, &row_first, &row_last);
        nn_jpeg_tap_span(scaled.x0, scaled.w, scaled_w, &col_first, &col_last);
    }
    copy_region region = {.factor = 8 / n, .out_width = col_last - col_first + 1, .out_height = row_last - row_first + 1};
    region.x = col_first * region.factor, region.y = row_first * region.factor;
    region.width = (col_last + 1) * region.factor < full_w ? (col_last + 1) * region.factor - region.x : full_w - region.x;
    region.height = (row_last + 1) * region.factor < full_h ? (row_last + 1) * region.factor - region.y : full_h - region.y;

    pixel_layout layout = choose_layout(&source, channels);
    IWICBitmapSource *pixels_from = (IWICBitmapSource *)w.frame;
    if (!same_guid(layout.format, &source)) {
        hr = IWICImagingFactory_CreateFormatConverter(w.factory, &w.converter);
        if (SUCCEEDED(hr))
            hr = IWICFormatConverter_Initialize(w.converter, (IWICBitmapSource *)w.frame, layout.format,
                                                WICBitmapDitherTypeNone, NULL, 0.0, WICBitmapPaletteTypeCustom);
        if (FAILED(hr)) {
            status = refuse(kind, 1, "pixel format conversion", hr, why, why_size);
            wic_release(&w);
            return status;
        }
        pixels_from = (IWICBitmapSource *)w.converter;
    }
    size_t stride = (size_t)region.width * layout.channels * layout.bytes_per_sample;
    size_t copied = stride * region.height;
    size_t out_bytes = (size_t)region.out_width * region.out_height * channels;
    size_t reduced_bytes = region.factor > 1 ? (size_t)region.width * region.height * channels : 0;
    w.scratch = malloc(copied + reduced_bytes);
    if (!w.scratch || !nn_image_reserve(out, out_bytes) || stride > 0xFFFFFFFFu || copied > 0xFFFFFFFFu) {
        snprintf(why, why_size, "out of memory for a %dx%d %s", region.width, region.height, kind_name(kind));
        wic_release(&w);
        return NN_ERR_MEMORY;
    }
    WICRect rect = {region.x, region.y, region.width, region.height};
    hr = IWICBitmapSource_CopyPixels(pixels_from, &rect, (UINT)stride, (UINT)copied, w.scratch);
    if (FAILED(hr)) {
        status = refuse(kind, 1, "pixels", hr, why, why_size);
        wic_release(&w);
        return status;
    }
    size_t region_pixels = (size_t)region.width * region.height;
    if (region.factor > 1) {
        uint8_t *full_size = w.scratch + copied;
        to_output(&layout, w.scratch, region_pixels, channels, full_size);
        average_blocks(full_size, &region, channels, out->pixels);
    } else {
        to_output(&layout, w.scratch, region_pixels, channels, out->pixels);
    }
    wic_release(&w);
    out->width = region.out_width;
    out->height = region.out_height;
    out->channels = channels;
    *box = (nn_box){scaled.x0 - col_first, scaled.y0 - row_first, scaled.w, scaled.h};
    return NN_OK;
}

nn_status nn_decode_png(const uint8_t *data, size_t size, const nn_decode_request *request, nn_image *out,
                        nn_box *box, char *why, size_t why_size) {
    return decode(KIND_PNG, data, size, request, out, box, why, why_size);
}

nn_status nn_decode_jpeg(const uint8_t *data, size_t size, const nn_decode_request *request, nn_image *out,
                         nn_box *box, char *why, size_t why_size) {
    return decode(KIND_JPEG, data, size, request, out, box, why, why_size);
}
