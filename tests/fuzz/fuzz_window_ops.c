/* libFuzzer target, differential (issue 40): windowed operations with the
 * sizes, strides, paddings, dilations, ceil_mode and groups the input
 * chooses, on the CPU backend, against double-precision loops written here
 * from PyTorch's rules: max and average pooling and 2-D convolution. The
 * probe that found max pooling reading past its input (a dilated window
 * wholly in the padding) hit it in 6 to 15 of 150 random cases. Built with
 * `make fuzz-ops`; `make fuzz-regress` replays tests/fuzz/corpus_ops/.
 *
 * Checked: the operation accepts exactly the parameters PyTorch accepts
 * (else it refuses, naming itself), its output has PyTorch's shape, and its
 * values equal the reference's within float rounding. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_engine.h"

static nn_ctx *ctx;

static void require(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "windowed operation violates: %s (%s)\n", what, nn_last_error());
        abort();
    }
}

/* The input's bytes, read in turn (zeros once they run out). */
typedef struct reader {
    const uint8_t *data;
    size_t size, at;
} reader;

static int take(reader *r, int lo, int hi) { /* in [lo, hi] */
    int b = r->at < r->size ? r->data[r->at++] : 0;
    return lo + b % (hi - lo + 1);
}

/* PyTorch's pooling_output_shape: division rounding down, and with ceil_mode
 * no window starting in the right padding; 0 or less is refused. */
static int64_t pooled(int64_t size, int k, int s, int p, int d, int ceil_mode) {
    int64_t num = size + 2 * p - (int64_t)d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
    int64_t n = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
    if (ceil_mode && (n - 1) * s >= size + p) n--;
    return n;
}

enum { MAX_POOL, AVG_POOL, CONV };

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1, .seed = 3});
    require(ctx != NULL, "a CPU context opens");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    reader r = {data, size, 0};
    const int op = take(&r, 0, 2);
    const int n = take(&r, 1, 2), c = take(&r, 1, 4), h = take(&r, 1, 9), w = take(&r, 1, 9);
    const int kh = take(&r, 1, 5), kw = take(&r, 1, 5), sh = take(&r, 1, 3), sw = take(&r, 1, 3);
    const int ph = take(&r, 0, 3), pw = take(&r, 0, 3);
    const int dh = op == AVG_POOL ? 1 : take(&r, 1, 3), dw = op == AVG_POOL ? 1 : take(&r, 1, 3);
    const int ceil_mode = op != CONV && take(&r, 0, 1), include_pad = take(&r, 0, 1);
    int groups = 1, filters = 1;
    if (op == CONV) {
        groups = take(&r, 1, c);
        while (c % groups) groups--;
        filters = groups * take(&r, 1, 3);
    }
    const int cg = c / groups, fg = filters / groups;
    float *x = malloc(sizeof(float) * (size_t)(n * c * h * w));
    float *weight = malloc(sizeof(float) * (size_t)(filters * cg * kh * kw));
    for (int i = 0; i < n * c * h * w; i++) x[i] = (float)(take(&r, 0, 255) - 128) / 32.0f;
    for (int i = 0; i < filters * cg * kh * kw; i++) weight[i] = (float)(take(&r, 0, 255) - 128) / 64.0f;
    nn_tensor *xt = nn_tensor_from_data(ctx, NN_F32, 4, (int64_t[]){n, c, h, w}, x);
    nn_tensor *wt = op == CONV ? nn_tensor_from_data(ctx, NN_F32, 4, (int64_t[]){filters, cg, kh, kw}, weight) : NULL;
    require(xt && (op != CONV || wt), "the operands are made");

    /* PyTorch's acceptance: padding at most half the (pooling) kernel, outputs of at least one. */
    int64_t oh, ow;
    int accepted;
    nn_tensor *y;
    const nn_pool2d_params window = {kh, kw, sh, sw, ph, pw, dh, dw, ceil_mode != 0};
    if (op == CONV) {
        oh = (h + 2 * ph - (int64_t)dh * (kh - 1) - 1) / sh + 1;
        ow = (w + 2 * pw - (int64_t)dw * (kw - 1) - 1) / sw + 1;
        accepted = h + 2 * ph >= (int64_t)dh * (kh - 1) + 1 && w + 2 * pw >= (int64_t)dw * (kw - 1) + 1;
        y = nn_conv2d_ex(xt, wt, NULL, &(nn_conv2d_params){sh, sw, ph, pw, dh, dw, groups});
    } else {
        oh = pooled(h, kh, sh, ph, dh, ceil_mode);
        ow = pooled(w, kw, sw, pw, dw, ceil_mode);
        accepted = ph <= kh / 2 && pw <= kw / 2 && oh >= 1 && ow >= 1;
        y = op == MAX_POOL ? nn_maxpool2d_window(xt, &window) : nn_avgpool2d(xt, &window, include_pad != 0, 0);
    }
    if (!accepted) {
        require(y == NULL && strstr(nn_last_error(), "nn_"), "parameters PyTorch refuses are refused by name");
    } else {
        require(y != NULL, "parameters PyTorch accepts are accepted");
        require(nn_tensor_dim(y, 0) == n && nn_tensor_dim(y, 1) == (op == CONV ? filters : c) &&
                    nn_tensor_dim(y, 2) == oh && nn_tensor_dim(y, 3) == ow, "the output has PyTorch's shape");
        const int out_c = op == CONV ? filters : c;
        float *got = malloc(sizeof(float) * (size_t)(n * out_c * oh * ow));
        require(nn_tensor_read(y, got, sizeof(float) * (size_t)(n * out_c * oh * ow)) == NN_OK, "the output reads");
        for (int b = 0; b < n; b++)
            for (int o = 0; o < out_c; o++)
                for (int i = 0; i < oh; i++)
                    for (int j = 0; j < ow; j++) {
                        double want = op == MAX_POOL ? -INFINITY : 0, magnitude = 0;
                        int count = 0;
                        const int g = op == CONV ? o / fg : 0;
                        for (int ci = 0; ci < (op == CONV ? cg : 1); ci++)
                            for (int a = 0; a < kh; a++)
                                for (int e = 0; e < kw; e++) {
                                    const int y0 = i * sh - ph + a * dh, x0 = j * sw - pw + e * dw;
                                    const int channel = op == CONV ? g * cg + ci : o;
                                    if (op == AVG_POOL && include_pad && y0 < h + ph && x0 < w + pw) count++;
                                    if (y0 < 0 || x0 < 0 || y0 >= h || x0 >= w) continue;
                                    const double v = x[((b * c + channel) * h + y0) * w + x0];
                                    if (op == MAX_POOL) want = v > want ? v : want;
                                    else if (op == AVG_POOL) want += v, count += !include_pad;
                                    else {
                                        const double p = v * weight[((o * cg + ci) * kh + a) * kw + e];
                                        want += p, magnitude += fabs(p);
                                    }
                                }
                        if (op == AVG_POOL) want /= count, magnitude = fabs(want);
                        const double v = got[((b * out_c + o) * oh + i) * ow + j];
                        const int same = op == MAX_POOL ? v == want : fabs(v - want) <= 1e-5 * (magnitude + 1);
                        if (!same) {
                            fprintf(stderr, "op %d output [%d, %d, %d, %d] = %.9g, want %.9g\n", op, b, o, i, j, v, want);
                            require(0, "the output equals the double-precision reference");
                        }
                    }
        free(got);
    }
    nn_ctx_step_end(ctx);
    nn_tensor_free(xt);
    nn_tensor_free(wt);
    free(x), free(weight);
    nn_clear_error();
    return 0;
}
