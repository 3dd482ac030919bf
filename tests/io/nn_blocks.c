/* Issue 21's three blocks (tests/reference_blocks.py) written with the C
 * API, trained as tests/io/test_blocks_c.py asks and compared there with
 * PyTorch's losses step by step:
 *
 *   nn_blocks BLOCK WEIGHTS DATA STEPS LOSSES
 *
 * BLOCK: residual | transformer | separable. WEIGHTS: the block's PyTorch
 * state_dict as safetensors (loaded strictly). DATA: BATCHES batches of
 * inputs (float32) then their labels (int32), raw. Trains STEPS steps of
 * SGD (lr 0.05, momentum 0.9) on batch step % BATCHES, the loss softmax
 * cross-entropy (nn_cross_entropy), and writes each step's loss (float32)
 * to LOSSES. NN_IO_FIXTURE_DEVICE=vulkan runs on the GPU. Exit status 0 on
 * success; errors go to stderr. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_engine.h"

#define CLASSES 5
#define BATCHES 4
#define BATCH 4
#define LR 0.05f
#define MOMENTUM 0.9f

static nn_module *child(nn_module *m, const char *name) { return nn_module_child(m, name); }
static nn_tensor *run(nn_module *m, const char *name, nn_tensor *x) { return nn_module_forward(child(m, name), x); }

/* ---- the pre-activation residual block ---- */

static nn_tensor *residual_forward(nn_module *self, nn_tensor *x) {
    nn_tensor *a = nn_relu(run(self, "bn1", x));
    nn_tensor *h = run(self, "conv2", nn_relu(run(self, "bn2", run(self, "conv1", a))));
    h = nn_add(h, run(self, "shortcut", a));
    return run(self, "fc", nn_mean_dims(h, (int[]){2, 3}, 2, false));
}

static nn_module *conv(nn_ctx *ctx, int in, int out, int kernel, int groups) {
    const nn_conv2d_params p = {.stride_h = 1, .stride_w = 1, .pad_h = kernel / 2, .pad_w = kernel / 2,
                                .groups = groups};
    return nn_conv2d_layer_ex(ctx, in, out, kernel, kernel, &p, false);
}

static nn_module *bn(nn_ctx *ctx, int channels) { return nn_batchnorm2d(ctx, channels, 1e-5f, 0.1f, true, true); }

static nn_status residual_children(nn_ctx *ctx, nn_module *m) {
    nn_status st = nn_module_add_child(m, "bn1", bn(ctx, 8));
    if (st == NN_OK) st = nn_module_add_child(m, "conv1", conv(ctx, 8, 16, 3, 1));
    if (st == NN_OK) st = nn_module_add_child(m, "bn2", bn(ctx, 16));
    if (st == NN_OK) st = nn_module_add_child(m, "conv2", conv(ctx, 16, 16, 3, 1));
    if (st == NN_OK) st = nn_module_add_child(m, "shortcut", conv(ctx, 8, 16, 1, 1));
    if (st == NN_OK) st = nn_module_add_child(m, "fc", nn_linear_layer(ctx, 16, CLASSES, NN_INIT_KAIMING_UNIFORM));
    return st;
}

/* ---- the pre-norm transformer encoder block: 4 heads of 4 over 16 ---- */

#define DIM 16
#define HEADS 4

/* [n, t, DIM] -> [n, HEADS, t, DIM / HEADS] */
static nn_tensor *heads_of(nn_tensor *z, int64_t n, int64_t t) {
    return nn_permute(nn_reshape(z, 4, (int64_t[]){n, t, HEADS, DIM / HEADS}), (int[]){0, 2, 1, 3}, 4);
}

