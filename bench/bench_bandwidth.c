/* The memory-bound kernels at the shapes models train at, next to a device
 * copy (bench/README.md, issue 34): ResNet-50 at batch 128 and 224x224
 * (BatchNorm, ReLU, the residual add and the global average pool,
 * channels-last as the GPU runs them), vit-tiny at batch 256 (50 tokens,
 * width 192) and GPT-2 small at batch 8 and context 1024 (width 768,
 * vocabulary 50257): LayerNorm, GELU, the bias gradient, the residual add,
 * log_softmax and the softmax cross-entropy over the vocabulary, the
 * embedding, and AdamW's update over every parameter.
 *
 * Each figure times one operation's kernels alone: a capture of --reps
 * launches (more for small tensors, so that a replay lasts about 2 ms),
 * replayed; the median over --runs replays divided by the launches. A
 * forward runs with gradients off (nothing saved for a backward); a
 * backward is the operation's own backward rule (its node's, read off the
 * tape after one eager forward) with the output's gradient given, the
 * input's gradient overwritten (the input is an operation's result, as in
 * a model) and the parameters' accumulated (as a model's are). GB/s counts
 * the bytes the operation must move at least: each input read once, each
 * output written once. The reference: a copy of half those bytes (so it
 * moves as many), timed the same way, the faster of nn_tensor_copy (a
 * transfer command, vkCmdCopyBuffer on Vulkan) and the copy as a compute
 * kernel (the elementwise kernel's out = 1 * a). Lines starting "bw"
 * carry the shape, the launches and the times for bench/torch_bandwidth.py,
 * which times PyTorch's kernels for the same operations and a
 * device-to-device copy of the same bytes, and prints the table.
 *
 *   build/bench/bench_bandwidth [--device vulkan] [--runs 7] [--reps R] [--only NAME] [--scale S]
 *
 * --scale S divides the large dimensions (the batch, the tokens, the
 * parameters) by S: a quick check on a small machine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_replay.h"
#include "core/graph.h" /* a node's backward rule, run alone */
#include "nn_capture.h"
#include "nn_engine.h"
#include "ops/op_common.h" /* nn_run_scale: the copy kernel */
#include "ops/ops.h"

static const char *program = "bench_bandwidth";
static nn_ctx *ctx;
static int runs = 7;
static int scale = 1;
static int fixed_reps; /* --reps: launches per capture (0: by the bytes) */
static const char *only;

static void die(const char *what) {
    fprintf(stderr, "%s: %s: %s\n", program, what, nn_last_error());
    exit(1);
}

static void check(nn_status s, const char *what) {
    if (s != NN_OK) die(what);
}

/* Launches per capture: about 6 GB moved per replay (2 ms at 3 TB/s), 5 to 400. */
static int reps_for(double bytes) {
    if (fixed_reps > 0) return fixed_reps;
    double r = 6e9 / bytes;
    return r < 5 ? 5 : r > 400 ? 400 : (int)r;
}

static nn_tensor *uniform(int ndim, const int64_t *shape, float lo, float hi) {
    nn_tensor *t = nn_tensor_new(ctx, NN_F32, ndim, shape);
    if (!t) die("a tensor");
    check(nn_init_uniform(t, lo, hi), "nn_init_uniform");
    return t;
}

static nn_tensor *leaf(int ndim, const int64_t *shape, float lo, float hi) {
    nn_tensor *t = uniform(ndim, shape, lo, hi);
    check(nn_tensor_set_requires_grad(t, true), "requires_grad");
    return t;
}

/* An activation: the result of an operation (x0 * 1) on a leaf, so that its
 * gradient is written, not added to, as inside a model; kept past the
 * step's end. */
static nn_tensor *activation(int ndim, const int64_t *shape, float lo, float hi, nn_layout layout) {
    if (layout != NN_LAYOUT_DENSE && ndim != 4) die("channels-last needs 4 dimensions");
    nn_tensor *x0 = leaf(ndim, shape, lo, hi);
    x0->layout = layout; /* random values: any layout holds them */
    nn_tensor *x = nn_mul_scalar(x0, 1.0f);
    if (!x) die("an activation");
    check(nn_ctx_flush(ctx, x), "flush");
    check(nn_tensor_persist(x), "persist");
    if (x->layout != layout) fprintf(stderr, "%s: an activation's layout %d, not %d\n", program, (int)x->layout, (int)layout);
    nn_tensor_free(x0);
    return x;
}

