/* Conv2d -> ReLU -> MaxPool2d(pool, stride pool) as one operation: one
 * forward kernel that writes only the pooled output and each window's
 * winner, and backward kernels that read the convolution's output gradient
 * through the winners (kernels.h, nn_conv_pool_params). Neither the
 * convolution's output, nor the ReLU's, nor their gradients are ever in
 * memory, and the two layers' backward kernels (masked max-pool backward,
 * bias gradient) and the barriers between them are gone.
 *
 * One tape node, "nn_conv2d_relu_maxpool", whose inputs are the
 * convolution's; the ONNX export writes it as Conv, Relu, MaxPool.
 *
 * Two such layers in a row (LeNet-5's) may chain their backward: the
 * second's node then computes the first's weight and bias gradients
 * (NN_NODE_CHAINS_INPUT), and the first's node, whose output gradient is
 * never written, is not run by nn_backward. */
#include "fused_relu.h"

nn_conv_pool_params nn_conv_pool_params_of(const nn_conv_geometry *g, int32_t filters, bool bias, int pool) {
    nn_conv_pool_params p = {
        .conv = {.g = *g, .filters = filters, .epilogue = (bias ? NN_EPI_BIAS_ROWS : 0) | NN_EPI_RELU},
        .pool = pool,
    };
    if (pool > 0) {
        p.pooled_h = g->out_h / pool;
        p.pooled_w = g->out_w / pool;
    }
    return p;
}

static nn_status conv_pool_backward(nn_node *node);

/* The producer of x, when this op may take over its backward: a fused
 * conv + pool node whose input wants no gradient, the two layers chained
 * by the backend. NULL otherwise. */
static nn_node *chainable_producer(nn_tensor *x, const nn_conv_pool_params *second) {
    nn_node *first = x->grad_fn;
    if (!first || first->backward != conv_pool_backward || nn_wants_grad(first->inputs[0])) return NULL;
    const nn_conv_pool_chain_params chain = {first->params.conv_pool, *second};
    return nn_ctx_supports(x->ctx, NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT, &chain) ? first : NULL;
}

/* The first layer's weight and bias gradients (those it wants) from this
 * node's output gradient, through this node's data gradient. */
static nn_status chain_backward(nn_node *node, nn_node *first) {
    nn_tensor *w = first->inputs[1], *bias = first->inputs[2];
    bool dw = nn_wants_grad(w), db = nn_wants_grad(bias);
    if (!dw && !db) return NN_OK;
    nn_conv_pool_chain_params p = {first->params.conv_pool, node->params.conv_pool};
    nn_tensor *dweight = NULL, *dbias = NULL;
    int32_t acc = 0;
    if (dw) NN_TRY(nn_grad_target(w, &dweight, &p.first.conv.g.accumulate));
    if (db) NN_TRY(nn_grad_target(bias, &dbias, &acc));
    p.first.bias_accumulate = acc;
    const nn_buffer_ref none = {NULL, 0, 0};
    nn_buffer_ref args[7] = {nn_tensor_ref(node->output->grad), nn_tensor_ref(node->saved[0]),
                             nn_tensor_ref(node->inputs[1]), nn_tensor_ref(first->saved[0]),
                             nn_tensor_ref(first->inputs[0]), dw ? nn_tensor_ref(dweight) : none,
                             db ? nn_tensor_ref(dbias) : none};
    return nn_ctx_run(node->output->ctx, NN_KERNEL_CONV2D_POOL_CHAIN_WEIGHT, args, 7, &p);
}

static nn_status conv_pool_backward(nn_node *node) {
    nn_tensor *x = node->inputs[0], *w = node->inputs[1], *bias = node->inputs[2];
    nn_tensor *winners = node->saved[0], *cols = node->saved_count > 1 ? node->saved[1] : NULL;
    nn_tensor *dy = node->output->grad;
    nn_ctx *ctx = x->ctx;
    nn_conv_pool_params p = node->params.conv_pool;
    const nn_buffer_ref none = {NULL, 0, 0};
    bool dw = nn_wants_grad(w), db = nn_wants_grad(bias);
    if (dw || db) {
        nn_tensor *dweight = NULL, *dbias = NULL;
        int32_t acc = 0;
        if (dw) NN_TRY(nn_grad_target(w, &dweight, &p.conv.g.accumulate));
        if (db) NN_TRY(nn_grad_target(bias, &dbias, &acc));
        p.bias_accumulate = acc;
        nn_buffer_ref args[6] = {nn_tensor_ref(dy), nn_tensor_ref(winners), nn_tensor_ref(x),
                                 dw ? nn_tensor_ref(dweight) : none, db ? nn_tensor_ref(dbias) : none,
                                 cols ? nn_tensor_ref(cols) : none};
        NN_TRY(nn_ctx_run(ctx, NN_KERNEL_CONV2D_POOL_BACKWARD_WEIGHT, args, 6, &p));
    }
    nn_node *first = node->fusion & NN_NODE_CHAINS_INPUT ? chainable_producer(x, &node->params.conv_pool) : NULL;
    if (first) return chain_backward(node, first);
    if (nn_wants_grad(x)) {
        nn_tensor *dx;
        NN_TRY(nn_grad_target(x, &dx, &p.conv.g.accumulate));
        nn_buffer_ref args[4] = {nn_tensor_ref(dy), nn_tensor_ref(winners), nn_tensor_ref(w), nn_tensor_ref(dx)};
        NN_TRY(nn_ctx_run(ctx, NN_KERNEL_CONV2D_POOL_BACKWARD_DATA, args, 4, &p));
    }
    return NN_OK;
}