static nn_tensor *attention(nn_module *self, nn_tensor *x) {
    const int64_t n = nn_tensor_dim(x, 0), t = nn_tensor_dim(x, 1);
    nn_tensor *qkv = run(self, "qkv", x);
    nn_tensor *q = heads_of(nn_slice(qkv, 2, 0, DIM, 1), n, t);
    nn_tensor *k = heads_of(nn_slice(qkv, 2, DIM, 2 * DIM, 1), n, t);
    nn_tensor *v = heads_of(nn_slice(qkv, 2, 2 * DIM, 3 * DIM, 1), n, t);
    nn_tensor *scores = nn_mul_scalar(nn_matmul_batched(q, nn_transpose(k, -1, -2)), 1.0f / sqrtf(DIM / HEADS));
    nn_tensor *out = nn_matmul_batched(nn_softmax(scores), v);
    return run(self, "proj", nn_reshape(nn_permute(out, (int[]){0, 2, 1, 3}, 4), 3, (int64_t[]){n, t, DIM}));
}

static nn_tensor *transformer_forward(nn_module *self, nn_tensor *x) {
    nn_tensor *h = nn_add(x, attention(self, run(self, "ln1", x)));
    h = nn_add(h, run(self, "fc2", nn_gelu(run(self, "fc1", run(self, "ln2", h)), false)));
    return run(self, "head", nn_mean_dims(h, (int[]){1}, 1, false));
}

static nn_status transformer_children(nn_ctx *ctx, nn_module *m) {
    const int64_t dim = DIM;
    const nn_init init = NN_INIT_KAIMING_UNIFORM;
    nn_status st = nn_module_add_child(m, "ln1", nn_layernorm(ctx, 1, &dim, 1e-5f, true, true));
    if (st == NN_OK) st = nn_module_add_child(m, "qkv", nn_linear_layer(ctx, DIM, 3 * DIM, init));
    if (st == NN_OK) st = nn_module_add_child(m, "proj", nn_linear_layer(ctx, DIM, DIM, init));
    if (st == NN_OK) st = nn_module_add_child(m, "ln2", nn_layernorm(ctx, 1, &dim, 1e-5f, true, true));
    if (st == NN_OK) st = nn_module_add_child(m, "fc1", nn_linear_layer(ctx, DIM, 4 * DIM, init));
    if (st == NN_OK) st = nn_module_add_child(m, "fc2", nn_linear_layer(ctx, 4 * DIM, DIM, init));
    if (st == NN_OK) st = nn_module_add_child(m, "head", nn_linear_layer(ctx, DIM, CLASSES, init));
    return st;
}

/* ---- the depthwise-separable block ---- */

static nn_tensor *separable_forward(nn_module *self, nn_tensor *x) {
    nn_tensor *h = nn_relu6(run(self, "bn1", run(self, "dw", x)));
    h = nn_relu6(run(self, "bn2", run(self, "pw", h)));
    return run(self, "fc", nn_flatten(nn_adaptive_avgpool2d(h, 1, 1)));
}

static nn_status separable_children(nn_ctx *ctx, nn_module *m) {
    nn_status st = nn_module_add_child(m, "dw", conv(ctx, 8, 8, 3, 8));
    if (st == NN_OK) st = nn_module_add_child(m, "bn1", bn(ctx, 8));
    if (st == NN_OK) st = nn_module_add_child(m, "pw", conv(ctx, 8, 16, 1, 1));
    if (st == NN_OK) st = nn_module_add_child(m, "bn2", bn(ctx, 16));
    if (st == NN_OK) st = nn_module_add_child(m, "fc", nn_linear_layer(ctx, 16, CLASSES, NN_INIT_KAIMING_UNIFORM));
    return st;
}

static const struct {
    const char *name;
    nn_module_forward_fn forward;
    nn_status (*children)(nn_ctx *, nn_module *);
    int ndim;
    int64_t input[4]; /* one batch */
} kBlocks[] = {
    {"residual", residual_forward, residual_children, 4, {BATCH, 8, 9, 9}},
    {"transformer", transformer_forward, transformer_children, 3, {BATCH, 7, DIM}},
    {"separable", separable_forward, separable_children, 4, {BATCH, 8, 9, 9}},
};