typedef struct work work;
typedef nn_tensor *(*forward_fn)(work *w);

struct work {
    const char *model, *name, *key; /* key: the operation, for torch_bandwidth.py */
    int64_t dims[4];
    int ndims;
    double bytes;
    forward_fn forward;
    nn_tensor *in[4];
    nn_layout layout;
    bool backward; /* time the forward's node's backward rule, not the forward */
    nn_optimizer *opt;
    nn_buffer_ref args[4];
    nn_bias_params bias;
};

static double run_captured(void (*body)(work *), work *w, int reps) {
    check(nn_capture_begin(ctx), "capture begin");
    for (int r = 0; r < reps; r++) body(w);
    nn_capture *c = nn_capture_end(ctx);
    if (!c) die("capture end");
    return bench_replay_median_ms(ctx, c, reps, runs, program);
}

static void forward_body(work *w) {
    nn_tensor *y = w->forward(w);
    if (!y) die(w->name);
    check(nn_ctx_flush(ctx, y), "flush");
    nn_tensor_free(y);
}

static nn_node *backward_node;
static nn_tensor *backward_input; /* the activation whose gradient is overwritten */

static void backward_body(work *w) {
    (void)w;
    if (backward_input) backward_input->grad_written = false;
    check(backward_node->op->backward(backward_node), "backward");
}

static void copy_body(work *w) { check(nn_tensor_copy(w->in[1], w->in[0]), "copy"); }

/* The copy as a compute kernel: the elementwise kernel's out = 1 * a. */
static void kernel_copy_body(work *w) {
    check(nn_run_scale(ctx, nn_tensor_ref(w->in[0]), nn_tensor_ref(w->in[1]), nn_tensor_numel(w->in[0]), 1.0f, 0),
          "copy kernel");
}

static void optimizer_body(work *w) { check(nn_optimizer_step(w->opt), "optimizer step"); }

static void bias_grad_body(work *w) { check(nn_ctx_run(ctx, NN_KERNEL_BIAS_GRAD, w->args, 2, &w->bias), "bias grad"); }

/* The device copy of the same bytes (bytes / 2 read, bytes / 2 written):
 * nn_tensor_copy (a transfer command: vkCmdCopyBuffer), and the copy as a
 * compute kernel in *kernel_ms. */
static double copy_ms(double bytes, int reps, double *kernel_ms) {
    int64_t n = (int64_t)(bytes / 8);
    work c = {0};
    c.in[0] = uniform(1, &n, -1, 1);
    c.in[1] = uniform(1, &n, -1, 1);
    double ms = run_captured(copy_body, &c, reps);
    if (kernel_ms) *kernel_ms = run_captured(kernel_copy_body, &c, reps);
    nn_tensor_free(c.in[0]);
    nn_tensor_free(c.in[1]);
    return ms;
}

static void report(const work *w, double ms, int reps) {
    double kernel;
    const double buffer = copy_ms(w->bytes, reps, &kernel), copy = buffer < kernel ? buffer : kernel;
    char shape[64] = "";
    int at = 0;
    for (int i = 0; i < w->ndims; i++)
        at += snprintf(shape + at, sizeof shape - (size_t)at, "%s%lld", i ? "x" : "", (long long)w->dims[i]);
    printf("%-10s %-34s %-22s %9.1f %8.4f %7.0f %7.0f %7.0f %6.2f%s\n", w->model, w->name, shape, w->bytes * 1e-6, ms,
           w->bytes / ms * 1e-6, w->bytes / buffer * 1e-6, w->bytes / kernel * 1e-6, copy / ms,
           copy / ms < 0.7 ? " *" : "");
    printf("bw %s %s %d %s %.0f %d %.5f %.5f %.5f\n", w->model, w->key, w->ndims, shape, w->bytes, reps, ms, buffer,
           kernel);
    fflush(stdout);
}

