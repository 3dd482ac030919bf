/* Dropout (PyTorch's semantics): in training, each element is zeroed with
 * probability p and the kept ones are scaled by 1 / (1 - p); in evaluation
 * it is the identity (a view of x). The mask is drawn on the device from a
 * counter-based hash of (key, draw, element): the key comes from the
 * context's generator, the draw number from a device counter that a second
 * kernel advances after each draw. Nothing about the draw is a host-side
 * kernel parameter that changes between steps, so a captured step replayed
 * as the same kernel list with the same parameters still draws a fresh mask
 * each time (the counter is advanced by COUNTER_ADD, the device loop's
 * kernel). A reseed takes effect at the next eager dropout call: a capture
 * recorded before nn_ctx_manual_seed keeps its key and counter. Backward
 * multiplies by the saved mask (0 or the scale). */
#include <math.h>

#include "io/onnx_graph.h"
#include "ops.h"

/* The context's draw counter, created at the first draw and reset (with a
 * new key from the generator) whenever the generator was reseeded since:
 * after nn_ctx_manual_seed(ctx, s) the masks repeat as they did after the
 * last nn_ctx_manual_seed(ctx, s). */
static nn_status dropout_state(nn_ctx *ctx, nn_tensor **counter) {
    if (!ctx->dropout_counter) {
        int64_t one = 1;
        ctx->dropout_counter = nn_op_scratch(ctx, NN_I32, 1, &one);
        if (!ctx->dropout_counter) return nn_last_status();
        ctx->dropout_generation = ctx->rng.generation - 1; /* forces the reset below */
    }
    if (ctx->dropout_generation != ctx->rng.generation) {
        /* Straight to the backend, not through the context: were this write
         * recorded by a capture, every replay would reset the counter and
         * draw the same mask again. The draws recorded before it run first. */
        NN_TRY(nn_ctx_flush(ctx, NULL));
        uint32_t zero = 0;
        NN_TRY(ctx->backend->write(ctx->backend, nn_tensor_ref(ctx->dropout_counter), &zero, sizeof zero));
        ctx->dropout_key[0] = nn_rng_next_u32(&ctx->rng);
        ctx->dropout_key[1] = nn_rng_next_u32(&ctx->rng);
        ctx->dropout_generation = ctx->rng.generation;
    }
    *counter = ctx->dropout_counter;
    return NN_OK;
}

typedef struct dropout_node {
    float p;
    bool training;
    nn_dropout_params kernel; /* training: the draw's parameters */
} dropout_node;

static nn_status dropout_forward(nn_node *node) {
    const dropout_node *d = NN_NODE_PARAMS(node, dropout_node);
    nn_tensor *x = node->inputs[0], *y = node->output, *counter = x->ctx->dropout_counter;
    nn_tensor *mask = nn_node_save_new(node, NN_F32, x->ndim, x->shape);
    if (!mask) return nn_last_status();
    nn_buffer_ref args[4] = {nn_tensor_ref(x), nn_tensor_ref(y), nn_tensor_ref(mask), nn_tensor_ref(counter)};
    nn_buffer_ref advance[2] = {nn_tensor_ref(counter), {0}};
    nn_counter_params one = {.delta = 1};
    NN_TRY(nn_ctx_run(x->ctx, NN_KERNEL_DROPOUT_FORWARD, args, 4, &d->kernel));
    return nn_ctx_run(x->ctx, NN_KERNEL_COUNTER_ADD, advance, 2, &one);
}

static nn_status dropout_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *grad;
    int32_t acc;
    NN_TRY(nn_grad_target(x, &grad, &acc));
    if (!NN_NODE_PARAMS(node, dropout_node)->training) /* evaluation: the identity */
        return nn_run_scale(x->ctx, nn_tensor_ref(node->output->grad), nn_tensor_ref(grad), x->numel, 1.0f, acc);
    nn_pointwise_params p = {.n = x->numel, .op = NN_EW_MUL, .accumulate = acc};
    nn_buffer_ref args[3] = {nn_tensor_ref(node->output->grad), nn_tensor_ref(node->saved[0]), nn_tensor_ref(grad)};
    return nn_ctx_run(x->ctx, NN_KERNEL_ELEMENTWISE, args, 3, &p);
}

/* ONNX Dropout in inference mode (no training_mode input: the identity),
 * whether the traced pass ran in training or eval. */
static nn_status dropout_onnx(exporter *x, op_io *io, const char *out) {
    return nn_onnx_elementwise(x, io, out, "Dropout");
}

const nn_op nn_op_dropout = {
    .name = "nn_dropout", .forward = dropout_forward, .backward = dropout_backward, .to_onnx = dropout_onnx};
/* In evaluation: a view of x whose gradient passes through. */
static const nn_op kIdentity = {
    .name = "nn_dropout", .forward = NULL, .backward = dropout_backward, .to_onnx = dropout_onnx, .view = true};

nn_tensor *nn_dropout(nn_tensor *x, float p, bool training) {
    const char *op = "nn_dropout";
    if (nn_check_tensor(op, "x", x, NN_F32)) return NULL;
    if (!(p >= 0.0f && p < 1.0f))
        return NN_FAIL_NULL(NN_ERR_ARGUMENT, "%s: p must be in [0, 1), got %g", op, (double)p);
    dropout_node d = {.p = p, .training = training};
    if (!training) return nn_op_result(&kIdentity, &x, 1, &d, sizeof d, x->ndim, x->shape);
    if (x->numel > (int64_t)UINT32_MAX)
        return NN_FAIL_NULL(NN_ERR_SHAPE, "%s: %lld elements exceed the mask hash's 32-bit index", op,
                            (long long)x->numel);
    nn_tensor *counter = NULL;
    if (dropout_state(x->ctx, &counter) != NN_OK) return NULL;
    const double threshold = floor((double)p * 4294967296.0);
    d.kernel = (nn_dropout_params){
        .n = x->numel,
        .threshold = threshold > 4294967295.0 ? 4294967295u : (uint32_t)threshold,
        .scale = (float)(1.0 / (1.0 - (double)p)),
        .seed_lo = x->ctx->dropout_key[0],
        .seed_hi = x->ctx->dropout_key[1],
    };
    return nn_op_result(&nn_op_dropout, &x, 1, &d, sizeof d, x->ndim, x->shape);
}
