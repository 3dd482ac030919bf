/* libFuzzer target for the ONNX importer (nn_onnx_import, issue 38): the
 * input is one ONNX file, imported on the CPU and, when that succeeds, run
 * once on a [2, 3, 8, 8] input in training mode with a backward pass.
 * Built with `make fuzz-onnx`; `make fuzz-regress` replays
 * tests/fuzz/corpus_onnx/ (seeds: a tiny graph of the import tests and
 * torch.onnx exports of a small convolutional network, eval and training
 * mode, written by tests/fuzz/make_seeds_onnx.py).
 *
 * Besides the sanitizers' checks: a refused file or graph leaves a message
 * naming it; an imported module that fails to run says why. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nn_engine.h"

static nn_ctx *ctx;
static char path[64];

static void require(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "ONNX importer violates: %s (%s)\n", what, nn_last_error());
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!ctx) {
        ctx = nn_ctx_new(&(nn_ctx_options){.device = "cpu", .threads = 1});
        snprintf(path, sizeof path, "/tmp/fuzz_onnx_%d.onnx", (int)getpid());
    }
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    nn_module *m = nn_onnx_import(ctx, path);
    if (!m) {
        require(strstr(nn_last_error(), path) != NULL, "a refused file is named in the message");
        return 0;
    }
    const int64_t shape[4] = {2, 3, 8, 8};
    nn_tensor *x = nn_tensor_new(ctx, NN_F32, 4, shape);
    nn_tensor *y = x ? nn_module_forward(m, x) : NULL;
    if (y) {
        nn_tensor *loss = nn_sum(y);
        if (loss) nn_backward(loss);
    } else {
        require(nn_last_error()[0] != '\0', "a failed forward says why");
    }
    nn_ctx_step_end(ctx);
    nn_tensor_free(x);
    nn_module_free(m);
    return 0;
}