static int fail(const char *what) {
    fprintf(stderr, "nn_blocks: %s: %s\n", what, nn_last_error());
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: nn_blocks residual|transformer|separable WEIGHTS DATA STEPS LOSSES\n");
        return 2;
    }
    int b = -1;
    for (int i = 0; i < 3; i++)
        if (strcmp(argv[1], kBlocks[i].name) == 0) b = i;
    const long steps = strtol(argv[4], NULL, 10);
    if (b < 0 || steps < 1) {
        fprintf(stderr, "nn_blocks: unknown block %s or bad step count %s\n", argv[1], argv[4]);
        return 2;
    }
    int64_t per_batch = 1;
    for (int d = 0; d < kBlocks[b].ndim; d++) per_batch *= kBlocks[b].input[d];
    float *inputs = malloc(sizeof(float) * (size_t)(per_batch * BATCHES));
    int32_t labels[BATCHES * BATCH];
    FILE *f = fopen(argv[3], "rb");
    const bool read = f && inputs && fread(inputs, sizeof(float), (size_t)(per_batch * BATCHES), f) ==
                                          (size_t)(per_batch * BATCHES) &&
                      fread(labels, sizeof labels[0], BATCHES * BATCH, f) == BATCHES * BATCH;
    if (f) fclose(f);
    if (!read) {
        fprintf(stderr, "nn_blocks: cannot read %s\n", argv[3]);
        free(inputs);
        return 1;
    }
    const char *device = getenv("NN_IO_FIXTURE_DEVICE");
    nn_ctx *ctx = nn_ctx_new(&(nn_ctx_options){.device = device ? device : "cpu", .threads = 2, .seed = 1});
    if (!ctx) return fail("context");
    nn_module *net = nn_module_new(ctx, kBlocks[b].name, kBlocks[b].forward, NULL, NULL);
    int rc = !net || kBlocks[b].children(ctx, net) != NN_OK ? fail("block") : 0;
    if (rc == 0 && nn_load_module(net, argv[2]) != NN_OK) rc = fail("load");
    nn_optimizer *opt = NULL;
    if (rc == 0) {
        nn_tensor *params[64];
        const int count = nn_module_param_count(net);
        for (int i = 0; i < count && i < 64; i++) params[i] = nn_module_param(net, i);
        opt = nn_sgd_new(params, count, &(nn_sgd_options){.lr = LR, .momentum = MOMENTUM});
        if (!opt) rc = fail("optimizer");
    }
    float *losses = calloc((size_t)steps, sizeof *losses);
    for (long step = 0; rc == 0 && step < steps; step++) {
        const int k = (int)(step % BATCHES);
        nn_tensor *x = nn_tensor_from_data(ctx, NN_F32, kBlocks[b].ndim, kBlocks[b].input, inputs + k * per_batch);
        nn_tensor *y = nn_tensor_from_data(ctx, NN_I32, 1, (int64_t[]){BATCH}, labels + k * BATCH);
        nn_tensor *loss = x && y ? nn_cross_entropy(nn_module_forward(net, x), y, NULL, NN_REDUCTION_MEAN, -100, 0.0f)
                                 : NULL;
        if (!loss || nn_optimizer_zero_grad(opt) != NN_OK || nn_backward(loss) != NN_OK ||
            nn_optimizer_step(opt) != NN_OK || nn_tensor_read(loss, &losses[step], sizeof(float)) != NN_OK ||
            nn_ctx_step_end(ctx) != NN_OK)
            rc = fail("step");
        nn_tensor_free(x);
        nn_tensor_free(y);
    }
    FILE *out = rc == 0 ? fopen(argv[5], "wb") : NULL;
    if (rc == 0 && (!out || fwrite(losses, sizeof(float), (size_t)steps, out) != (size_t)steps)) rc = 1;
    if (out) fclose(out);
    free(losses);
    free(inputs);
    nn_optimizer_free(opt);
    nn_module_free(net);
    nn_ctx_free(ctx);
    return rc;
}