static bool wanted(const work *w) { return !only || strstr(w->name, only) || strstr(w->key, only); }

/* Time w: its forward, or its node's backward rule (dy given): in[0], an
 * activation, gets its gradient written; leaves (parameters) get theirs
 * added into. The cross-entropy's dy is not the backward's seed, so its
 * rule scales the saved gradient rather than handing it on. */
static void measure(work *w) {
    if (!wanted(w)) return;
    const int reps = reps_for(w->bytes);
    double ms;
    if (!w->backward) {
        bool was = nn_ctx_set_grad_enabled(ctx, false);
        ms = run_captured(forward_body, w, reps);
        nn_ctx_set_grad_enabled(ctx, was);
    } else {
        nn_tensor *y = w->forward(w);
        if (!y) die(w->name);
        check(nn_ctx_flush(ctx, y), "flush");
        backward_node = y->grad_fn;
        if (!backward_node || backward_node->segment) die("the operation's node");
        backward_input = w->in[0]->grad_fn ? w->in[0] : NULL;
        if (y->numel == w->in[0]->numel && y->layout != w->in[0]->layout)
            fprintf(stderr, "%s: %s: the output's layout %d is not the input's %d\n", program, w->name, (int)y->layout,
                    (int)w->in[0]->layout);
        nn_tensor *dy = uniform(y->ndim, y->shape, -1, 1);
        dy->layout = y->layout;
        y->grad = dy;
        backward_body(w); /* eager: the gradients exist before the capture */
        ms = run_captured(backward_body, w, reps);
        y->grad = NULL;
        nn_tensor_free(dy);
    }
    report(w, ms, reps);
    check(nn_ctx_sync(ctx), "sync");
}

/* ---- the operations ---- */

static nn_tensor *f_batch_norm(work *w) {
    return nn_batch_norm(w->in[0], NULL, NULL, w->in[1], w->in[2], true, 0.1f, 1e-5f);
}
static nn_tensor *f_relu(work *w) { return nn_relu(w->in[0]); }
static nn_tensor *f_add(work *w) { return nn_add(w->in[0], w->in[1]); }
static nn_tensor *f_pool(work *w) { return nn_adaptive_avgpool2d(w->in[0], 1, 1); }
static nn_tensor *f_layer_norm(work *w) {
    const int64_t d = w->dims[1];
    return nn_layer_norm(w->in[0], 1, &d, w->in[1], w->in[2], 1e-5f);
}
static nn_tensor *f_gelu(work *w) { return nn_gelu(w->in[0], false); }
static nn_tensor *f_log_softmax(work *w) { return nn_log_softmax(w->in[0], 1); }
static nn_tensor *f_row_sum(work *w) { return nn_sum_dims(w->in[0], (int[]){1}, 1, false); }
static nn_tensor *f_embedding(work *w) { return nn_embedding(w->in[0], w->in[1], -1); }
static nn_tensor *f_cross_entropy(work *w) { return nn_softmax_cross_entropy(w->in[0], w->in[1]); }

static void release(work *w) {
    for (int i = 0; i < 4; i++) nn_tensor_free(w->in[i]);
    check(nn_ctx_step_end(ctx), "step end");
}

static void pair(work *w, const char *fwd_key, const char *fwd_name, double fwd_bytes, const char *bwd_key,
                 const char *bwd_name, double bwd_bytes) {
    w->key = fwd_key, w->name = fwd_name, w->bytes = fwd_bytes, w->backward = false;
    measure(w);
    if (!bwd_key) return;
    w->key = bwd_key, w->name = bwd_name, w->bytes = bwd_bytes, w->backward = true;
    measure(w);
}

/* BatchNorm [N, C, H, W] channels-last, training: forward, then backward with
 * the weight's and bias's gradients; ReLU; the residual add. */
