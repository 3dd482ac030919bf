/* The test images of the Windows test build, which has no libpng or
 * libjpeg: PNGs written here with zlib (every byte under the test's
 * control, 16-bit and gAMA included), JPEGs with WIC's JPEG encoder (the
 * one Windows programs use; it writes baseline files alone, so there is no
 * progressive writer here). */
#define COBJMACROS
#include <windows.h>
#include <wincodec.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../test_files.h"

static void put_u32(uint8_t *p, uint32_t v) {
    for (int b = 0; b < 4; b++) p[b] = (uint8_t)(v >> (24 - 8 * b));
}

/* One chunk: length, type, data, CRC of type and data. */
static int write_chunk(FILE *f, const char *type, const uint8_t *data, uint32_t length) {
    uint8_t head[8], tail[4];
    put_u32(head, length);
    memcpy(head + 4, type, 4);
    uLong crc = crc32(crc32(0, (const Bytef *)type, 4), data, length);
    put_u32(tail, (uint32_t)crc);
    return fwrite(head, 1, 8, f) == 8 && fwrite(data, 1, length, f) == length && fwrite(tail, 1, 4, f) == 4;
}

/* channels 1: grey, 2: grey + alpha, 3: RGB, 4: RGBA; the samples are bytes8 (8-bit) or samples16. */
static int write_png(const char *path, int width, int height, int channels, int bits, double gamma,
                     const uint8_t *bytes8, const uint16_t *samples16) {
    static const uint8_t colour_type[5] = {0, 0, 4, 2, 6};
    size_t row = 1 + (size_t)width * channels * (bits / 8); /* filter byte 0: none */
    size_t raw_size = row * height;
    uint8_t *raw = malloc(raw_size);
    uLongf packed_size = compressBound((uLong)raw_size);
    uint8_t *packed = malloc(packed_size);
    FILE *f = fopen(path, "wb");
    int ok = raw && packed && f;
    for (int y = 0; ok && y < height; y++) {
        uint8_t *r = raw + y * row;
        *r++ = 0;
        for (int i = 0; i < width * channels; i++) {
            size_t at = (size_t)y * width * channels + i;
            uint16_t v = samples16 ? samples16[at] : bytes8[at];
            if (bits == 16) *r++ = (uint8_t)(v >> 8);
            *r++ = (uint8_t)v;
        }
    }
    ok = ok && compress2(packed, &packed_size, raw, (uLong)raw_size, 9) == Z_OK;
    static const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    uint8_t ihdr[13] = {0};
    put_u32(ihdr, (uint32_t)width);
    put_u32(ihdr + 4, (uint32_t)height);
    ihdr[8] = (uint8_t)bits;
    ihdr[9] = colour_type[channels];
    uint8_t gama[4];
    put_u32(gama, (uint32_t)(gamma * 100000 + 0.5));
    ok = ok && fwrite(signature, 1, 8, f) == 8 && write_chunk(f, "IHDR", ihdr, 13);
    if (gamma > 0) ok = ok && write_chunk(f, "gAMA", gama, 4);
    ok = ok && write_chunk(f, "IDAT", packed, (uint32_t)packed_size) && write_chunk(f, "IEND", NULL, 0);
    if (f) ok = fclose(f) == 0 && ok;
    free(raw);
    free(packed);
    return ok;
}

int tf_write_png(const char *path, const uint8_t *pixels, int width, int height, int channels) {
    return write_png(path, width, height, channels, 8, 0, pixels, NULL);
}

int tf_write_png_samples(const char *path, const uint16_t *samples, int width, int height, int channels,
                         int bits, double gamma) {
    return write_png(path, width, height, channels, bits, gamma, NULL, samples);
}