bool nn_conv2d_relu_maxpool_fuses(nn_tensor *x, nn_tensor *weight, nn_tensor *bias, const nn_conv2d_params *params,
                                  int pool) {
    if (!x || !weight || !params || pool < 1) return false;
    if (nn_conv2d_check_args("nn_conv2d", x, weight, bias, params) != NN_OK) {
        nn_clear_error(); /* the unfused layers report it */
        return false;
    }
    const nn_conv_geometry g = nn_conv2d_geometry(x, weight, params);
    if (g.out_h < pool || g.out_w < pool) return false; /* the max pooling reports it */
    const nn_conv_pool_params p = nn_conv_pool_params_of(&g, (int32_t)weight->shape[0], bias != NULL, pool);
    return nn_ctx_supports(x->ctx, NN_KERNEL_CONV2D_POOL_FORWARD, &p);
}

nn_status nn_conv_pool_forward_begin(const char *op, nn_tensor *x, nn_tensor *weight, nn_tensor *bias,
                                     const nn_conv2d_params *params, int pool, nn_conv_pool_forward *f) {
    *f = (nn_conv_pool_forward){.inputs = {x, weight, bias}};
    NN_TRY(nn_conv2d_check_args(op, x, weight, bias, params));
    const nn_conv_geometry g = nn_conv2d_geometry(x, weight, params);
    if (pool < 1 || g.out_h < pool || g.out_w < pool)
        return nn_set_error(NN_ERR_SHAPE, "%s: pooling window %d does not fit the %dx%d convolution output", op, pool,
                            g.out_h, g.out_w);
    f->params = nn_conv_pool_params_of(&g, (int32_t)weight->shape[0], bias != NULL, pool);
    nn_ctx *ctx = x->ctx;
    bool record = nn_autograd_needed(ctx, f->inputs, 3);
    int64_t shape[4] = {g.batch, f->params.conv.filters, f->params.pooled_h, f->params.pooled_w};
    f->y = nn_op_result(ctx, 4, shape);
    if (!f->y) return nn_last_status();
    /* The column matrix, when the backend keeps it for the weight gradient. */
    const bool keep_cols = record && nn_wants_grad(weight) && nn_ctx_conv_keeps_columns(ctx, &f->params.conv);
    const int64_t col_shape[3] = {g.batch, (int64_t)g.channels * g.kernel_h * g.kernel_w,
                                  (int64_t)g.out_h * g.out_w};
    f->winners = nn_op_scratch(ctx, NN_I32, 4, shape);
    f->cols = f->winners && keep_cols ? nn_op_scratch(ctx, NN_F32, 3, col_shape) : NULL;
    if (!f->winners || (keep_cols && !f->cols)) {
        nn_status st = nn_last_status();
        nn_conv_pool_forward_abort(f);
        return st;
    }
    return NN_OK;
}

void nn_conv_pool_forward_abort(nn_conv_pool_forward *f) {
    nn_tensor_release(f->winners);
    nn_tensor_release(f->cols);
    nn_op_fail(f->y);
    f->y = f->winners = f->cols = NULL;
}

nn_tensor *nn_conv_pool_forward_end(nn_conv_pool_forward *f, const char *op, int flags) {
    nn_tensor *saved[2] = {f->winners, f->cols};
    nn_node *node;
    nn_tensor *y = nn_op_finish(f->y, op, conv_pool_backward, f->inputs, 3, saved, f->cols ? 2 : 1, &node);
    if (node) {
        node->params.conv_pool = f->params;
        if ((flags & NN_FUSE_CHAIN_INPUT) && chainable_producer(f->inputs[0], &f->params))
            node->fusion |= NN_NODE_CHAINS_INPUT;
    }
    nn_tensor_release(f->winners); /* the node holds what backward needs */
    nn_tensor_release(f->cols);
    f->y = f->winners = f->cols = NULL;
    return y;
}

nn_tensor *nn_conv2d_relu_maxpool(nn_tensor *x, nn_tensor *weight, nn_tensor *bias, const nn_conv2d_params *params,
                                  int pool, int flags) {
    const char *op = "nn_conv2d_relu_maxpool";
    nn_conv_pool_forward f;
    if (nn_conv_pool_forward_begin(op, x, weight, bias, params, pool, &f) != NN_OK) return NULL;
    const nn_buffer_ref none = {NULL, 0, 0};
    nn_buffer_ref args[6] = {nn_tensor_ref(x), nn_tensor_ref(weight), bias ? nn_tensor_ref(bias) : none,
                             nn_tensor_ref(f.y), nn_tensor_ref(f.winners), f.cols ? nn_tensor_ref(f.cols) : none};
    if (nn_ctx_run(x->ctx, NN_KERNEL_CONV2D_POOL_FORWARD, args, 6, &f.params) != NN_OK) {
        nn_conv_pool_forward_abort(&f);
        return NULL;
    }
    return nn_conv_pool_forward_end(&f, op, flags);
}