static void resnet_block(int64_t n, int64_t c, int64_t h, bool extras) {
    const int64_t dims[4] = {n, c, h, h}, ch = c;
    const double f4 = 4.0 * (double)(n * c * h * h);
    work w = {.model = "resnet50", .ndims = 4, .layout = NN_LAYOUT_CHANNELS_LAST, .forward = f_batch_norm};
    memcpy(w.dims, dims, sizeof dims);
    w.in[0] = activation(4, dims, -2, 2, NN_LAYOUT_CHANNELS_LAST);
    w.in[1] = leaf(1, &ch, 0.5f, 1.5f);
    w.in[2] = leaf(1, &ch, -0.5f, 0.5f);
    pair(&w, "bn_fwd", "batch_norm forward (training)", 2 * f4, "bn_bwd", "batch_norm backward (dx, dw, db)", 3 * f4);
    if (extras) {
        w.forward = f_relu;
        pair(&w, "relu_fwd", "relu forward", 2 * f4, "relu_bwd", "relu backward", 3 * f4);
        nn_tensor_free(w.in[1]);
        nn_tensor_free(w.in[2]);
        w.in[2] = NULL;
        w.in[1] = activation(4, dims, -1, 1, NN_LAYOUT_CHANNELS_LAST);
        w.forward = f_add;
        pair(&w, "add", "residual add", 3 * f4, NULL, NULL, 0);
    }
    release(&w);
}

static void resnet50(void) {
    const int64_t n = 128 / scale;
    resnet_block(n, 256, 56, true);
    resnet_block(n, 64, 112, false);
    resnet_block(n, 2048, 7, false);
    const int64_t dims[4] = {n, 2048, 7, 7};
    const double f4 = 4.0 * (double)(n * 2048 * 49);
    work w = {.model = "resnet50", .ndims = 4, .forward = f_pool};
    memcpy(w.dims, dims, sizeof dims);
    w.in[0] = activation(4, dims, -1, 1, NN_LAYOUT_CHANNELS_LAST);
    pair(&w, "pool_fwd", "global average pool forward", f4 + f4 / 49, "pool_bwd", "global average pool backward",
         f4 + f4 / 49);
    release(&w);
}

/* The bias gradient of a Linear, as its backward launches it: the column
 * sums of dy [rows, features], added into the bias's gradient. */
static void bias_grad(const char *model, int64_t rows, int64_t features) {
    const int64_t dims[2] = {rows, features};
    work w = {.model = model, .ndims = 2, .key = "bias_grad", .name = "bias gradient (column sums)"};
    memcpy(w.dims, dims, sizeof dims);
    w.bytes = 4.0 * (double)(rows * features);
    if (!wanted(&w)) return;
    w.in[0] = uniform(2, dims, -1, 1);
    w.in[1] = uniform(1, &features, 0, 1);
    w.args[0] = nn_tensor_ref(w.in[0]);
    w.args[1] = nn_tensor_ref(w.in[1]);
    w.bias = (nn_bias_params){.outer = rows, .inner = 1, .channels = (int32_t)features, .accumulate = 1};
    const int reps = reps_for(w.bytes);
    report(&w, run_captured(bias_grad_body, &w, reps), reps);
    release(&w);
}

static void transformer_kernels(const char *model, int64_t rows, int64_t width, int64_t hidden) {
    const int64_t d2[2] = {rows, width}, h2[2] = {rows, hidden};
    const double fw = 4.0 * (double)(rows * width), fh = 4.0 * (double)(rows * hidden);
    work w = {.model = model, .ndims = 2, .forward = f_layer_norm};
    memcpy(w.dims, d2, sizeof d2);
    w.in[0] = activation(2, d2, -2, 2, NN_LAYOUT_DENSE);
    w.in[1] = leaf(1, &width, 0.5f, 1.5f);
    w.in[2] = leaf(1, &width, -0.5f, 0.5f);
    pair(&w, "ln_fwd", "layer_norm forward", 2 * fw, "ln_bwd", "layer_norm backward (dx, dw, db)", 3 * fw);
    nn_tensor_free(w.in[1]);
    nn_tensor_free(w.in[2]);
    w.in[2] = NULL;
    w.in[1] = activation(2, d2, -1, 1, NN_LAYOUT_DENSE);
    w.forward = f_add;
    pair(&w, "add", "residual add", 3 * fw, NULL, NULL, 0);
    release(&w);

    work g = {.model = model, .ndims = 2, .forward = f_gelu};
    memcpy(g.dims, h2, sizeof h2);
    g.in[0] = activation(2, h2, -3, 3, NN_LAYOUT_DENSE);
    pair(&g, "gelu_fwd", "gelu forward", 2 * fh, "gelu_bwd", "gelu backward", 3 * fh);
    g.forward = f_row_sum;
    pair(&g, "row_sum", "sum over the last dim", fh, NULL, NULL, 0);
    release(&g);
    bias_grad(model, rows, hidden);
}