/* WIC's encoder: 24-bit BGR or 8-bit grey pixels, the quality in [0, 1]. */
static int write_jpeg_wic(const char *path, const uint8_t *pixels, int width, int height, int channels,
                          int quality) {
    wchar_t wide[MAX_PATH];
    if (!MultiByteToWideChar(CP_UTF8, 0, path, -1, wide, MAX_PATH)) return 0;
    HRESULT init = CoInitializeEx(NULL, COINIT_MULTITHREADED);
    IWICImagingFactory *factory = NULL;
    IWICStream *stream = NULL;
    IWICBitmapEncoder *encoder = NULL;
    IWICBitmapFrameEncode *frame = NULL;
    IPropertyBag2 *options = NULL;
    size_t stride = (size_t)width * channels;
    uint8_t *bgr = malloc(stride * height);
    HRESULT hr = bgr ? CoCreateInstance(&CLSID_WICImagingFactory, NULL, CLSCTX_INPROC_SERVER,
                                        &IID_IWICImagingFactory, (void **)&factory)
                     : E_OUTOFMEMORY;
    if (SUCCEEDED(hr)) hr = IWICImagingFactory_CreateStream(factory, &stream);
    if (SUCCEEDED(hr)) hr = IWICStream_InitializeFromFilename(stream, wide, GENERIC_WRITE);
    if (SUCCEEDED(hr)) hr = IWICImagingFactory_CreateEncoder(factory, &GUID_ContainerFormatJpeg, NULL, &encoder);
    if (SUCCEEDED(hr)) hr = IWICBitmapEncoder_Initialize(encoder, (IStream *)stream, WICBitmapEncoderNoCache);
    if (SUCCEEDED(hr)) hr = IWICBitmapEncoder_CreateNewFrame(encoder, &frame, &options);
    if (SUCCEEDED(hr)) {
        PROPBAG2 name = {0};
        name.pstrName = (LPOLESTR)L"ImageQuality";
        VARIANT value;
        VariantInit(&value);
        value.vt = VT_R4;
        value.fltVal = quality / 100.0f;
        hr = IPropertyBag2_Write(options, 1, &name, &value);
    }
    if (SUCCEEDED(hr)) hr = IWICBitmapFrameEncode_Initialize(frame, options);
    if (SUCCEEDED(hr)) hr = IWICBitmapFrameEncode_SetSize(frame, (UINT)width, (UINT)height);
    WICPixelFormatGUID format = channels == 3 ? GUID_WICPixelFormat24bppBGR : GUID_WICPixelFormat8bppGray;
    const WICPixelFormatGUID wanted = format;
    if (SUCCEEDED(hr)) hr = IWICBitmapFrameEncode_SetPixelFormat(frame, &format);
    if (SUCCEEDED(hr) && memcmp(&format, &wanted, sizeof format) != 0) hr = E_FAIL; /* no conversion here */
    if (SUCCEEDED(hr)) {
        for (size_t i = 0; i < (size_t)width * height; i++)
            for (int c = 0; c < channels; c++) bgr[i * channels + c] = pixels[i * channels + channels - 1 - c];
        hr = IWICBitmapFrameEncode_WritePixels(frame, (UINT)height, (UINT)stride, (UINT)(stride * height), bgr);
    }
    if (SUCCEEDED(hr)) hr = IWICBitmapFrameEncode_Commit(frame);
    if (SUCCEEDED(hr)) hr = IWICBitmapEncoder_Commit(encoder);
    if (options) IPropertyBag2_Release(options);
    if (frame) IWICBitmapFrameEncode_Release(frame);
    if (encoder) IWICBitmapEncoder_Release(encoder);
    if (stream) IWICStream_Release(stream);
    if (factory) IWICImagingFactory_Release(factory);
    if (SUCCEEDED(init)) CoUninitialize();
    free(bgr);
    if (FAILED(hr)) fprintf(stderr, "tf_write_jpeg: %s: WIC error 0x%08lx\n", path, (unsigned long)hr);
    return SUCCEEDED(hr);
}

int tf_write_jpeg(const char *path, const uint8_t *pixels, int width, int height, int channels, int quality) {
    return write_jpeg_wic(path, pixels, width, height, channels, quality);
}

int tf_write_jpeg_gray(const char *path, const uint8_t *pixels, int width, int height, int quality) {
    return write_jpeg_wic(path, pixels, width, height, 1, quality);
}

int tf_write_jpeg_progressive(const char *path, const uint8_t *pixels, int width, int height, int channels,
                              int quality) {
    fprintf(stderr, "tf_write_jpeg_progressive: %s: WIC writes no progressive JPEG\n", path);
    return 0;
}