static void vocabulary(int64_t rows, int64_t vocab, int64_t width) {
    const int64_t d2[2] = {rows, vocab};
    const double f4 = 4.0 * (double)(rows * vocab);
    work w = {.model = "gpt2", .ndims = 2, .forward = f_log_softmax};
    memcpy(w.dims, d2, sizeof d2);
    w.in[0] = activation(2, d2, -4, 4, NN_LAYOUT_DENSE);
    pair(&w, "logsoftmax_fwd", "log_softmax forward", 2 * f4, "logsoftmax_bwd", "log_softmax backward", 3 * f4);

    int32_t *labels = malloc(sizeof *labels * (size_t)rows);
    if (!labels) die("host memory");
    for (int64_t i = 0; i < rows; i++) labels[i] = (int32_t)((i * 7919 + 13) % vocab);
    w.in[1] = nn_tensor_from_data(ctx, NN_I32, 1, &rows, labels);
    if (!w.in[1]) die("labels");
    w.forward = f_cross_entropy;
    pair(&w, "ce_fwd", "cross_entropy forward", f4, "ce_bwd", "cross_entropy backward", 2 * f4);
    release(&w);

    /* The token embedding: [rows] indices into [vocab, width]. */
    const int64_t wd[2] = {vocab, width};
    work e = {.model = "gpt2", .ndims = 3, .dims = {rows, vocab, width}, .forward = f_embedding};
    for (int64_t i = 0; i < rows; i++) labels[i] = (int32_t)(((uint64_t)i * 2654435761u) % (uint64_t)vocab);
    e.in[0] = nn_tensor_from_data(ctx, NN_I32, 1, &rows, labels);
    if (!e.in[0]) die("indices");
    free(labels);
    e.in[1] = leaf(2, wd, -1, 1);
    const double out = 4.0 * (double)(rows * width);
    pair(&e, "emb_fwd", "embedding forward", 2 * out + 4.0 * (double)rows, "emb_bwd",
         "embedding backward (deterministic)", out + 4.0 * (double)(vocab * width) + 4.0 * (double)rows);
    release(&e);
}

/* AdamW's update over a model's parameters (their shapes), one step. */
static void adamw(const char *model, const int64_t (*shapes)[2], int count) {
    nn_tensor **params = malloc(sizeof *params * (size_t)count);
    if (!params) die("host memory");
    int64_t total = 0;
    for (int i = 0; i < count; i++) {
        const int64_t *s = shapes[i];
        params[i] = leaf(s[1] ? 2 : 1, s, -0.1f, 0.1f);
        nn_tensor *g;
        int32_t acc;
        check(nn_grad_target(params[i], &g, &acc), "a gradient");
        check(nn_init_uniform(g, -1e-2f, 1e-2f), "a gradient");
        total += nn_tensor_numel(params[i]);
    }
    work w = {.model = model, .ndims = 1, .dims = {total}, .key = "adamw", .name = "AdamW update, all parameters"};
    w.bytes = 7.0 * 4.0 * (double)total; /* p, m, v read and written, g read */
    if (wanted(&w)) {
        w.opt = nn_adamw_new(params, count,
                             &(nn_adam_options){.lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                                                .weight_decay = 0.01f});
        if (!w.opt) die("nn_adamw_new");
        check(nn_optimizer_step(w.opt), "optimizer step"); /* the state exists */
        const int reps = reps_for(w.bytes);
        report(&w, run_captured(optimizer_body, &w, reps), reps);
        nn_optimizer_free(w.opt);
    }
    for (int i = 0; i < count; i++) nn_tensor_free(params[i]);
    free(params);
    check(nn_ctx_step_end(ctx), "step end");
}

/* GPT-2 small's parameters (nanoGPT's, the head tied to wte), or vit-tiny's
 * (patch 4 on 1 channel, 50 tokens, width 192, 6 layers, MLP 768, 10 classes). */
static int transformer_params(int64_t (*s)[2], int64_t vocab, int64_t context, int64_t width, int depth,
                              int64_t hidden, bool vit) {
    int n = 0;
#define P(a, b) (s[n][0] = (a), s[n][1] = (b), n++)
    if (vit) {
        P(width, 16), P(width, 0), P(1, width), P(50, width);
    } else {
        P(vocab, width), P(context, width);
    }
    for (int l = 0; l < depth; l++) {
        P(width, 0), P(width, 0);
        P(3 * width, width), P(3 * width, 0), P(width, width), P(width, 0);
        P(width, 0), P(width, 0);
        P(hidden, width), P(hidden, 0), P(width, hidden), P(width, 0);
    }
    P(width, 0), P(width, 0);
    if (vit) P(10, width), P(10, 0);
#undef P
    return n;
}

int main(int argc, char **argv) {
    const char *device = "vulkan";
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (strcmp(a, "--device") == 0) device = v;
        else if (strcmp(a, "--runs") == 0) runs = atoi(v);
        else if (strcmp(a, "--only") == 0) only = v;
        else if (strcmp(a, "--scale") == 0) scale = atoi(v);
        else if (strcmp(a, "--reps") == 0) fixed_reps = atoi(v);
        else {
            fprintf(stderr, "usage: %s [--device D] [--runs N] [--reps R] [--only NAME] [--scale S]\n", argv[0]);
            return 2;
        }
    }
    if (runs < 1 || scale < 1) die("arguments");
    ctx = nn_ctx_new(&(nn_ctx_options){.device = device, .seed = 1});
    if (!ctx) die("context");
    printf("nn-engine on %s: memory-bound kernels at the shapes of ResNet-50 (batch %d, 224x224, channels-last), "
           "vit-tiny (batch %d) and GPT-2 small (%d tokens); ms per launch, median of %d replays; GB/s over "
           "the bytes each operation must move; copies moving as many bytes: nn_tensor_copy (a transfer command) and the "
           "elementwise kernel's out = 1 * a; /copy: over the faster copy's time; * under 0.7 of it\n",
           nn_ctx_device_name(ctx), 128 / scale, 256 / scale, 8192 / scale, runs);
    printf("%-10s %-34s %-22s %9s %8s %7s %7s %7s %6s\n", "model", "operation", "shape", "MB", "ms", "GB/s", "xfer",
           "kernel", "/copy");
    { /* half a second of copies: the device leaves its idle clocks */
        const double t0 = now_ms();
        while (now_ms() - t0 < 500) copy_ms(256e6, 5, NULL);
    }
    resnet50();
    transformer_kernels("vit-tiny", 256 / scale * 50, 192, 768);
    static int64_t shapes[256][2];
    adamw("vit-tiny", shapes, transformer_params(shapes, 0, 0, 192, 6, 768, true));
    const int64_t tokens = 8192 / scale;
    transformer_kernels("gpt2", tokens, 768, 3072);
    vocabulary(tokens, scale > 1 ? 50257 / scale : 50257, 768); /* lavapipe binds at most 128 MiB */
    int n = transformer_params(shapes, 50257, 1024, 768, 12, 3072, false);
    if (scale > 1)
        for (int i = 0; i < n; i++) shapes[i][0] = shapes[i][0] / scale > 0 ? shapes[i][0] / scale : 1;
    adamw("gpt2", shapes, n);
    nn_ctx_free(ctx);
    return 0;
}
